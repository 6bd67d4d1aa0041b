"""How long `python -m attn_course train TASK` takes, and what the trained models reach.

Synthetic tasks (lecture 08): trains every task from scratch with its default settings (the
same seeded run as the command) on 2 threads, the course machine's 2 cores, and prints wall
time, the process's CPU time and the held-out accuracy next to the targets: at most 60 s and
at least 99 % (induction: on the repeated half, the only scored positions). The two trap
variants have no accuracy target.

Shakespeare (`train shakespeare`, lectures 09-11): prints the recorded run that made the
shipped weights (`lm.shipped_recording()`, attn_course/recordings/shakespeare_run.json: wall and
CPU time, load average, its curve),
then measures the shipped model now: the held-out loss on the 3 held-out plays (target
<= 1.65 nats per character), the real-word fraction of text sampled at temperature 0.8
(target >= 85 %), the weights file's size (target <= 5 MB), and in-context learning: the loss
on held-out passages read twice, and the best induction head. `--retrain-shakespeare`
trains the default config again and times it (about 10 CPU-minutes); `--small` times the
notebook's small config (target <= 60 s); `--gqa` prints the held-out loss of the model with
its key/value heads mean-pooled into fewer groups, before and after a short uptraining, next to
the KV-cache bytes per token (about 2 CPU-minutes).

The machine's load average is printed too: on a busy machine wall time includes waiting for
a core.

Run: .venv/bin/python benchmarks/bench_training.py [--threads N] [--shakespeare-only]
     [--retrain-shakespeare] [--small] [--gqa] [TASK ...]
"""

from __future__ import annotations

import os
import sys
import time
from importlib import resources

import torch

from attn_course.generation_metrics import real_word_fraction
from attn_course.lm import (
    gqa_table,
    held_out_loss,
    held_out_passages,
    pretrained_lm,
    print_gqa_table,
    repeat_test,
    sample,
    shipped_recording,
    train_lm,
    training_words,
)
from attn_course.tasks import TASKS
from attn_course.training import TRAIN_CONFIGS, evaluate, train

TIME_BUDGET_S = 60.0
ACCURACY_TARGET = 0.99
TRAPS = ("induction-fixed", "induction-colliding")
LM_LOSS_TARGET, LM_WORDS_TARGET, LM_MINUTES, LM_MB = 1.65, 0.85, 20.0, 5.0
PROMPTS = ("ROMEO:\n", "KING HENRY V:\n", "First Citizen:\n".upper(), "HAMLET:\nTo be")


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def bench_tasks(names: list[str]) -> None:
    print(f"{'task':<20} {'steps':>5} {'wall s':>7} {'CPU s':>7} {'accuracy':>9}  result")
    for name in names or list(TASKS):
        task = TASKS[name]
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        model = train(task)
        wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
        accuracy = evaluate(model, task)
        if name in TRAPS:
            verdict = "trap (no target)"
        else:
            ok = wall <= TIME_BUDGET_S and accuracy >= ACCURACY_TARGET
            verdict = "PASS" if ok else "MISS"
        steps = TRAIN_CONFIGS[name].steps
        print(f"{name:<20} {steps:>5} {wall:>7.1f} {cpu:>7.1f} {accuracy:>9.2%}  {verdict}")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def bench_shakespeare(retrain: bool, small: bool, gqa: bool) -> None:
    record = shipped_recording()
    print(f"\nshakespeare, the recorded run: {record['command']}")
    print(f"  config {record['config']}")
    print(
        f"  {record['threads']} thread(s); load average {record['load_before']} before, "
        f"{record['load_after']} after"
    )
    print(f"  {record['threads_note']}")
    wall_min, cpu_min = record["wall_s"] / 60, record["cpu_s"] / 60
    print(
        f"  wall {wall_min:.1f} min, CPU {cpu_min:.1f} min (a quiet core: wall ~ CPU); "
        f"target <= {LM_MINUTES:.0f} min: {verdict(cpu_min <= LM_MINUTES)} by CPU time, "
        f"{verdict(wall_min <= LM_MINUTES)} by wall time on the loaded machine"
    )
    print(f"  {'step':>6} {'train':>7} {'held-out':>9}  (nats/char, 64 held-out windows)")
    for step, train_loss, eval_loss in record["curve"]:
        print(f"  {step:>6} {train_loss:>7.3f} {eval_loss:>9.3f}")

    model = pretrained_lm()
    with resources.as_file(resources.files("attn_course") / "weights" / "shakespeare.pt") as p:
        mb = p.stat().st_size / 1e6
    start = time.perf_counter()
    loss = held_out_loss(model)
    seconds = time.perf_counter() - start
    text = "".join(sample(model, p, 500, temperature=0.8, seed=i) for i, p in enumerate(PROMPTS))
    words = real_word_fraction(text, training_words())
    print("\nshakespeare, the shipped model now:")
    print(
        f"  weights file {mb:.2f} MB (bfloat16); target <= {LM_MB:.0f} MB: {verdict(mb <= LM_MB)}"
    )
    print(
        f"  held-out loss {loss:.3f} nats/char on the 3 held-out plays ({seconds:.0f} s); "
        f"target <= {LM_LOSS_TARGET}: {verdict(loss <= LM_LOSS_TARGET)}"
    )
    print(
        f"  real words at temperature 0.8: {words:.1%} of the words of {len(PROMPTS)} x 500 "
        f"sampled characters; target >= {LM_WORDS_TARGET:.0%}: {verdict(words >= LM_WORDS_TARGET)}"
    )
    tests = [repeat_test(model, passage) for passage in held_out_passages(12, 64)]
    induction = torch.stack([t.induction for t in tests]).mean(dim=0)  # (num_layers, num_heads)
    layer, head = divmod(int(induction.argmax()), induction.shape[1])
    first, second = sum(t.first for t in tests) / 12, sum(t.second for t in tests) / 12
    print(
        f"  12 held-out passages of 64 characters, each read twice: first copy {first:.3f}, "
        f"second copy {second:.3f} nats/char (lower on {sum(t.second < t.first for t in tests)} "
        f"of 12); best induction head L{layer} H{head}, score {induction.max():.2f}"
    )
    print(
        "  sample (seed 0):\n    " + sample(model, PROMPTS[0], 200, 0.8, 0).replace("\n", "\n    ")
    )

    if gqa:
        print(
            "\n  grouped-query attention by mean-pooling key/value heads (100,000 held-out chars):"
        )
        print_gqa_table(gqa_table(model))

    for name, wanted in (("default", retrain), ("small", small)):
        if not wanted:
            continue
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        result = train_lm(name, progress=sys.stdout)
        wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
        budget = LM_MINUTES * 60 if name == "default" else TIME_BUDGET_S
        print(
            f"  train shakespeare --config {name}: wall {wall:.0f} s, CPU {cpu:.0f} s, "
            f"held-out {result.curve[-1][2]:.3f} nats/char; target <= {budget:.0f} s: "
            f"{verdict(wall <= budget)} (wall)"
        )


def main(argv: list[str]) -> None:
    threads = 2
    if argv[:1] == ["--threads"]:
        threads, argv = int(argv[1]), argv[2:]
    flags = {a for a in argv if a.startswith("--")}
    names = [a for a in argv if not a.startswith("--")]
    torch.set_num_threads(threads)
    print(f"torch threads: {threads}")
    print(f"load average before: {load()}")
    if "--shakespeare-only" not in flags:
        bench_tasks(names)
    bench_shakespeare("--retrain-shakespeare" in flags, "--small" in flags, "--gqa" in flags)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main(sys.argv[1:])

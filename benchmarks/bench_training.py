"""How long `python -m attn_course train TASK` takes, and the held-out accuracy it reaches.

Trains every task from scratch with its default settings (the same seeded run as the command)
on 2 threads, the course machine's 2 cores, and prints wall time, the process's CPU time and
the held-out accuracy next to the targets: at most 60 s and at least 99 % (induction: on the
repeated half, the only scored positions). The two trap variants have no accuracy target. The
machine's load average is printed too: on a busy machine wall time includes waiting for a core.

Run: .venv/bin/python benchmarks/bench_training.py [--threads N] [TASK ...]
(N = 2 by default; on a shared, loaded machine 1 thread wastes less time waiting.)
"""

from __future__ import annotations

import os
import sys
import time

import torch

from attn_course.tasks import TASKS
from attn_course.training import TRAIN_CONFIGS, evaluate, train

TIME_BUDGET_S = 60.0
ACCURACY_TARGET = 0.99
TRAPS = ("induction-fixed", "induction-colliding")


def main(argv: list[str]) -> None:
    threads, names = 2, argv
    if argv[:1] == ["--threads"]:
        threads, names = int(argv[1]), argv[2:]
    torch.set_num_threads(threads)
    print(f"torch threads: {threads}")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
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
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main(sys.argv[1:])

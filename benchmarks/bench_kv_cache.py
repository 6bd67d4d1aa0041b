"""Generation with and without the KV cache: time against the number of new tokens.

Run: ``.venv/bin/python benchmarks/bench_kv_cache.py [--quick] [--threads N] [--repeats R]``

1. **Real generation** with the shipped Shakespeare model (``lm.pretrained_lm``: d_model 128,
   4 layers, context 128 characters), from the prompt "ROMEO:\\n", temperature 0.8, seed 0.
   Past the context the window restarts on its last half (``generation.generate``), so the
   uncached steps stop growing, and the speed-up tends (slowly) to the ratio of the two loops'
   times over one restart cycle.
2. **A wider model with a long context**, random weights (d_model 256, 4 layers, 4 heads,
   vocabulary 1,000, context 1,024), greedy, a prompt of 8 tokens: the regime where the
   uncached loop's quadratic work dominates. Target: cached speed-up >= 5x at 512 new tokens.

Both runs of a point must produce the same tokens, which the script checks before printing.
Time: wall-clock (``time.perf_counter``), the median of ``--repeats`` runs (default 5) after a
warm-up run, the two variants alternating. One thread by default: on a shared, oversubscribed
machine two threads wait on each other at every small operator of a cached step (--threads 2
to try). The script prints the log-log slope of each curve: the cached time should grow
linearly in the number of new tokens, the uncached one faster (until the context caps it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np
import torch

from attn_course.blocks import BlockConfig
from attn_course.generation import GPTConfig, GPTModel, generate
from attn_course.lm import pretrained_lm, tokenizer

WIDE = BlockConfig(d_model=256, context_length=1024, num_heads=4, dropout=0.0, num_layers=4)
WIDE_VOCAB, WIDE_PROMPT = 1000, 8
TARGET, TARGET_AT = 5.0, 512


def median_seconds(
    model: GPTModel, prompt: torch.Tensor, new: int, repeats: int, settings: dict[str, Any]
) -> tuple[float, float]:
    """(uncached, cached) median seconds for ``new`` tokens; fails if the tokens differ."""
    times: dict[bool, list[float]] = {False: [], True: []}
    outputs = {}
    for _ in range(repeats):
        for use_cache in (False, True):
            generator = torch.Generator().manual_seed(0)
            start = time.perf_counter()
            tokens, _ = generate(model, prompt, new, use_cache, generator=generator, **settings)
            times[use_cache].append(time.perf_counter() - start)
            outputs[use_cache] = tokens
    if not torch.equal(outputs[False], outputs[True]):
        raise AssertionError(f"cached and uncached generation differ at {new} new tokens")
    return statistics.median(times[False]), statistics.median(times[True])


def report(
    title: str, model: GPTModel, prompt: torch.Tensor, counts: list[int], repeats: int, **settings
) -> dict[int, float]:
    """Print the table and slopes of one model; return {new tokens: speed-up}."""
    generate(model, prompt, 8, **settings)  # warm-up
    print(f"\n{title}")
    print(f"{'new tokens':>10} {'no cache (s)':>13} {'cache (s)':>10} {'speed-up':>9}")
    rows = []
    for new in counts:
        uncached, cached = median_seconds(model, prompt, new, repeats, settings)
        rows.append((new, uncached, cached))
        print(f"{new:>10} {uncached:>13.3f} {cached:>10.3f} {uncached / cached:>8.1f}x")
    news, uncached_s, cached_s = (np.array(column) for column in zip(*rows, strict=True))
    for name, times in (("no cache", uncached_s), ("cache", cached_s)):
        slope = np.polyfit(np.log(news[-3:]), np.log(times[-3:]), deg=1)[0]
        print(f"log-log slope of the last three points, {name}: {slope:.2f}")
    return {int(n): float(u / c) for n, u, c in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per point (default 5)")
    parser.add_argument("--quick", action="store_true", help="up to 128 new tokens only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    counts = [32, 64, 128] if args.quick else [32, 64, 128, 256, 512]
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), medians of {args.repeats} runs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )

    model = pretrained_lm()
    cfg = model.cfg
    prompt = torch.tensor([tokenizer().encode("ROMEO:\n")])
    report(
        f"1. shipped Shakespeare model (d_model {cfg.d_model}, {cfg.num_layers} layers, context "
        f"{cfg.context_length}), prompt 'ROMEO:\\n', temperature 0.8",
        model, prompt, counts, args.repeats, temperature=0.8,
    )  # fmt: skip

    torch.manual_seed(123)
    wide = GPTModel(GPTConfig.from_block(WIDE, WIDE_VOCAB)).eval()
    prompt = torch.randint(0, WIDE_VOCAB, (1, WIDE_PROMPT))
    speedups = report(
        f"2. random weights, d_model {WIDE.d_model}, {WIDE.num_layers} layers, context "
        f"{WIDE.context_length}, prompt {WIDE_PROMPT} tokens, greedy",
        wide, prompt, counts, args.repeats,
    )  # fmt: skip
    if TARGET_AT in speedups:
        verdict = "PASS" if speedups[TARGET_AT] >= TARGET else "MISS"
        print(
            f"\nspeed-up at {TARGET_AT} new tokens: {speedups[TARGET_AT]:.1f}x "
            f"(target >= {TARGET:g}x): {verdict}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

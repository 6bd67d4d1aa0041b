"""Greedy generation with and without the KV cache: time against the number of new tokens.

Run: ``.venv/bin/python benchmarks/bench_kv_cache.py [--quick] [--threads N]``

A GPTModel with random weights (d_model 256, 4 layers, 4 heads, vocabulary 1,000, context
1,024; eval mode, no_grad), batch 1, a prompt of 8 tokens. Without the cache every step runs
the whole sequence through the model; with it, only the newest token. Both runs must produce
the same tokens, which the script checks before printing anything.

Time: wall-clock (``time.perf_counter``) of one ``generate`` call per point, the two runs of a
point one right after the other. One thread by default: on a shared, oversubscribed machine
two threads wait on each other at every small operator of a cached step, which hides the
effect being measured (--threads 2 to try).

Target: cached speed-up >= 5x at 512 new tokens (a ratio measured in the same run). The
cached time should grow linearly in the number of new tokens, the uncached super-linearly:
the script prints the log-log slope of each curve.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from attn_course.blocks import BlockConfig
from attn_course.generation import GPTModel, generate

CFG = BlockConfig(d_model=256, context_length=1024, num_heads=4, dropout=0.0, num_layers=4)
VOCAB, PROMPT = 1000, 8
TARGET, TARGET_AT = 5.0, 512


def time_generation(model: GPTModel, prompt: torch.Tensor, new: int) -> tuple[float, float]:
    """(uncached seconds, cached seconds) for ``new`` tokens; fails if the tokens differ."""
    times, outputs = [], []
    for use_cache in (False, True):
        start = time.perf_counter()
        tokens, _ = generate(model, prompt, new, use_cache=use_cache)
        times.append(time.perf_counter() - start)
        outputs.append(tokens)
    if not torch.equal(*outputs):
        raise AssertionError(f"cached and uncached generation differ at {new} new tokens")
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="up to 128 new tokens only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(123)
    model = GPTModel(CFG, VOCAB).eval()
    prompt = torch.randint(0, VOCAB, (1, PROMPT))
    counts = [32, 64, 128] if args.quick else [32, 64, 128, 256, 512]
    generate(model, prompt, 8)  # warm-up
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), GPTModel d_model={CFG.d_model}, "
        f"{CFG.num_layers} layers, {CFG.num_heads} heads, vocab {VOCAB}, prompt {PROMPT} tokens, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(f"\n{'new tokens':>10} {'no cache (s)':>13} {'cache (s)':>10} {'speed-up':>9}")
    rows = []
    for new in counts:
        uncached, cached = time_generation(model, prompt, new)
        rows.append((new, uncached, cached))
        print(f"{new:>10} {uncached:>13.3f} {cached:>10.3f} {uncached / cached:>8.1f}x")
    news, uncached, cached = (np.array(column) for column in zip(*rows, strict=True))
    for name, times in (("no cache", uncached), ("cache", cached)):
        slope = np.polyfit(np.log(news[-3:]), np.log(times[-3:]), deg=1)[0]
        print(f"log-log slope of the last three points, {name}: {slope:.2f}")
    if TARGET_AT in news:
        speedup = (uncached / cached)[list(news).index(TARGET_AT)]
        verdict = "PASS" if speedup >= TARGET else "MISS"
        print(f"\nspeed-up at {TARGET_AT} new tokens: {speedup:.1f}x (target >= {TARGET:g}x)")
        print(verdict)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Tiled attention against the naive and the fused path: time and peak extra memory.

Run: ``.venv/bin/python benchmarks/bench_tiled.py [--quick] [--threads N] [--naive-limit-gib G]``

Causal attention at GPT-2 small width (12 heads of 64, d = 768), batch 1, float32, no_grad,
n = 512 ... 8192 tokens. Queries, keys and values are made before anything is measured.

* naive: the course's ``scaled_dot_product_attention`` with the boolean causal mask (made
  beforehand, like a module's buffer): scores, mask and softmax as (12, n, n) tensors.
* fused: ``F.scaled_dot_product_attention(..., is_causal=True)``, PyTorch's kernel.
* tiled: ``attn_course.tiled.tiled_attention(..., causal=True, block_size=256)``, a Python
  loop over (256 x 256) tiles keeping a running max, sum and weighted sum per query.

Time: median over the repeats; with one thread (the default) the CPU time of the calling
thread, so that other processes on a shared machine barely disturb it; else wall time.

Peak extra memory, MEASURED: torch.profiler's raw allocation and free records
(``profile_memory=True``) replayed in time order during one call; the peak of the live
bytes, on top of what was alive before the call (the inputs). It sees every tensor torch
allocates, scratch buffers inside an operator included (tracemalloc sees none of them). The
output (12 n 64 floats) is part of every path's peak. The naive path is skipped where its
(12, n, n) tensors would pass --naive-limit-gib (4 of them alive at once, estimated), so that
the benchmark does not exhaust a shared machine; the table says so.

Targets (measured in the same run): tiled peak memory linear in n (a constant amount per added
token: the output and the running statistics, on top of the fixed-size tiles), and <= 1/8 of
the naive path's at n = 4096; tiled time <= 3x the fused path's at n = 4096.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from attn_course.attention import causal_mask, scaled_dot_product_attention
from attn_course.tiled import peak_memory, tiled_attention

NUM_HEADS, HEAD_DIM, BLOCK_SIZE, TARGET_AT = 12, 64, 256, 4096
MEMORY_TARGET, TIME_TARGET = 1 / 8, 3.0


def paths(num_tokens: int) -> dict[str, Callable[..., torch.Tensor]]:
    """The three ways to compute causal attention, each a function of (q, k, v)."""
    mask = causal_mask(num_tokens)
    return {
        "naive": lambda q, k, v: scaled_dot_product_attention(q, k, v, mask)[0],
        "fused": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "tiled": lambda q, k, v: tiled_attention(q, k, v, causal=True, block_size=BLOCK_SIZE),
    }


def measure(num_tokens: int, repeats: int, clock, naive_limit: float) -> dict[str, tuple]:
    """Path -> (median seconds, peak extra bytes), or None for a skipped path."""
    torch.manual_seed(num_tokens)
    q, k, v = (torch.randn(1, NUM_HEADS, num_tokens, HEAD_DIM) for _ in range(3))
    fns = paths(num_tokens)
    if 4 * NUM_HEADS * num_tokens**2 * 4 > naive_limit:
        del fns["naive"]
    reference = fns["fused"](q, k, v)
    results: dict[str, tuple | None] = {"naive": None}
    for name, fn in fns.items():
        torch.testing.assert_close(fn(q, k, v), reference, rtol=1e-4, atol=1e-5, msg=name)
        times = []
        for _ in range(repeats):
            start = clock()
            fn(q, k, v)
            times.append(clock() - start)
        results[name] = (statistics.median(times), peak_memory(fn, q, k, v))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="n = 512 ... 2048 only")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per path and n")
    parser.add_argument("--naive-limit-gib", type=float, default=8.0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    lengths = [512, 1024, 2048] if args.quick else [512, 1024, 2048, 4096, 8192]
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), causal, batch 1, {NUM_HEADS} heads "
        f"of {HEAD_DIM}, block_size {BLOCK_SIZE}, {args.repeats} repeats, clock: "
        f"{'thread CPU time' if args.threads == 1 else 'wall time'}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    with torch.no_grad():
        table = {n: measure(n, args.repeats, clock, args.naive_limit_gib * 2**30) for n in lengths}
    names = ("naive", "fused", "tiled")
    for title, column, fmt in (
        ("median time (s)", 0, "{:>12.3f}"),
        ("peak extra memory (MiB)", 1, "{:>12.1f}"),
    ):
        print(f"\n{title}\n{'n':>6}" + "".join(f"{name:>12}" for name in names))
        for n, row in table.items():
            cells = [
                fmt.format(row[name][column] / (2**20 if column else 1))
                if row[name]
                else f"{'skipped':>12}"
                for name in names
            ]
            print(f"{n:>6}" + "".join(cells))
    # Linear (a + b n) means the same extra memory per added token between any two lengths.
    print("\nextra peak memory per added token between consecutive n (KiB per token)")
    for name in names:
        known = [n for n in lengths if table[n][name]]
        steps = [
            (table[n2][name][1] - table[n1][name][1]) / (n2 - n1) / 2**10
            for n1, n2 in zip(known, known[1:], strict=False)
        ]
        print(f"{name:>6}: " + "  ".join(f"{step:8.1f}" for step in steps))
    if TARGET_AT in table:
        row = table[TARGET_AT]
        time_ratio = row["tiled"][0] / row["fused"][0]
        verdict = "PASS" if time_ratio <= TIME_TARGET else "MISS"
        print(f"n={TARGET_AT}: tiled / fused time {time_ratio:.2f} (target <= 3) {verdict}")
        if row["naive"]:
            memory_ratio = row["tiled"][1] / row["naive"][1]
            verdict = "PASS" if memory_ratio <= MEMORY_TARGET else "MISS"
            print(
                f"n={TARGET_AT}: tiled / naive peak memory {memory_ratio:.4f} "
                f"(target <= {MEMORY_TARGET:.3f}) {verdict}"
            )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Speed and memory of the course's attention modules against PyTorch and the plain lecture code.

Run: ``.venv/bin/python benchmarks/bench_attention.py [--quick] [--threads N]``

Inference only (``eval()`` and ``torch.no_grad()``) on the CPU, GPT-2 small sizes (d = 768,
12 heads of 64), batch 1, growing sequence lengths. Every implementation holds the same
weights and the script checks that they agree before timing anything. Within each repeat the
implementations run one after the other, in an order that rotates between repeats, so that
drift of a shared machine hits them all alike; the table shows medians.

Time: with one thread (the default) the CPU time of the calling thread, which is where torch
computes then; other processes on a shared machine barely disturb it. With --threads > 1 the
wall-clock time.

Peak memory: the largest amount of tensor memory alive at once during one forward pass, on top
of what was alive before it (the input and the weights): torch.profiler's raw allocation and
free records (``profile_memory=True``) replayed in time order, scratch buffers inside a kernel
included. For scale, the (b, num_heads, T, T) attention weights alone take 12 * T^2 * 4 bytes
(12 MiB at T = 512, 48 MiB at T = 1024).

Targets (ratios of medians measured in the same run):
* MultiHeadAttentionSDPA / torch.nn.MultiheadAttention (its fused fast path) <= 1.10
* MultiHeadAttention / the plain lecture code (validation and kept weights cost nothing) <= 1.10
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from attn_course.attention import (
    MultiHeadAttention,
    MultiHeadAttentionSDPA,
    MultiHeadAttentionWrapper,
    causal_mask,
    copy_wrapper_weights,
)
from attn_course.tiled import peak_memory

D_MODEL, NUM_HEADS, DROPOUT = 768, 12, 0.1
TARGET = 1.10
RATIOS = [
    ("MultiHeadAttentionSDPA", "nn.MultiheadAttention"),
    ("MultiHeadAttention", "plain lecture code"),
]


class PlainLectureMHA(nn.Module):
    """The lecture's MultiHeadAttention, plainly: no input checks, attention weights not kept.

    The mask is stored as bool (the lecture converts a float mask with ``.bool()`` on every
    call); otherwise the arithmetic is the lecture's, step by step.
    """

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)  # (b, num_tokens, h, head_dim)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, num_tokens, d_out)


def build(context_length: int) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Every implementation, in eval mode, all computing the wrapper's heads."""
    torch.manual_seed(123)
    wrapper = MultiHeadAttentionWrapper(
        D_MODEL, D_MODEL // NUM_HEADS, context_length, DROPOUT, NUM_HEADS
    )
    mha = MultiHeadAttention(D_MODEL, D_MODEL, context_length, DROPOUT, NUM_HEADS)
    copy_wrapper_weights(wrapper, mha)  # out_proj becomes the identity (a full matmul still)
    sdpa = MultiHeadAttentionSDPA(D_MODEL, D_MODEL, context_length, DROPOUT, NUM_HEADS)
    sdpa.load_state_dict(mha.state_dict())
    plain = PlainLectureMHA(D_MODEL, D_MODEL, context_length, DROPOUT, NUM_HEADS)
    plain.load_state_dict(mha.state_dict())
    ref = nn.MultiheadAttention(D_MODEL, NUM_HEADS, dropout=DROPOUT, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([mha.W_query.weight, mha.W_key.weight, mha.W_value.weight])
        )
        ref.in_proj_bias.zero_()
        ref.out_proj.load_state_dict(mha.out_proj.state_dict())
    mask = causal_mask(context_length)  # True = not allowed, the meaning nn.MultiheadAttention uses

    def torch_mha(x):
        num_tokens = x.shape[1]
        return ref(
            x, x, x, attn_mask=mask[:num_tokens, :num_tokens], need_weights=False, is_causal=True
        )[0]

    for module in (wrapper, mha, sdpa, plain, ref):
        module.eval()
    return {
        "MultiHeadAttentionWrapper": wrapper,
        "MultiHeadAttention": mha,
        "MultiHeadAttentionSDPA": sdpa,
        "nn.MultiheadAttention": torch_mha,
        "plain lecture code": plain,
    }


def measure(
    lengths: list[int], repeats: int, clock: Callable[[], float]
) -> dict[int, dict[str, tuple[float, int]]]:
    """For each length and implementation: (median seconds, peak bytes)."""
    implementations = build(max(lengths))
    names = list(implementations)
    results = {}
    for num_tokens in lengths:
        torch.manual_seed(num_tokens)
        x = torch.randn(1, num_tokens, D_MODEL)
        expected = implementations["MultiHeadAttentionWrapper"](x)
        for name, fn in implementations.items():  # same numbers first; also the warm-up
            torch.testing.assert_close(fn(x), expected, atol=1e-4, rtol=1e-4, msg=name)
        times = {name: [] for name in names}
        for repeat in range(repeats):
            for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
                start = clock()
                implementations[name](x)
                times[name].append(clock() - start)
        results[num_tokens] = {
            name: (statistics.median(times[name]), peak_memory(implementations[name], x))
            for name in names
        }
    return results


def report(results: dict[int, dict[str, tuple[float, int]]]) -> None:
    """Print the time, memory and ratio tables."""
    names = list(next(iter(results.values())))
    width = max(len(n) for n in names)
    header = f"{'':<{width}}" + "".join(f"{f'T={t}':>11}" for t in results)
    for title, column, fmt in (
        ("median time per forward pass (ms)", 0, lambda v: f"{v * 1e3:11.2f}"),
        (
            "peak extra tensor memory during one forward pass (MiB)",
            1,
            lambda v: f"{v / 2**20:11.1f}",
        ),
    ):
        print(f"\n{title}\n{header}")
        for name in names:
            print(f"{name:<{width}}" + "".join(fmt(results[t][name][column]) for t in results))
    print(f"\ntime ratios (target <= {TARGET:.2f})")
    for numerator, denominator in RATIOS:
        label = f"{numerator} / {denominator}"
        print(f"\n{label}\n{'T':>6} {'ratio':>7}  result")
        for t, row in results.items():
            ratio = row[numerator][0] / row[denominator][0]
            print(f"{t:>6} {ratio:>7.3f}  {'PASS' if ratio <= TARGET else 'MISS'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="fewer lengths and repeats")
    parser.add_argument("--repeats", type=int, help="timed calls per implementation and length")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lengths = [64, 128, 256] if args.quick else [64, 128, 256, 512, 1024]
    repeats = args.repeats or (5 if args.quick else 11)
    print(
        f"torch {torch.__version__}, {args.threads} thread(s), batch 1, d={D_MODEL}, "
        f"{NUM_HEADS} heads of {D_MODEL // NUM_HEADS}, eval + no_grad, {repeats} repeats, "
        f"clock: {'thread CPU time' if args.threads == 1 else 'wall time'}"
    )
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    with torch.no_grad():
        report(measure(lengths, repeats, clock))


if __name__ == "__main__":
    main()

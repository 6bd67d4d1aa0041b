"""Checks of 02_multihead_wrapper: the wrapper of independent heads, its shape and size."""

from __future__ import annotations

from typing import cast

import torch

from ....attention import CausalAttention, MultiHeadAttentionWrapper
from ....blocks import count_parameters
from ..expect import expect_answer, expect_like_reference, randn, seeded
from ..hints import HINTS
from ..registry import register
from ..shared_checks import DROPOUT, causal_mistakes

NOTEBOOK = "02_multihead_wrapper"
# The wrapper the prediction tasks ask about, and its input.
WRAPPER_ARGS = (3, 2, 6, 0.0, 3)  # d_in, d_out (per head), context_length, dropout, num_heads
BATCH_SHAPE = (2, 6, 3)
# The wrapper whose parameters exercise 3 counts: every factor of num_heads x 3 projections x
# d_in x d_out differs (4, 3, 5, 2), so a formula that reads one factor for another is wrong.
COUNT_ARGS = (5, 2, 6, 0.0, 4)  # d_in, d_out (per head), context_length, dropout, num_heads


def _wrapper_mistakes(ref: MultiHeadAttentionWrapper, x: torch.Tensor) -> dict:
    """Each classic attention mistake made in every head, heads concatenated."""
    per_head = [causal_mistakes(cast(CausalAttention, head), x) for head in ref.heads]
    return {name: torch.cat([head[name] for head in per_head], dim=-1) for name in per_head[0]}


@register("multi_head_wrapper", NOTEBOOK, time_limit=10.0)
def check_multi_head_wrapper(cls: type) -> str:
    """A class with MultiHeadAttentionWrapper's signature, same outputs as the lecture's."""
    configs = [  # d_in, d_out, context_length, num_heads, qkv_bias, b, num_tokens
        (3, 2, 6, 2, False, 2, 6),
        (4, 3, 8, 3, True, 1, 5),
        (5, 4, 4, 1, False, 3, 4),
        (2, 2, 3, 2, False, 1, 1),
    ]
    for i, (d_in, d_out, ctx, num_heads, bias, b, num_tokens) in enumerate(configs):
        expect_like_reference(
            cls,
            MultiHeadAttentionWrapper,
            (d_in, d_out, ctx, DROPOUT, num_heads, bias),
            [(randn(b, n, d_in, seed=70 + 10 * i + n),) for n in sorted({num_tokens, ctx})],
            seed=60 + i,
            mistakes_of=_wrapper_mistakes,
            dropout_hint=HINTS["dropout_attention"],
            dropout=i < 2,
        )
    return "same outputs as the lecture's wrapper, 1 to 3 heads."


@register("wrapper_output_shape", NOTEBOOK, time_limit=5.0)
def check_wrapper_output_shape(answer: object) -> str:
    """Output shape of MultiHeadAttentionWrapper(*WRAPPER_ARGS) on a (2, 6, 3) batch."""
    with seeded(0), torch.no_grad():
        want = tuple(MultiHeadAttentionWrapper(*WRAPPER_ARGS)(torch.zeros(BATCH_SHAPE)).shape)
    return expect_answer(
        answer,
        want,
        "the wrapper's output shape",
        {
            (
                2,
                6,
                2,
            ): "d_out is the width of ONE head; the wrapper concatenates num_heads of them.",
            (2, 6, 3): "The output width is not d_in: each head projects to d_out.",
        },
    )


@register("wrapper_parameter_count", NOTEBOOK, time_limit=5.0)
def check_wrapper_parameter_count(answer: object) -> str:
    """Trainable parameters of MultiHeadAttentionWrapper(*COUNT_ARGS)."""
    d_in, d_out, context_length, _, num_heads = COUNT_ARGS
    with seeded(0):
        want = count_parameters(MultiHeadAttentionWrapper(*COUNT_ARGS))
    per_head = 3 * d_in * d_out  # W_query, W_key, W_value, each d_in -> d_out
    width = num_heads * d_out
    return expect_answer(
        answer,
        want,
        "the wrapper's parameter count",
        {
            per_head: "That is one head; every head has its own W_query, W_key and W_value"
            " (and here d_out is the width of one head, not the total width).",
            num_heads * d_in * d_out: "Each head has 3 projections (W_query, W_key, W_value),"
            " not one.",
            3 * 3 * d_in * d_out: f"There are num_heads = {num_heads} heads; 3 is the number of"
            " projections in each head.",
            num_heads * num_heads * d_in * d_out: "Each head has 3 projections (W_query, W_key,"
            " W_value), not num_heads of them.",
            d_out * 3 * d_in * d_out: f"There are num_heads = {num_heads} heads, not d_out.",
            d_in * 3 * d_in * d_out: f"There are num_heads = {num_heads} heads, not d_in.",
            num_heads * 3 * d_in * num_heads: f"Each projection's output width is d_out = {d_out},"
            " not num_heads.",
            num_heads * 3 * num_heads * d_out: f"Each projection's input width is d_in = {d_in},"
            " not num_heads.",
            num_heads * 3 * d_in * width: "Each head projects to its own d_out, not to the"
            " total width num_heads * d_out.",
            want + num_heads * 3 * d_out: "You counted biases; this wrapper has none"
            " (qkv_bias=False).",
            want + width * width + width: "The wrapper has no out_proj: that is"
            " MultiHeadAttention's.",
            want + num_heads * context_length**2: "The causal masks are buffers, not trainable"
            " parameters.",
        },
    )

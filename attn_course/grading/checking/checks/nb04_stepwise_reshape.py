"""Checks of 04_stepwise_reshape: splitting a projection into heads and merging them back."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ....attention import merge_heads, split_heads
from ..expect import (
    call_explained,
    call_pure,
    expect_answer,
    expect_close,
    expect_function_gradients,
    randn,
)
from ..hints import HINTS
from ..registry import CheckFailed, register

NOTEBOOK = "04_stepwise_reshape"
SHAPES = [(2, 3, 6, 2), (1, 5, 8, 4), (3, 4, 6, 1), (2, 1, 6, 3), (1, 2, 6, 6)]  # b, T, d_out, h


@register("split_heads", NOTEBOOK, time_limit=5.0)
def check_split_heads(func: Callable[..., object]) -> str:
    """``func(x, num_heads)``: (b, num_tokens, d_out) -> (b, num_heads, num_tokens, head_dim)."""
    for i, (b, num_tokens, d_out, num_heads) in enumerate(SHAPES):
        x = randn(b, num_tokens, d_out, seed=120 + i)
        got = call_pure(func, x, num_heads)
        what = f"split_heads(x of shape {(b, num_tokens, d_out)}, num_heads={num_heads})"
        want = split_heads(x, num_heads)
        viewed = (b, num_tokens, num_heads, d_out // num_heads)
        if isinstance(got, torch.Tensor) and tuple(got.shape) == viewed != tuple(want.shape):
            raise CheckFailed(
                f"{what}: wrong shape {viewed}, expected {tuple(want.shape)}: "
                + HINTS["split_no_transpose"]
            )
        expect_close(
            got,
            want,
            what,
            {"split_reshape": x.reshape(b, num_heads, num_tokens, d_out // num_heads)},
        )
        expect_function_gradients(
            func, (x, num_heads), split_heads, f"split_heads(x of shape {tuple(x.shape)})", seed=i
        )
    return "right shape and the right numbers in every head."


@register("merge_heads", NOTEBOOK, time_limit=5.0)
def check_merge_heads(func: Callable[..., object]) -> str:
    """``func(x)``: (b, num_heads, num_tokens, head_dim) -> (b, num_tokens, d_out)."""
    for i, (b, num_tokens, d_out, num_heads) in enumerate(SHAPES):
        # As attention produces it: attn_weights @ values is contiguous in head-major order.
        x = split_heads(randn(b, num_tokens, d_out, seed=130 + i), num_heads).contiguous()
        expect_close(
            call_explained(func, x),
            merge_heads(x),
            f"merge_heads(x of shape {tuple(x.shape)})",
            {"merge_no_transpose": x.contiguous().view(b, num_tokens, d_out)},
        )
        expect_function_gradients(
            func, (x,), merge_heads, f"merge_heads(x of shape {tuple(x.shape)})", seed=i
        )
    return "merge_heads undoes split_heads exactly."


@register("split_shape", NOTEBOOK, time_limit=5.0)
def check_split_shape(answer: object) -> str:
    """Shape of the keys of the 'kid' batch (1, 3, 6) after splitting into 2 heads."""
    want = tuple(split_heads(torch.zeros(1, 3, 6), 2).shape)
    return expect_answer(
        answer,
        want,
        "the keys' shape after the split",
        {
            (1, 3, 2, 3): "That is after the view; transpose(1, 2) then groups by head.",
            (1, 2, 3, 6): "head_dim = d_out // num_heads: each head gets a slice of d_out.",
        },
    )

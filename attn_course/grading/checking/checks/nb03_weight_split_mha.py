"""Checks of 03_weight_split_mha: MultiHeadAttention, copying the wrapper's weights, its size."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ....attention import MultiHeadAttention, MultiHeadAttentionWrapper
from ....blocks import count_parameters
from ..expect import call_explained, expect_answer, expect_close, randn, salted, seeded
from ..registry import CheckFailed, register
from ..shared_checks import check_mha_class

NOTEBOOK = "03_weight_split_mha"


@register("multi_head_attention", NOTEBOOK, time_limit=5.0)
def check_multi_head_attention(cls: type) -> str:
    """A class with MultiHeadAttention's signature, same outputs as the lecture's."""
    check_mha_class(cls)
    return "same outputs as the lecture's MultiHeadAttention, 1 to 4 heads, 1 to 7 tokens."


@register("copy_wrapper_weights", NOTEBOOK, time_limit=5.0)
def check_copy_wrapper_weights(func: Callable[..., object]) -> str:
    """``func(wrapper, mha)`` makes ``mha(x)`` equal ``wrapper(x)``."""
    configs = [(3, 2, 2, False), (4, 3, 3, True), (5, 4, 1, False)]  # d_in, head_dim, heads, bias
    for i, (d_in, head_dim, num_heads, bias) in enumerate(configs):
        with seeded(salted(100 + i)):
            wrapper = MultiHeadAttentionWrapper(d_in, head_dim, 6, 0.0, num_heads, bias).eval()
            mha = MultiHeadAttention(d_in, head_dim * num_heads, 6, 0.0, num_heads, bias).eval()
        x = randn(2, 6, d_in, seed=110 + i)
        before = {name: p.clone() for name, p in wrapper.state_dict().items()}
        call_explained(func, wrapper, mha)
        if any(not torch.equal(p, before[name]) for name, p in wrapper.state_dict().items()):
            raise CheckFailed("the wrapper's weights changed: copy FROM the wrapper INTO mha.")
        with torch.no_grad():
            want, got = wrapper(x), mha(x)
            forgot_out_proj = mha.out_proj(want)
        expect_close(
            got,
            want,
            f"mha(x) after copying {num_heads} heads of width {head_dim} (bias={bias})",
            {"wrapper_out_proj": forgot_out_proj},
        )
    return "mha(x) equals wrapper(x) for 1 to 3 heads, with and without bias."


@register("mha_parameter_count", NOTEBOOK, time_limit=5.0)
def check_mha_parameter_count(answer: object) -> str:
    """Trainable parameters of MultiHeadAttention(6, 6, 3, 0.0, num_heads=2)."""
    with seeded(0):
        want = count_parameters(MultiHeadAttention(6, 6, 3, 0.0, num_heads=2))
    return expect_answer(
        answer,
        want,
        "MultiHeadAttention(6, 6, 3, 0.0, num_heads=2)'s parameter count",
        {
            108: "You left out out_proj (a 6x6 weight plus a bias).",
            144: "out_proj has a bias (nn.Linear's default), unlike the qkv projections here.",
            159: "The causal mask is a buffer, not a trainable parameter.",
        },
    )

"""Checks of 03_weight_split_mha: MultiHeadAttention, copying the wrapper's weights, its size."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...attention import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from ...blocks import count_parameters
from ..expect import (
    attention_mistakes,
    build_pair,
    call_pure,
    expect_answer,
    expect_close,
    randn,
    seeded,
)
from ..registry import CheckFailed, register

NOTEBOOK = "03_weight_split_mha"
MHA_HINTS = {
    "split_reshape": "heads split with reshape/view straight to (b, num_heads, num_tokens, "
    "head_dim), which mixes tokens and heads: view as (b, num_tokens, num_heads, head_dim), "
    "then transpose(1, 2).",
    "merge_no_transpose": "heads merged without transposing back: transpose(1, 2) to (b, "
    "num_tokens, num_heads, head_dim) before .contiguous().view(b, num_tokens, d_out).",
    "scale_d_out": "scores scaled by sqrt(d_out) instead of sqrt(head_dim): each head's dot "
    "products have head_dim terms, so divide by head_dim ** 0.5.",
    "no_out_proj": "missing out_proj: apply self.out_proj to the merged heads.",
}
MHA_CONFIGS = [  # d_in, d_out, context_length, num_heads, qkv_bias, b, num_tokens
    (3, 6, 6, 2, False, 2, 6),
    (6, 6, 3, 3, True, 2, 3),
    (5, 8, 10, 4, False, 1, 7),
    (4, 6, 5, 1, False, 3, 5),
    (3, 4, 4, 2, True, 1, 1),
]


def mha_mistakes(module: MultiHeadAttention, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mistake name -> the output of ``module`` (lecture class) on ``x`` with that mistake."""
    b, num_tokens, _ = x.shape
    num_heads, d_out = module.num_heads, module.d_out
    mask = causal_mask(num_tokens)
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)  # (b, num_tokens, d_out)
    heads = [split_heads(t, num_heads) for t in (q, k, v)]  # (b, num_heads, num_tokens, head_dim)
    context = scaled_dot_product_attention(*heads, mask)[0]  # (b, num_heads, num_tokens, head_dim)
    mixed = [t.reshape(b, num_heads, num_tokens, -1) for t in (q, k, v)]
    rescale = (module.head_dim / d_out) ** 0.5
    mistakes = {  # the multi-head mistakes first: they are the more specific diagnosis
        "split_reshape": module.out_proj(
            merge_heads(scaled_dot_product_attention(*mixed, mask)[0])
        ),
        "merge_no_transpose": module.out_proj(context.reshape(b, num_tokens, d_out)),
        "scale_d_out": module.out_proj(
            merge_heads(scaled_dot_product_attention(heads[0] * rescale, *heads[1:], mask)[0])
        ),
        "no_out_proj": merge_heads(context),
    }
    for name, (c, _) in attention_mistakes(*heads, mask).items():
        mistakes[name] = module.out_proj(merge_heads(c))
    return mistakes


def check_mha_class(
    cls: object, hints: dict[str, str] | None = None, mistakes_of: Callable = mha_mistakes
) -> None:
    """Compare ``cls`` with MultiHeadAttention on MHA_CONFIGS; ``mistakes_of(ref, x)`` diagnoses."""
    for i, (d_in, d_out, ctx, num_heads, bias, b, num_tokens) in enumerate(MHA_CONFIGS):
        args = (d_in, d_out, ctx, 0.0, num_heads, bias)
        mine, ref = build_pair(cls, MultiHeadAttention, args, seed=80 + i)
        x = randn(b, num_tokens, d_in, seed=90 + i)
        with torch.no_grad():
            want, mistakes = ref(x), mistakes_of(ref, x)
        got = call_pure(mine, x)
        what = f"{cls.__name__}{args} on input {tuple(x.shape)}"
        expect_close(got, want, what, mistakes, {**MHA_HINTS, **(hints or {})})


@register("multi_head_attention", NOTEBOOK, time_limit=5.0)
def check_multi_head_attention(cls: object) -> str:
    """A class with MultiHeadAttention's signature, same outputs as the lecture's."""
    check_mha_class(cls)
    return "same outputs as the lecture's MultiHeadAttention, 1 to 4 heads, 1 to 7 tokens."


@register("copy_wrapper_weights", NOTEBOOK, time_limit=5.0)
def check_copy_wrapper_weights(func: object) -> str:
    """``func(wrapper, mha)`` makes ``mha(x)`` equal ``wrapper(x)``."""
    configs = [(3, 2, 2, False), (4, 3, 3, True), (5, 4, 1, False)]  # d_in, head_dim, heads, bias
    for i, (d_in, head_dim, num_heads, bias) in enumerate(configs):
        with seeded(100 + i):
            wrapper = MultiHeadAttentionWrapper(d_in, head_dim, 6, 0.0, num_heads, bias).eval()
            mha = MultiHeadAttention(d_in, head_dim * num_heads, 6, 0.0, num_heads, bias).eval()
        x = randn(2, 6, d_in, seed=110 + i)
        before = {name: p.clone() for name, p in wrapper.state_dict().items()}
        call_pure(func, wrapper, mha)
        if any(not torch.equal(p, before[name]) for name, p in wrapper.state_dict().items()):
            raise CheckFailed("the wrapper's weights changed: copy FROM the wrapper INTO mha.")
        with torch.no_grad():
            want, got = wrapper(x), mha(x)
            forgot_out_proj = mha.out_proj(want)
        expect_close(
            got,
            want,
            f"mha(x) after copying {num_heads} heads of width {head_dim} (bias={bias})",
            {"out_proj": forgot_out_proj},
            {
                "out_proj": "the heads are right but the wrapper has no output projection: "
                "set mha.out_proj to the identity (weight = torch.eye(d_out), bias = 0)."
            },
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

"""Checks of 01_causal_attention: the causal mask, scaled dot-product attention, the class."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ....attention import CausalAttention, causal_mask, padding_mask, scaled_dot_product_attention
from ....blocks import count_parameters
from ..expect import (
    attention_mistakes,
    call_pure,
    expect_answer,
    expect_close,
    expect_function_gradients,
    expect_pair,
    invoke_many,
    randn,
    rng,
    seeded,
)
from ..registry import CheckFailed, register
from ..shared_checks import check_causal_class

NOTEBOOK = "01_causal_attention"


@register("causal_mask", NOTEBOOK, time_limit=5.0)
def check_causal_mask(func: Callable[..., object]) -> str:
    """``func(num_tokens)`` -> bool (T, T), True above the diagonal."""
    salted_size = int(rng(20).integers(10, 100))  # a size of this run's own
    for num_tokens in (5, 6, 1, 2, 9, salted_size, 1500):  # 1500: far beyond the lectures
        want = causal_mask(num_tokens)
        first, second = invoke_many(func, (num_tokens,), [{}, {}])
        got = first["result"]
        what = f"causal_mask({num_tokens})"
        if isinstance(got, torch.Tensor) and got.ndim == 2 and got.shape[0] < num_tokens:
            raise CheckFailed(
                f"{what} has shape {tuple(got.shape)}: build the mask for any num_tokens, not "
                "by slicing one of a fixed size."
            )
        eye = torch.eye(num_tokens, dtype=torch.bool)
        expect_close(
            got,
            want,
            what,
            mistakes={
                "causal_inverted": ~want,
                "mask_diagonal": want | eye,
                "causal_past": want.T,
                "causal_next_visible": want & ~torch.ones_like(want).triu(1).tril(1),
            },
        )
        storages = [reply.get("storage") for reply in (first, second)]
        if any(type(storage) is not int for storage in storages):  # a fact the kernel owes
            raise CheckFailed(f"the grader could not see where {what} keeps its memory.")
        if storages[0] == storages[1]:
            raise CheckFailed(
                f"two calls of {what} returned the same memory (views of one cached tensor): "
                "a caller that changes one mask in place changes the other. Build a new tensor "
                "in every call."
            )
    return "the mask hides exactly the future for every size."


def _sdpa_cases() -> list[
    tuple[str, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]
]:
    """(description, queries, keys, values, mask); every query keeps a visible key."""
    cases = []
    shapes = [  # (leading dims, num_queries, num_keys, head_dim, d_v, mask kind)
        ((), 5, 5, 4, 4, None),
        ((2,), 6, 6, 8, 8, "causal"),
        ((2, 3), 4, 4, 2, 2, "causal"),
        ((3,), 3, 7, 4, 5, "padding"),
        ((1,), 1, 1, 4, 4, "causal"),
        ((1, 1), 5, 5, 3, 3, "padding"),
    ]
    for i, (lead, n_q, n_k, d, d_v, kind) in enumerate(shapes):
        q = randn(*lead, n_q, d, seed=10 + i)
        k = randn(*lead, n_k, d, seed=20 + i)
        v = randn(*lead, n_k, d_v, seed=30 + i)
        if kind == "causal":
            mask = causal_mask(n_k)
        elif kind == "padding":
            lengths = [max(1, n_k - 2 * j) for j in range(lead[0])]
            mask = padding_mask(lengths, n_k)  # (b, 1, 1, num_keys)
            mask = mask[:, 0] if len(lead) == 1 else mask  # (b, 1, num_keys) for 3-d inputs
        else:
            mask = None
        cases.append(
            (f"queries {tuple(q.shape)}, keys {tuple(k.shape)}, mask {kind}", q, k, v, mask)
        )
    return cases


@register("scaled_dot_product_attention", NOTEBOOK, time_limit=5.0)
def check_scaled_dot_product_attention(func: Callable[..., object]) -> str:
    """``func(queries, keys, values, mask=None)`` -> (context, weights); mask True = hidden."""
    for what, q, k, v, mask in _sdpa_cases():
        want_context, want_weights = scaled_dot_product_attention(q, k, v, mask)
        got = call_pure(func, q, k, v) if mask is None else call_pure(func, q, k, v, mask)
        got = expect_pair(got, (want_context, want_weights), "(context, attn_weights)")
        mistakes = attention_mistakes(q, k, v, mask)
        expect_close(
            got[1],
            want_weights,
            f"the weights for {what}",
            {n: w for n, (_, w) in mistakes.items()},
        )
        expect_close(
            got[0],
            want_context,
            f"the context for {what}",
            {n: c for n, (c, _) in mistakes.items()},
        )
        args = (q, k, v) if mask is None else (q, k, v, mask)
        expect_function_gradients(
            func, args, scaled_dot_product_attention, f"for {what}", seed=len(what)
        )
    return "weights and context match on batched, multi-head, masked and one-token inputs."


@register("causal_attention", NOTEBOOK, time_limit=5.0)
def check_causal_attention(cls: type) -> str:
    """A class with CausalAttention's signature, same outputs as the lecture's."""
    check_causal_class(cls)
    return "same outputs as the lecture's CausalAttention, with and without bias, 1 to 8 tokens."


@register("causal_attention_parameters", NOTEBOOK, time_limit=5.0)
def check_causal_attention_parameters(answer: object) -> str:
    """Trainable parameters of CausalAttention(d_in=3, d_out=2, ..., qkv_bias=True)."""
    with seeded(0):
        want = count_parameters(CausalAttention(3, 2, 6, 0.0, qkv_bias=True))
    return expect_answer(
        answer,
        want,
        "parameters of CausalAttention(3, 2, 6, 0.0, qkv_bias=True)",
        {
            18: "You forgot the biases (qkv_bias=True adds d_out per projection).",
            12: "There are three projections: query, key and value.",
            60: "The causal mask is a buffer, not a trainable parameter.",
        },
    )

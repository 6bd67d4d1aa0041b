"""Checks of 00_numpy_attention: softmax, one head and several heads in NumPy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ....attention import causal_mask
from ....data import example
from ....numpy_attention import multi_head_attention, self_attention, softmax, weightless_attention
from ..expect import (
    attention_mistakes,
    call_pure,
    expect_answer,
    expect_close,
    expect_pair,
    rng,
)
from ..hints import NUMPY_HINTS
from ..registry import register

NOTEBOOK = "00_numpy_attention"


def _rand(seed: int, *shape: int) -> np.ndarray:
    """Standard-normal float64 array from a private generator."""
    return rng(seed).standard_normal(shape)


@register("numpy_softmax", NOTEBOOK, time_limit=5.0)
def check_numpy_softmax(func: Callable[..., object]) -> str:
    """``func(x, axis=-1)``: a numerically stable softmax along ``axis``."""
    cases = [
        (_rand(1, 4, 5), -1),
        (_rand(2, 3, 4, 5), -1),
        (_rand(3, 5, 5), 0),
        (np.array([[1000.0, 1001.0, 1002.0], [-5.0, 0.0, 5.0]]), -1),
        # ranges of thousands: shifting by the min or the mean still overflows
        (np.array([[-3000.0, 0.0, 1000.0, 999.0], [2.0, -2500.0, 1.0, 2.5]]), -1),
        (1500.0 * _rand(4, 3, 6), -1),
        (np.array([[800.0, -2000.0], [-1500.0, 700.0], [0.0, 1.0]]), 0),
    ]
    for x, axis in cases:
        what = f"softmax of an array {x.shape} along axis={axis}"
        got = call_pure(func, x) if axis == -1 else call_pure(func, x, axis=axis)
        with np.errstate(over="ignore", invalid="ignore"):
            e_x = np.exp(x)
            shifted = {  # the shift is right only when it is the max
                name: np.exp(x - shift(x, axis=axis, keepdims=True))
                for name, shift in (("shift_min", np.min), ("shift_mean", np.mean))
            }
            mistakes = {  # a plain exp fails on the earlier [1000, 1001, 1002] row already
                **{n: e / e.sum(axis=axis, keepdims=True) for n, e in shifted.items()},
                "overflow": e_x / e_x.sum(axis=axis, keepdims=True),
                "wrong_axis": softmax(x, axis=0 if axis == -1 else -1),
            }
            if x.shape[-1] == x.shape[-2] and axis == -1:
                mistakes["keepdims"] = e_x / e_x.sum(axis=axis)
        expect_close(
            got,
            softmax(x, axis=axis),
            what,
            {name: torch.from_numpy(m) for name, m in mistakes.items()},
            NUMPY_HINTS,
        )
    return "stable, and correct along any axis."


def _attention_inputs(
    seed: int, num_tokens: int, d_in: int, d_k: int, d_v: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """X, W_Q, W_K, W_V from one seed."""
    return (
        _rand(seed, num_tokens, d_in),
        _rand(seed + 1, d_in, d_k),
        _rand(seed + 2, d_in, d_k),
        _rand(seed + 3, d_in, d_v),
    )


def _numpy_mistakes(X, W_Q, W_K, W_V, causal: bool) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The attention mistakes of one head, computed in float64."""
    q, k, v = (torch.from_numpy(X @ W) for W in (W_Q, W_K, W_V))
    return attention_mistakes(q, k, v, causal_mask(X.shape[0]) if causal else None)


@register("numpy_self_attention", NOTEBOOK, time_limit=5.0)
def check_numpy_self_attention(func: Callable[..., object]) -> str:
    """``func(X, W_Q, W_K, W_V, causal=False)`` -> (output, weights), as the package's."""
    cases = [(6, 3, 2, 2, False), (4, 5, 3, 4, True), (1, 3, 2, 2, True), (7, 4, 3, 3, True)]
    for i, (num_tokens, d_in, d_k, d_v, causal) in enumerate(cases):
        inputs = _attention_inputs(10 * i, num_tokens, d_in, d_k, d_v)
        what = f"X {inputs[0].shape}, W_Q {inputs[1].shape}, W_V {inputs[3].shape}, causal={causal}"
        want_out, want_weights = self_attention(*inputs, causal=causal)
        got_out, got_weights = expect_pair(
            call_pure(func, *inputs, causal=causal), (want_out, want_weights), "(output, weights)"
        )
        mistakes = _numpy_mistakes(*inputs, causal)
        expect_close(
            got_weights,
            want_weights,
            f"weights for {what}",
            {n: w for n, (_, w) in mistakes.items()},
            NUMPY_HINTS,
        )
        expect_close(
            got_out,
            want_out,
            f"output for {what}",
            {n: o for n, (o, _) in mistakes.items()},
            NUMPY_HINTS,
        )
    return "matches the reference with and without the causal mask."


@register("numpy_multi_head_attention", NOTEBOOK, time_limit=5.0)
def check_numpy_multi_head_attention(func: Callable[..., object]) -> str:
    """``func(X, W_Q_heads, W_K_heads, W_V_heads, W_O, causal=False)`` -> (output, weights)."""
    cases = [(5, 4, 2, 2, False), (6, 6, 3, 2, True), (3, 4, 1, 4, True)]
    for i, (num_tokens, d_model, num_heads, head_dim, causal) in enumerate(cases):
        X = _rand(100 + i, num_tokens, d_model)
        W_Q_heads, W_K_heads, W_V_heads = (
            [_rand(200 + 10 * i + 3 * h + j, d_model, head_dim) for h in range(num_heads)]
            for j in range(3)
        )
        heads = (W_Q_heads, W_K_heads, W_V_heads)
        W_O = _rand(300 + i, num_heads * head_dim, d_model)
        what = f"{num_heads} heads of width {head_dim}, X {X.shape}, causal={causal}"
        want_out, want_weights = multi_head_attention(
            X, W_Q_heads, W_K_heads, W_V_heads, W_O, causal=causal
        )
        got_out, got_weights = expect_pair(
            call_pure(func, X, *heads, W_O, causal=causal),
            (want_out, want_weights),
            "(output, weights)",
        )
        concatenated = np.concatenate(
            [self_attention(X, *w, causal=causal)[0] for w in zip(*heads, strict=True)], axis=-1
        )
        expect_close(
            got_weights, want_weights, f"weights (num_heads, T, T) for {what}", hints=NUMPY_HINTS
        )
        expect_close(
            got_out,
            want_out,
            f"output for {what}",
            {"no_W_O": torch.from_numpy(concatenated)},
            NUMPY_HINTS,
        )
    return "heads, concatenation and output projection all match."


@register("numpy_weights_shape", NOTEBOOK, time_limit=5.0)
def check_numpy_weights_shape(answer: object) -> str:
    """Shape of the weights of one head for X (6, 3), W_Q and W_K (3, 2), W_V (3, 4)."""
    _, weights = self_attention(*_attention_inputs(0, 6, 3, 2, 4))
    return expect_answer(
        answer,
        weights.shape,
        "the weights' shape",
        {
            (6, 2): "The weights compare every query with every key.",
            (6, 4): "That is the output's shape.",
        },
    )


@register("weightless_attention", NOTEBOOK, time_limit=5.0)
def check_weightless_attention(func: Callable[..., object]) -> str:
    """``func(X)`` -> (context, weights): attention with no trainable weights (section 0)."""
    journey = example("journey").embeddings.double().numpy()
    cases = [journey, _rand(400, 4, 5), _rand(401, 1, 2), 0.5 * _rand(402, 7, 4)]
    for X in cases:
        what = f"X of shape {X.shape}"
        want_context, want_weights = weightless_attention(X)
        got_context, got_weights = expect_pair(
            call_pure(func, X), (want_context, want_weights), "(context, weights)"
        )
        scores = X @ X.T  # (num_tokens, num_tokens)
        weight_mistakes = {
            "weightless_scaled": softmax(scores / np.sqrt(X.shape[-1])),
            "weightless_softmax_axis": softmax(scores, axis=0),
            "weightless_no_softmax": scores,
        }
        expect_close(
            got_weights,
            want_weights,
            f"weights for {what}",
            {name: torch.from_numpy(w) for name, w in weight_mistakes.items()},
            NUMPY_HINTS,
        )
        expect_close(
            got_context,
            want_context,
            f"context vectors for {what}",
            {"weightless_transposed": torch.from_numpy(want_weights.T @ X)},
            NUMPY_HINTS,
        )
    return "scores, weights and context vectors match, the journey sentence included."

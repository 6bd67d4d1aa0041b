"""Comparisons: a learner's result against the reference's, with the hint that names the mistake.

When the two disagree, the reference is recomputed with each classic mistake built in
(``attention_mistakes`` for attention) and the mistake whose result matches the learner's
is named. Gradients are compared too (``expect_function_gradients``).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
import torch

from ...kernel import agent
from ..hints import HINTS
from ..registry import CheckFailed
from .calling import _not_implemented, invoke, learner_error
from .inputs import salted

RTOL, ATOL = 1e-4, 1e-5

# The most characters of a learner's value that a hint echoes: a hint is no channel for the
# learner's data, and no wall of text.
SHOWN_LIMIT = 80


def shown(value: object, limit: int = SHOWN_LIMIT) -> str:
    """``repr(value)`` cut to ``limit`` characters with an ellipsis: a learner's value in a hint."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def close(got: object, want: torch.Tensor) -> bool:
    """Same shape and values (NaN matches NaN), within the checks' float tolerance."""
    got = torch.as_tensor(got)
    return got.shape == want.shape and torch.allclose(
        got.to(want.dtype), want, rtol=RTOL, atol=ATOL, equal_nan=True
    )


def _describe(shape: tuple[int, ...] | torch.Size) -> str:
    return str(tuple(shape))


def expect_close(
    got: object,
    want: torch.Tensor | np.ndarray,
    what: str,
    mistakes: dict[str, torch.Tensor] | None = None,
    hints: dict[str, str] | None = None,
) -> None:
    """Fail with the most precise hint unless ``got`` equals ``want``.

    Args:
        got: the learner's result (tensor, or array when ``want`` is an array).
        want: the reference result.
        what: names the result in hints, e.g. "the attention weights for queries (2, 5, 4)".
        mistakes: mistake name -> the reference result with that mistake built in.
        hints: overrides of ``HINTS`` for this check.
    """
    kind = np.ndarray if isinstance(want, np.ndarray) else torch.Tensor
    if not isinstance(got, kind):
        raise CheckFailed(
            f"{what}: expected a {kind.__module__}.{kind.__name__}, got {type(got).__name__}."
        )
    if tuple(got.shape) != tuple(want.shape):
        raise CheckFailed(
            f"{what}: wrong shape {_describe(got.shape)}, expected {_describe(want.shape)}."
        )
    if got.dtype != want.dtype:
        mask_note = " (a boolean mask: True = hidden, not 0/1 or -inf numbers)"
        note = mask_note if want.dtype in (torch.bool, np.bool_) else ""
        raise CheckFailed(f"{what}: dtype {got.dtype}, expected {want.dtype}{note}.")
    got_t, want_t = torch.as_tensor(got).detach(), torch.as_tensor(want).detach()
    if close(got_t, want_t):
        return
    for name, variant in (mistakes or {}).items():
        variant = torch.as_tensor(variant)
        if close(got_t, variant) and not close(want_t, variant):
            raise CheckFailed(f"{what}: {(hints or {}).get(name, HINTS.get(name, name))}")
    if not torch.isfinite(got_t).all() and torch.isfinite(want_t).all():
        raise CheckFailed(f"{what} {(hints or {}).get('nan', HINTS['nan'])}")
    diff = (got_t.double() - want_t.double()).abs().nan_to_num(float("inf")).max().item()
    raise CheckFailed(f"{what}: wrong values (largest difference {diff:.3g}).")


def expect_pair(got: object, want: tuple, names: str) -> tuple:
    """The learner's pair, in the reference's order; ``names`` like "(context, attn_weights)"."""
    if not (isinstance(got, tuple | list) and len(got) == 2):
        raise CheckFailed(f"return the pair {names}, in this order.")
    first, second = (torch.as_tensor(g).detach() if _is_array(g) else g for g in got)
    if _is_array(got[0]) and _is_array(got[1]):
        wants = [torch.as_tensor(w) for w in want]
        if close(first, wants[1]) and close(second, wants[0]) and not close(first, wants[0]):
            raise CheckFailed(
                f"the two results are swapped: return the pair {names}, in this order."
            )
    return tuple(got)


def _is_array(value: object) -> bool:
    return isinstance(value, torch.Tensor | np.ndarray)


def expect_answer(answer: object, want: object, what: str, hints: dict | None = None) -> str:
    """Compare a predicted value (an int, or a shape given as tuple/list/torch.Size)."""
    if isinstance(want, tuple):
        if not isinstance(answer, tuple | list | torch.Size):
            raise CheckFailed(
                f"{what}: answer with a tuple of ints like (2, 3), not {shown(answer)}."
            )
        answer = tuple(answer)
    elif isinstance(want, int):
        if not isinstance(answer, numbers.Integral) or isinstance(answer, bool):
            raise CheckFailed(
                f"{what}: answer with one whole number (an int), not {shown(answer)}."
            )
        answer = int(answer)  # NumPy integers too
    if answer == want:
        return f"{what}: {answer} is right."
    hint = (hints or {}).get(answer)
    hint = hint or "Recompute it step by step."
    raise CheckFailed(f"{what}: {shown(answer)} is not right. {hint}")


def expect_function_gradients(
    func: Callable, args: tuple, ref_func: Callable, label: str, seed: int, count: int = 99
) -> None:
    """backward() through the learner's function gives the reference's gradient for every
    float input among the first ``count`` (an answer computed under no_grad, in NumPy or
    detached fails)."""
    try:
        grads = invoke(func, args, backward_seed=salted(seed))["grads"]
    except Exception as exc:
        error = learner_error(exc)
        if error is None or _not_implemented(exc):
            raise
        raise CheckFailed(
            f"{label}: with inputs that require gradients it raises ({error}). Change no input "
            "in place (x /= s, acc *= rescale, masked_fill_ on an input): compute new tensors."
        ) from None
    want = agent.call(ref_func, args, backward_seed=salted(seed))["grads"]
    if "error" in grads:
        raise CheckFailed(f"{label}: backward() fails ({grads['error']}). {HINTS['no_autograd']}")
    pairs = list(zip(grads["inputs"], want["inputs"], strict=True))[:count]
    for i, (got, expected) in enumerate(pairs):
        if expected is not None and (got is None or not _close_gradient(got, expected)):
            raise CheckFailed(
                f"{label}: the gradient of argument {i + 1} after backward() differs from the "
                f"reference's. {HINTS['no_autograd']}"
            )


def _close_gradient(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Gradients sum many rounded terms: compared to 1e-3 of the largest one."""
    atol = ATOL + 1e-3 * want.abs().max().item() if want.numel() else ATOL
    return got.shape == want.shape and torch.allclose(got, want, rtol=RTOL, atol=atol)


def _attend(
    scores: torch.Tensor,
    mask: torch.Tensor | None,
    dim: int = -1,
    fill: float = -torch.inf,
) -> torch.Tensor:
    """Plain masked softmax attention on ready scores; returns the weights (NaN rows kept)."""
    if mask is not None:
        scores = scores.masked_fill(mask, fill)
    return torch.softmax(scores, dim=dim)


def attention_mistakes(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Mistake name -> (context, weights) of attention computed with that mistake.

    Shapes as ``attention.scaled_dot_product_attention``; ``mask`` is boolean, True = hidden.
    """
    d = keys.shape[-1]
    scores = queries @ keys.transpose(-2, -1)  # (..., num_queries, num_keys)
    weights = {
        "no_scale": _attend(scores, mask),
        "scale_by_d": _attend(scores / d, mask),
        "softmax_dim": _attend(scores / d**0.5, mask, dim=-2),
    }
    if keys.shape == values.shape:
        weights["keys_are_values"] = _attend(queries @ values.transpose(-2, -1) / d**0.5, mask)
    if queries.shape == keys.shape:
        weights["keys_queries_swapped"] = _attend((keys @ queries.transpose(-2, -1)) / d**0.5, mask)
    if mask is not None and mask.any():
        scaled = scores / d**0.5
        weights["mask_lost"] = _attend(scaled, None)
        weights["mask_inverted"] = _attend(scaled, ~mask)
        weights["zero_fill"] = _attend(scaled, mask, fill=0.0)
        weights["mask_after_softmax"] = _attend(scaled, None).masked_fill(mask, 0.0)
        if scores.shape[-1] == scores.shape[-2]:
            eye = torch.eye(scores.shape[-1], dtype=torch.bool)
            weights["mask_diagonal"] = _attend(scaled, mask | eye)
    return {name: (w @ values, w) for name, w in weights.items()}

"""Comparison helpers shared by the checks: seeded inputs, tensor comparisons, mistake variants.

A check compares the learner's object with the package's reference on fixed seeds. When
the two disagree it recomputes the reference with each classic mistake built in
(``attention_mistakes``) and names the mistake whose result matches the learner's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from .registry import CheckFailed

__all__ = [
    "HINTS",
    "seeded",
    "randn",
    "call_pure",
    "close",
    "expect_close",
    "expect_answer",
    "build_pair",
    "attention_mistakes",
]

RTOL, ATOL = 1e-4, 1e-5

# Mistake name -> the hint a learner sees when their result matches that mistake.
HINTS: dict[str, str] = {
    "no_scale": "missing the 1/sqrt(head_dim) scaling: divide the scores by "
    "keys.shape[-1] ** 0.5 before the softmax.",
    "scale_by_d": "the scores are divided by head_dim instead of sqrt(head_dim).",
    "softmax_dim": "softmax over the wrong dim: the columns sum to 1 instead of the rows; "
    "use softmax(..., dim=-1) so each query's weights over the keys sum to 1.",
    "mask_lost": "the mask is not applied. Is it applied in place? masked_fill returns a new "
    "tensor; use masked_fill_ or assign the result (scores = scores.masked_fill(...)).",
    "mask_inverted": "mask inverted: True means HIDDEN in this course, so fill the scores "
    "where the mask is True (not where it is False).",
    "mask_diagonal": "mask off by one: the diagonal is hidden too, but a token may attend to "
    "itself; torch.triu(..., diagonal=1) keeps the diagonal visible.",
    "zero_fill": "hidden scores are set to 0 instead of -inf: exp(0) = 1, so hidden keys "
    "still get weight. Fill with -torch.inf.",
    "mask_after_softmax": "the mask is applied after the softmax: the rows no longer sum to 1. "
    "Mask the scores with -inf BEFORE the softmax.",
    "keys_are_values": "the scores use the values instead of the keys: they must be "
    "queries @ keys.transpose(-2, -1).",
    "keys_queries_swapped": "the scores are keys @ queries^T (transposed): "
    "use queries @ keys.transpose(-2, -1) so row i belongs to query i.",
}


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global RNG seeded, then restore the learner's RNG state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard-normal tensor from a private generator (the global RNG is untouched)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _snapshot(value: object) -> object:
    if isinstance(value, torch.Tensor | np.ndarray):
        return value.clone() if isinstance(value, torch.Tensor) else value.copy()
    return None


def call_pure(func: Callable, *args: object, **kwargs: object) -> object:
    """Call ``func`` and fail with a hint if it changed one of its tensor/array arguments."""
    inputs = list(args) + list(kwargs.values())
    before = [_snapshot(a) for a in inputs]
    with torch.no_grad():
        result = func(*args, **kwargs)
    for i, (arg, old) in enumerate(zip(inputs, before, strict=True)):
        if old is not None and not np.array_equal(np.asarray(arg), np.asarray(old)):
            raise CheckFailed(
                f"your function changed its input tensor in place (argument {i + 1}); "
                "work on new tensors (e.g. x = x / s instead of x /= s, masked_fill instead "
                "of masked_fill_ on an input)."
            )
    return result


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
    if not torch.isfinite(got_t).all():
        bad = "NaN" if torch.isnan(got_t).any() else "inf"
        raise CheckFailed(
            f"{what} contains {bad} where the reference has none. A row with every score "
            "-inf gives NaN after the softmax; overflowing exp gives inf."
        )
    diff = (got_t.double() - want_t.double()).abs().nan_to_num(float("inf")).max().item()
    raise CheckFailed(f"{what}: wrong values (largest difference {diff:.3g}).")


def expect_answer(answer: object, want: object, what: str, hints: dict | None = None) -> str:
    """Compare a predicted value (an int, or a shape given as tuple/list/torch.Size)."""
    if isinstance(want, tuple):
        if not isinstance(answer, tuple | list | torch.Size):
            raise CheckFailed(f"{what}: answer with a tuple of ints like (2, 3), not {answer!r}.")
        answer = tuple(answer)
    if answer == want:
        return f"{what}: {answer} is right."
    hint = (hints or {}).get(answer)
    raise CheckFailed(f"{what}: {answer!r} is not right. {hint or 'Recompute it step by step.'}")


def _align_parameters(mine: nn.Module, ref: nn.Module, config: str) -> None:
    """Copy ``ref``'s parameters into ``mine`` by name (fails with a hint if they differ)."""
    ref_params, my_params = dict(ref.named_parameters()), dict(mine.named_parameters())
    if ref_params.keys() != my_params.keys():
        missing = sorted(ref_params.keys() - my_params.keys())
        extra = sorted(my_params.keys() - ref_params.keys())
        raise CheckFailed(
            f"for {config} your module's parameters differ from the lecture's: missing "
            f"{missing}, unexpected {extra}. Use the lecture's submodule names (and one module "
            "per head: [module] * n repeats the SAME module) so the weights can be compared."
        )
    for name, ref_p in ref_params.items():
        if my_params[name].shape != ref_p.shape:
            raise CheckFailed(
                f"for {config} parameter {name} has shape {_describe(my_params[name].shape)}, "
                f"expected {_describe(ref_p.shape)} (nn.Linear(in, out).weight is (out, in))."
            )
    with torch.no_grad():
        for name, ref_p in ref_params.items():
            my_params[name].copy_(ref_p)


def build_pair(
    learner_cls: type, ref_cls: type, args: tuple, seed: int
) -> tuple[nn.Module, nn.Module]:
    """Construct the learner's and the reference module with ``args``; same weights; eval mode.

    Both are built after ``torch.manual_seed(seed)``; the reference's parameters are then
    copied into the learner's by name, so a different creation order is no failure.
    """
    if not isinstance(learner_cls, type):
        raise CheckFailed(f"pass the class itself (e.g. {ref_cls.__name__}), not an instance.")
    config = f"{learner_cls.__name__}{args}"
    with seeded(seed):
        ref = ref_cls(*args)
    with seeded(seed):
        mine = learner_cls(*args)
    if not isinstance(mine, nn.Module):
        raise CheckFailed(f"{learner_cls.__name__} must subclass torch.nn.Module.")
    _align_parameters(mine, ref, config)
    return mine.eval(), ref.eval()


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

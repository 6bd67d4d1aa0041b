"""Calling learner code: through the object's session, with its errors explained.

``invoke`` and ``invoke_many`` call a learner's function or module where it lives
(``local.session_of``) and return ``agent.call``'s replies; ``call_pure`` also fails when the
call changed an input tensor, replaced a module's parts or hooked it; ``learner_error`` reads
an exception of the learner's code the same way on both paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch import nn

from ...kernel.local import session_of
from ...kernel.remote import LearnerError
from ..errors import caused_by, describe_error
from ..hints import HINTS
from ..registry import CheckFailed


def invoke(func: object, args: tuple, kwargs: dict | None = None, **options: object) -> dict:
    """Call the learner's ``func`` through its session; ``agent.call``'s reply (``result``...)."""
    return session_of(func).call(func, tuple(args), kwargs, **options)


def invoke_many(func: object, args: tuple, options: list[dict]) -> Iterator[dict]:
    """Several calls of ``func`` on ``args`` (one request: one round trip to a kernel), in order.

    Yields each call's reply; the call that raised raises when its turn comes.
    """
    batch = [{"args": tuple(args), "options": option} for option in options]
    for reply in session_of(func).request("calls", func, batch):
        if "exception" in reply:
            raise LearnerError.from_record(reply["exception"])
        yield reply


def memory_grown_past(reply: dict, limit: float) -> int | None:
    """The bytes the learner's kernel grew by during a ``peak_memory=True`` call, when at
    least ``limit``; else None (also where nothing was measured: a local check)."""
    grown = reply.get("peak_memory")
    return grown if isinstance(grown, int) and grown >= limit else None


def learner_error(exc: BaseException) -> str | None:
    """``"Kind: message (in func, line N: source)"`` of an exception raised by the learner's
    code, local or remote (the kernel's agent already described it the same way)."""
    if isinstance(exc, LearnerError):
        return exc.message
    return None if isinstance(exc, CheckFailed) else describe_error(exc)


def _snapshot(value: object) -> object:
    if isinstance(value, torch.Tensor | np.ndarray):
        return value.clone() if isinstance(value, torch.Tensor) else value.copy()
    if isinstance(value, list):
        return list(value)
    return None


def call_pure(func: Callable, *args: object, **kwargs: object) -> object:
    """Call ``func`` and fail with a hint if it changed one of its tensor/array arguments.

    Module arguments may change (that is how a function fills a module's weights), and so
    may other objects (a KV cache): their state after the call is copied back into the
    grader's objects (where the call ran in this process, they are those objects already).
    """
    return call_pure_reply(func, args, kwargs)["result"]


def call_pure_reply(func: Callable, args: tuple, kwargs: dict | None = None, **options) -> dict:
    """``call_pure`` returning ``agent.call``'s whole reply (``options`` go to the call).

    A module argument must come back with the same parameters and buffers (names and
    shapes) and no forward hooks: only its values may change. The check reads the module's
    state, which is all the grade command gets back from the learner's kernel, so a
    replaced submodule or a hook is refused here, in the notebook and in the grade alike.
    """
    kwargs = kwargs or {}
    inputs = list(args) + list(kwargs.values())
    before = [_snapshot(a) for a in inputs]
    structures = [_structure(a.state_dict()) if isinstance(a, nn.Module) else {} for a in inputs]
    reply = invoke(func, args, kwargs, **options)
    for arg, after, structure in zip(inputs, reply["after"], structures, strict=True):
        if isinstance(arg, nn.Module):
            _expect_same_structure(structure, after)
            arg.load_state_dict(after["__state__"])
        elif isinstance(after, dict) and "__vars__" in after:
            vars(arg).update(after["__vars__"])
    for i, (after, old) in enumerate(zip(reply["after"], before, strict=True)):
        if isinstance(old, list) and not _same_items(after, old):
            raise CheckFailed(
                f"your function changed its input list in place (argument {i + 1}): leave it "
                "unchanged and build a new list (new = [] then new.append(...), or "
                "new = list(old) before changing new)."
            )
    afters = [a if isinstance(a, torch.Tensor | np.ndarray) else None for a in reply["after"]]
    for i, (after, old) in enumerate(zip(afters, before, strict=True)):
        if old is not None and not isinstance(old, list) and not _same(after, old):
            raise CheckFailed(
                f"your function changed its input tensor in place (argument {i + 1}); "
                "work on new tensors (e.g. x = x / s instead of x /= s, masked_fill instead "
                "of masked_fill_ on an input)."
            )
    return reply


def _structure(state: dict) -> dict[str, tuple[int, ...]]:
    return {name: tuple(value.shape) for name, value in state.items()}


def _expect_same_structure(want: dict, after: dict) -> None:
    """The module a function changed (``agent._after``) kept its structure and has no hooks."""
    if after["__hooks__"]:
        raise CheckFailed(
            "your function registered a forward hook on the model: change the weights "
            "themselves instead (a hook is not part of the model's state: it is lost when the "
            "model is saved and loaded, and it is not what the lecture does)."
        )
    got = _structure(after["__state__"])
    if got != want:
        raise CheckFailed(
            "copy the values into the module's existing parameters (with torch.no_grad(): "
            "weight[...] = 0.0 or weight.copy_(...)); do not replace its submodules or "
            "parameters (e.g. out_proj = nn.Identity()): "
            + _difference(sorted(want.keys() - got.keys()), sorted(got.keys() - want.keys()))
        )


def _difference(missing: list[str], extra: list[str]) -> str:
    parts = [f"{label} {names}" for label, names in (("missing", missing), ("new", extra)) if names]
    return (", ".join(parts) or "parameter shapes changed") + "."


# Words of an error the learner's code raises -> the hint that explains it.
ERROR_HINTS = {
    ("leaf Variable", "requires grad"): "no_grad_in_place",
    ("contiguous", "view size"): "view_not_contiguous",
}


# Words of an error raised in a module's forward (all of them, the learner's line included)
# -> the hint that explains it.
FORWARD_ERROR_HINTS = {
    ("must match the size of tensor", "mask"): "mask_not_sliced",
    ("view size is not compatible",): "view_not_contiguous",
    ("shape '[", "is invalid for input of size"): "view_sizes",
    ("shapes cannot be multiplied",): "linear_width",
}


def _explain_forward_error(label: str, exc: BaseException) -> None:
    """Fail with a hint when the learner's forward raised an error ``FORWARD_ERROR_HINTS``
    knows; otherwise return (the error stands as it is)."""
    error = learner_error(exc)
    for words, name in FORWARD_ERROR_HINTS.items():
        if error and all(word in error for word in words):
            raise CheckFailed(f"{label}: {error}. {HINTS[name]}") from None


def call_explained(func: Callable, *args: object) -> object:
    """``call_pure``; an error of the learner's code that ``ERROR_HINTS`` knows fails the
    check with that hint (the code is called as the learner calls it, e.g. without
    ``torch.no_grad()``)."""
    try:
        return call_pure(func, *args)
    except Exception as exc:
        error = learner_error(exc) or ""
        for words, name in ERROR_HINTS.items():
            if any(word in error for word in words):
                raise CheckFailed(HINTS[name]) from None
        raise


def _same_items(after: object, old: list) -> bool:
    """A list argument after the call holds the same items (arrays and tensors by value)."""
    if not isinstance(after, list) or len(after) != len(old):
        return False
    return all(
        _same(a, o) if isinstance(o, torch.Tensor | np.ndarray) else a == o
        for a, o in zip(after, old, strict=True)
    )


def _same(after: object, old: object) -> bool:
    after = after.detach() if isinstance(after, torch.Tensor) else after
    old = old.detach() if isinstance(old, torch.Tensor) else old
    return np.array_equal(np.asarray(after), np.asarray(old), equal_nan=True)


def _not_implemented(exc: BaseException) -> bool:
    return (isinstance(exc, LearnerError) and exc.not_implemented) or caused_by(
        exc, NotImplementedError
    )

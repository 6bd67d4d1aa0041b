"""Comparison helpers shared by the checks: seeded inputs, tensor comparisons, mistake variants.

A check compares the learner's object with the package's reference on seeded inputs. When
the two disagree it recomputes the reference with each classic mistake built in
(``attention_mistakes``) and names the mistake whose result matches the learner's.

Every helper takes the learner's object either as itself (``check()`` in the notebook) or
as a ``remote.Remote`` proxy (official grading: the object stays in the learner's kernel,
only data comes back), and reaches it through its session (``local.session_of``): the same
requests and replies either way. Official grading also sets ``SALT``, a secret added to every seed,
so the inputs cannot be known in advance.
"""

from __future__ import annotations

import inspect
import numbers
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import agent
from .context import SALT
from .errors import caused_by, describe_error
from .hints import HINTS
from .local import session_of
from .registry import CheckFailed
from .remote import LearnerError

__all__ = [
    "HINTS",
    "SALT",
    "seeded",
    "salted",
    "randn",
    "rng",
    "invoke",
    "invoke_many",
    "call_pure",
    "call_pure_reply",
    "call_explained",
    "learner_error",
    "expect_module",
    "expect_like_reference",
    "close",
    "expect_close",
    "expect_answer",
    "expect_pair",
    "expect_function_gradients",
    "build_pair",
    "attention_mistakes",
]

RTOL, ATOL = 1e-4, 1e-5

RNG_LOCK = threading.RLock()  # around every use of torch's global RNG


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global RNG seeded, then restore the learner's RNG state.

    Holds ``RNG_LOCK``: the grade command runs checks of several notebooks in threads.
    """
    with RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def salted(seed: int) -> int:
    """``seed`` plus the grading run's secret (0 in the notebook)."""
    return seed + SALT.get()


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard-normal tensor from a private generator (the global RNG is untouched)."""
    generator = torch.Generator().manual_seed(salted(seed))
    return torch.randn(*shape, generator=generator, dtype=dtype)


def rng(seed: int) -> np.random.Generator:
    """A NumPy generator for the inputs of the NumPy exercises (salted like ``randn``)."""
    return np.random.default_rng(salted(seed))


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
    afters = [a if isinstance(a, torch.Tensor | np.ndarray) else None for a in reply["after"]]
    for i, (after, old) in enumerate(zip(afters, before, strict=True)):
        if old is not None and not _same(after, old):
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


def _same(after: object, old: object) -> bool:
    after = after.detach() if isinstance(after, torch.Tensor) else after
    old = old.detach() if isinstance(old, torch.Tensor) else old
    return np.array_equal(np.asarray(after), np.asarray(old), equal_nan=True)


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
            raise CheckFailed(f"{what}: answer with a tuple of ints like (2, 3), not {answer!r}.")
        answer = tuple(answer)
    elif isinstance(want, int):
        if not isinstance(answer, numbers.Integral) or isinstance(answer, bool):
            raise CheckFailed(f"{what}: answer with one whole number (an int), not {answer!r}.")
        answer = int(answer)  # NumPy integers too
    if answer == want:
        return f"{what}: {answer} is right."
    hint = (hints or {}).get(answer)
    raise CheckFailed(f"{what}: {answer!r} is not right. {hint or 'Recompute it step by step.'}")


def _perturb(module: nn.Module, seed: int) -> None:
    """Move every parameter away from its initial value (two fresh LayerNorms look alike)."""
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.add_(0.5 * randn(*p.shape, seed=seed * 1000 + i))


def _parameter_hint(name: str, config: str, mine: dict, ref_info: dict, qkv_bias: bool) -> str:
    """Name the mistake behind parameter names that differ from the lecture's."""
    ref_params, my_params = ref_info["parameters"], mine["parameters"]
    missing = sorted(ref_params.keys() - my_params.keys())
    extra = sorted(my_params.keys() - ref_params.keys())
    aliases = {
        a: b for a, b in mine["aliases"].items() if any(m.startswith(a + ".") for m in missing)
    }
    if aliases:
        copy, original = next(iter(aliases.items()))
        repeated = copy.rsplit(".", 1)[-1].isdigit()
        return (
            f"for {config} your {name}'s {copy} is the same module as its {original}, so they "
            "share one set of parameters: "
            + (
                "a list built as [module] * n holds the SAME module n times; create one per "
                "entry ([Module(...) for _ in range(n)])."
                if repeated
                else f"create a separate module for each (self.{copy} = ... of its own, not "
                f"self.{copy} = self.{original})."
            )
        )
    as_buffers = [m for m in missing if m in mine["buffers"]]
    if as_buffers:
        return (
            f"for {config} your {name} holds {as_buffers} as buffers, not parameters: a buffer "
            "is not trained. Make it an nn.Parameter (or use the nn.Linear / module the lecture "
            "uses)."
        )
    prefixes = {m.split(".", 1)[0] for m in missing}
    unregistered = [p for p in prefixes if not any(n.startswith(p + ".") for n in my_params)]
    if unregistered and not extra:
        listed = unregistered[0]
        return (
            f"for {config} none of the parameters of your {name}'s {listed} are registered "
            f"(missing {missing[:4]}{' ...' if len(missing) > 4 else ''}): is self.{listed} a "
            "plain Python list? Modules in a list are invisible to parameters(), state_dict() "
            f"and .to(device): use nn.ModuleList([...])."
        )
    biases = [m for m in missing + extra if m.endswith(".bias")]
    if biases and len(biases) == len(missing) + len(extra):
        qkv = qkv_bias and any("W_" in b for b in biases)  # the constructor takes qkv_bias
        owners = sorted({b.rsplit(".", 1)[0] for b in biases})
        if set(biases) <= set(missing):
            advice = (
                "pass bias=qkv_bias to the query, key and value nn.Linear"
                if qkv
                else "nn.Linear has a bias by default (bias=True): do not switch it off"
            )
            return f"for {config} your {name}'s {owners} have no bias: {advice}."
        return f"for {config} your {name}'s {owners} have a bias the lecture's have not: " + (
            "pass bias=qkv_bias to the query, key and value nn.Linear." if qkv else "bias=False."
        )
    return (
        f"for {config} the parameters of your {name} differ from the lecture's: missing "
        f"{missing}, unexpected {extra}. Use the lecture's submodule names so the weights "
        "can be compared."
    )


def _describe_initial(value: torch.Tensor) -> str:
    """``torch.ones(4)``, ``torch.zeros(4)`` or "other values"."""
    shape = ", ".join(map(str, value.shape))
    for fill, maker in ((0.0, "torch.zeros"), (1.0, "torch.ones")):
        if bool((value == fill).all()):
            return f"{maker}({shape})"
    return "other values"


def build_pair(
    learner_cls: type, ref_cls: type, args: tuple, seed: int
) -> tuple[nn.Module, nn.Module]:
    """Construct the learner's and the reference module with ``args``; same weights; eval mode.

    Both are built after ``torch.manual_seed(seed)``. The parameters the reference's
    constructor fixes (constant values, e.g. LayerNorm's ones and zeros) must
    start at the same values in the learner's module. Then the reference's parameters are
    moved away from their initial values and copied into the learner's by name, so a
    different creation order is no failure. The learner's ``state_dict`` must hold the
    reference's buffers (the causal mask), as the lecture registers them, at their shapes.
    """
    if not isinstance(learner_cls, type):
        raise CheckFailed(f"pass the class itself (e.g. {ref_cls.__name__}), not an instance.")
    name = learner_cls.__name__
    config = f"{name}{args}"
    with seeded(seed):
        ref = ref_cls(*args)
    fixed = {  # constant values (ones, zeros) are the constructor's choice, not random draws
        n: p.detach().clone()
        for n, p in ref.named_parameters()
        if bool((p == p.flatten()[0]).all())
    }
    _perturb(ref, seed)
    values = {pname: p.detach() for pname, p in ref.named_parameters()}
    built = session_of(learner_cls).request("build", learner_cls, args, seed, values)
    if not built["module"]:
        raise CheckFailed(f"{name} must subclass torch.nn.Module.")
    mine, ref_info = built["instance"], agent.module_info(ref)
    ref_shapes, my_shapes = ref_info["parameters"], built["parameters"]
    if ref_shapes.keys() != my_shapes.keys():
        qkv_bias = "qkv_bias" in inspect.signature(ref_cls).parameters or any(
            hasattr(a, "qkv_bias") for a in args
        )
        raise CheckFailed(_parameter_hint(name, config, built, ref_info, qkv_bias))
    for pname, shape in ref_shapes.items():
        if tuple(my_shapes[pname]) != tuple(shape):
            raise CheckFailed(
                f"for {config} parameter {pname} has shape {_describe(my_shapes[pname])}, "
                f"expected {_describe(shape)} (nn.Linear(in, out).weight is (out, in))."
            )
    for pname, want in fixed.items():
        got = built["initial"][pname]
        if not torch.equal(got, want):
            raise CheckFailed(
                f"for {config} a new {name}'s {pname} starts as {_describe_initial(got)}, the "
                f"lecture's as {_describe_initial(want)}: a freshly built module must start "
                "there (then the layer only normalises until training changes it)."
            )
    for buffer, shape in ref_info["buffers"].items():
        if buffer not in built["state_keys"]:
            raise CheckFailed(
                f"{name}'s state_dict has no {buffer!r}: register it with "
                f"self.register_buffer({buffer.split('.')[-1]!r}, ...) so that it is saved "
                "with the weights and moves with .to(device) (a plain attribute does neither)."
            )
        if tuple(built["buffers"].get(buffer, shape)) != tuple(shape):
            raise CheckFailed(
                f"for {config} the buffer {buffer} has shape "
                f"{_describe(built['buffers'][buffer])}, expected {_describe(shape)}: build it "
                "from the constructor's arguments (the causal mask is context_length x "
                "context_length), not from fixed numbers or another argument."
            )
    return mine, ref.eval()


def _run_ref(ref: nn.Module, args: tuple, train: bool, seed: int | None) -> torch.Tensor:
    """The reference's output (first element of a tuple output) in the given mode."""
    with RNG_LOCK, torch.random.fork_rng(devices=[]), torch.no_grad():
        if seed is not None:
            torch.manual_seed(seed)
        out = ref.train(train)(*args)
    ref.eval()
    return out[0] if isinstance(out, tuple) else out


def _not_implemented(exc: BaseException) -> bool:
    return (isinstance(exc, LearnerError) and exc.not_implemented) or caused_by(
        exc, NotImplementedError
    )


def _output(reply: dict) -> object:
    out = reply["result"]
    return out[0] if isinstance(out, tuple) and out else out


def _recording_changes(replies: Iterator[dict], changed: set[str]) -> Iterator[dict]:
    """``replies`` as they come, adding each call's ``changed`` attributes to ``changed``."""
    for reply in replies:
        changed.update(reply.get("changed", []))
        yield reply


def _kept_state(changed: set[str], ref: nn.Module, args: tuple) -> list[str]:
    """The attributes the learner's forward changed (``agent.call``'s ``changed``) that the
    reference's forward leaves alone (it does rebind ``attn_weights``, for one)."""
    if not changed:
        return []
    with RNG_LOCK, torch.random.fork_rng(devices=[]):
        ref_changed = agent.call(ref.eval(), args, no_grad=True)["changed"]
    return sorted(changed - set(ref_changed))


def _kept_state_hint(kept: list[str]) -> str:
    """The advice for a module that behaves differently on a later call."""
    if not kept:
        return HINTS["longer_input"]
    return HINTS["kept_state_named"].format(names=", ".join(f"self.{name}" for name in kept))


def module_info_of(module: nn.Module) -> dict:
    """``agent.module_info`` of the learner's module, run where the module lives."""
    return session_of(module).call(agent.module_info, (module,), None)["result"]


def expect_module(
    mine: nn.Module,
    ref: nn.Module,
    calls: list[tuple],
    what: Callable[[tuple], str],
    mistakes_of: Callable[..., dict[str, torch.Tensor]] | None = None,
    hints: dict[str, str] | None = None,
    dropout_hint: str = "",
    seed: int = 0,
    dropout: bool = True,
) -> None:
    """Everything the lectures teach about a module, call after call on ONE instance.

    For each argument tuple of ``calls`` (give two lengths: a module that keeps state
    between calls shows it on the second): the eval-mode output against the reference's
    (``mistakes_of(ref, *args)`` names the likely mistake), a second eval call that must
    give the same output (dropout is off in eval), and a backward pass whose input and
    parameter gradients must match the reference's. Then, on the first call's input: dropout
    judged by what it means (``expect_dropout``, unless ``dropout`` is False: it is the
    costly part, a check runs it on two configurations; ``dropout_hint`` says where it goes)
    and the module moved to the ``meta`` device (``expect_on_meta``).
    A tuple output is compared by its first element. When a later call goes wrong, the hint
    names the attributes an earlier call changed and the reference's forward does not.
    """
    changed: set[str] = set()  # attributes the learner's forward changed, all calls so far
    for i, args in enumerate(calls):
        label = what(args)
        grad_seed = salted(seed * 100 + i)
        in_eval = {"train": False, "no_grad": True}
        replies = _recording_changes(
            invoke_many(
                mine, args, [in_eval, in_eval, {"train": False, "backward_seed": grad_seed}]
            ),
            changed,
        )
        want = _run_ref(ref, args, train=False, seed=None)
        with torch.no_grad():
            mistakes = mistakes_of(ref, *args) if mistakes_of else {}
        try:
            got = _output(next(replies))
        except Exception as exc:
            if isinstance(exc, CheckFailed) or _not_implemented(exc):
                raise
            kept = _kept_state(changed, ref, args) if i > 0 else []
            if not kept:
                _explain_forward_error(label, exc)
            if i == 0:
                raise
            raise CheckFailed(
                f"{label}: the first input worked, this second, longer one failed "
                f"({learner_error(exc)}). {_kept_state_hint(kept)}"
            ) from None
        try:
            again = _output(next(replies))
        except Exception as exc:
            raise CheckFailed(
                f"{label}: the first call worked, a second call failed ({learner_error(exc)}). "
                f"{_kept_state_hint(_kept_state(changed, ref, args))}"
            ) from None
        if isinstance(got, torch.Tensor) and not close(again, got.detach()):
            kept = _kept_state(changed, ref, args)
            raise CheckFailed(
                f"{label}: two calls in eval() mode gave different outputs. "
                + (
                    _kept_state_hint(kept)
                    if kept
                    else "Dropout must be off in eval mode: use the nn.Dropout module "
                    "(self.dropout), which model.eval() switches off, not F.dropout(..., "
                    "training=True) or a fixed dropout_p."
                )
            )
        try:
            expect_close(got, want, label, mistakes, hints)
        except CheckFailed as failure:
            kept = _kept_state(changed, ref, args) if i > 0 else []
            if not kept:
                raise
            raise CheckFailed(f"{failure} {_kept_state_hint(kept)}") from None
        _expect_gradients(next(replies)["grads"], ref, args, label, grad_seed)
    first, label = calls[0], what(calls[0])
    if dropout:
        expect_dropout(mine, ref, first, label, dropout_hint, seed)
    expect_on_meta(mine, first, label, tuple(_run_ref(ref, first, train=False, seed=None).shape))


DROPOUT_DRAWS = 1024  # training-mode outputs compared, drawn at once as a batch of copies
# A right dropout gives statistics near 1 (about 30 is a one-in-ten-million chance even
# when every output element hangs on one random draw); the mistakes give hundreds.
DROPOUT_THRESHOLD = 30.0


def _draws(module: nn.Module, args: tuple, seed: int, learner: bool) -> torch.Tensor:
    """(DROPOUT_DRAWS, outputs) training-mode outputs of ``module`` for copies of ``args``."""
    copies = tuple(
        a.repeat(DROPOUT_DRAWS, *[1] * (a.ndim - 1)) if isinstance(a, torch.Tensor) else a
        for a in args
    )
    if learner:
        out = _output(invoke(module, copies, train=True, no_grad=True, seed=seed))
    else:
        out = _run_ref(module, copies, train=True, seed=seed)
    if not isinstance(out, torch.Tensor) or out.shape[0] % DROPOUT_DRAWS:
        raise CheckFailed(
            f"in training mode the output is {type(out).__name__} {getattr(out, 'shape', '')}."
        )
    return out.detach().reshape(DROPOUT_DRAWS, -1).double()


def _same_distribution(got: torch.Tensor, want: torch.Tensor, floor: torch.Tensor) -> bool:
    """Whether two sets of draws (rows) have the same means and variances, element-wise.

    Each difference is divided by its standard error (``floor``: the float tolerance); the
    mean of the squared ratios is near 1 for draws of one distribution.
    """
    n = got.shape[0]
    mean_g, mean_w, var_g, var_w = got.mean(0), want.mean(0), got.var(0), want.var(0)
    fourth_g = ((got - mean_g) ** 4).mean(0) - var_g**2
    fourth_w = ((want - mean_w) ** 4).mean(0) - var_w**2
    of_means = (mean_g - mean_w) ** 2 / ((var_g + var_w) / n + floor**2)
    of_vars = (var_g - var_w) ** 2 / ((fourth_g + fourth_w).clamp_min(0) / n + floor**2)
    return max(of_means.mean().item(), of_vars.mean().item()) < DROPOUT_THRESHOLD


def _dropouts(module: nn.Module) -> dict[str, nn.Dropout]:
    return {n: m for n, m in module.named_modules() if isinstance(m, nn.Dropout) and m.p > 0}


@contextmanager
def _rates(module: nn.Module, rates: dict[str, float]) -> Iterator[None]:
    """The reference with some dropout rates changed, for the length of the block."""
    dropouts = _dropouts(module)
    old = {n: dropouts[n].p for n in rates}
    for n, p in rates.items():
        dropouts[n].p = p
    try:
        yield
    finally:
        for n, p in old.items():
            dropouts[n].p = p


@contextmanager
def _unscaled(module: nn.Module) -> Iterator[None]:
    """The reference's dropouts without the 1/(1 - p) on the kept values."""
    handles = [
        m.register_forward_hook(lambda m, _, out: out * (1 - m.p) if m.training else out)
        for m in _dropouts(module).values()
    ]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def expect_dropout(
    mine: nn.Module, ref: nn.Module, args: tuple, label: str, hint: str, seed: int
) -> None:
    """Dropout judged by what it means, not by the random numbers it draws.

    ``DROPOUT_DRAWS`` training-mode outputs of the learner's module must have the means and
    variances of the reference's (each drawn from its own random stream): the same dropout
    rate at the same places, kept values scaled by 1/(1 - p). First, a dropout module of the
    reference's name must have its rate (a sublayer built with 0.0 changes the statistics
    only a little). A hand-written dropout (``torch.rand_like(w) >= p``, ``torch.bernoulli``)
    passes. When they differ, the hint
    names the mistake whose reference variant matches.
    """
    if not _dropouts(ref):
        return
    where = f"{label}, in training mode (train()) with dropout: "
    ref_rates, my_rates = agent.module_info(ref)["dropout"], module_info_of(mine)["dropout"]
    for name, p in ref_rates.items():
        if name in my_rates and my_rates[name] != p:  # a subtle change of the statistics
            raise CheckFailed(
                where + HINTS["dropout_module_rate"].format(name=name, got=my_rates[name], want=p)
            )
    draw_seed = salted(seed * 100 + 99)
    args = tuple(a[:1] if isinstance(a, torch.Tensor) else a for a in args)  # one sequence
    got = _draws(mine, args, draw_seed, learner=True)
    want_eval = _run_ref(ref, args, train=False, seed=None).reshape(-1).double()
    floor = ATOL + RTOL * want_eval.abs()

    def like() -> bool:
        return _same_distribution(got, _draws(ref, args, draw_seed + 1, learner=False), floor)

    if like():
        return
    if bool((got - want_eval).abs().le(floor).all()):
        raise CheckFailed(
            f"{where}the output is the same as in eval mode, so no dropout is applied. {hint}"
        )
    rate = max(ref_rates.values())
    with _unscaled(ref):
        if like():
            raise CheckFailed(where + HINTS["dropout_unscaled"])
    for other in (0.1, 0.2, 0.5):
        with _rates(ref, dict.fromkeys(_dropouts(ref), other)):
            if other != rate and like():
                raise CheckFailed(where + HINTS["dropout_rate"].format(got=other, want=rate))
    if len(_dropouts(ref)) > 1:
        for name in _dropouts(ref):
            with _rates(ref, {name: 0.0}):
                if like():
                    raise CheckFailed(
                        where + HINTS["dropout_missing_at"].format(name=name) + " " + hint
                    )
    with RNG_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(draw_seed + 2)
        on_output = F.dropout(want_eval.float().expand(DROPOUT_DRAWS, -1), rate).double()
    if _same_distribution(got, on_output, floor):
        raise CheckFailed(where + "the dropout is applied to the module's output. " + hint)
    raise CheckFailed(
        where + f"over {DROPOUT_DRAWS} draws the outputs' average or spread differs from the "
        f"lecture's dropout (rate {rate}, kept values scaled by 1/(1 - p)). {hint}"
    )


# Errors of reading values on the meta device, which has shapes but no data.
META_HAS_NO_DATA = ("on meta tensors", "out of meta tensor", "meta device type tensor")


def expect_on_meta(mine: nn.Module, args: tuple, label: str, shape: tuple) -> None:
    """The module still works once moved to another device (``meta``: shapes, no data). A
    forward that reads tensor values (``.item()``, ``.tolist()``) cannot run there and is
    not judged by this test."""
    where = f"{label}, with the module moved to another device (module.to('meta'))"
    try:
        reply = invoke(mine, args, device="meta", train=False, no_grad=True)
    except Exception as exc:
        error = learner_error(exc)
        if error is None:
            raise
        if any(words in error for words in META_HAS_NO_DATA):
            return  # forward reads tensor values (.item(), .tolist()): not testable on meta
        raise CheckFailed(f"{where}: {error}. {HINTS['device']}") from None
    out = _output(reply)
    if reply["mixed_devices"]:
        raise CheckFailed(
            f"{where}: {reply['mixed_devices']} got a tensor on the CPU and one on the module's "
            f"device. {HINTS['device']}"
        )
    if not isinstance(out, torch.Tensor) or out.device.type != "meta":
        device = getattr(out, "device", type(out).__name__)
        raise CheckFailed(
            f"{where}: the output is on {device}, not on the module's device. {HINTS['device']}"
        )
    if tuple(out.shape) != shape:
        raise CheckFailed(
            f"{where}: the output has shape {_describe(out.shape)}, expected {_describe(shape)}."
        )


def expect_like_reference(
    cls: type,
    ref_cls: type,
    args: tuple,
    calls: list[tuple],
    seed: int,
    mistakes_of: Callable[..., dict[str, torch.Tensor]] | None = None,
    hints: dict[str, str] | None = None,
    dropout_hint: str = "",
    what: Callable[[tuple], str] | None = None,
    dropout: bool = True,
) -> None:
    """``cls(*args)`` behaves as ``ref_cls(*args)``: ``build_pair``, then ``expect_module``.

    ``what(call)`` names a call in hints; by default "Name(args) on input (shape)";
    ``dropout`` as in ``expect_module``. When
    ``cls`` passed another configuration before and raises on this one, the hint names both.
    """
    shown = ", ".join(map(repr, args))
    label = what or (lambda call: f"{cls.__name__}({shown}) on input {tuple(call[0].shape)}")
    try:
        mine, ref = build_pair(cls, ref_cls, args, seed)
        expect_module(mine, ref, calls, label, mistakes_of, hints, dropout_hint, seed, dropout)
    except Exception as exc:
        error, passed = learner_error(exc), _PASSED.get()
        if error is None or _not_implemented(exc) or passed is None or passed[0] is not cls:
            raise
        raise CheckFailed(
            f"{label(calls[0])}: your {cls.__name__} worked for {passed[1]} but raises here "
            f"({error}). {HINTS['other_configuration']}"
        ) from None
    _PASSED.set((cls, f"{cls.__name__}({shown})"))


# The class and configuration ``expect_like_reference`` passed last (in this context).
_PASSED: ContextVar[tuple[type, str] | None] = ContextVar("_PASSED", default=None)


def _expect_gradients(mine_grads: dict, ref, args: tuple, label: str, seed: int) -> None:
    """The learner's gradients (``agent.call``'s ``grads``) are the reference's."""
    if "error" in mine_grads:
        raise CheckFailed(
            f"{label}: backward() through your module failed ({mine_grads['error']}). An "
            "in-place operation (x /= s, masked_fill_ on a tensor autograd still needs) breaks "
            "the backward pass: compute a new tensor instead."
        )
    want = agent.call(ref.eval(), args, backward_seed=seed)["grads"]
    for key, got_grad in [("input", mine_grads["inputs"][0])] + [
        (f"parameter {n}", mine_grads["params"].get(n)) for n in want["params"]
    ]:
        want_grad = want["inputs"][0] if key == "input" else want["params"][key.split(" ", 1)[1]]
        if got_grad is None or not _close_gradient(got_grad, want_grad):
            raise CheckFailed(
                f"{label}: the gradient of the {key} differs from the reference's after "
                "backward(): is an operation detached (.detach(), .data, torch.no_grad) or "
                "done outside autograd (NumPy)?"
            )


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

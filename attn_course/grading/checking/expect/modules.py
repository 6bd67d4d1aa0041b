"""The module suite: everything the lectures teach about a module, checked on one instance.

``build_pair`` builds the learner's and the reference module with the same weights;
``expect_module`` compares outputs over calls of two lengths, a repeated eval call, the
gradients, dropout judged by what it means (``expect_dropout``) and the module moved to the
``meta`` device (``expect_on_meta``); ``expect_like_reference`` does both for a class.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
import torch.nn.functional as F
from torch import nn

from ...kernel import agent
from ...kernel.local import session_of
from ..hints import HINTS
from ..registry import CheckFailed
from .calling import _explain_forward_error, _not_implemented, invoke, invoke_many, learner_error
from .compare import ATOL, RTOL, _close_gradient, _describe, close, expect_close
from .inputs import RNG_LOCK, randn, salted, seeded


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
    after_eval: bool = True,
) -> None:
    """Everything the lectures teach about a module, call after call on ONE instance.

    For each argument tuple of ``calls`` (give two lengths: a module that keeps state
    between calls shows it on the second): the eval-mode output against the reference's
    (``mistakes_of(ref, *args)`` names the likely mistake), a second eval call that must
    give the same output (dropout is off in eval), and a backward pass whose input and
    parameter gradients must match the reference's. Then, on the first call's input: dropout
    judged by what it means (``expect_dropout``, unless ``dropout`` is False: it is the
    costly part, a check runs it on two configurations; ``dropout_hint`` says where it goes)
    and the module moved to the ``meta`` device (``expect_on_meta``). ``after_eval``: the
    dropout test also checks that the module's own ``eval()`` turns dropout off
    (``expect_like_reference`` asks it for a class's first configuration).
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
        expect_dropout(mine, ref, first, label, dropout_hint, seed, after_eval)
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
    mine: nn.Module,
    ref: nn.Module,
    args: tuple,
    label: str,
    hint: str,
    seed: int,
    after_eval: bool = True,
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
    want_eval = _run_ref(ref, args, train=False, seed=None).reshape(-1).double()
    floor = ATOL + RTOL * want_eval.abs()
    got = _draws(mine, args, draw_seed, learner=True)  # leaves the module in training mode
    if after_eval:  # once per class and check: two requests to the kernel
        _expect_off_after_eval(mine, args, want_eval, floor, label)

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


def _expect_off_after_eval(
    mine: nn.Module, args: tuple, want: torch.Tensor, floor: torch.Tensor, label: str
) -> None:
    """From training mode, after the module's own ``eval()`` (as a learner calls it, not
    ``train(False)``), two calls drawing other random numbers give the reference's eval
    output: no dropout. Two requests: the eval() call, then both calls at once."""
    invoke(getattr(mine, "eval"), ())  # noqa: B009  (a Remote's method: a request)
    options = [{"no_grad": True, "seed": salted(seed)} for seed in (1, 2)]
    for reply in invoke_many(mine, args, options):
        out = _output(reply)
        if not (isinstance(out, torch.Tensor) and out.numel() == want.numel()):
            return  # a wrong shape or type: the eval comparisons name it
        if not bool((out.detach().reshape(-1).double() - want).abs().le(floor).all()):
            raise CheckFailed(
                f"{label}, after model.eval(): the output is not the lecture's eval output "
                "(no dropout), so dropout is still on in eval mode. Use the nn.Dropout "
                "module (self.dropout), which eval() switches off (or pass "
                "training=self.training to F.dropout), and leave eval() and train() as "
                "nn.Module defines them."
            )


# Errors of copying values off the meta device, which has shapes but no data.
META_HAS_NO_DATA = ("on meta tensors", "out of meta tensor", "meta device type tensor")


def expect_on_meta(mine: nn.Module, args: tuple, label: str, shape: tuple) -> None:
    """The module still works once moved to another device (``meta``: shapes, no data).

    A forward that reads a value (``.item()``, ``bool(t)``) is judged too: on the meta
    device the read gets a stand-in value and the forward runs on (``agent.call``). One
    that copies a tensor off the device (``.tolist()``, ``.numpy()``) fails: that stalls a
    GPU, or fails there, and the course computes with tensor operations instead.
    The verdict rests on facts the kernel reports (``mixed_devices``); a missing one fails.
    """
    where = f"{label}, with the module moved to another device (module.to('meta'))"
    try:
        reply = invoke(mine, args, device="meta", train=False, no_grad=True)
    except Exception as exc:
        error = learner_error(exc)
        if error is None:
            raise
        if any(words in error for words in META_HAS_NO_DATA):
            raise CheckFailed(
                f"{where}: {error}. The forward copies tensor values to Python or NumPy "
                "(.tolist(), .numpy()), which a tensor on a GPU must first send to the CPU "
                "(or cannot, for .numpy()): compute with tensor operations instead."
            ) from None
        raise CheckFailed(f"{where}: {error}. {HINTS['device']}") from None
    out = _output(reply)
    if "mixed_devices" not in reply:
        raise CheckFailed(f"{where}: the grader could not see which devices the forward used.")
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
    first = (_PASSED.get() or (None, ""))[0] is not cls  # the first configuration of cls
    try:
        mine, ref = build_pair(cls, ref_cls, args, seed)
        expect_module(
            mine, ref, calls, label, mistakes_of, hints, dropout_hint, seed, dropout, first
        )
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

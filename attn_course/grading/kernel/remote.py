"""The grader side of official grading: proxies for the learner's objects in a kernel.

``Session`` sends requests to ``agent.serve`` in that kernel and reads back DATA only
(``torch.load`` with ``weights_only=True``). ``Remote`` stands for a learner's object that
stays in the kernel: calling it, building it, reading an attribute all run there; tensors,
arrays and numbers come back by value. The checks run in the grader's process on those
values, with the grader's references and a secret salt on every random input
(``context.SALT``).
"""

from __future__ import annotations

import base64
import contextlib
import io
import time
import zipfile
from typing import Any, TypeGuard

import torch
from torch import nn

from ..checking.registry import CheckSpec
from . import wire
from .context import REQUEST_GRACE
from .kernels import Kernel, KernelLost

__all__ = [
    "Kernel",
    "KernelLost",
    "Session",
    "Remote",
    "LearnerError",
    "RemoteTimeout",
    "is_remote",
]


DYNAMO_SECONDS = 60  # the import of torch._dynamo in a kernel, outside a check's time


class LearnerError(Exception):
    """The learner's code raised; ``message`` points at the learner's line."""

    def __init__(self, ename: str, message: str, not_implemented: bool):
        super().__init__(message)
        self.ename, self.message, self.not_implemented = ename, message, not_implemented

    @classmethod
    def from_record(cls, record: dict) -> LearnerError:
        """The error of a call that raised in the kernel (``wire.ERROR_FIELDS``)."""
        return cls(str(record["ename"]), str(record["message"]), bool(record["not_implemented"]))


class RemoteTimeout(BaseException):
    """The check's time ran out while the learner's code was running (a BaseException, like
    ``agent.TimeLimit``: a check's ``except Exception`` must not turn it into a failure)."""


def _to_kernel(value: object) -> object:
    """A request argument: data by value (``wire``), a proxy by its handle, anything else
    (a module) pickled whole."""
    return wire.encode(value, lambda v: {wire.HANDLE: v._handle} if isinstance(v, Remote) else v)


# The code of every request: the agent reads the request itself from the message's metadata
# (``kernels.REQUEST_KEY``), so that the kernel never parses a large cell.
SERVE = "__import__('attn_course.grading.kernel.agent', fromlist=['serve']).serve()"


class Session:
    """The requests of one check's grading to the agent in ``kernel`` (``runner`` makes a new
    session for every check: its deadline and ``uses_reference`` flag are that check's).

    A request travels in the metadata of an execute request (whose code only calls the
    agent) and the reply comes back as display data of that request, both over the
    kernel's own ZeroMQ channels: no file, no path the learner's code could race, swap or
    block.
    """

    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.deadline = float("inf")  # of the check being graded (time.monotonic())
        self.uses_reference = False  # of the check being graded
        self.answer_name = ""

    def start_check(self, time_limit: float) -> None:
        self.deadline = time.monotonic() + time_limit
        self.uses_reference, self.answer_name = False, ""

    def checking(
        self, spec: CheckSpec, obj: object, time_limit: float
    ) -> contextlib.AbstractContextManager[None]:
        """What guards a check of an object in the kernel, here: nothing. The kernel applies
        each request's time limit (``agent.serve``), and the inputs are salted."""
        return contextlib.nullcontext()

    def request(self, op: str, *args: object, **extra: Any) -> Any:
        """Run ``op`` in the kernel; the decoded value, or LearnerError / RemoteTimeout.

        The value is whatever data the kernel sent back (``Any``, in the shapes
        ``check_reply`` allows): the caller knows the shape its ``op`` returns and checks
        what it relies on.
        """
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise RemoteTimeout
        request = {
            "op": op,
            "args": [_to_kernel(a) for a in args],
            "kwargs": {k: _to_kernel(v) for k, v in extra.pop("kwargs", {}).items()},
            "time_limit": remaining,
            **extra,
        }
        buffer = io.BytesIO()
        torch.save(request, buffer)
        content, replies = self.kernel.request(
            SERVE, remaining + REQUEST_GRACE, data=base64.b64encode(buffer.getvalue()).decode()
        )
        if content.get("status") == "timeout":
            raise RemoteTimeout
        if len(replies) != 1:
            raise _malformed(f"{len(replies)} answers instead of one")
        reply = read_reply(replies[0])
        called = {name.split(".")[0] for name in reply.get("package_calls", [])}
        if self.answer_name and self.answer_name in called:
            self.uses_reference = True  # e.g. its forward calls the package's forward
        if reply.get("timeout"):
            raise RemoteTimeout
        if "exception" in reply:
            raise LearnerError.from_record(reply["exception"])
        return self.decode(reply["value"])

    def call(self, func: object, args: tuple, kwargs: dict | None, **options: object) -> dict:
        """The agent's call reply for ``func(*args, **kwargs)``: ``result``, ``after`` (the
        arguments), ``sdpa_calls``... ``peak_memory=True`` adds ``peak_memory``: the bytes
        the kernel's memory grew by during the call, measured from here, outside the
        learner's reach."""
        if options.get("device") == "meta" or options.get("track_largest"):
            self._prepare_dynamo()
        measure = options.pop("peak_memory", False)
        if measure:
            self.kernel.reset_peak_memory()
        reply = self.request("call", func, *args, kwargs=kwargs or {}, options=options)
        if measure and isinstance(reply, dict):
            reply["peak_memory"] = self.kernel.peak_memory()
        return reply

    def _prepare_dynamo(self) -> None:
        """Import torch._dynamo in the kernel before a call on the meta device or under a
        dispatch mode, whose first use imports it (a second or two; far more on a loaded
        machine): on the check's clock, which is extended by what it took, since that is no
        part of the learner's time. Once per kernel."""
        if getattr(self.kernel, "dynamo_ready", False):
            return
        start = time.monotonic()
        reply = self.kernel.execute("import torch._dynamo", DYNAMO_SECONDS, silent=True)
        self.kernel.dynamo_ready = reply.get("status") == "ok"
        self.deadline += time.monotonic() - start

    def resolve(self, check_id: str) -> object:
        """The object the learner passed to ``check(check_id, ...)``; KeyError if none."""
        value = self.request("resolve", check_id)
        if isinstance(value, dict) and value.get("__missing__"):
            raise KeyError(check_id)
        if isinstance(value, Remote):
            self.uses_reference = value._info.get("reference", False)
            self.answer_name = value.__name__
        return value

    def decode(self, value: object) -> Any:
        """A reply's value (already checked by ``check_reply``) as the grader's objects."""
        return wire.decode(value, lambda record: Remote(self, record[wire.HANDLE], record["info"]))


# ---- the reply's size and shape ----------------------------------------------------------

MAX_REPLY_BYTES = 64 << 20  # of one reply, decoded (the base64 text is 4/3 of it)
MAX_REPLY_ENTRIES = 10_000  # records in the reply's zip (one per tensor, about)
MAX_REPLY_NODES = 200_000  # values in the reply's tree, counting shared ones each time
MAX_REPLY_DEPTH = 40
MAX_META_ELEMENTS = 1 << 32  # a meta tensor's shape, which stands for no memory
MAX_STRING = 1 << 20
_DTYPES = {
    getattr(torch, name)
    for name in (
        "bool uint8 int8 int16 int32 int64 float16 bfloat16 float32 float64 complex64 complex128"
    ).split()
}


def _malformed(why: str) -> LearnerError:
    return LearnerError("GradingError", f"the kernel sent a malformed answer: {why}", False)


def read_reply(text: object) -> dict:
    """A reply's base64 text as data: size-capped before and after decoding, no compressed
    records, read with ``weights_only``, then checked against ``check_reply``'s schema."""
    if type(text) is not str or len(text) > MAX_REPLY_BYTES * 4 // 3 + 4:
        raise _malformed("not text, or larger than the limit")
    try:
        raw = base64.b64decode(text, validate=True)
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            records = archive.infolist()
    except (ValueError, zipfile.BadZipFile) as exc:
        raise _malformed(f"not a torch.save record ({exc})") from None
    if len(records) > MAX_REPLY_ENTRIES:
        raise _malformed("too many records")
    if any(r.compress_type != zipfile.ZIP_STORED for r in records):
        raise _malformed("a compressed record")
    if sum(r.file_size for r in records) > MAX_REPLY_BYTES:
        raise _malformed("larger than the limit once unpacked")
    try:
        reply = torch.load(io.BytesIO(raw), weights_only=True)
    except Exception as exc:
        raise _malformed(f"unreadable ({type(exc).__name__})") from None
    check_reply(reply)
    return reply


def check_reply(reply: object) -> None:
    """LearnerError unless ``reply`` is exactly what ``agent.serve`` sends: exact types, no
    extra keys, tensors plain, dense and on the CPU, a bounded tree."""
    if type(reply) is not dict or not set(reply) <= {
        "value",
        "timeout",
        "exception",
        "package_calls",
    }:
        raise _malformed("not a reply")
    if len(set(reply) & {"value", "timeout", "exception"}) != 1:
        raise _malformed("not exactly one of value, timeout, exception")
    calls = reply.get("package_calls", [])
    if type(calls) is not list or len(calls) > 1000 or any(type(c) is not str for c in calls):
        raise _malformed("package_calls")
    if "timeout" in reply and reply["timeout"] is not True:
        raise _malformed("timeout")
    if "exception" in reply:
        _check_record(reply["exception"], wire.ERROR_FIELDS)
    if "value" in reply:
        _check_value(reply["value"], 0, [0])


def _check_record(value: object, fields: dict[str, type]) -> None:
    if type(value) is not dict or set(value) != set(fields):
        raise _malformed(f"a record without exactly {', '.join(fields)}")
    for key, kind in fields.items():
        if type(value[key]) is not kind or (kind is str and len(value[key]) > MAX_STRING):
            raise _malformed(f"{key} is not a {kind.__name__}")


def _check_value(value: object, depth: int, count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_REPLY_NODES or depth > MAX_REPLY_DEPTH:
        raise _malformed("too many or too deeply nested values")
    kind = type(value)
    if value is None or kind in (bool, int, float):
        return
    if kind is str:
        if len(value) > MAX_STRING:  # type: ignore[arg-type]
            raise _malformed("a string longer than the limit")
        return
    if kind is torch.Tensor:
        _check_tensor(value)  # type: ignore[arg-type]
        return
    if kind is list:
        for item in value:  # type: ignore[attr-defined]
            _check_value(item, depth + 1, count)
        return
    if kind is not dict:
        raise _malformed(f"a value of type {kind.__name__}")
    _check_tagged(value, depth, count)  # type: ignore[arg-type]


def _check_tagged(value: dict, depth: int, count: list[int]) -> None:
    keys = set(value)
    if keys == {wire.HANDLE, "info"}:
        if type(value[wire.HANDLE]) is not int:
            raise _malformed("a handle")
        _check_record(value["info"], wire.INFO_FIELDS)
    elif keys in ({wire.NDARRAY}, {wire.NPSCALAR}):
        tensor = value.get(wire.NDARRAY, value.get(wire.NPSCALAR))
        if type(tensor) is not torch.Tensor or (wire.NPSCALAR in keys and tensor.numel() != 1):
            raise _malformed("an array")
        _check_tensor(tensor)
    elif keys == {wire.ELLIPSIS}:
        if value[wire.ELLIPSIS] is not True:
            raise _malformed("a marker")
    elif keys == {wire.SIZE}:
        size = value[wire.SIZE]
        if type(size) is not list or any(type(n) is not int for n in size) or len(size) > 64:
            raise _malformed("a size")
    elif keys == {wire.DTYPE}:
        name = value[wire.DTYPE]
        if type(name) is not str or getattr(torch, name.removeprefix("torch."), None) not in (
            _DTYPES
        ):
            raise _malformed("a dtype")
    elif keys == {wire.TUPLE}:
        if type(value[wire.TUPLE]) is not list:
            raise _malformed("a tuple")
        _check_value(value[wire.TUPLE], depth + 1, count)
    elif keys == {wire.DICT}:
        items = value[wire.DICT]
        if type(items) is not dict or any(type(k) is not str for k in items):
            raise _malformed("a dict")
        for item in items.values():
            _check_value(item, depth + 1, count)
    else:
        raise _malformed(f"a record with keys {sorted(map(str, keys))[:5]}")


def _check_tensor(tensor: torch.Tensor) -> None:
    """Plain CPU data, or a ``meta`` tensor (a shape without data: what a module moved to
    the meta device returns) of a bounded size."""
    if (
        type(tensor) is not torch.Tensor
        or tensor.layout != torch.strided
        or tensor.device.type not in ("cpu", "meta")
        or tensor.dtype not in _DTYPES
        or tensor.requires_grad
    ):
        raise _malformed("a tensor that is not plain data")
    if tensor.device.type == "meta":
        if tensor.numel() > MAX_META_ELEMENTS:
            raise _malformed("a meta tensor larger than the limit")
    # an expanded view of a few bytes could stand for terabytes of elements
    elif tensor.numel() * tensor.element_size() > tensor.untyped_storage().nbytes():
        raise _malformed("a tensor that is not plain data")


class Remote:
    """A learner's object that lives in the kernel.

    ``isinstance(proxy, type)`` holds for a class and ``isinstance(proxy, nn.Module)`` for a
    module, so checks written for local objects keep working; calls run in the kernel.
    """

    _session: Session
    _handle: int
    _info: dict
    __name__: str

    def __init__(self, session: Session, handle: int, info: dict):
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_info", info)
        object.__setattr__(self, "__name__", str(info.get("name", "?")))

    @property  # type: ignore[misc]  # read-only on purpose: a proxy's class is what it stands for
    def __class__(self) -> type:  # noqa: D105
        kind = self._info.get("kind")
        return type if kind == "class" else nn.Module if kind == "module" else Remote

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._session.request("getattr", self, name)

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self._session.call(self, args, kwargs)["result"]

    def __repr__(self) -> str:
        return f"<learner's {self._info.get('kind')} {self.__name__}>"


def is_remote(obj: object) -> TypeGuard[Remote]:
    return type(obj) is Remote

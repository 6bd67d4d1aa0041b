"""The grader side of official grading: proxies for the learner's objects in a kernel.

``Session`` sends
requests to ``agent.serve`` in that kernel and reads back DATA only (``torch.load`` with
``weights_only=True``). ``Remote`` stands for a learner's object that stays in the kernel:
calling it, building it, reading an attribute all run there; tensors, arrays and numbers
come back by value. The checks run in the grader's process on those values, with the
grader's references and a secret salt on every random input (``expect.SALT``).
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path
from typing import Any, TypeGuard

import numpy as np
import torch
from torch import nn

from .kernels import Kernel, KernelLost

__all__ = ["Kernel", "KernelLost", "Session", "Remote", "RemoteError", "RemoteTimeout", "is_remote"]

REQUEST_GRACE = 5.0  # seconds beyond the check's limit before the grader stops waiting


class RemoteError(Exception):
    """The learner's code raised; ``message`` points at the learner's line."""

    def __init__(self, ename: str, message: str, not_implemented: bool):
        super().__init__(message)
        self.ename, self.message, self.not_implemented = ename, message, not_implemented


class RemoteTimeout(Exception):
    """The check's time ran out while the learner's code was running."""


def _to_kernel(value: object) -> object:
    """Request arguments: data as is, ndarrays and tuples tagged, proxies by handle."""
    if isinstance(value, Remote):
        return {"__handle__": value._handle}
    if isinstance(value, np.ndarray):
        return {"__ndarray__": torch.from_numpy(np.ascontiguousarray(value))}
    if isinstance(value, tuple):
        return {"__tuple__": [_to_kernel(v) for v in value]}
    if isinstance(value, list):
        return [_to_kernel(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_kernel(v) for k, v in value.items()}
    return value


class Session:
    """The requests of one notebook's grading to the agent in ``kernel``."""

    def __init__(self, kernel: Kernel, workdir: Path):
        self.kernel, self.workdir = kernel, workdir
        self.counter = itertools.count()
        self.deadline = float("inf")  # of the check being graded (time.monotonic())
        self.uses_reference = False  # of the check being graded
        self.answer_name = ""

    def start_check(self, time_limit: float) -> None:
        self.deadline = time.monotonic() + time_limit
        self.uses_reference, self.answer_name = False, ""

    def request(self, op: str, *args: object, **extra: Any) -> Any:
        """Run ``op`` in the kernel; the decoded value, or RemoteError / RemoteTimeout.

        The value is whatever data the kernel sent back (``Any``): the caller knows the
        shape its ``op`` returns and checks what it relies on.
        """
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise RemoteTimeout
        n = next(self.counter)
        request_path = self.workdir / f".grader-request-{n}.pt"
        reply_path = self.workdir / f".grader-reply-{n}.pt"
        torch.save(
            {
                "op": op,
                "args": [_to_kernel(a) for a in args],
                "kwargs": {k: _to_kernel(v) for k, v in extra.pop("kwargs", {}).items()},
                "time_limit": remaining,
                **extra,
            },
            request_path,
        )
        code = (
            "__import__('attn_course.grading.agent', fromlist=['serve'])"
            f".serve({str(request_path)!r}, {str(reply_path)!r})"
        )
        content = self.kernel.execute(code, remaining + REQUEST_GRACE, silent=True)
        if content.get("status") == "timeout":
            raise RemoteTimeout
        try:
            reply = torch.load(reply_path, weights_only=True)
        except Exception as exc:
            raise RemoteError(
                "GradingError", f"the kernel sent no readable answer ({type(exc).__name__})", False
            ) from None
        finally:
            request_path.unlink(missing_ok=True)
            reply_path.unlink(missing_ok=True)
        if not isinstance(reply, dict):
            raise RemoteError("GradingError", "the kernel sent an unreadable answer", False)
        called = {str(name).split(".")[0] for name in reply.get("package_calls", [])}
        if self.answer_name and self.answer_name in called:
            self.uses_reference = True  # e.g. its forward calls the package's forward
        if reply.get("timeout"):
            raise RemoteTimeout
        if "exception" in reply:
            e = reply["exception"]
            raise RemoteError(str(e["ename"]), str(e["message"]), bool(e["not_implemented"]))
        return self.decode(reply.get("value"))

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
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "__handle__" in value:
            return Remote(self, value["__handle__"], value["info"])
        if "__ndarray__" in value:
            return value["__ndarray__"].numpy()
        if "__ellipsis__" in value:
            return Ellipsis
        if "__npscalar__" in value:
            return value["__npscalar__"].numpy()[0]
        if "__size__" in value:
            return torch.Size(value["__size__"])
        if "__dtype__" in value:
            return getattr(torch, value["__dtype__"].removeprefix("torch."))
        if "__tuple__" in value:
            return tuple(self.decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {k: self.decode(v) for k, v in value["__dict__"].items()}
        return {k: self.decode(v) for k, v in value.items()}


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
        return self.call(args, kwargs)["result"]

    def call(self, args: tuple, kwargs: dict, **options: object) -> dict:
        """The agent's call reply: ``result``, ``after`` (the arguments), ``sdpa_calls``..."""
        return self._session.request("call", self, *args, kwargs=kwargs, options=options)

    def __repr__(self) -> str:
        return f"<learner's {self._info.get('kind')} {self.__name__}>"


def is_remote(obj: object) -> TypeGuard[Remote]:
    return type(obj) is Remote

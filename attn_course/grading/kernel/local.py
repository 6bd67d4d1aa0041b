"""``check()``'s side of grading: the learner's objects in this process.

``LocalSession`` answers the requests of ``remote.Session`` (``wire.OPERATIONS``) here, with
the code that answers them in a grading kernel (``agent.perform``): the same replies, and
the same ``LearnerError`` when the learner's code raises. So the check library asks an
object's session (``session_of``) and never where the object lives. ``checking`` guards a
check here: the time limit (``agent.time_limit``), torch, NumPy and ``random`` seeded with
``CHECK_SEED`` (the learner's random state restored afterwards), and what the learner's code
prints capped at ``OUTPUT_LIMIT`` characters per stream. With ``DYNAMO_GUARD`` set in the
environment (the test suite's nbval kernels), a check that imports ``torch._dynamo`` inside its
time limit raises: registered without ``imports_dynamo=True``, it would time out on a loaded
machine.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np
import torch
from torch import nn

from ..checking.registry import CheckSpec
from . import agent
from .context import CHECK_SEED, OUTPUT_LIMIT
from .remote import LearnerError, Session, is_remote

__all__ = ["DYNAMO_GUARD", "LocalSession", "LOCAL", "session_of"]

DYNAMO_GUARD = "ATTN_COURSE_DYNAMO_GUARD"


class LocalSession:
    """The requests of a ``remote.Session``, run in this process (see the module docstring)."""

    def request(self, op: str, *args: object, **extra: Any) -> Any:
        try:
            return agent.perform(op, list(args), extra.get("kwargs", {}), extra.get("options", {}))
        except (Exception, SystemExit) as exc:
            raise LearnerError.from_record(agent.describe_exception(exc)) from exc

    def call(self, func: object, args: tuple, kwargs: dict | None, **options: object) -> dict:
        """As ``Session.call``; ``peak_memory`` is None here (nothing measures this process)."""
        return self.request("call", func, *args, kwargs=kwargs or {}, options=options)

    @contextlib.contextmanager
    def checking(self, spec: CheckSpec, obj: object, time_limit: float) -> Iterator[None]:
        """The time limit, fixed seeds and capped output around one check of ``obj``."""
        if spec.imports_dynamo or isinstance(obj, nn.Module) or _is_module_class(obj):
            agent.preload_dynamo()  # module checks use the meta device: import outside the limit
        imported = "torch._dynamo" in sys.modules
        with agent.time_limit(time_limit), _fixed_seeds(), _capped_output():
            yield
        if os.environ.get(DYNAMO_GUARD) and not imported and "torch._dynamo" in sys.modules:
            raise RuntimeError(
                f"the check {spec.id!r} imported torch._dynamo inside its time limit: "
                "register it with imports_dynamo=True"
            )


LOCAL = LocalSession()


def session_of(obj: object) -> Session | LocalSession:
    """Where requests about ``obj`` go: its grading kernel's session, or this process."""
    return obj._session if is_remote(obj) else LOCAL


def _is_module_class(obj: object) -> bool:
    return isinstance(obj, type) and issubclass(obj, nn.Module)


@contextlib.contextmanager
def _fixed_seeds() -> Iterator[None]:
    """Seed torch, NumPy and ``random`` for the check; restore the learner's RNG state after."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(CHECK_SEED)
        np.random.seed(CHECK_SEED)
        random.seed(CHECK_SEED)
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


class _CappedStream(io.TextIOBase):
    """Passes the first ``limit`` characters on to ``stream`` and only counts the rest."""

    def __init__(self, stream: TextIO, limit: int):
        self.stream, self.limit, self.written = stream, limit, 0

    def write(self, text: str) -> int:
        room = self.limit - self.written
        if room > 0:
            self.stream.write(text[:room])
        self.written += len(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


@contextlib.contextmanager
def _capped_output(limit: int = OUTPUT_LIMIT) -> Iterator[None]:
    """Cap what the learner's code prints to stdout and stderr, then say how much was hidden."""
    out, err = _CappedStream(sys.stdout, limit), _CappedStream(sys.stderr, limit)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        hidden = max(0, out.written - limit) + max(0, err.written - limit)
        if hidden:
            print(f"\n[... {hidden:,} more characters of output hidden]")

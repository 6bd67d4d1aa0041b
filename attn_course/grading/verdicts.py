"""``run_check``: call a check on an answer and sort what happens into a verdict.

Used by ``check()`` in the notebook (``api``) and by the grade command (``runner``); no
IPython here. The verdict is a ``Status``: passed, failed (with the check's hint), not
attempted (the answer is still ``...`` or the code raises ``NotImplementedError``
anywhere), error (the exception, pointing at the learner's own line; ``SystemExit``
included) or timeout (past the check's time limit, even through a bare ``except:``). For an
answer in this process, what the learner's code prints during a check is capped, and checks
run with torch, NumPy and ``random`` seeded (``CHECK_SEED``), so they are deterministic; the
learner's random state is restored afterwards.
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
from collections.abc import Iterator
from typing import TextIO

import numpy as np
import torch
from torch import nn

from . import agent
from .errors import caused_by, describe_error
from .registry import CheckFailed, CheckSpec
from .remote import RemoteError, RemoteTimeout
from .result import CheckResult, Status

__all__ = ["run_check", "OUTPUT_LIMIT", "CHECK_SEED"]

OUTPUT_LIMIT = 2_000  # characters per stream the learner's code may print during one check
CHECK_SEED = 0


def run_check(
    spec: CheckSpec, obj: object, local: bool = True, time_limit: float | None = None
) -> CheckResult:
    """Call the check and turn what happens into a verdict.

    ``local``: ``obj`` is the learner's object in this process (time limit, seeds and
    output cap apply here); otherwise it is a ``Remote`` proxy and the kernel applies them.
    ``time_limit`` (default: the registered one) is the limit the timeout message names.
    """
    time_limit = time_limit or spec.time_limit
    if obj is Ellipsis:
        return CheckResult(spec.id, Status.NOT_ATTEMPTED, "replace `...` with your answer")
    guards = (agent.time_limit(time_limit), _fixed_seeds(), _capped_output()) if local else ()
    if local and (
        spec.imports_dynamo
        or isinstance(obj, nn.Module)
        or isinstance(obj, type)
        and issubclass(obj, nn.Module)
    ):
        agent.preload_dynamo()  # module checks use the meta device: import outside the limit
    try:
        with contextlib.ExitStack() as stack:
            for guard in guards:
                stack.enter_context(guard)
            message = spec.func(obj)
    except (agent.TimeLimit, RemoteTimeout):
        return CheckResult(
            spec.id,
            Status.TIMEOUT,
            f"took longer than {time_limit:g} s: an infinite loop, or a very slow method?",
        )
    except RemoteError as exc:
        if exc.not_implemented:
            return CheckResult(
                spec.id, Status.NOT_ATTEMPTED, "your code still raises NotImplementedError"
            )
        return CheckResult(spec.id, Status.ERROR, exc.message)
    except (Exception, SystemExit) as exc:
        if caused_by(exc, NotImplementedError):
            return CheckResult(
                spec.id, Status.NOT_ATTEMPTED, "your code still raises NotImplementedError"
            )
        if isinstance(exc, CheckFailed):
            return CheckResult(spec.id, Status.FAILED, str(exc))
        return CheckResult(
            spec.id, Status.ERROR, describe_error(exc, getattr(spec.func, "__code__", None))
        )
    return CheckResult(spec.id, Status.PASSED, message or "")


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

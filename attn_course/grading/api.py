"""``check(exercise_id, obj)``: grade one exercise and print a one-line verdict.

The verdict is one of ``passed``, ``failed`` (with the check's hint), ``not_attempted``
(the answer is still ``...`` or the code raises ``NotImplementedError`` anywhere),
``error`` (the exception, pointing at the learner's own line) or ``timeout`` (the check ran
past its registered time limit). What the learner's code prints during a check is capped.
Checks run with torch, NumPy and ``random`` seeded (``CHECK_SEED``), so they are
deterministic, and the learner's random state is restored afterwards.
Under ``python -m attn_course grade`` the runner names a file in ``LOG_ENV`` and every
verdict is also appended to it as one JSON line; interactively nothing is written.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import linecache
import os
import random
import signal
import sys
import sysconfig
import threading
import traceback
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import torch

from .registry import CHECKS, CheckFailed, CheckSpec, load_checks

__all__ = ["STATUSES", "LOG_ENV", "CheckResult", "check"]

STATUSES = ("passed", "failed", "not_attempted", "error", "timeout")
LOG_ENV = "ATTN_COURSE_GRADE_LOG"
OUTPUT_LIMIT = 2_000  # characters per stream the learner's code may print during one check
CHECK_SEED = 0

_SYMBOLS = {"passed": "✔", "failed": "✘", "not_attempted": "…", "error": "⚠", "timeout": "⏱"}
_LABELS = {"not_attempted": "not attempted", "timeout": "timed out"}
_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_LIBRARY_DIRS = {Path(sysconfig.get_path(name)).resolve() for name in ("stdlib", "purelib")}


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one exercise: ``status`` is one of ``STATUSES``."""

    id: str
    status: str
    message: str

    @property
    def verdict(self) -> str:
        """One readable line, e.g. ``✘ causal_mask: failed — the diagonal must stay visible``."""
        label = _LABELS.get(self.status, self.status)
        line = f"{_SYMBOLS[self.status]} {self.id}: {label}"
        return f"{line} — {self.message}" if self.message else line

    def __str__(self) -> str:
        return self.verdict

    def _ipython_display_(self) -> None:
        """Show nothing as a cell result: ``check()`` has already printed the verdict."""


def check(exercise_id: str, obj: object) -> CheckResult:
    """Run the check ``exercise_id`` on the learner's ``obj``, print the verdict, return it.

    Args:
        exercise_id: a registered check id, e.g. ``"causal_mask"``.
        obj: the learner's answer: a function, a class, a value; ``...`` = not attempted.

    Returns:
        The ``CheckResult`` (``.status``, ``.message``, ``.verdict``).
    """
    spec = load_checks().get(exercise_id)
    result = (
        CheckResult(exercise_id, "error", _unknown_id_message(exercise_id))
        if spec is None
        else _run(spec, obj)
    )
    print(result.verdict, flush=True)
    log_path = os.environ.get(LOG_ENV)
    if log_path:
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(json.dumps(asdict(result)) + "\n")
    return result


class _TimeLimit(BaseException):
    """Raised by SIGALRM inside a check; a BaseException so `except Exception` cannot eat it."""


def _run(spec: CheckSpec, obj: object) -> CheckResult:
    """Call the check and turn what happens into a verdict."""
    if obj is Ellipsis:
        return CheckResult(spec.id, "not_attempted", "replace `...` with your answer")
    try:
        with _time_limit(spec.time_limit), _fixed_seeds(), _capped_output():
            message = spec.func(obj)
    except _TimeLimit:
        return CheckResult(
            spec.id,
            "timeout",
            f"took longer than {spec.time_limit:g} s: an infinite loop, or a very slow method?",
        )
    except Exception as exc:
        if _caused_by(exc, NotImplementedError):
            return CheckResult(
                spec.id, "not_attempted", "your code still raises NotImplementedError"
            )
        if isinstance(exc, CheckFailed):
            return CheckResult(spec.id, "failed", str(exc))
        return CheckResult(
            spec.id, "error", _describe_error(exc, getattr(spec.func, "__code__", None))
        )
    return CheckResult(spec.id, "passed", message or "")


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise ``_TimeLimit`` after ``seconds``.

    Only on the main thread of a platform with SIGALRM; elsewhere (other threads, Windows)
    the check runs without a time limit.
    """
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise _TimeLimit

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` or any exception in its cause/context chain is a ``kind``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _is_learner_file(filename: str) -> bool:
    """Code the learner wrote: not the course package, the standard library or a library."""
    if filename.startswith("<"):
        return "ipython-input" in filename
    path = Path(filename).resolve()
    return not any(path.is_relative_to(d) for d in (_PACKAGE_DIR, *_LIBRARY_DIRS))


def _describe_error(exc: Exception, check_code: object) -> str:
    """``Kind: message (in func, line N: source)`` at the learner's innermost frame.

    The check function itself (``check_code``), the course package and libraries are
    grading internals, not the learner's code.
    """
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    text = text if len(text) <= 200 else text[:197] + "..."
    frames = [
        (frame.f_code, lineno)
        for frame, lineno in traceback.walk_tb(exc.__traceback__)
        if frame.f_code is not check_code and _is_learner_file(frame.f_code.co_filename)
    ]
    if not frames:
        return f"{text} (raised while checking your answer: is it the right kind of object?)"
    code, lineno = frames[-1]
    filename = code.co_filename
    where = "line" if "ipykernel_" in filename else f"{Path(filename).name} line"
    source = linecache.getline(filename, lineno).strip()
    return f"{text} (in {code.co_name}, {where} {lineno}{': ' + source if source else ''})"


def _unknown_id_message(exercise_id: str) -> str:
    """Name the closest id and list its notebook's ids, or list every notebook's ids."""
    close = difflib.get_close_matches(exercise_id, list(CHECKS), n=1)
    if close:
        notebook = CHECKS[close[0]].notebook
        ids = ", ".join(s.id for s in CHECKS.values() if s.notebook == notebook)
        return f"unknown exercise id {exercise_id!r}; did you mean {close[0]!r}? {notebook}: {ids}"
    by_notebook: dict[str, list[str]] = {}
    for spec in CHECKS.values():
        by_notebook.setdefault(spec.notebook, []).append(spec.id)
    known = "; ".join(f"{nb}: {', '.join(ids)}" for nb, ids in sorted(by_notebook.items()))
    return f"unknown exercise id {exercise_id!r}. Known ids: {known or 'none registered'}"

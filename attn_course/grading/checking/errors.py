"""Describing the learner's exceptions: the innermost line of THEIR code, not the grader's."""

from __future__ import annotations

import linecache
import sysconfig
import traceback
from pathlib import Path

__all__ = ["caused_by", "describe_error", "is_learner_file"]

_PACKAGE_DIR = Path(__file__).resolve().parents[2]
_LIBRARY_DIRS = {Path(sysconfig.get_path(name)).resolve() for name in ("stdlib", "purelib")}


def caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` or any exception in its cause/context chain is a ``kind``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def is_learner_file(filename: str) -> bool:
    """Code the learner wrote: not the course package, the standard library or a library."""
    if filename.startswith("<"):
        return "ipython-input" in filename
    path = Path(filename).resolve()
    return not any(path.is_relative_to(d) for d in (_PACKAGE_DIR, *_LIBRARY_DIRS))


def describe_error(exc: BaseException, check_code: object = None) -> str:
    """``Kind: message (in func, line N: source)`` at the learner's innermost frame.

    The check function itself (``check_code``), the course package and libraries are
    grading internals, not the learner's code.
    """
    if isinstance(exc, SystemExit):
        return (
            f"your code raised SystemExit({exc.code!r}) (exit() or sys.exit()): "
            "return a value instead of exiting"
        )
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    text = text if len(text) <= 200 else text[:197] + "..."
    frames = [
        (frame.f_code, lineno)
        for frame, lineno in traceback.walk_tb(exc.__traceback__)
        if frame.f_code is not check_code and is_learner_file(frame.f_code.co_filename)
    ]
    if not frames:
        return f"{text} (raised while checking your answer: is it the right kind of object?)"
    code, lineno = frames[-1]
    filename = code.co_filename
    where = "line" if "ipykernel_" in filename else f"{Path(filename).name} line"
    source = linecache.getline(filename, lineno).strip()
    return f"{text} (in {code.co_name}, {where} {lineno}{': ' + source if source else ''})"

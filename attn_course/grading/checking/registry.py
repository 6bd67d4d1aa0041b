"""The registry of exercise checks: which checks exist and which notebook each grades.

A check is a function ``check_fn(obj) -> str | None`` registered with ``@register``. It
returns a short success message (or None) and signals a wrong answer by raising
``CheckFailed(hint)``. Everything else (NotImplementedError -> not attempted, other
exceptions -> error, time limit -> timeout) is decided by ``grading.check``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CheckFailed",
    "CheckFunction",
    "CheckSpec",
    "CHECKS",
    "register",
    "checks_for",
    "load_checks",
]


class CheckFailed(Exception):
    """A wrong answer; the message is the hint the learner sees."""


# A check function. Its argument is the learner's answer: arbitrary learner code (a function,
# a class, a value) or a ``remote.Remote`` proxy for it; each check annotates what it expects
# and fails with a hint when the answer is something else.
CheckFunction = Callable[[Any], str | None]


@dataclass(frozen=True)
class CheckSpec:
    id: str
    notebook: str  # notebook stem, e.g. "03_weight_split_mha"
    func: CheckFunction
    time_limit: float  # seconds
    # the check uses the meta device or a dispatch mode, whose first use imports
    # torch._dynamo: ``run_check`` imports it before the time limit starts
    imports_dynamo: bool = False


CHECKS: dict[str, CheckSpec] = {}


def register(
    check_id: str, notebook: str, time_limit: float = 10.0, imports_dynamo: bool = False
) -> Callable[[CheckFunction], CheckFunction]:
    """Decorator: register ``func`` as the check ``check_id`` of ``notebook``."""

    def decorate(func: CheckFunction) -> CheckFunction:
        if check_id in CHECKS:
            raise ValueError(f"check id {check_id!r} is registered twice")
        CHECKS[check_id] = CheckSpec(check_id, notebook, func, time_limit, imports_dynamo)
        return func

    return decorate


def checks_for(notebook: str) -> list[CheckSpec]:
    """The checks of one notebook (by stem), in registration order (loads them first)."""
    return [spec for spec in load_checks().values() if spec.notebook == notebook]


def load_checks() -> dict[str, CheckSpec]:
    """Import every check module (the ``checks`` package registers them) and return CHECKS."""
    importlib.import_module("attn_course.grading.checking.checks")
    return CHECKS

"""Exercise grading: ``check()`` inside a notebook, ``python -m attn_course grade`` for files.

``check(exercise_id, obj)`` prints a one-line verdict and returns a ``CheckResult``. The
checks themselves live in ``grading.checks`` (one module per notebook) and are registered
with ``registry.register``; they are imported on first use. Official grades are computed
in the grader's process (``runner.py``), never in the learner's kernel. The names below are
imported on first use (torch loads then), so the grade command starts kernels first.
"""

import importlib

_HOMES = {
    "check": ".api",
    "CheckFailed": ".registry",
    "checks_for": ".registry",
    "register": ".registry",
    "CheckResult": ".result",
    "Status": ".result",
    "STATUSES": ".result",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> object:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

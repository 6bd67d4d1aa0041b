"""Exercise grading: ``check()`` inside a notebook, ``python -m attn_course grade`` for files.

``check(exercise_id, obj)`` prints a one-line verdict and returns a ``CheckResult``. The
checks themselves live in ``grading.checks`` (one module per notebook) and are registered
with ``registry.register``; they are imported on first use.
"""

from .api import STATUSES, CheckResult, check
from .registry import CheckFailed, checks_for, register

__all__ = ["STATUSES", "CheckFailed", "CheckResult", "check", "checks_for", "register"]

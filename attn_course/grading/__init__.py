"""Exercise grading: ``check()`` inside a notebook, ``python -m attn_course grade`` for files.

``check(exercise_id, obj)`` prints a one-line verdict and returns a ``CheckResult``. The
checks themselves live in ``grading.checks`` (one module per notebook) and are registered
with ``registry.register``; they are imported on first use. Official grades are computed
in the grader's process (``runner.py``), never in the learner's kernel.
"""

from .api import check
from .registry import CheckFailed, checks_for, register
from .result import CheckResult, Status

STATUSES = tuple(status.value for status in Status)

__all__ = ["STATUSES", "CheckFailed", "CheckResult", "Status", "check", "checks_for", "register"]

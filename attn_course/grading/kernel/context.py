"""The grading context: the settings that make a grade run differ from ``check()`` in a notebook.

``check()`` runs the check on the learner's object in the notebook's own process; the grade
command runs the notebook in a kernel of its own (``OFFICIAL_ENV`` set there, so ``check()``
only hands the answer over) and runs the checks from outside it, with secret inputs and
longer time limits. Everything that differs is here, in one place.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = [
    "OFFICIAL_ENV",
    "SALT",
    "CHECK_SEED",
    "OUTPUT_LIMIT",
    "OFFICIAL_TIME_FACTOR",
    "REQUEST_GRACE",
]

# Set in the grade command's kernels: check() there only stores the answer for the grader.
OFFICIAL_ENV = "ATTN_COURSE_OFFICIAL"

# The grade run's secret, added to every seed of a check's inputs (``expect.salted``), so the
# inputs cannot be known in advance; 0 in the notebook. A context variable: the grade command
# checks several notebooks at once, in threads.
SALT: ContextVar[int] = ContextVar("SALT", default=0)

# check() in the notebook seeds torch, NumPy and ``random`` with this for the check, so it is
# deterministic (the learner's random state is restored afterwards); the grade command's checks
# draw every input from salted seeds instead.
CHECK_SEED = 0

# Characters per stream that the learner's code may print during one check() in the notebook.
OUTPUT_LIMIT = 2_000

# The grade command allows each check this many times its registered time limit (a sandboxed
# kernel, on a machine grading several notebooks at once) ...
OFFICIAL_TIME_FACTOR = 3.0
# ... and waits this many seconds more for the kernel's reply before it gives the kernel up.
REQUEST_GRACE = 5.0

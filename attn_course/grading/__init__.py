"""Exercise grading: ``check()`` inside a notebook, ``python -m attn_course grade`` for files.

``check(exercise_id, obj)`` prints a one-line verdict and returns a ``CheckResult``. The
checks themselves live in ``grading.checks`` (one module per notebook) and are registered
with ``registry.register``; they are imported on first use. Official grades are computed
in the grader's process (``runner.py``), never in the learner's kernel. The names below are
imported on first use (torch loads then), so the grade command starts kernels first.

The package in three layers. The checks import only the check library; the library calls
learner code through the object's session (``local.session_of``): ``local`` in the notebook,
``remote`` in the grade command, one interface; the engine finds the checks through
``registry`` and runs them in ``verdicts``:

1. The engine. ``context`` (what differs between ``check()`` and a grade run: the official
   flag, the seed salt, time limits), ``wire`` (the message format, written once), ``agent``
   (the operations on learner objects; in a grading kernel it answers the grader's
   requests), ``local`` (``check()``'s session: the agent's operations in this process),
   ``kernels`` and ``sandbox`` (kernels started in bubblewrap), ``withheld`` (the answers
   of the checks a kernel grades, and the checks, kept out of its sandbox), ``remote`` (the grader's
   session and proxies for the learner's objects, and the strict reply schema), ``verdicts``
   (``run_check``: a check's outcome as a verdict), ``notebooks`` (a submission read as
   JSON), ``runner`` (one notebook: cells, then checks), ``intake``, ``seal``, ``roster``,
   ``export``, ``feedback``, ``escape`` (a class), ``cli`` (the ``grade`` command) and
   ``api`` (``check()`` in a notebook).
2. The check library: ``expect`` (seeded inputs, calling learner code, comparisons, the
   module suite), ``shared_checks`` (checks several notebooks share), ``hints``,
   ``registry``, ``errors``.
3. The checks, one module per notebook: ``checks.nbNN_topic``.
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

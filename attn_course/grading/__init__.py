"""Exercise grading: ``check()`` inside a notebook, ``python -m attn_course grade`` for files.

``check(exercise_id, obj)`` prints a one-line verdict and returns a ``CheckResult``. The
checks themselves live in ``grading.checking.checks`` (one module per notebook) and are registered
with ``registry.register``; they are imported on first use. Official grades are computed
in the grader's process (``runner.py``), never in the learner's kernel. The names below are
imported on first use (torch loads then), so the grade command starts kernels first.

Three rooms, one folder each, so that a reader knows where they are:

1. ``checking``: what is asked and how an answer is judged. ``checks`` (one module per
   notebook, ``checks.nbNN_topic``), ``expect`` (salted inputs, calling learner code,
   comparisons, the module suite), ``shared_checks``, ``hints``, ``registry`` (the checks by
   id), ``verdicts`` (``run_check``: a check's outcome as a verdict), ``result`` (the
   verdicts' format), ``errors`` (a learner's exception, pointing at their own line),
   ``withheld`` (what a grading sandbox keeps of the course, and what it withholds) and
   ``api`` (``check()`` in a notebook).
2. ``kernel``: how a learner's kernel is run and spoken to. ``sandbox`` (bubblewrap, a cpu
   cgroup per sandbox), ``kernels`` (kernels started in it), ``relay`` (the process per
   kernel that holds its sockets under a memory limit and reads its messages under caps),
   ``wire`` (the message format, written once), ``agent`` (the operations on learner
   objects, answering the grader's requests in a grading kernel), ``remote`` (the grader's
   session and proxies for the learner's objects, the strict reply schema), ``local``
   (``check()``'s session: the agent's operations in the notebook's own process) and
   ``context`` (what differs between ``check()`` and a grade run: the official flag, the
   seed salt, time limits).
3. ``classrun``: what a grade run does with submissions and results. ``cli`` (the ``grade``
   command), ``notebooks`` (a submission read as JSON), ``runner`` (a student's notebooks:
   their cells in a kernel, then their checks, within the student's budget), ``intake`` (a
   roster's folders and zips, ids and their lookalikes), ``roster``, ``seal`` (signed
   results), ``export`` (gradebook and Canvas CSV), ``feedback`` (the pages) and ``escape``
   (text made safe for HTML and CSV).

The checks reach learner code only through an object's session (``kernel.local.session_of``:
``local`` in the notebook, ``remote`` in the grade command, one interface), and the kernel
room runs a check by its ``checking.registry`` spec: the first two rooms talk through those
two names. ``classrun`` uses both; neither imports ``classrun`` (``tests/test_layers.py``).
"""

import importlib

_HOMES = {
    "check": ".checking.api",
    "CheckFailed": ".checking.registry",
    "checks_for": ".checking.registry",
    "register": ".checking.registry",
    "CheckResult": ".checking.result",
    "Status": ".checking.result",
    "STATUSES": ".checking.result",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> object:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

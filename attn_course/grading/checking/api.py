"""``check(exercise_id, obj)``: grade one exercise in the notebook and print a one-line verdict.

This is the instant-feedback path. The verdict is a ``Status``: passed, failed (with the
check's hint), not attempted (the answer is still ``...`` or the code raises
``NotImplementedError`` anywhere), error (the exception, pointing at the learner's own
line; ``SystemExit`` included) or timeout (past the check's time limit, even through a
bare ``except:``), sorted by ``verdicts.run_check``, which the grade command uses too.

Official grades never come from here: under ``python -m attn_course grade`` the kernel has
``OFFICIAL_ENV`` set, ``check()`` only hands the answer over (``agent.ANSWERS``), and the
grader's own process runs the same check functions on it (``runner.py``).
"""

from __future__ import annotations

import difflib
import os
from html import escape

from IPython import get_ipython
from IPython.display import display

from ..kernel import agent
from ..kernel.context import OFFICIAL_ENV
from .registry import CHECKS, load_checks
from .result import CheckResult, Status
from .verdicts import run_check

__all__ = ["CheckResult", "Status", "check"]


def check(exercise_id: str, obj: object) -> CheckResult | None:
    """Run the check ``exercise_id`` on the learner's ``obj``, print the verdict, return it.

    Args:
        exercise_id: a registered check id, e.g. ``"causal_mask"``.
        obj: the learner's answer: a function, a class, a value; ``...`` = not attempted.

    Returns:
        The ``CheckResult`` (``.status``, ``.message``, ``.verdict``); None under the
        grade command, which grades the answer in its own process.
    """
    if os.environ.get(OFFICIAL_ENV):
        agent.ANSWERS[exercise_id] = obj
        return None
    spec = load_checks().get(exercise_id)
    result = (
        CheckResult(exercise_id, Status.ERROR, _unknown_id_message(exercise_id))
        if spec is None
        else run_check(spec, obj)
    )
    show_verdict(result.verdict)
    return result


def show_verdict(verdict: str) -> None:
    """Print the verdict; in a notebook also as HTML, so that a long line wraps between words.

    JupyterLab wraps printed output anywhere, even inside ``torch.triu``; this HTML wraps at
    spaces and breaks a word only when the word alone is wider than the output area.
    """
    if get_ipython() is None:
        print(verdict, flush=True)
        return
    style = "white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; margin: 0"
    html = f'<pre class="attn-verdict" style="{style}">{escape(verdict)}</pre>'
    display({"text/plain": verdict, "text/html": html}, raw=True)


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

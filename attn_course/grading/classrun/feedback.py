"""One self-contained HTML feedback page per student (``grade --roster ... --feedback``).

Per notebook and exercise: the verdict, the hint, and the learner's own code cells for that
exercise (the code cells after the previous check cell, up to the cell that calls the check;
cells showing the course package's source are left out). The page holds nothing else of the
course: no reference code and no inputs of the checks. Every piece of learner content (names,
file names, hints that quote their errors, cell sources) is HTML-escaped by
``escape.html_text``; the page has no script and its Content-Security-Policy allows none.
"""

from __future__ import annotations

from pathlib import Path

from ...tools.protocol import CHECK_CALL, CHECK_ID, METADATA_KEY, PACKAGE_COPY, has_tag
from ..checking.result import CheckResult
from .escape import html_text
from .notebooks import Notebook, read_notebook

__all__ = ["exercise_cells", "feedback_page"]

MAX_SOURCE_CHARS = 20_000  # of one exercise's cells on the page

_STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; color: #1b1b1b; }
h1 { font-size: 1.6rem; }
h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ccc; }
.check { margin: 1rem 0; padding: 0.5rem 1rem; border-left: 5px solid #999; background: #f7f7f7; }
.passed { border-color: #2e7d32; } .failed, .error, .timeout { border-color: #c62828; }
.verdict { font-weight: 600; margin: 0.25rem 0; }
.hint { margin: 0.25rem 0; white-space: pre-wrap; }
pre { background: #fff; border: 1px solid #ddd; padding: 0.5rem; overflow-x: auto; }
.warnings { color: #8a4b00; }
"""


def _checks_called(cell) -> set[str]:
    """The check ids a code cell calls: by its stamped metadata or its source."""
    ids = set(CHECK_CALL.findall(cell.source))
    stamped = cell.metadata.get(METADATA_KEY)
    if isinstance(stamped, dict) and isinstance(stamped.get(CHECK_ID), str):
        ids.add(stamped[CHECK_ID])
    return ids


def exercise_cells(notebook: Notebook, check_id: str) -> list[str]:
    """The learner's code cells for ``check_id``: after the previous check cell, to its own."""
    code = [(i, c) for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    calls = [i for i, c in code if check_id in _checks_called(c)]
    if not calls:
        return []
    start = max((i for i, c in code if i < calls[0] and _checks_called(c)), default=-1)
    return [
        c.source
        for i, c in code
        if start < i <= calls[0] and not has_tag(c.metadata, PACKAGE_COPY) and c.source.strip()
    ]


def _check_html(result: CheckResult, notebook: Notebook | None) -> str:
    cells = exercise_cells(notebook, result.id) if notebook else []
    source = "\n\n".join(cells)
    if len(source) > MAX_SOURCE_CHARS:
        source = source[:MAX_SOURCE_CHARS] + "\n… (cut)"
    code = f"<pre><code>{html_text(source)}</code></pre>" if source else ""
    verdict = CheckResult(result.id, result.status, "", result.uses_reference).verdict
    hint = f'<p class="hint">{html_text(result.message)}</p>' if result.message else ""
    return (
        f'<div class="check {html_text(result.status.value)}">'
        f'<p class="verdict">{html_text(verdict)}</p>{hint}{code}</div>'
    )


def feedback_page(student: dict, copies: dict[str, Path]) -> str:
    """The page for one student's results (``roster`` JSON); ``copies``: file name -> copy."""
    parts = []
    for report in student["notebooks"]:
        try:
            notebook: Notebook | None = read_notebook(copies[report["path"]])
        except (KeyError, ValueError, OSError):
            notebook = None
        title = f"{report.get('notebook') or ''} ({report['path']})"
        score = f"{report['score']} / {report['max_score']}"
        parts.append(f"<section><h2>{html_text(title)}: {html_text(score)}</h2>")
        if report.get("error"):
            parts.append(f'<p class="warnings">{html_text(report["error"])}</p>')
        parts.extend(_check_html(CheckResult.from_json(c), notebook) for c in report["checks"])
        parts.append("</section>")
    warnings = "".join(f"<li>{html_text(w)}</li>" for w in student.get("warnings", []))
    name = html_text(student.get("entry") or student["student"])
    total = f"{student['score']} / {student['max_score']}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Feedback: {name}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Feedback for {name}</h1><p>Exercises passed: <b>{html_text(total)}</b></p>"
        + (f'<ul class="warnings">{warnings}</ul>' if warnings else "")
        + "".join(parts)
        + "</body></html>\n"
    )

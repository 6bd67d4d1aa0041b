"""A class's gradebooks, from the student results (``roster.py``): the course's and Canvas's.

* ``gradebook.csv``: one row per student, one column per exercise id (1 = passed), then
  ``total``, ``max`` and ``flag``: for an id that looks like another (``intake.lookalikes``:
  ``ALICE`` beside ``alice``, a Cyrillic ``аlice``), the ids it looks like, and the id
  itself with every non-ASCII character escaped, so that the pair can be told apart.
* ``canvas.csv``: Canvas's gradebook import format. The columns Canvas reads, in its order:
  ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column per assignment; a
  second row ``Points Possible``. Here an assignment is a course notebook (points: checks
  passed). Canvas's importer matches a row by ``ID`` (Canvas's own user id, unknown here, left
  empty), then ``SIS User ID``, then ``SIS Login ID``, then the name: the student id fills
  ``Student`` and both SIS columns. A column named after no existing assignment makes a new
  one on import (its points from the ``Points Possible`` row); rename it to
  ``Name (canvas id)`` to fill an existing one.

Every text cell goes through ``escape.csv_cell`` (formula injection, control characters).
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..checking.registry import load_checks
from .escape import csv_cell
from .intake import lookalikes

__all__ = ["CANVAS_IDENTITY", "exercise_ids", "write_canvas", "write_gradebook"]

CANVAS_IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def exercise_ids() -> list[str]:
    """Every registered exercise id, by notebook then registration order."""
    specs = load_checks().values()
    return [s.id for s in sorted(specs, key=lambda s: s.notebook)]


def _passed(student: dict) -> set[str]:
    return {c["id"] for nb in student["notebooks"] for c in nb["checks"] if c["status"] == "passed"}


def _write(path: Path, rows: list[list]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([[csv_cell(cell) for cell in row] for row in rows])


def write_gradebook(students: list[dict], path: Path) -> None:
    """student x exercise id (1 passed, 0 not), then total and max over every exercise."""
    ids = exercise_ids()
    rows: list[list] = [["student", *ids, "total", "max", "flag"]]
    similar = lookalikes([student["student"] for student in students])
    for student in sorted(students, key=lambda s: s["student"]):
        passed = [int(i in _passed(student)) for i in ids]
        rows.append([student["student"], *passed, sum(passed), len(ids), _flag(student, similar)])
    _write(path, rows)


def _flag(student: dict, similar: dict[str, list[str]]) -> str:
    name = student["student"]
    if name not in similar:
        return ""
    shown = name.encode("ascii", "backslashreplace").decode()
    return f"looks like {', '.join(similar[name])} (this id: {shown})"


def write_canvas(students: list[dict], path: Path) -> None:
    """Canvas's gradebook import CSV: one assignment column per course notebook."""
    specs = load_checks().values()
    notebooks = sorted({s.notebook for s in specs})
    ids = {nb: [s.id for s in specs if s.notebook == nb] for nb in notebooks}
    rows: list[list] = [
        [*CANVAS_IDENTITY, *notebooks],
        ["Points Possible", "", "", "", "", *(len(ids[nb]) for nb in notebooks)],
    ]
    for student in sorted(students, key=lambda s: s["student"]):
        passed = _passed(student)
        points = [sum(i in passed for i in ids[nb]) for nb in notebooks]
        student_id = student["student"]
        rows.append([student_id, "", student_id, student_id, "", *points])
    _write(path, rows)

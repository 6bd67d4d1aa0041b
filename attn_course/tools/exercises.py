"""``python -m attn_course make-exercises [--check]``: exercises/ from solutions/.

solutions/NN_topic.ipynb is the single source. In its code cells every region between a
line ``# BEGIN SOLUTION`` and a line ``# END SOLUTION`` (markers alone on their line, any
indentation) becomes ONE line at the marker's indentation: the text after
``# BEGIN SOLUTION:`` when given (``# BEGIN SOLUTION: answer = ...`` -> ``answer = ...``),
else ``raise NotImplementedError("your code here")``. Cells tagged ``solution-only`` are
dropped; outputs and execution counts are cleared; everything else is kept.

Identity, the way nbgrader uses ``grade_id``: the exercise notebook's metadata gets
``{"attn_course": {"notebook": "<stem>"}}`` and each cell that calls ``check("<id>", ...)``
gets ``{"attn_course": {"check_id": "<id>"}}``, so the grader knows a renamed file
(``03_weight_split_mha (1).ipynb``). Two cells checking the same id are an error.
``--check`` writes nothing and exits 1 naming the exercise files that are out of date.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import nbformat


from .protocol import (
    BEGIN_SOLUTION,
    CHECK_CALL,
    CHECK_ID,
    END_SOLUTION,
    METADATA_KEY,
    NOTEBOOK_ID,
    SOLUTION_ONLY,
    STUB,
    has_tag,
)

__all__ = ["STUB", "strip_solutions", "make_exercise", "exercise_text", "stale_exercises"]

_BEGIN = re.compile(rf"^(?P<indent>[ \t]*){BEGIN_SOLUTION}(?::(?P<stub>.*))?[ \t]*$")
_END = re.compile(rf"^[ \t]*{END_SOLUTION}[ \t]*$")
_ANY_MARKER = re.compile(r"(BEGIN|END) SOLUTION")


def strip_solutions(source: str) -> str:
    """Replace each ``# BEGIN SOLUTION`` ... ``# END SOLUTION`` region of ``source``.

    Raises:
        ValueError: a marker that is not alone on its line, nested or unmatched markers.
    """
    kept: list[str] = []
    begin_line = None  # 1-based line of the open region's BEGIN marker
    for number, line in enumerate(source.split("\n"), start=1):
        begin, end = _BEGIN.match(line), _END.match(line)
        if begin:
            if begin_line is not None:
                raise ValueError(
                    f"line {number}: '# BEGIN SOLUTION' inside the region opened on line "
                    f"{begin_line}; close it with '# END SOLUTION' first"
                )
            begin_line = number
            stub = (begin["stub"] or "").strip() or STUB
            kept.append(begin["indent"] + stub)
        elif end:
            if begin_line is None:
                raise ValueError(f"line {number}: '# END SOLUTION' without a '# BEGIN SOLUTION'")
            begin_line = None
        elif _ANY_MARKER.search(line):
            raise ValueError(
                f"line {number}: a solution marker must be alone on its line "
                f"('# BEGIN SOLUTION' or '# END SOLUTION'), got {line.strip()!r}"
            )
        elif begin_line is None:
            kept.append(line)
    if begin_line is not None:
        raise ValueError(f"line {begin_line}: '# BEGIN SOLUTION' has no matching '# END SOLUTION'")
    return "\n".join(kept)


def make_exercise(
    solution: nbformat.NotebookNode, notebook_id: str | None = None
) -> nbformat.NotebookNode:
    """The exercise notebook of a solution notebook (a new object; the input is unchanged).

    ``notebook_id`` (the solution's stem) is stamped into the notebook's metadata.

    Raises:
        ValueError: broken solution markers, or two cells that check the same id.
    """
    exercise = copy.deepcopy(solution)
    if notebook_id:
        exercise.metadata[METADATA_KEY] = {NOTEBOOK_ID: notebook_id}
    checked: dict[str, int] = {}
    exercise.cells = [
        cell for cell in exercise.cells if not has_tag(cell.get("metadata", {}), SOLUTION_ONLY)
    ]
    for index, cell in enumerate(exercise.cells):
        if cell.cell_type != "code":
            continue
        try:
            cell.source = strip_solutions(cell.source)
        except ValueError as exc:
            raise ValueError(f"code cell {index + 1}, {exc}") from None
        cell.outputs = []
        cell.execution_count = None
        ids = CHECK_CALL.findall(cell.source)
        for check_id in ids:
            if check_id in checked:
                raise ValueError(
                    f"code cells {checked[check_id] + 1} and {index + 1} both check "
                    f"{check_id!r}: each exercise id is checked by one cell"
                )
            checked[check_id] = index
        if len(ids) == 1:
            cell.metadata[METADATA_KEY] = {CHECK_ID: ids[0]}
    return exercise


def exercise_text(solution_path: Path) -> str:
    """The file contents of the exercise generated from ``solution_path``."""
    import nbformat  # here, not at the top: it costs 2 CPU-s (jsonschema builds grammars)

    solution = nbformat.read(solution_path, as_version=4)
    try:
        exercise = make_exercise(solution, solution_path.stem)
    except ValueError as exc:
        raise ValueError(f"{solution_path}: {exc}") from None
    text = nbformat.writes(exercise)
    return text if text.endswith("\n") else text + "\n"


def stale_exercises(solutions: Path, exercises: Path) -> list[Path]:
    """Exercise files that differ from what ``solutions`` generates, missing or orphaned."""
    stale = []
    for solution_path in sorted(solutions.glob("*.ipynb")):
        target = exercises / solution_path.name
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != exercise_text(solution_path):
            stale.append(target)
    sources = {path.name for path in solutions.glob("*.ipynb")}
    stale.extend(p for p in sorted(exercises.glob("*.ipynb")) if p.name not in sources)
    return stale


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attn_course make-exercises", description=__doc__
    )
    parser.add_argument("--solutions", type=Path, default=Path("solutions"))
    parser.add_argument("--exercises", type=Path, default=Path("exercises"))
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if exercises/ is stale"
    )
    args = parser.parse_args(argv)
    if not args.solutions.is_dir():
        parser.error(f"no such folder: {args.solutions}")
    try:
        stale = stale_exercises(args.solutions, args.exercises)
    except ValueError as exc:
        print(f"make-exercises: {exc}", file=sys.stderr)
        return 1
    if args.check:
        for path in stale:
            print(f"stale: {path}", file=sys.stderr)
        if stale:
            print("run `make exercises` to regenerate them", file=sys.stderr)
        return 1 if stale else 0
    args.exercises.mkdir(parents=True, exist_ok=True)
    for target in stale:
        solution_path = args.solutions / target.name
        if solution_path.exists():
            target.write_text(exercise_text(solution_path), encoding="utf-8")
            print(f"wrote {target}")
        else:
            target.unlink()
            print(f"removed {target} (no {solution_path})")
    return 0

"""Write a synthetic class: one submission per student, made from solutions/ with random mistakes.

    python benchmarks/make_class.py OUT [--students 100] [--notebooks 00,01,...] [--seed 0]
                                        [--nbgrader ASSIGNMENT]

Each student gets the exercise notebooks (their metadata stamps the ids) with each exercise
answered by the solution (70 %), left unanswered (10 %) or answered with one classic mistake
made by a text edit of the solution (20 %, when one applies). Every third student hands in
a zip, every fourth renames a file to ``NN_name (1).ipynb``. With ``--nbgrader ASSIGNMENT``
the class is laid out as an nbgrader course: ``submitted/{student_id}/{ASSIGNMENT}/*.ipynb``
(folders only, no renames) beside an ``nbgrader_config.py``. The same seed writes the same class.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import shutil
import zipfile
from pathlib import Path

from attn_course.tools.protocol import BEGIN_SOLUTION, END_SOLUTION, SOLUTION_ONLY, has_tag

ROOT = Path(__file__).resolve().parents[1]
MISTAKES = [  # (pattern, replacement): classic mistakes as edits of the solution source
    (r"\*\* 0\.5", "** 1.0"),  # no sqrt in the scaling
    (r"dim=-1\)", "dim=-2)"),  # softmax over the wrong dim
    (r"axis=-1", "axis=0"),
    (r"diagonal=1", "diagonal=0"),  # the diagonal hidden too
    (r"k=1\)", "k=0)"),
    (r"masked_fill_\(", "masked_fill("),  # result discarded
    (r"self\.dropout\((\w+)\)", r"\1"),  # dropout forgotten
    (r"transpose\(1, 2\)", "transpose(0, 1)"),
    (r"unbiased=False", "unbiased=True"),
    (r"\+ self\.eps", ""),
    (r"x \+ ", ""),  # residual forgotten
]
_REGION = re.compile(
    rf"^([ \t]*){BEGIN_SOLUTION}(?::[^\n]*)?\n(.*?)^[ \t]*{END_SOLUTION}[ \t]*\n?", re.S | re.M
)


def _answer_cells(solution: dict) -> list[dict]:
    """The solution's cells that the exercise keeps (solution-only cells are dropped)."""
    return [c for c in solution["cells"] if not has_tag(c.get("metadata", {}), SOLUTION_ONLY)]


def _solved(source: str) -> str:
    """The solution source with its markers removed."""
    return _REGION.sub(lambda m: m.group(2), source)


def _mistaken(source: str, rng: random.Random) -> str | None:
    """The solution with one classic mistake, or None when none applies."""
    solved = _solved(source)
    options = [(p, r) for p, r in MISTAKES if re.search(p, solved)]
    if "answer = " in solved:
        return re.sub(r"^answer = .*$", f"answer = {rng.randint(1, 99)}", solved, flags=re.M)
    if not options:
        return None
    pattern, replacement = rng.choice(options)
    return re.sub(pattern, replacement, solved, count=1)


def student_notebook(stem: str, rng: random.Random) -> dict:
    """One student's version of notebook ``stem``."""
    exercise = json.loads((ROOT / "exercises" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    solution = json.loads((ROOT / "solutions" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    notebook = copy.deepcopy(exercise)
    for cell, solved in zip(notebook["cells"], _answer_cells(solution), strict=True):
        source = "".join(solved["source"])
        if cell["cell_type"] != "code" or BEGIN_SOLUTION not in source:
            continue
        roll = rng.random()
        if roll < 0.10:
            continue  # left as the exercise's stub
        mistaken = _mistaken(source, rng) if roll < 0.30 else None
        cell["source"] = mistaken if mistaken is not None else _solved(source)
    return notebook


def make_class(
    out: Path, students: int, stems: list[str], seed: int, nbgrader: str | None = None
) -> list[Path]:
    """Write the class to ``out`` (emptied first); the submissions' paths.

    ``nbgrader``: an assignment id; the class is then written as nbgrader's
    ``out/submitted/{student_id}/{nbgrader}/``, beside an ``nbgrader_config.py``.
    """
    rng = random.Random(seed)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    if nbgrader:
        (out / "nbgrader_config.py").write_text("c = get_config()  # noqa: F821\n")
    written = []
    for n in range(students):
        name = f"student{n:03d}"
        folder = out / "submitted" / name / nbgrader if nbgrader else out / name
        folder.mkdir(parents=True)
        for stem in stems:
            renamed = n % 4 == 3 and not nbgrader
            filename = f"{stem} (1).ipynb" if renamed else f"{stem}.ipynb"
            notebook = student_notebook(stem, rng)
            (folder / filename).write_text(json.dumps(notebook, indent=1), encoding="utf-8")
        if nbgrader:
            written.append(folder.parent)
        elif n % 3 == 2:
            with zipfile.ZipFile(out / f"{name}.zip", "w") as archive:
                for path in sorted(folder.iterdir()):
                    archive.write(path, f"{name}/{path.name}")
            shutil.rmtree(folder)
            written.append(out / f"{name}.zip")
        else:
            written.append(folder)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--notebooks", default="", help="comma-separated NN prefixes (all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--nbgrader", metavar="ASSIGNMENT", help="nbgrader's submitted/ layout")
    args = parser.parse_args()
    stems = sorted(p.stem for p in (ROOT / "exercises").glob("*.ipynb"))
    if args.notebooks:
        wanted = args.notebooks.split(",")
        stems = [s for s in stems if s.split("_")[0] in wanted]
    make_class(args.out, args.students, stems, args.seed, args.nbgrader)
    print(f"wrote {args.students} students x {len(stems)} notebooks to {args.out}")


if __name__ == "__main__":
    main()

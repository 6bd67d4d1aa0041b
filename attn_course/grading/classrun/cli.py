"""``python -m attn_course grade``: grade notebooks, a whole class, or merge class shards.

* ``grade PATH... [--json FILE] [--strict]``: prints a score table (one row per notebook,
  one verdict line per check).
* ``grade --roster DIR --out OUT [--shard i/n] [--feedback] [--student-budget S]``: every
  student of DIR (a folder or a zip each; nbgrader's ``submitted/`` too) into
  OUT/students/*.json, OUT/gradebook.csv, OUT/canvas.csv (Canvas's gradebook import) and,
  with ``--feedback``, one HTML page per student in OUT/feedback/; resumable (see
  ``roster.py``). A student's notebooks take one grading slot, S seconds at most in all.
* ``grade --merge OUT1 OUT2 ... --out OUT``: combine shards into one gradebook; a student
  file whose signature does not verify, or graded by another course version, is refused by
  name.

Student files are signed with a key kept outside OUT: ``--key-file``, else the environment
variable ATTN_GRADE_KEY, else ~/.config/attn-course/grading.key (made on first use).
Everything a learner wrote is printed with its control characters escaped.

Every notebook's kernel runs in a sandbox (``sandbox.py``: bubblewrap). ``--roster`` refuses
to run without it; a learner grading their own notebooks may pass ``--no-sandbox`` (and
``grade`` without bubblewrap installed falls back to it), with a warning.

Exit status 0 whenever grading ran, whatever the score; with ``--strict`` 1 below full
marks; 2 for a usage error (a path that does not exist, a folder without notebooks).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from ...tools.protocol import notebook_paths
from ..checking.result import NotebookReport
from ..kernel import sandbox
from ..kernel.kernels import CELL_TIMEOUT, STUDENT_BUDGET, KernelPool
from .escape import clean
from .notebooks import planned_notebook


def _progress(total: int):
    """A callback printing ``[k/total] path score`` to stderr as notebooks finish."""
    done = 0

    def on_done(report: NotebookReport) -> None:
        nonlocal done
        done += 1
        print(
            f"[{done}/{total}] {clean(report.path)}: {report.score}/{report.max_score} "
            f"({report.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )

    return on_done


def _table(reports: list[NotebookReport]) -> str:
    """The score table: notebook, score, seconds; each check's verdict underneath."""
    paths = [clean(r.path) for r in reports]
    width = max(len("notebook"), *map(len, paths))
    lines = [f"{'notebook':<{width}}  score  time"]
    for path, report in zip(paths, reports, strict=True):
        score = f"{report.score}/{report.max_score}"
        lines.append(f"{path:<{width}}  {score:>5}  {report.seconds:4.1f} s")
        if report.error:
            lines.append(f"    ⚠ {clean(report.error)}")
        lines.extend(f"    {clean(result.verdict)}" for result in report.checks)
    total = sum(r.score for r in reports)
    max_total = sum(r.max_score for r in reports)
    lines.append(f"{'total':<{width}}  {f'{total}/{max_total}':>5}")
    return "\n".join(lines)


def _sandbox_or_warn() -> bool:
    """Whether the sandbox can run here; if not, say so (grading goes on without it)."""
    problem = sandbox.available()
    if problem:
        print(f"warning: {problem}. Grading without the sandbox.", file=sys.stderr)
    return problem is None


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes i/n, e.g. 1/4, not {text!r}") from None
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"--shard {text}: need 1 <= i <= n")
    return index, count


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attn_course grade",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", help="notebooks, or folders of notebooks")
    parser.add_argument("--roster", type=Path, help="a class: one folder or zip per student")
    parser.add_argument("--merge", type=Path, nargs="+", help="--out folders of roster shards")
    parser.add_argument("--out", type=Path, help="where --roster / --merge write")
    parser.add_argument("--shard", type=_shard, default=(1, 1), help="grade shard i of n")
    parser.add_argument(
        "--feedback",
        action="store_true",
        help="--roster: one HTML page per student in OUT/feedback",
    )
    parser.add_argument(
        "--key-file", type=Path, help="the key that signs student files (kept outside OUT)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE")
    parser.add_argument("--strict", action="store_true", help="exit 1 below full marks")
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the kernels without the sandbox: only for your own notebooks",
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="notebooks graded in parallel (default 2)"
    )
    parser.add_argument(
        "--cell-timeout",
        type=int,
        default=CELL_TIMEOUT,
        help=f"seconds a cell may run before it is interrupted (default {CELL_TIMEOUT})",
    )
    parser.add_argument(
        "--student-budget",
        type=float,
        default=STUDENT_BUDGET,
        metavar="SECONDS",
        help="--roster: seconds one student's notebooks may take in all; the notebooks left "
        f"when it runs out are marked, not graded (default {STUDENT_BUDGET})",
    )
    args = parser.parse_args(argv)
    if args.student_budget <= 0:
        parser.error("--student-budget must be positive")
    if args.feedback and not args.roster:
        parser.error("--feedback goes with --roster (each shard writes its own students' pages)")
    if args.roster or args.merge:
        return _class_mode(parser, args)
    if args.no_sandbox:
        print(
            "warning: --no-sandbox: the notebooks' code runs as you, with your files, "
            "environment and network. Grade only your own notebooks this way.",
            file=sys.stderr,
        )
    if not args.paths:
        parser.error("name notebooks or folders to grade (or --roster DIR --out OUT)")
    for path in map(Path, args.paths):
        if not path.exists():
            parser.error(f"no such file or folder: {path}")
        if path.is_dir() and not any(path.glob("*.ipynb")):
            parser.error(f"no notebooks (*.ipynb) in the folder {path}")
    if args.jobs < 1 or args.cell_timeout < 1:
        parser.error("--jobs and --cell-timeout must be at least 1")

    sandboxed = not args.no_sandbox and _sandbox_or_warn()
    paths = notebook_paths(args.paths)
    # the kernels start while torch loads
    plan = [planned_notebook(path) for path in paths]
    pool = KernelPool(args.jobs, plan, sandboxed)
    from .runner import grade_notebooks

    if len(paths) > 1:
        print(f"grading {len(paths)} notebooks, {args.jobs} at a time", file=sys.stderr)
    progress = _progress(len(paths)) if len(paths) > 1 else None
    reports = grade_notebooks(paths, args.cell_timeout, args.jobs, progress, pool)
    print(_table(reports))

    score = sum(r.score for r in reports)
    max_score = sum(r.max_score for r in reports)
    if args.json:
        summary = {
            "score": score,
            "max_score": max_score,
            "notebooks": [r.to_json() for r in reports],
        }
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    full_marks = score == max_score and not any(r.error for r in reports)
    return 1 if args.strict and not full_marks else 0


def _class_mode(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """``--roster`` or ``--merge``."""
    from .roster import grade_roster, merge
    from .seal import KEY_ENV, load_key

    if args.paths or (args.roster and args.merge):
        parser.error("--roster and --merge take no notebook paths, and not each other")
    if not args.out:
        parser.error("--roster and --merge need --out FOLDER")
    if args.merge:
        missing = [p for p in args.merge if not p.is_dir()]
        if missing:
            parser.error(f"no such folder: {missing[0]}")
    elif not args.roster.is_dir():
        parser.error(f"no such folder: {args.roster}")
    elif args.out.resolve().is_relative_to(args.roster.resolve()):
        parser.error("--out must be outside the roster folder, where no submission can reach it")
    if args.roster and (args.no_sandbox or sandbox.available()):
        problem = sandbox.available()
        parser.error(
            "a class is graded in the sandbox only (--no-sandbox is for your own "
            f"notebooks){': ' + problem if problem else ''}"
        )
    try:
        key = load_key(args.key_file, args.out, create=not args.merge)
    except ValueError as exc:
        parser.error(str(exc))
    os.environ.pop(KEY_ENV, None)  # no kernel started from here inherits the key
    if args.roster and not sandbox.can_share():
        print(
            "warning: no cgroup can be made here for each sandbox's CPU share: a notebook's "
            "processes each weigh as one process of the machine (README: Grading a class "
            "safely)",
            file=sys.stderr,
        )
    if args.merge:
        students = merge(args.merge, args.out, key)
    else:
        students = grade_roster(
            args.roster,
            args.out,
            key,
            args.shard,
            args.jobs,
            args.cell_timeout,
            args.feedback,
            student_budget=args.student_budget,
        )
    print(f"{len(students)} students; gradebook: {args.out / 'gradebook.csv'}")
    return 0

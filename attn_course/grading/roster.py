"""Grade a whole class: ``grade --roster DIR --out OUT [--shard i/n]`` and ``grade --merge``.

``DIR`` holds one entry per student: a folder, or a ``.zip``, holding some of the exercise
notebooks (searched recursively; each identified by its metadata, else its file name).
``OUT`` receives:

* ``students/<student>.json``: the student's reports (``NotebookReport.to_json()``), with
  ``schema_version``, the ``course_version`` that graded them and the SHA-256 of every file;
* ``gradebook.csv``: one row per student, one column per exercise id (1 = passed), then
  ``total`` and ``max``.

Resumable: a student whose files have the same hashes and whose JSON has the same course
version is not graded again. ``--shard i/n`` grades only the students whose name hashes to
shard ``i`` of ``n`` (1-based), the same split on every machine, so a CI matrix, a Slurm
array or a Kubernetes Job can spread a class; ``grade --merge OUT1 OUT2 ... --out OUT``
then combines the shards' student files and writes the class gradebook.
"""

from __future__ import annotations

import csv
import hashlib
import json
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from .registry import load_checks
from .result import SCHEMA_VERSION, NotebookReport
from .runner import Notebook, grade_notebooks, notebook_id, read_notebook

__all__ = [
    "COURSE_VERSION",
    "Submission",
    "find_submissions",
    "in_shard",
    "grade_roster",
    "merge",
    "write_gradebook",
]

_GRADING_DIR = Path(__file__).resolve().parent


def _course_version() -> str:
    """The package version plus a digest of the grading code: new checks mean new grades."""
    digest = hashlib.sha256()
    for path in sorted(_GRADING_DIR.rglob("*.py")):
        digest.update(path.read_bytes())
    try:
        version = metadata.version("attn-course")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"{version}+{digest.hexdigest()[:12]}"


COURSE_VERSION = _course_version()


@dataclass
class Submission:
    """One student's notebooks (paths inside ``root``, a folder or an extracted zip)."""

    student: str
    root: Path  # the student's folder, or where their zip was unpacked
    files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def name(self, path: Path) -> str:
        """``path`` as the student named it (inside their folder or zip)."""
        return path.relative_to(self.root).as_posix()

    def hashes(self) -> dict[str, str]:
        return {self.name(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in self.files}


def _notebooks_in(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*.ipynb")
        if ".ipynb_checkpoints" not in p.parts and "__MACOSX" not in p.parts
    )


def find_submissions(roster: Path, unpack_to: Path) -> list[Submission]:
    """Every student of ``roster``: sub-folders and zips (unpacked under ``unpack_to``)."""
    submissions = []
    for entry in sorted(roster.iterdir()):
        if entry.is_dir():
            submission = Submission(entry.name, entry, _notebooks_in(entry))
        elif entry.suffix == ".zip":
            target = unpack_to / entry.stem
            try:
                with zipfile.ZipFile(entry) as archive:
                    archive.extractall(target)
                files = _notebooks_in(target)
                submission = Submission(entry.stem, target, files)
            except zipfile.BadZipFile:
                submission = Submission(entry.stem, entry, [], [f"{entry.name} is not a zip"])
        else:
            continue
        if not submission.files and not submission.warnings:
            submission.warnings.append(f"{entry.name} holds no notebooks (*.ipynb)")
        submissions.append(submission)
    return submissions


def in_shard(student: str, shard: tuple[int, int]) -> bool:
    """Whether ``student`` belongs to shard ``i`` of ``n`` (1-based): a stable hash split."""
    index, count = shard
    return int(hashlib.sha256(student.encode()).hexdigest(), 16) % count == index - 1


def _pick_notebooks(submission: Submission) -> list[Path]:
    """One file per course notebook; warnings for duplicates and for unknown files."""
    known = {spec.notebook for spec in load_checks().values()}
    chosen: dict[str, Path] = {}
    for path in submission.files:
        try:
            notebook = read_notebook(path)
        except ValueError:
            notebook = Notebook({}, [])
        name = notebook_id(notebook, path)
        if name not in known:
            submission.warnings.append(
                f"{submission.name(path)} is not a course exercise notebook "
                "(neither its metadata nor its file name names one): not graded"
            )
        elif name in chosen:
            submission.warnings.append(
                f"two files are notebook {name}: {submission.name(chosen[name])} "
                f"and {submission.name(path)}; graded the second (last by name)"
            )
            chosen[name] = path
        else:
            chosen[name] = path
    return list(chosen.values())


def _student_json(submission: Submission, reports: list[NotebookReport]) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "student": submission.student,
        "course_version": COURSE_VERSION,
        "files": submission.hashes(),
        "warnings": submission.warnings,
        "score": sum(r.score for r in reports),
        "max_score": sum(r.max_score for r in reports),
        "notebooks": [r.to_json() for r in reports],
    }


def _up_to_date(path: Path, submission: Submission) -> bool:
    """Whether ``path`` already grades these very files with this course version."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and data.get("schema_version") == SCHEMA_VERSION
        and data.get("course_version") == COURSE_VERSION
        and data.get("files") == submission.hashes()
    )


class Progress:
    """``[####......] 37/800 notebooks  6.1/min  ETA 2h07m`` on one stderr line."""

    def __init__(self, total: int, stream=sys.stderr, width: int = 30):
        self.total, self.stream, self.width = total, stream, width
        self.done, self.start = 0, time.monotonic()

    def step(self) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate else 0.0
        filled = int(self.width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (self.width - filled)
        eta = f"{int(left // 3600)}h{int(left % 3600 // 60):02d}m{int(left % 60):02d}s"
        end = "\n" if self.done == self.total else ""
        self.stream.write(
            f"\r[{bar}] {self.done}/{self.total} notebooks  {60 * rate:.1f}/min  ETA {eta}{end}"
        )
        self.stream.flush()


def grade_roster(
    roster: Path,
    out: Path,
    shard: tuple[int, int] = (1, 1),
    jobs: int = 2,
    cell_timeout: int = 60,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> list[dict]:
    """Grade the students of ``roster`` in ``shard`` into ``out``; their JSON, by name."""
    students_dir = out / "students"
    students_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attn-roster-") as tmp:
        submissions = [s for s in find_submissions(roster, Path(tmp)) if in_shard(s.student, shard)]
        todo = [s for s in submissions if not _up_to_date(students_dir / f"{s.student}.json", s)]
        skipped = len(submissions) - len(todo)
        if skipped:
            log(
                f"{skipped} of {len(submissions)} students already graded "
                "(same files, same course version)"
            )
        picked = {s.student: _pick_notebooks(s) for s in todo}
        paths = [p for s in todo for p in picked[s.student]]
        owner = {p: s for s in todo for p in picked[s.student]}
        pending = {s.student: len(picked[s.student]) for s in todo}
        reports: dict[str, list[NotebookReport]] = {s.student: [] for s in todo}
        progress = Progress(len(paths))

        def write(submission: Submission) -> None:
            data = _student_json(submission, reports[submission.student])
            target = students_dir / f"{submission.student}.json"
            target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

        def on_done(report: NotebookReport) -> None:
            submission = owner[Path(report.path)]
            report.path = submission.name(Path(report.path))
            reports[submission.student].append(report)
            pending[submission.student] -= 1
            progress.step()
            if pending[submission.student] == 0:
                write(submission)  # at once: an interrupted run resumes from here

        for submission in todo:
            if not picked[submission.student]:
                write(submission)
        if paths:
            grade_notebooks(paths, cell_timeout, jobs, on_done)
    students = [json.loads((students_dir / f"{s.student}.json").read_text()) for s in submissions]
    write_gradebook(students, out / "gradebook.csv")
    return students


def _exercise_ids() -> list[str]:
    """Every registered exercise id, by notebook then registration order."""
    specs = load_checks().values()
    return [s.id for s in sorted(specs, key=lambda s: s.notebook)]


def write_gradebook(students: list[dict], path: Path) -> None:
    """student x exercise id (1 passed, 0 not), then total and max over every exercise."""
    ids = _exercise_ids()
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", *ids, "total", "max"])
        for student in sorted(students, key=lambda s: s["student"]):
            passed = {
                c["id"]
                for nb in student["notebooks"]
                for c in nb["checks"]
                if c["status"] == "passed"
            }
            row = [int(i in passed) for i in ids]
            writer.writerow([student["student"], *row, sum(row), len(ids)])


def merge(shards: list[Path], out: Path) -> list[dict]:
    """Combine the ``students/`` of several shard outputs into ``out``; its gradebook."""
    students: dict[str, dict] = {}
    target = out / "students"
    target.mkdir(parents=True, exist_ok=True)
    for shard in shards:
        for path in sorted((shard / "students").glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("schema_version") != SCHEMA_VERSION:
                raise ValueError(f"{path}: not a student file of schema version {SCHEMA_VERSION}")
            for notebook in data["notebooks"]:
                NotebookReport.from_json(notebook)  # every verdict must parse
            name = data["student"]
            if name in students and students[name] != data:
                raise ValueError(f"student {name!r} was graded differently in two shards")
            students[name] = data
            if path.parent.resolve() != target.resolve():
                shutil.copyfile(path, target / path.name)
    merged = [students[name] for name in sorted(students)]
    write_gradebook(merged, out / "gradebook.csv")
    return merged

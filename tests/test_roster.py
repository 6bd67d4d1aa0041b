"""A whole class end to end: roster grading, 2 shards + merge = one run, resume, identity.

The class comes from benchmarks/make_class.py (solutions with random mistakes) on notebook
04 only, the quickest to grade; one extra student hands in renamed, duplicate and foreign
files.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from make_class import make_class

pytestmark = pytest.mark.slow  # grades a class in kernels

STEM = "04_stepwise_reshape"


def grade(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    process = subprocess.run(
        [sys.executable, "-m", "attn_course", "grade", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert process.returncode == 0, process.stderr
    return process


def gradebook(out: Path) -> list[dict]:
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("roster")
    make_class(root / "class", 4, [STEM], seed=1)
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
    full = grade("--roster", root / "class", "--out", root / "all", cwd=root)
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
    assert len(whole) == 5 and merged == whole
    shard_students = [{r["student"] for r in gradebook(root / f"s{i}")} for i in (1, 2)]
    assert shard_students[0].isdisjoint(shard_students[1])
    assert shard_students[0] | shard_students[1] == {r["student"] for r in whole}


def test_gradebook_rows_add_up_and_match_the_student_files(runs):
    root, *_ = runs
    for row in gradebook(root / "all"):
        cells = {k: int(v) for k, v in row.items() if k not in ("student", "total", "max")}
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

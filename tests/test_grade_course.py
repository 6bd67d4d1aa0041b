"""The real course through the grader: solutions earn full marks, exercises are untouched.

One grade command per folder (its notebooks are graded in parallel inside it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT, grade_command

from attn_course.grading.checking.registry import load_checks

pytestmark = pytest.mark.slow  # grades every solution and exercise in kernels


def grade_folder(folder: str, tmp_path: Path, *options: str) -> tuple[int, dict]:
    """Grade every notebook of ``ROOT/folder`` in one command; (exit status, JSON report)."""
    if not sorted((ROOT / folder).glob("*.ipynb")):
        pytest.skip(f"no notebooks in {folder}/ yet")
    report_path = tmp_path / "report.json"
    process = grade_command(folder, "--json", report_path, *options, timeout=900)
    assert process.returncode in (0, 1), process.stderr
    return process.returncode, json.loads(report_path.read_text(encoding="utf-8"))


def summary(report: dict, wanted: str) -> list[str]:
    """The verdicts that are not ``wanted``, one readable line each."""
    return [
        f"{nb['path']}: {c['id']}: {c['status']} — {c['message']}"
        for nb in report["notebooks"]
        for c in nb["checks"]
        if c["status"] != wanted
    ] + [f"{nb['path']}: {nb['error']}" for nb in report["notebooks"] if nb["error"]]


def test_every_solution_grades_at_full_marks(tmp_path):
    status, report = grade_folder("solutions", tmp_path, "--strict")
    assert summary(report, "passed") == []
    assert report["max_score"] > 0 and report["score"] == report["max_score"]
    assert status == 0
    graded = {Path(nb["path"]).stem for nb in report["notebooks"]}
    assert {spec.notebook for spec in load_checks().values()} <= graded


def test_every_exercise_grades_as_not_attempted(tmp_path):
    status, report = grade_folder("exercises", tmp_path)
    assert summary(report, "not_attempted") == []
    assert report["score"] == 0 and report["max_score"] > 0
    assert status == 0

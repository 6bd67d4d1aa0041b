"""Notebook and check identity: stamped into exercise metadata, file name as the fallback."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from support import ROOT

from attn_course.grading.checking.registry import checks_for
from attn_course.grading.classrun.notebooks import Notebook, notebook_id, read_notebook
from attn_course.tools.exercises import make_exercise

EXERCISES = ROOT / "exercises"


@pytest.mark.parametrize("path", sorted(EXERCISES.glob("*.ipynb")), ids=lambda p: p.stem)
def test_exercises_carry_their_notebook_and_check_ids(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["metadata"]["attn_course"] == {"notebook": path.stem}
    stamped = [
        cell["metadata"]["attn_course"]["check_id"]
        for cell in data["cells"]
        if "attn_course" in cell.get("metadata", {})
    ]
    assert stamped == [spec.id for spec in checks_for(path.stem)]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("03_weight_split_mha (1).ipynb", "03_weight_split_mha"),
        ("03_weight_split_mha-copy.ipynb", "03_weight_split_mha"),
        ("03_weight_split_mha copy.ipynb", "03_weight_split_mha"),
        ("03_weight_split_mha.ipynb", "03_weight_split_mha"),
        ("homework.ipynb", "homework"),
    ],
)
def test_file_name_fallback(name, expected):
    assert notebook_id(Notebook({}, []), Path(name)) == expected


def test_metadata_wins_over_the_file_name(tmp_path):
    path = tmp_path / "01_causal_attention.ipynb"
    notebook = new_notebook(cells=[new_code_cell("x = 1")])
    notebook.metadata["attn_course"] = {"notebook": "04_stepwise_reshape"}
    nbformat.write(notebook, path)
    assert notebook_id(read_notebook(path), path) == "04_stepwise_reshape"


def test_two_cells_checking_one_id_is_an_authoring_error():
    solution = new_notebook(
        cells=[new_code_cell('check("causal_mask", f)'), new_code_cell('check("causal_mask", g)')]
    )
    with pytest.raises(ValueError, match="code cells 1 and 2 both check 'causal_mask'"):
        make_exercise(solution, "01_causal_attention")

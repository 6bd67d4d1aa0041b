"""The course's own answers are absent from the sandbox that grades them."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest
from answers import REFERENCE
from support import ROOT, grade_command, write_notebook

from attn_course.grading import sandbox, withheld
from attn_course.grading.registry import load_checks
from attn_course.grading.withheld import (
    ANSWERS,
    APART,
    KEPT,
    WithheldAnswer,
    sandboxes,
    stand_in_source,
)

CHECKS = load_checks()


def package_answers() -> dict[str, tuple[str, str]]:
    """check id -> (notebook, module.name) for each check whose answer is a package object."""
    return {c: (nb, name) for nb, answers in ANSWERS.items() for c, name in answers.items()}


def test_every_check_answered_by_the_package_is_in_answers():
    """REFERENCE takes the package's answers from ANSWERS; its other answers are not the
    package's (else the sandbox would not withhold them)."""
    for check_id, obj in REFERENCE.items():
        module = getattr(obj, "__module__", "") or ""
        assert module.startswith("attn_course.") == (check_id in package_answers()), check_id
    for check_id, (notebook, _) in package_answers().items():
        assert CHECKS[check_id].notebook == notebook
    for notebook, apart in APART.items():
        assert set(apart) < {spec.id for spec in CHECKS.values() if spec.notebook == notebook}
    assert set(KEPT) <= set(ANSWERS)


@pytest.mark.parametrize("notebook", sorted(ANSWERS))
def test_each_check_is_graded_where_its_own_answer_is_withheld(notebook):
    withheld_from = {}
    for withholding, of_apart in sandboxes(notebook):
        assert withholding.notebook == notebook
        for check_id in ANSWERS[notebook]:
            if (check_id in APART.get(notebook, ())) == of_apart:
                withheld_from[check_id] = withholding.names
    for check_id, name in ANSWERS[notebook].items():
        assert (name in withheld_from[check_id]) == (notebook not in KEPT), check_id


@pytest.mark.parametrize("notebook", sorted(ANSWERS))
def test_each_exercise_notebook_says_what_its_grading_withholds(notebook):
    intro = nbformat.read(ROOT / "exercises" / f"{notebook}.ipynb", as_version=4).cells[0]
    _, _, sentence = intro.source.partition("When the notebook is graded")
    said = set(re.findall(r"`(\w+)`", sentence))
    names = {} if notebook in KEPT else ANSWERS[notebook]
    assert said == {name.rsplit(".", 1)[1] for name in names.values()}


SOURCE = '''"""A module."""
import functools
from torch import nn


@functools.cache
def table(n):
    return list(range(n))


class Layer(nn.Module, metaclass=type):
    scale = 2

    def __init__(self, width):
        super().__init__()
        self.width = width

    def forward(self, x):
        return x * self.scale


def kept(n):
    return table(n)
'''


def test_a_stand_in_raises_on_every_use_and_keeps_the_rest():
    code = stand_in_source(SOURCE, "demo", {"table", "Layer"}, "01_causal_attention")
    assert "range" not in code and "self.width" not in code and "x * self.scale" not in code
    namespace: dict = {}
    exec(compile(code, "demo.py", "exec"), namespace)
    for use in (
        lambda: namespace["table"](3),
        lambda: namespace["Layer"](4),
        lambda: type("Mine", (namespace["Layer"],), {})(4),  # a subclass
        lambda: namespace["Layer"].forward(None, 1),
        lambda: namespace["kept"](3),  # kept code that calls a withheld function
    ):
        with pytest.raises(WithheldAnswer, match="attn_course.demo.(table|Layer) is withheld"):
            use()
    assert issubclass(namespace["Layer"], __import__("torch").nn.Module)
    with pytest.raises(ValueError, match="defines no missing"):
        stand_in_source(SOURCE, "demo", {"missing"}, "01_causal_attention")


@pytest.mark.parametrize("notebook", sorted(set(ANSWERS) - set(KEPT)))
def test_every_stand_in_module_defines_the_same_names(notebook):
    for withholding, _ in sandboxes(notebook):
        pairs = {path: file for file, path in withheld.overlays(withholding)}
        for dotted in withholding.names:
            relative = dotted.rsplit(".", 1)[0].replace(".", "/") + ".py"
            original = (withheld.PACKAGE_DIR / relative).read_text(encoding="utf-8")
            stand_in = Path(pairs[relative]).read_text(encoding="utf-8")
            assert _top_level_names(stand_in) == _top_level_names(original)


def _top_level_names(source: str) -> set[str]:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def test_compiled_copies_and_the_check_library_are_covered(tmp_path, monkeypatch):
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "tiled.py").write_text(
        "def online_softmax_update():\n    pass\n"
        "def attention_tile():\n    pass\n"
        "def tiled_attention():\n    pass\n"
    )
    for name in ("tiled.cpython-311.pyc", "tiled.cpython-313.opt-1.pyc", "tiles.cpython-311.pyc"):
        (tmp_path / "__pycache__" / name).write_bytes(b"compiled reference code")
    monkeypatch.setattr(withheld, "PACKAGE_DIR", tmp_path)
    monkeypatch.setattr(withheld, "_overlays", withheld._overlays.__wrapped__)
    ((withholding, _),) = sandboxes("10_tiled_attention")
    pairs = {path: Path(file) for file, path in withheld.overlays(withholding)}
    assert pairs["__pycache__/tiled.cpython-311.pyc"].read_bytes() == b""
    assert pairs["__pycache__/tiled.cpython-313.opt-1.pyc"].read_bytes() == b""
    assert "__pycache__/tiles.cpython-311.pyc" not in pairs
    for hidden in withheld.HIDDEN:
        assert pairs[hidden].is_dir() != hidden.endswith(".py")
        assert not pairs[hidden].is_dir() or not any(pairs[hidden].iterdir())


# A submission that hands in the package's own objects, and a cell that looks for the
# course's code in the sandbox: its last answer is right only if it found some.
LOOK = (
    "import inspect, pathlib, attn_course.grading\n"
    "from attn_course import attention\n"
    "grading = pathlib.Path(attn_course.grading.__file__).parent\n"
    "FOUND = [\n"
    "    'triu' in inspect.getsource(attention.causal_mask),\n"
    "    any((grading / 'checks').glob('*.py')),\n"
    "    (grading / 'shared_checks.py').stat().st_size > 0,\n"
    "]"
)


def cheating_notebook(folder: Path, notebook: str) -> Path:
    cells = ["import torch\nfrom attn_course.grading import check"]
    for check_id, name in ANSWERS[notebook].items():
        module, attr = name.rsplit(".", 1)
        cells.append(f"from attn_course.{module} import {attr}\ncheck({check_id!r}, {attr})")
    if notebook == "01_causal_attention":
        cells += [LOOK, 'check("causal_attention_parameters", 24 if any(FOUND) else 0)']
    return write_notebook(folder / f"{notebook}.ipynb", cells)


@pytest.mark.slow  # grades a notebook per course notebook in the sandbox
@pytest.mark.skipif(sandbox.available() is not None, reason=f"{sandbox.available()}")
def test_the_course_answers_fail_loudly_in_the_sandbox(tmp_path):
    for notebook in set(ANSWERS) - set(KEPT):
        cheating_notebook(tmp_path / "class", notebook)
    process = grade_command(tmp_path / "class", "--json", tmp_path / "report.json")
    assert process.returncode == 0, process.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    graded = 0
    for entry in report["notebooks"]:
        for result in entry["checks"]:
            if result["id"] == "causal_attention_parameters":
                assert result["status"] == "failed", "the course's code was found in the sandbox"
            elif result["status"] != "not_attempted":
                assert result["status"] == "error", result
                assert "is withheld while" in result["message"], result
                assert result["id"] in ANSWERS[entry["notebook"]]
                graded += 1
    assert graded == sum(len(ANSWERS[nb]) for nb in set(ANSWERS) - set(KEPT))

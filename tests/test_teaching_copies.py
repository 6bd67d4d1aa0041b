"""ONE SOURCE: a class or function a notebook shows in a cell tagged ``package-copy`` is the
package's own source, character for character (trailing whitespace aside).

Every notebook in notebooks/ is checked; each top-level ``class``/``def`` of a tagged cell is
compared with ``inspect.getsource`` of the same name in the package modules below.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import nbformat
import pytest

from attn_course import attention, blocks, numpy_attention

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MODULES = (attention, blocks, numpy_attention)
TAG = "package-copy"


def normalised(source: str) -> str:
    """The source with trailing whitespace stripped from every line and at the end."""
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def package_source(name: str) -> str | None:
    """The source of ``name`` in the first package module that defines it, else None."""
    for module in MODULES:
        obj = getattr(module, name, None)
        if obj is not None and getattr(obj, "__module__", None) == module.__name__:
            return inspect.getsource(obj)
    return None


def teaching_copies(path: Path) -> list[tuple[str, str]]:
    """(name, source) of every top-level class/def in the notebook's package-copy cells."""
    copies = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or TAG not in cell.metadata.get("tags", []):
            continue
        lines = cell.source.splitlines()
        for node in ast.parse(cell.source).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                copies.append((node.name, "\n".join(lines[first - 1 : node.end_lineno])))
    return copies


COPIES = [
    pytest.param(path, name, source, id=f"{path.stem}::{name}")
    for path in NOTEBOOKS
    for name, source in teaching_copies(path)
]


@pytest.mark.parametrize(("path", "name", "source"), COPIES)
def test_teaching_copy_is_the_package_source(path, name, source):
    expected = package_source(name)
    assert expected is not None, (
        f"{path.name} shows `{name}` in a {TAG!r} cell but the package has no `{name}`."
    )
    assert normalised(source) == normalised(expected), (
        f"{path.name}: the teaching copy of `{name}` drifted from the package's source; "
        f"paste `inspect.getsource({name})` into the cell again (or fix the package)."
    )


def test_the_lecture_notebooks_show_their_classes():
    # The check above must have something to check: the lectures that teach a package class.
    names = {path.stem: {name for name, _ in teaching_copies(path)} for path in NOTEBOOKS}
    assert {"softmax", "self_attention"} <= names.get("00_numpy_attention", set())
    assert "CausalAttention" in names.get("01_causal_attention", set())
    assert "MultiHeadAttentionWrapper" in names.get("02_multihead_wrapper", set())
    assert "MultiHeadAttention" in names.get("03_weight_split_mha", set())


def test_a_drifted_copy_is_caught(tmp_path):
    # A copy with a different scaling must not pass as the package's source.
    drifted = inspect.getsource(numpy_attention.softmax).replace("axis=axis", "axis=0", 1)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(drifted, metadata={"tags": [TAG]})]
    path = tmp_path / "drift.ipynb"
    nbformat.write(notebook, path)
    ((name, source),) = teaching_copies(path)
    assert name == "softmax"
    assert normalised(source) != normalised(package_source(name))

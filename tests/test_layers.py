"""The package docstring's layer map is complete and true.

Every module of ``attn_course`` is named in one layer of the map, and no module imports
from a layer below its own (a teaching view never imports a widget; lecture code never
imports a view, a command or the grader).
"""

from __future__ import annotations

import ast
import re

from support import ROOT

import attn_course

PACKAGE = ROOT / "attn_course"


def layer_map() -> dict[str, int]:
    """Module name -> its layer number, read from the docstring's numbered list."""
    layers: dict[str, int] = {}
    doc = attn_course.__doc__ or ""
    items = re.split(r"\n(?=\d\. )", doc[doc.index("\n1. ") : doc.index("\nNew lecture code")])
    for item in filter(str.strip, items):
        number = int(item.strip().split(".")[0])
        for name in re.findall(r"``(\w+)``", item):
            if (PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir():
                layers.setdefault(name, number)
    return layers


def imported_modules(path) -> set[str]:
    """The top-level ``attn_course`` modules that ``path`` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level == 1 and parts[0]:
                found.add(parts[0])
            elif node.level == 1:  # from . import x
                found.update(alias.name for alias in node.names)
            elif node.level == 0 and parts[0] == "attn_course" and len(parts) > 1:
                found.add(parts[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "attn_course" and len(parts) > 1:
                    found.add(parts[1])
    return found


def test_every_module_is_in_the_layer_map():
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {"grading"}
    assert modules - set(layer_map()) == set()


def test_no_module_imports_from_a_lower_layer():
    layers = layer_map()
    upward = []
    for path in PACKAGE.glob("*.py"):
        if path.stem == "__init__":
            continue
        for name in imported_modules(path):
            if name in layers and layers[name] > layers[path.stem]:
                upward.append(
                    f"{path.stem} (layer {layers[path.stem]}) imports {name} (layer {layers[name]})"
                )
    assert upward == []

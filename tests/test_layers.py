"""The package docstring's layer map is complete and true.

Every module and sub-package of ``attn_course`` is named in one layer of the map (the modules
of ``ui`` and ``tools`` by their dotted names; ``grading`` maps itself), and no module, at the
top level or in a sub-package, imports from a layer below its own (a teaching view never
imports a widget; lecture code never imports a view, a command or the grader).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support import ROOT

import attn_course

PACKAGE = ROOT / "attn_course"
SUB_PACKAGES = ("ui", "tools", "grading")


def _map_text() -> str:
    doc = attn_course.__doc__ or ""
    return doc[doc.index("\n1. ") : doc.index("\nNew lecture code")]


def layer_map() -> dict[str, int]:
    """Top-level module or sub-package name -> its layer number, from the numbered list."""
    layers: dict[str, int] = {}
    for item in filter(str.strip, re.split(r"\n(?=\d\. )", _map_text())):
        number = int(item.strip().split(".")[0])
        for name in re.findall(r"``(\w+)``", item):
            if (PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir():
                layers.setdefault(name, number)
    return layers


def top_level_name(path: Path) -> str:
    """The top-level module or sub-package that ``path`` belongs to (its layer's key)."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def imported_modules(path: Path) -> set[str]:
    """The top-level ``attn_course`` modules and sub-packages that ``path`` imports from
    outside its own sub-package."""
    depth = len(path.relative_to(PACKAGE).parts) - 1  # 0 for a top-level module
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level == depth + 1 and parts[0]:  # from <top>.x import y
                found.add(parts[0])
            elif node.level == depth + 1:  # from <top> import x
                found.update(alias.name for alias in node.names)
            elif node.level == 0 and parts[0] == "attn_course" and len(parts) > 1:
                found.add(parts[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "attn_course" and len(parts) > 1:
                    found.add(parts[1])
    found.discard(top_level_name(path))
    return found


def test_every_module_is_in_the_layer_map():
    modules = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert modules | set(SUB_PACKAGES) == set(layer_map())
    dotted = set(re.findall(r"``(ui\.\w+|tools\.\w+)``", _map_text()))
    for package in ("ui", "tools"):
        for path in (PACKAGE / package).glob("*.py"):
            if path.stem != "__init__":
                assert f"{package}.{path.stem}" in dotted, path


def test_no_module_imports_from_a_lower_layer():
    layers = layer_map()
    upward = []
    for path in PACKAGE.rglob("*.py"):
        own = top_level_name(path)
        if own == "__init__":
            continue
        for name in imported_modules(path):
            if name in layers and layers[name] > layers[own]:
                upward.append(f"{path.relative_to(PACKAGE)} (layer {layers[own]}) imports {name}")
    assert upward == []


def test_the_layer_test_sees_imports_across_sub_packages():
    ui = imported_modules(PACKAGE / "ui" / "lm_explorer.py")
    assert {"generation", "lm", "lm_views", "model_views"} <= ui and "widgets" not in ui
    assert "tools" in imported_modules(PACKAGE / "grading" / "classrun" / "runner.py")
    check = imported_modules(
        PACKAGE / "grading" / "checking" / "checks" / "nb00_numpy_attention.py"
    )
    assert {"attention", "numpy_attention"} <= check and "expect" not in check


def test_no_grading_room_imports_the_class_run():
    """grading's rooms: checking and kernel never import classrun (grading/__init__'s map),
    and no module sits loose beside the rooms."""
    grading = PACKAGE / "grading"
    inward = []
    for room in ("checking", "kernel"):
        for path in (grading / room).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom):
                    module = node.module or ""
                    names = [alias.name for alias in node.names]
                    if "classrun" in module.split(".") or (not module and "classrun" in names):
                        inward.append(str(path.relative_to(grading)))
    assert inward == []
    assert {p.name for p in grading.iterdir() if p.suffix == ".py"} == {"__init__.py"}

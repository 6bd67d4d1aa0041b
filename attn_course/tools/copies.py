"""``python -m attn_course sync-copies [--check] [PATH ...]``: teaching copies, regenerated.

A lecture that teaches a package class shows its code in a cell tagged ``package-copy`` whose
metadata names the source, e.g. ``"copy_of": "attn_course.attention.MultiHeadAttention"``.
This command rewrites every such cell from the package's current source, under a one-line
provenance comment, so the notebook can never teach code the package does not run. With
``--check`` it changes nothing and fails when a cell is stale. ``make notebooks`` runs it
before executing, so outputs always come from the package's code.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import nbformat


from .protocol import COPY_OF, PACKAGE_COPY, has_tag, notebook_paths

DEFAULT_PATHS = ["notebooks"]


def provenance(qualified_name: str) -> str:
    """The generated cell's first line: where the code lives and how the cell is made."""
    return f"# Generated from {qualified_name}: edit the package, not this cell"


def copy_source(qualified_name: str) -> str:
    """The cell source for ``qualified_name`` (``package.module.Name``): provenance + source."""
    module_name, _, name = qualified_name.rpartition(".")
    obj = getattr(importlib.import_module(module_name), name, None)
    if obj is None or getattr(obj, "__module__", None) != module_name:
        raise ValueError(f"{COPY_OF}={qualified_name!r} names nothing defined in {module_name}.")
    return provenance(qualified_name) + "\n" + inspect.getsource(obj).rstrip() + "\n"


def copy_cells(notebook: nbformat.NotebookNode, path: Path) -> list[nbformat.NotebookNode]:
    """The copy cells of ``notebook``; the tag without a source (or the reverse) is an error."""
    cells = []
    for index, cell in enumerate(notebook.cells):
        tagged, named = has_tag(cell.metadata, PACKAGE_COPY), COPY_OF in cell.metadata
        if tagged != named:
            raise ValueError(
                f"{path}, cell {index}: a {PACKAGE_COPY!r} cell needs metadata {COPY_OF!r} naming "
                f"its source (e.g. attn_course.attention.MultiHeadAttention), and only such cells "
                "have one."
            )
        if tagged:
            cells.append(cell)
    return cells


def sync(path: Path, check: bool) -> list[str]:
    """Regenerate (or with ``check``, only compare) the copy cells of ``path``; the stale names."""
    import nbformat  # here, not at the top: it costs 2 CPU-s (jsonschema builds grammars)

    notebook = nbformat.read(path, as_version=4)
    stale = []
    for cell in copy_cells(notebook, path):
        source = copy_source(cell.metadata[COPY_OF])
        if cell.source.rstrip() != source.rstrip():
            stale.append(cell.metadata[COPY_OF])
            cell.source = source.rstrip()
    if stale and not check:
        nbformat.write(notebook, path)
    return stale


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn_course sync-copies", description=__doc__)
    parser.add_argument("paths", nargs="*", default=DEFAULT_PATHS, help="notebooks or folders")
    parser.add_argument("--check", action="store_true", help="change nothing; fail when stale")
    args = parser.parse_args(argv)
    failed = False
    for path in notebook_paths(args.paths):
        for name in sync(path, args.check):
            failed = args.check
            verb = "is stale" if args.check else "regenerated"
            print(f"{path}: the copy of {name} {verb}")
    if failed:
        print("Run `python -m attn_course sync-copies`, then `make notebooks`.")
    return 1 if failed else 0

"""A submitted notebook as the grader reads it: plain JSON, no schema validation, no torch.

The runner, the roster and the feedback pages read notebooks here; ``notebook_id`` says which
course notebook a file is, from the metadata ``make-exercises`` stamps or from its name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ...tools.protocol import METADATA_KEY, NOTEBOOK_ID
from ..checking.withheld import ANSWERS

__all__ = ["Cell", "Notebook", "read_notebook", "notebook_id", "planned_notebook"]

_STEM = re.compile(r"^\d\d_[A-Za-z0-9_]+?(?=$|[ (\-.]| copy)")


@dataclass
class Cell:
    cell_type: str
    source: str
    metadata: dict = field(default_factory=dict)


@dataclass
class Notebook:
    metadata: dict
    cells: list[Cell]


def read_notebook(path: Path) -> Notebook:
    """Read a notebook's JSON (no schema validation: it is slow); ValueError if it is none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{path.name} is not a notebook: it is not valid JSON") from exc
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        raise ValueError(f"{path.name} is not a valid Jupyter notebook (nbformat 4 expected)")
    cells = []
    raw_cells = data.get("cells")
    for i, cell in enumerate(raw_cells if isinstance(raw_cells, list) else []):
        source = cell.get("source", "") if isinstance(cell, dict) else None
        source = "".join(source) if isinstance(source, list) else source
        if not isinstance(source, str) or not isinstance(cell.get("cell_type"), str):
            raise ValueError(f"{path.name} is not a valid Jupyter notebook (cell {i + 1})")
        metadata = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        cells.append(Cell(cell["cell_type"], source, metadata))
    metadata = data.get("metadata")
    return Notebook(metadata if isinstance(metadata, dict) else {}, cells)


def notebook_id(notebook: Notebook, path: Path) -> str:
    """The course notebook this file is: from its metadata, else from its file name.

    ``03_weight_split_mha (1).ipynb`` and ``03_weight_split_mha-copy.ipynb`` fall back to
    ``03_weight_split_mha``.
    """
    stamped = notebook.metadata.get(METADATA_KEY, {})
    if isinstance(stamped, dict) and isinstance(stamped.get(NOTEBOOK_ID), str):
        return stamped[NOTEBOOK_ID]
    match = _STEM.match(path.stem)
    return match.group(0) if match else path.stem


def planned_notebook(path: Path) -> str | None:
    """``notebook_id`` of the file at ``path``, read ahead of grading to start its kernel;
    None where no kernel will grade it: the file is no notebook, or no course notebook with
    checks (grading it reports why, without a kernel)."""
    try:
        planned = notebook_id(read_notebook(path), path)
    except Exception:  # whatever it is, it costs this notebook only, when it is graded
        return None
    return planned if planned in ANSWERS else None

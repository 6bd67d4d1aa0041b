"""``python -m attn_course execute PATH...``: re-execute notebooks in place, headless.

The only sanctioned way to change stored outputs. Cells tagged ``raises-exception`` (see
``protocol``) may raise: nbclient honours that tag; any other error stops with the notebook's
name and the failing cell.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .protocol import notebook_paths


def coalesce_streams(outputs: list) -> list:
    """Merge consecutive stdout (or stderr) chunks: how a print is chunked depends on timing."""
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.output_type == "stream"
            and previous is not None
            and previous.output_type == "stream"
            and previous.name == output.name
        ):
            previous.text += output.text
        else:
            merged.append(output)
    return merged


def execute_in_place(path: Path, timeout: int = 300) -> float:
    """Execute ``path`` in a fresh kernel from its own folder; return the seconds taken."""
    import nbformat  # here, not at the top: importing execute stays light
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # timestamps of an earlier run: diff noise
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        extra_arguments=["--IPKernelApp.log_level=ERROR"],  # no TCP-transport warning per run
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
    # Saved widget state is a page of random model ids: diff noise that a kernel redraws anyway.
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, path)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn_course execute", description=__doc__)
    parser.add_argument("paths", nargs="+", help="notebooks or folders of notebooks")
    args = parser.parse_args(argv)
    for path in notebook_paths(args.paths):
        print(f"{path}: {execute_in_place(path):.1f} s", flush=True)
    return 0

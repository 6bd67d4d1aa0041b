"""Grade whole notebooks: run each in a fresh kernel on a temporary copy, collect verdicts.

The learner's file is only read. Its copy runs in a temporary folder (also the kernel's
working directory) with ``allow_errors``: a failing cell does not stop the run. Each
``check()`` call appends its verdict to the file named in ``LOG_ENV``. A registered check
that never reported gets a verdict from the cell that calls ``check("<id>"``:

* that cell raised -> ``error`` with the exception and, when an earlier cell failed, that
  cell's error ("did an earlier cell fail?"); an unfinished exercise upstream
  (``NotImplementedError``) -> ``not_attempted``;
* that cell ran past the cell timeout -> ``timeout``;
* no cell calls it -> ``not_attempted`` (check cell missing).

Timeouts: a cell running past ``cell_timeout`` seconds is interrupted (KeyboardInterrupt in
the kernel) and the REMAINING CELLS STILL RUN, so one infinite loop costs one exercise, not
the notebook. The whole notebook gets ``NOTEBOOK_TIMEOUT_CELLS * cell_timeout`` seconds;
cells after that are not run and their checks report ``timeout`` (a loop that swallows
KeyboardInterrupt keeps the next cells waiting until then). Cell outputs are
dropped as they arrive, so megabytes of prints cost no memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from .api import LOG_ENV, CheckResult
from .registry import CHECKS, checks_for

__all__ = ["CELL_TIMEOUT", "NotebookReport", "grade_notebooks"]

CELL_TIMEOUT = 60  # seconds per cell
NOTEBOOK_TIMEOUT_CELLS = 5  # a notebook may take this many cell timeouts in all
_SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding attn_course/
_CELL_TIMEOUT_NAME = "CellTimeout"  # ename the client records for an interrupted cell


@dataclass
class NotebookReport:
    """The grading of one notebook file; ``error`` is set when it could not be graded."""

    path: str
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    @property
    def score(self) -> int:
        return sum(result.status == "passed" for result in self.checks)

    @property
    def max_score(self) -> int:
        return len(self.checks)

    def to_json(self) -> dict:
        """The report's entry in the ``--json`` file."""
        return {
            "path": self.path,
            "score": self.score,
            "max_score": self.max_score,
            "error": self.error,
            "seconds": round(self.seconds, 2),
            "checks": [asdict(result) for result in self.checks],
        }


class _GradingClient(NotebookClient):
    """nbclient that keeps no outputs, records each cell's error and stops at a deadline."""

    def __init__(
        self, notebook: nbformat.NotebookNode, workdir: str, cell_timeout: int, deadline: float
    ):
        super().__init__(
            notebook,
            resources={"metadata": {"path": workdir}},
            timeout=cell_timeout,
            kernel_name="python3",
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout={
                "ename": _CELL_TIMEOUT_NAME,
                "evalue": f"the cell ran longer than {cell_timeout} s and was interrupted",
                "traceback": [],
            },
        )
        self.on_cell_error = self._record_error
        self.cell_timeout, self.deadline = cell_timeout, deadline
        self.errors: dict[int, tuple[str, str]] = {}  # cell index -> (ename, evalue)
        self.current_cell = -1

    def _record_error(self, cell: object, cell_index: int, execute_reply: dict) -> None:
        content = execute_reply["content"]
        self.errors[cell_index] = (content.get("ename", "Error"), content.get("evalue", ""))

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        remaining = self.deadline - time.monotonic()
        if remaining < 1:
            if cell.cell_type == "code":
                self.errors[cell_index] = (_CELL_TIMEOUT_NAME, "the notebook ran out of time")
            return cell
        self.current_cell = cell_index
        self.timeout = int(min(self.cell_timeout, remaining))
        return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    def output(self, outs, msg, display_id, cell_index):
        """Drop every output: grading only needs the verdict log and the cells' errors."""
        return None


def _kernel_env(log: Path) -> dict[str, str]:
    """The grader's environment, plus the verdict log and this attn_course on the path."""
    path = os.pathsep.join(filter(None, [str(_SOURCE_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, LOG_ENV: str(log), "PYTHONPATH": path}


def _read_notebook(path: Path) -> nbformat.NotebookNode:
    """Read and validate a notebook; ValueError with a short reason when it is not one."""
    try:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    except (nbformat.reader.NotJSONError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} is not a notebook: it is not valid JSON") from exc
    except Exception as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise ValueError(f"{path.name} is not a valid Jupyter notebook ({reason})") from exc
    return notebook


def _read_log(path: Path) -> dict[str, CheckResult]:
    """The last verdict ``check()`` logged for each id."""
    results: dict[str, CheckResult] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                result = CheckResult(**json.loads(line))
            except (ValueError, TypeError):
                continue
            results[result.id] = result
    return results


def _check_cells(notebook: nbformat.NotebookNode, check_id: str) -> list[int]:
    """Indices of the code cells that call ``check("<check_id>"``."""
    call = re.compile(rf"""\bcheck\(\s*["']{re.escape(check_id)}["']""")
    return [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and call.search(cell.source)
    ]


def _unreported(
    check_id: str, notebook: nbformat.NotebookNode, client: _GradingClient, died: str | None
) -> CheckResult:
    """Verdict for a check that never reported, from the cell that should have called it."""
    cells = _check_cells(notebook, check_id)
    if not cells:
        return CheckResult(
            check_id, "not_attempted", f'check cell missing: no cell calls check("{check_id}", ...)'
        )
    index = next((i for i in cells if i in client.errors), cells[0])
    name = f"cell {index + 1}"
    if died and index >= client.current_cell:
        return CheckResult(check_id, "error", f"{name} did not run: {died}")
    if index not in client.errors:
        return CheckResult(check_id, "not_attempted", f"{name} ran but never called check()")
    ename, evalue = client.errors[index]
    if ename in (_CELL_TIMEOUT_NAME, "KeyboardInterrupt"):
        return CheckResult(check_id, "timeout", f"{name}: {evalue or 'interrupted'}")
    if ename == "NotImplementedError":
        return CheckResult(check_id, "not_attempted", f"{name} still raises NotImplementedError")
    message = f"{name} raised {ename}: {evalue}".strip().rstrip(":")[:300]
    earlier = [i for i in sorted(client.errors) if i < index]
    if not earlier:
        return CheckResult(check_id, "error", message)
    # The likely cause: the last earlier failure that is not itself a NameError.
    cause = next((i for i in reversed(earlier) if client.errors[i][0] != "NameError"), earlier[-1])
    cause_ename, cause_evalue = client.errors[cause]
    if cause_ename == "NotImplementedError":
        return CheckResult(
            check_id, "not_attempted", f"cell {cause + 1} still raises NotImplementedError"
        )
    return CheckResult(
        check_id,
        "error",
        f"{message}. Did an earlier cell fail? cell {cause + 1} raised "
        f"{cause_ename}: {cause_evalue}"[:400],
    )


async def _grade(path: Path, cell_timeout: int) -> NotebookReport:
    """Grade one notebook file."""
    report = NotebookReport(str(path))
    specs = checks_for(path.stem)
    if not specs:
        notebooks = ", ".join(sorted({spec.notebook for spec in CHECKS.values()}))
        report.error = (
            f"no checks for {path.stem!r}: the file name must be a course notebook's ({notebooks})"
        )
        return report
    with tempfile.TemporaryDirectory(prefix="attn-grade-") as tmp:
        copy, log = Path(tmp) / path.name, Path(tmp) / "verdicts.jsonl"
        shutil.copyfile(path, copy)
        try:
            notebook = _read_notebook(copy)
        except ValueError as exc:
            report.error = str(exc)
            report.checks = [CheckResult(s.id, "error", report.error) for s in specs]
            return report
        deadline = time.monotonic() + NOTEBOOK_TIMEOUT_CELLS * cell_timeout
        client = _GradingClient(notebook, tmp, cell_timeout, deadline)
        died = None
        try:
            await client.async_execute(env=_kernel_env(log))
        except DeadKernelError:
            died = f"the Python kernel died while running cell {client.current_cell + 1}"
            report.error = died
        except Exception as exc:  # the kernel could not start, or nbclient itself failed
            died = f"grading stopped: {type(exc).__name__}: {exc}"[:300]
            report.error = died
        logged = _read_log(log)
    report.checks = [
        logged.get(spec.id) or _unreported(spec.id, notebook, client, died) for spec in specs
    ]
    return report


def grade_notebooks(
    paths: list[Path],
    cell_timeout: int = CELL_TIMEOUT,
    jobs: int = 2,
    on_done: Callable[[NotebookReport], None] | None = None,
) -> list[NotebookReport]:
    """Grade ``paths`` with up to ``jobs`` kernels at a time; reports in the order of ``paths``.

    Args:
        paths: notebook files; their stems name the checks (``03_weight_split_mha``).
        cell_timeout: seconds a cell may run before it is interrupted.
        jobs: notebooks graded in parallel (one kernel each).
        on_done: called with each report as soon as it is ready (progress display).
    """
    if jobs < 1:
        raise ValueError(f"jobs={jobs} must be at least 1.")

    async def run_all() -> list[NotebookReport]:
        slots = asyncio.Semaphore(jobs)

        async def one(path: Path) -> NotebookReport:
            async with slots:
                start = time.monotonic()
                report = await _grade(path, cell_timeout)
                report.seconds = time.monotonic() - start
            if on_done:
                on_done(report)
            return report

        return list(await asyncio.gather(*(one(path) for path in paths)))

    return asyncio.run(run_all())

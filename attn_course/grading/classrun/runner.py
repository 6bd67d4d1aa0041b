"""Grade whole notebooks: run each in a fresh kernel, then grade its answers from outside.

1. The notebook's code cells run in a fresh kernel, in its sandbox (``sandbox.py``; with
   ``--no-sandbox``, in a temporary folder); the learner's file is only read here. The
   sandbox withholds the course's answers to the checks that kernel grades; a notebook whose
   later checks build on the course's versions of its earlier answers is run in a second
   kernel for those (``withheld.sandboxes``). In that
   kernel ``check()`` only hands each answer over (``agent.ANSWERS``). A failing cell does
   not stop the run. Outputs are dropped as they arrive.
2. The grader's process then runs every registered check of the notebook on the answers,
   through ``remote.Remote`` proxies: the learner's code runs in the kernel, the
   references, the secret seed salt and the comparisons stay here; only data comes back.

Time limits: a cell running past ``cell_timeout`` seconds is interrupted; if it does not
stop (a bare ``except:`` swallows the interrupt, or one long C call ignores it), or a cell
kills the kernel, the kernel is replaced, the earlier cells are replayed without it and the
later cells still run: one bad cell costs its own exercise, not the notebook. The cells get
``NOTEBOOK_TIMEOUT_CELLS * cell_timeout`` seconds in all. A check has its registered time
limit, enforced in the kernel (even through a bare ``except:``) and by the grader, which
kills a kernel that does not answer and replaces it before the next check. The whole
notebook, replays and kernel starts included, has one deadline (``notebook_budget``).
Whatever else fails while one notebook is graded costs that notebook only.

A registered check whose answer never reached ``check()`` gets its verdict from the cell
that should have called it (``_unreported``).
"""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from ...tools.protocol import CHECK_CALL, CHECK_ID, METADATA_KEY
from ..checking import withheld
from ..checking.registry import CHECKS, checks_for, load_checks
from ..checking.result import CheckResult, NotebookReport, Status
from ..checking.verdicts import run_check
from ..kernel import agent
from ..kernel.context import OFFICIAL_TIME_FACTOR, REQUEST_GRACE, SALT
from ..kernel.kernels import (
    CELL_TIMEOUT,
    STUDENT_BUDGET,
    Kernel,
    KernelLost,
    KernelPool,
    start_kernel,
)
from ..kernel.remote import DYNAMO_SECONDS, LearnerError, RemoteTimeout, Session
from .notebooks import Notebook, notebook_id, planned_notebook, read_notebook

__all__ = [
    "CELL_TIMEOUT",
    "STUDENT_BUDGET",
    "NotebookReport",
    "KernelPool",
    "grade_notebooks",
    "grade_file",
    "grade_students",
]

NOTEBOOK_TIMEOUT_CELLS = 5  # a notebook may take this many cell timeouts in all
MAX_KERNELS = 4  # kernels one notebook may use (the first plus replacements)
REPLACE_MIN_SECONDS = 10  # a kernel is replaced only with this much of the notebook's time left
STARTS_SECONDS = 60  # of a notebook's time, for starting its kernels
# Notebooks whose checks imported torch._dynamo in their kernel (seen in this run): a later
# kernel of the same notebook starts that import in the background when it is handed over,
# while the learner's cells run, and the checks start once it is done (``_finish_dynamo``).
_KERNEL_DYNAMO: set[str] = set()
_BACKGROUND_DYNAMO = (
    "__import__('threading').Thread(target=__import__, args=('torch._dynamo',), "
    "daemon=True).start()"
)
_CELL_TIMEOUT_NAME = "CellTimeout"


def _cells_calling(notebook: Notebook, check_id: str) -> list[int]:
    """Indices of the code cells that call check(``check_id``, ...) (metadata, else source)."""
    return [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        and (
            cell.metadata.get(METADATA_KEY, {}).get(CHECK_ID) == check_id
            or check_id in CHECK_CALL.findall(cell.source)
        )
    ]


class _Execution:
    """Runs a notebook's code cells in a kernel, replacing the kernel when a cell breaks it."""

    def __init__(
        self, notebook: Notebook, workdir: Path, first: Kernel, cell_timeout: int, deadline: float
    ):
        self.notebook, self.workdir, self.cell_timeout = notebook, workdir, cell_timeout
        self.deadline = deadline  # of the whole notebook (time.monotonic()), replays included
        self.errors: dict[int, tuple[str, str]] = {}  # cell index -> (ename, evalue)
        self.skipped: set[int] = set()  # cells that broke a kernel: not replayed
        self.ran: list[int] = []  # cells run in the current kernel, in order
        self.kernels = 1
        self.died: str | None = None  # why the cells stopped early
        self.kernel = first
        self._enter(first)

    def _enter(self, kernel: Kernel) -> None:
        self.kernel, kernel.deadline = kernel, self.deadline
        if not kernel.sandboxed:  # (a sandboxed kernel starts in its private scratch folder)
            kernel.execute(f"import os; os.chdir({str(self.workdir)!r})", 30, silent=True)

    def replace_kernel(self) -> bool:
        """A fresh kernel with the cells run so far replayed; False (and ``died`` set) when
        out of kernels or when no new kernel could be made to run them."""
        self.kernel.shutdown()
        if self.kernels >= MAX_KERNELS:
            self.died = "the Python kernel had to be stopped too often"
            return False
        self.kernels += 1
        try:
            if self.deadline - time.monotonic() < REPLACE_MIN_SECONDS:
                self.died = "the notebook's time ran out"
                return False
            self._enter(start_kernel(self.kernel.sandboxed, self.kernel.withholding))
            replay, self.ran = [i for i in self.ran if i not in self.skipped], []
            for i in replay:
                if not self._run_cell(i, record=False):
                    return self.replace_kernel()
        except (Exception, KernelLost) as exc:
            self.died = f"no new Python kernel could replace the stopped one ({exc})"
            return False
        return True

    def _run_cell(self, index: int, record: bool = True, timeout: float | None = None) -> bool:
        """Run one cell; False when the kernel had to go (the cell is then skipped)."""
        cell = self.notebook.cells[index]
        try:
            reply = self.kernel.execute(cell.source, timeout or self.cell_timeout)
        except KernelLost as lost:
            self.errors[index] = (_CELL_TIMEOUT_NAME, f"the cell {lost}")
            self.skipped.add(index)
            return False
        self.ran.append(index)
        if record and reply.get("status") == "timeout":
            self.errors[index] = (
                _CELL_TIMEOUT_NAME,
                f"the cell ran longer than {self.cell_timeout} s and was interrupted",
            )
        elif record and reply.get("status") == "error":
            self.errors[index] = (str(reply.get("ename", "Error")), str(reply.get("evalue", "")))
        return True

    def run_all(self) -> None:
        deadline = time.monotonic() + NOTEBOOK_TIMEOUT_CELLS * self.cell_timeout
        for index, cell in enumerate(self.notebook.cells):
            if cell.cell_type != "code" or not cell.source.strip():
                continue
            remaining = deadline - time.monotonic()
            if remaining < 1:
                self.errors[index] = (_CELL_TIMEOUT_NAME, "the notebook ran out of time")
                continue
            if not self._run_cell(index, timeout=min(self.cell_timeout, remaining)):
                if not self.replace_kernel():
                    self.died = f"the Python kernel stopped while running cell {index + 1}"
                    return


def _unreported(check_id: str, notebook: Notebook, run: _Execution) -> CheckResult:
    """Verdict for a check whose answer never reached check(), from the cell that calls it."""
    cells = _cells_calling(notebook, check_id)
    if not cells:
        return CheckResult(
            check_id,
            Status.NOT_ATTEMPTED,
            f'check cell missing: no cell calls check("{check_id}", ...)',
        )
    index = next((i for i in cells if i in run.errors), cells[0])
    name = f"cell {index + 1}"
    if run.died and index not in run.ran and index not in run.errors:
        return CheckResult(check_id, Status.ERROR, f"{name} did not run: {run.died}")
    if index not in run.errors:
        return CheckResult(check_id, Status.NOT_ATTEMPTED, f"{name} ran but never called check()")
    ename, evalue = run.errors[index]
    if ename in (_CELL_TIMEOUT_NAME, "KeyboardInterrupt"):
        return CheckResult(check_id, Status.TIMEOUT, f"{name}: {evalue or 'interrupted'}")
    if ename == "NotImplementedError":
        return CheckResult(
            check_id, Status.NOT_ATTEMPTED, f"{name} still raises NotImplementedError"
        )
    message = f"{name} raised {ename}: {evalue}".strip().rstrip(":")[:300]
    earlier = [i for i in sorted(run.errors) if i < index]
    if not earlier:
        return CheckResult(check_id, Status.ERROR, message)
    # The likely cause: the last earlier failure that is not itself a NameError.
    cause = next((i for i in reversed(earlier) if run.errors[i][0] != "NameError"), earlier[-1])
    cause_ename, cause_evalue = run.errors[cause]
    if cause_ename == "NotImplementedError":
        return CheckResult(
            check_id, Status.NOT_ATTEMPTED, f"cell {cause + 1} still raises NotImplementedError"
        )
    return CheckResult(
        check_id,
        Status.ERROR,
        f"{message}. Did an earlier cell fail? cell {cause + 1} raised "
        f"{cause_ename}: {cause_evalue}"[:400],
    )


def _grade_answers(specs, notebook: Notebook, run: _Execution, salt: int) -> list[CheckResult]:
    """Each check run here, on the answer that the kernel holds.

    Whatever goes wrong while one check runs (the kernel dies or is killed, a reply cannot be
    read, a bug) costs that check only; a lost kernel is replaced, with the learner's cells
    replayed, before the next check.
    """
    results = []
    for spec in specs:
        if not run.died and not run.kernel.alive():
            run.replace_kernel()
        if run.died:
            results.append(_unreported(spec.id, notebook, run))
            continue
        try:
            result = _grade_one(spec, notebook, run, salt)
        except KernelLost as lost:
            result = CheckResult(
                spec.id,
                Status.TIMEOUT if "interrupt" in str(lost) else Status.ERROR,
                f"while your code ran, {lost}",
            )
            run.kernel.shutdown()  # replaced before the next check
        except Exception as exc:  # a grader bug or a reply it did not expect: this check only
            result = CheckResult(spec.id, Status.ERROR, f"could not be graded: {exc!r:.200}")
        results.append(result)
    return results


def _grade_one(spec, notebook: Notebook, run: _Execution, salt: int) -> CheckResult:
    session = Session(run.kernel)
    limit = spec.time_limit * OFFICIAL_TIME_FACTOR
    if spec.imports_dynamo:  # the grader's own references need it too (an optimizer's step)
        agent.preload_dynamo()
    session.start_check(limit)
    token = SALT.set(salt)
    try:
        obj = session.resolve(spec.id)
        result = run_check(spec, obj, session, time_limit=limit)
    except KeyError:
        return _unreported(spec.id, notebook, run)
    except (LearnerError, RemoteTimeout) as exc:
        return CheckResult(spec.id, Status.ERROR, f"the answer could not be read: {exc}")
    finally:
        SALT.reset(token)
    if run.kernel.dynamo_ready:
        _KERNEL_DYNAMO.add(spec.notebook)
    if session.uses_reference:
        result = CheckResult(result.id, result.status, result.message, True)
    return result


def grade_file(
    path: Path, pool: KernelPool, cell_timeout: int = CELL_TIMEOUT, until: float = float("inf")
) -> NotebookReport:
    """Grade one notebook file with a kernel from ``pool``; nothing of it runs past ``until``
    (``time.monotonic()``: its student's budget, ``grade_students``)."""
    start = time.monotonic()
    report = NotebookReport(str(path))
    try:
        notebook = read_notebook(path)
    except ValueError as exc:
        report.error = str(exc)
        report.notebook = notebook_id(Notebook({}, []), path)
        report.checks = [
            CheckResult(s.id, Status.ERROR, report.error) for s in checks_for(report.notebook)
        ]
        return report
    report.notebook = notebook_id(notebook, path)
    specs = checks_for(report.notebook)
    if not specs:
        notebooks = ", ".join(sorted({spec.notebook for spec in CHECKS.values()}))
        report.error = (
            f"no checks for {report.notebook!r}: this is not one of the course's exercise "
            f"notebooks ({notebooks}); its metadata and file name say neither"
        )
        return report
    try:
        _run_and_grade(notebook, specs, pool, cell_timeout, report, start, until)
    except Exception as exc:  # whatever broke, it costs this notebook only
        report.error = f"the grader could not finish this notebook: {exc!r:.300}"
    graded = {result.id for result in report.checks}
    report.checks += [
        CheckResult(s.id, Status.ERROR, report.error or "not graded")
        for s in specs
        if s.id not in graded
    ]
    report.seconds = time.monotonic() - start
    return report


def notebook_budget(specs, cell_timeout: float, kernels: int = 1) -> float:
    """Seconds one notebook may hold the grader in all: its cells (once per kernel that
    grades some of its checks), its checks, kernel starts."""
    checks = sum(spec.time_limit * OFFICIAL_TIME_FACTOR + REQUEST_GRACE for spec in specs)
    return kernels * NOTEBOOK_TIMEOUT_CELLS * cell_timeout + checks + STARTS_SECONDS


def _run_and_grade(notebook, specs, pool: KernelPool, cell_timeout, report, start, until) -> None:
    """The notebook's cells, then its checks, in each kernel that grades some of them (one,
    or two where some checks build on the course's versions of the others: ``withheld``)."""
    sandboxes = withheld.sandboxes(report.notebook)
    deadline = min(start + notebook_budget(specs, cell_timeout, len(sandboxes)), until)
    apart = withheld.APART.get(report.notebook, ())
    results: dict[str, CheckResult] = {}
    for withholding, of_apart in sandboxes:
        group = [spec for spec in specs if (spec.id in apart) == of_apart]
        phase = time.monotonic()
        kernel = pool.get(withholding)
        _add_time(report, "kernel_wait", phase)
        with tempfile.TemporaryDirectory(prefix="attn-grade-", ignore_cleanup_errors=True) as tmp:
            run: _Execution | None = None
            try:
                run = _Execution(notebook, Path(tmp), kernel, cell_timeout, deadline)
                if report.notebook in _KERNEL_DYNAMO:
                    kernel.execute(_BACKGROUND_DYNAMO, 30, silent=True)
                phase = time.monotonic()
                run.run_all()
                if report.notebook in _KERNEL_DYNAMO:
                    _finish_dynamo(run.kernel)
                _add_time(report, "cells", phase)
                phase = time.monotonic()
                for result in _grade_answers(group, notebook, run, secrets.randbits(30)):
                    results[result.id] = result
                _add_time(report, "checks", phase)
                report.error = report.error or run.died
            except KernelLost as lost:
                raise RuntimeError(f"the Python kernel was lost: {lost}") from None
            finally:
                (run.kernel if run else kernel).shutdown()
                report.checks = [results[spec.id] for spec in specs if spec.id in results]


def _finish_dynamo(kernel: Kernel) -> None:
    """Wait for the kernel's import of torch._dynamo (``_BACKGROUND_DYNAMO``) before the
    checks start, so that none of it runs on a check's clock."""
    try:
        reply = kernel.execute("import torch._dynamo", DYNAMO_SECONDS, silent=True)
        kernel.dynamo_ready = reply.get("status") == "ok"
    except KernelLost:  # replaced before the next check
        pass


def _add_time(report: NotebookReport, phase: str, since: float) -> None:
    report.timings[phase] = report.timings.get(phase, 0.0) + time.monotonic() - since


def _over_budget(path: Path, budget: float, started: bool) -> str:
    when = "while this notebook was graded" if started else "before this notebook was graded"
    return (
        f"your grading time ran out {when}: each student's notebooks get {budget:.0f} s "
        "in all (the class's --student-budget)"
    )


def _not_graded(path: Path, why: str) -> NotebookReport:
    """The report of a notebook that was not run: every check timed out, saying ``why``."""
    try:
        name = notebook_id(read_notebook(path), path)
    except ValueError:
        name = notebook_id(Notebook({}, []), path)
    checks = [CheckResult(s.id, Status.TIMEOUT, why) for s in checks_for(name)]
    return NotebookReport(str(path), notebook=name, checks=checks, error=why)


def grade_students(
    students: list[list[Path]],
    budget: float,
    cell_timeout: int = CELL_TIMEOUT,
    jobs: int = 2,
    on_done: Callable[[NotebookReport], None] | None = None,
) -> list[list[NotebookReport]]:
    """Grade each student's notebooks one after the other, ``jobs`` students at a time, in the
    sandbox: a student holds one grading slot at a time, for at most ``budget`` seconds in
    all (``grade --roster --student-budget``). A notebook still running when its student's
    time runs out is stopped there (its later checks are timed out); the student's later
    notebooks are not run, and every one of them says so in its report: nothing is lost
    silently. Reports in the order of ``students``."""
    load_checks()
    torch.set_num_threads(1)  # the kernels need the cores
    pool = KernelPool(jobs, [planned_notebook(p) for p in _in_grading_order(students, jobs)])

    def one_student(paths: list[Path]) -> list[NotebookReport]:
        until, reports = time.monotonic() + budget, []
        for path in paths:
            if until - time.monotonic() < REPLACE_MIN_SECONDS:
                report = _not_graded(path, _over_budget(path, budget, started=False))
            else:
                report = _grade_one_file(path, pool, cell_timeout, until)
                if time.monotonic() >= until:
                    cut = _over_budget(path, budget, started=True)
                    report.error = f"{cut} ({report.error})" if report.error else cut
            if on_done:
                on_done(report)
            reports.append(report)
        return reports

    try:
        with ThreadPoolExecutor(jobs, thread_name_prefix="grade") as workers:
            return list(workers.map(one_student, students))
    finally:
        pool.close()


def _in_grading_order(students: list[list[Path]], jobs: int) -> list[Path]:
    """The notebooks in about the order ``jobs`` slots will ask for their kernels: the
    students ``jobs`` at a time, their notebooks interleaved (first notebooks first)."""
    order = []
    for first in range(0, len(students), jobs):
        group = students[first : first + jobs]
        for i in range(max(map(len, group))):
            order += [paths[i] for paths in group if i < len(paths)]
    return order


def _grade_one_file(
    path: Path, pool: KernelPool, cell_timeout: int, until: float = float("inf")
) -> NotebookReport:
    try:
        return grade_file(Path(path), pool, cell_timeout, until)
    except Exception as exc:  # e.g. JSON nested too deep to read: this notebook only
        return NotebookReport(str(path), error=f"could not be graded: {exc!r:.300}")


def grade_notebooks(
    paths: list[Path],
    cell_timeout: int = CELL_TIMEOUT,
    jobs: int = 2,
    on_done: Callable[[NotebookReport], None] | None = None,
    pool: KernelPool | None = None,
    sandboxed: bool = True,
) -> list[NotebookReport]:
    """Grade ``paths`` with up to ``jobs`` kernels at a time; reports in the order of ``paths``.

    Args:
        paths: notebook files (identified by metadata, else by file name).
        cell_timeout: seconds a cell may run before it is interrupted.
        jobs: notebooks graded in parallel (one fresh kernel each).
        on_done: called with each report as soon as it is ready (progress display).
        pool: kernels already starting (one per path); made here when not given.
        sandboxed: run the kernels in the sandbox (``sandbox.py``); ignored with ``pool``.
    """
    if jobs < 1:
        raise ValueError(f"jobs={jobs} must be at least 1.")
    load_checks()
    torch.set_num_threads(1)  # the kernels need the cores
    pool = pool or KernelPool(jobs, [planned_notebook(p) for p in paths], sandboxed)

    def one(path: Path) -> NotebookReport:
        report = _grade_one_file(path, pool, cell_timeout)
        if on_done:
            on_done(report)
        return report

    try:
        with ThreadPoolExecutor(jobs, thread_name_prefix="grade") as workers:
            return list(workers.map(one, paths))
    finally:
        pool.close()

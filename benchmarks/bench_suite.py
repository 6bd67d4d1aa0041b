"""What `make test` costs, group by group: CPU-seconds (user + system) and wall time.

Runs the suite of `make test` (same options, the same two worker processes) in four groups, one
after the other, and prints each group's CPU-seconds two ways:

- "all": every process the group ran, counted by a cgroup v1 ``cpuacct`` group made for it
  (root, as on CI; "-" where it cannot be made). Only this count sees the grader's sandboxed
  kernels: they end with their sandbox's PID namespace, and no parent waits for them.
- "rusage": what ``/usr/bin/time`` prints for the same command: the group's process and every
  process it started and waited for (pytest's workers, nbval's kernels, JupyterLab, Chromium).
  On this project it misses most of the grader's CPU (about 630 of 1,514 CPU-seconds of the
  whole suite, measured on a 2-core Xeon).

The groups:

- unit: the tests not marked slow or browser (what `make test-fast` runs);
- grader and slow: the tests marked slow (kernels, the grade command, training, mypy, ...)
  but not rerun (`make test` leaves those to CI's other Pythons);
- browser: the tests marked browser (JupyterLab and Chromium), the class test aside (it runs
  in `make test-class`: a JupyterHub, three students, about 100 CPU-seconds);
- nbval: every lecture and solution notebook under strict nbval, as on another machine.

The share column is each group's part of the total: the next change to the suite sees what it
costs, and where. Wall time depends on the load of the machine; CPU-seconds much less so.

Run: .venv/bin/python benchmarks/bench_suite.py [GROUP ...]
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval-sanitize.cfg"]
NOT_CLASS = ["--ignore=tests/test_class_hub.py"]  # `make test-class`, not `make test`
GROUPS = {
    "unit": ["-m", "not slow and not browser", *NOT_CLASS, "tests"],
    "grader and slow": ["-m", "slow and not browser and not rerun", *NOT_CLASS, "tests"],
    "browser": ["-m", "browser", *NOT_CLASS, "tests"],
    "nbval": [*NBVAL, "notebooks", "solutions"],
}


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1's CPU accounting, where mounted


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpuacct_group(name: str) -> Path | None:
    """A new cpuacct cgroup under this process's own, or None where none can be made."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        (own,) = [line.split(":", 2)[2] for line in lines if "cpuacct" in line.split(":")[1]]
        group = CPUACCT / own.lstrip("/") / f"bench-suite-{os.getpid()}-{name.replace(' ', '-')}"
        group.mkdir()
        return group
    except (OSError, ValueError):
        return None


def run_group(args: list[str], name: str) -> tuple[float | None, float, float, int]:
    """One pytest run over ``args``: its CPU-seconds counted by a cgroup (None where none
    could be made) and by rusage, its wall seconds and its exit status."""
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", *args]
    group = cpuacct_group(name)

    def join() -> None:  # in the child, before pytest starts: it and all it starts are counted
        if group is not None:
            (group / "tasks").write_text(str(os.getpid()))

    rusage, start = children_cpu(), time.perf_counter()
    process = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, preexec_fn=join)
    wall, rusage = time.perf_counter() - start, children_cpu() - rusage
    counted = None
    if group is not None:
        time.sleep(1)  # the last sandboxes' processes are gone
        counted = int((group / "cpuacct.usage").read_text()) / 1e9
        with contextlib.suppress(OSError):  # a process still in it: the group stays
            group.rmdir()
    return counted, rusage, wall, process.returncode


def _seconds(value: float | None) -> str:
    """A CPU-seconds column, "-" where the cgroup count is missing."""
    return f"{value:9.0f}" if value is not None else f"{'-':>9s}"


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        sys.exit(f"unknown group {unknown[0]!r}; the groups: {', '.join(GROUPS)}")
    rows = {name: run_group(GROUPS[name], name) for name in names or GROUPS}
    by_cgroup = all(all_cpu is not None for all_cpu, _, _, _ in rows.values())
    shared = {  # what the share column divides: the cgroup's count where every group has one
        name: all_cpu if by_cgroup and all_cpu is not None else cpu
        for name, (all_cpu, cpu, _, _) in rows.items()
    }
    total = sum(shared.values())
    print(f"make test's suite by group on {os.cpu_count()} cores (pytest -n 2)")
    print(f"{'group':16s} {'all CPU s':>9s} {'rusage':>8s} {'share':>6s} {'wall s':>8s}  status")
    for name, (all_cpu, cpu, wall, status) in rows.items():
        share = shared[name] / total
        print(f"{name:16s} {_seconds(all_cpu)} {cpu:8.0f} {share:6.0%} {wall:8.0f}  {status}")
    rusage_total = sum(cpu for _, cpu, _, _ in rows.values())
    print(f"{'total':16s} {_seconds(total if by_cgroup else None)} {rusage_total:8.0f} {1:6.0%}")
    return max(status for _, _, _, status in rows.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

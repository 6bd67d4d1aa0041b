"""What `make test` costs, group by group: CPU-seconds (user + system) and wall time.

Runs the suite of `make test` (same options, the same two worker processes) in four groups, one
after the other, and prints each group's CPU-seconds: its own process and every process it
started and waited for (pytest's workers, the notebooks' kernels, the grader's kernels and
sandboxes, JupyterLab and Chromium in the browser test), as the operating system counts them.
The groups:

- unit: the tests not marked slow or browser (what `make test-fast` runs);
- grader and slow: the tests marked slow (kernels, the grade command, training, mypy, ...);
- browser: the tests marked browser (JupyterLab and Chromium), the class test aside (it runs
  in `make test-class`: a JupyterHub, three students, about 100 CPU-seconds);
- nbval: every lecture and solution notebook under strict nbval, as on another machine.

The share column is each group's part of the total: the next change to the suite sees what it
costs, and where. Wall time depends on the load of the machine; CPU-seconds much less so.

Run: .venv/bin/python benchmarks/bench_suite.py [GROUP ...]
"""

from __future__ import annotations

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
    "grader and slow": ["-m", "slow and not browser", *NOT_CLASS, "tests"],
    "browser": ["-m", "browser", *NOT_CLASS, "tests"],
    "nbval": [*NBVAL, "notebooks", "solutions"],
}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_group(args: list[str]) -> tuple[float, float, int]:
    """CPU-seconds and wall seconds of one pytest run over ``args``, and its exit status."""
    command = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", *args]
    cpu, start = children_cpu(), time.perf_counter()
    status = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL).returncode
    return children_cpu() - cpu, time.perf_counter() - start, status


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        sys.exit(f"unknown group {unknown[0]!r}; the groups: {', '.join(GROUPS)}")
    rows = {name: run_group(GROUPS[name]) for name in names or GROUPS}
    total = sum(cpu for cpu, _, _ in rows.values())
    print(f"make test's suite by group on {os.cpu_count()} cores (pytest -n 2)")
    print(f"{'group':16s} {'CPU s':>8s} {'share':>6s} {'wall s':>8s}  pytest status")
    for name, (cpu, wall, status) in rows.items():
        print(f"{name:16s} {cpu:8.0f} {cpu / total:6.0%} {wall:8.0f}  {status}")
    print(f"{'total':16s} {total:8.0f} {1:6.0%}")
    return max(status for _, _, status in rows.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Grading throughput: one notebook through the command, then a synthetic class.

    python benchmarks/bench_grading.py [--students 100] [--notebooks 00,01,...] [--jobs 2]

Targets (issue 29), each measured beside ``python -c "import torch"`` in the same run: one
notebook through the command at most 2.0 x ``import torch`` (a fresh sandboxed kernel costs
about 1.5 x by itself); a class run at most 1.0 x ``import torch`` per notebook, for any mix
of notebooks, 05 and 08 included (e.g. ``--students 4 --notebooks 01,05,08``).

Prints the command's start-up (its imports; the time from starting it to its first kernel
start request), wall times (one notebook in the sandbox and with ``--no-sandbox``: the
sandbox's cost per notebook), where the time goes (the command's imports, waiting for a kernel, the
learner's cells, the checks) and notebooks per minute, each next to a reference measured in
the same run (``python -c "import torch"``), since these machines are shared and noisy. The
class comes from ``make_class.py``: the solutions with random mistakes, a fresh kernel per
notebook, the roster command with its pool of pre-started kernels.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_class import make_class  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ROUNDS = 5
ONE_NOTEBOOK_TARGET = 2.0  # x import torch
PER_NOTEBOOK_TARGET = 1.0  # x import torch, in a class run


def verdict(ratio: float, target: float) -> str:
    return f"target <= {target:.1f}: {'met' if ratio <= target else 'NOT met'}"


def wall(*command: str) -> float:
    """Seconds one command takes (it must succeed)."""
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=ENV, cwd=ROOT)
    return time.perf_counter() - start


def median_wall(command: list[str], runs: int = 3) -> float:
    return sorted(wall(*command) for _ in range(runs))[runs // 2]


# The grade command run through this wrapper prints the monotonic clock (one clock for every
# process of the machine) when it first asks for a kernel process.
FIRST_KERNEL = """
import runpy, subprocess, sys, time
popen = subprocess.Popen.__init__
def first(self, args, *rest, **options):
    if "ipykernel_launcher" in map(str, args) and not hasattr(first, "seen"):
        first.seen = True
        print("FIRST_KERNEL", time.monotonic(), file=sys.stderr, flush=True)
    popen(self, args, *rest, **options)
subprocess.Popen.__init__ = first
sys.argv = ["attn_course", *sys.argv[1:]]
runpy.run_module("attn_course", run_name="__main__", alter_sys=True)
"""


def first_kernel_request(python: str, notebook: str) -> float:
    """Seconds from starting ``grade NOTEBOOK`` to its first kernel start request."""
    start = time.monotonic()
    done = subprocess.run(
        [python, "-c", FIRST_KERNEL, "grade", notebook],
        capture_output=True, text=True, env=ENV, cwd=ROOT, check=True,
    )  # fmt: skip
    stamps = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("FIRST_")]
    return float(stamps[0]) - start


def phases(reports: list[dict]) -> dict[str, float]:
    """Seconds summed over ``reports`` per phase."""
    total: dict[str, float] = {}
    for report in reports:
        for phase, seconds in report.get("timings", {}).items():
            total[phase] = total.get(phase, 0.0) + seconds
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--notebooks", default="", help="comma-separated NN prefixes (all)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    python = sys.executable
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {os.cpu_count()} CPUs")

    torch_import = median_wall([python, "-c", "import torch"])
    cli_import = median_wall(
        [
            python,
            "-c",
            "import attn_course.grading.classrun.cli, attn_course.grading.classrun.runner, "
            "attn_course.grading.checking.checks",
        ]
    )
    validate = median_wall(
        [
            python,
            "-c",
            "import nbformat; nbformat.validate(nbformat.read("
            "'solutions/01_causal_attention.ipynb', as_version=4))",
        ]
    )
    first_kernel = statistics.median(
        first_kernel_request(python, "solutions/01_causal_attention.ipynb") for _ in range(3)
    )
    print("\nstart-up (median of 3)                        seconds   x import torch")
    for name, seconds in [
        ("python -c 'import torch' (reference)", torch_import),
        ("the grade command's imports", cli_import),
        ("grade: start to its first kernel request", first_kernel),
        ("nbformat read + validate (avoided)", validate),
    ]:
        print(f"  {name:<44}{seconds:7.2f}   {seconds / torch_import:6.2f}")

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "one.json"
        command = [python, "-m", "attn_course", "grade", "solutions/01_causal_attention.ipynb"]
        rounds = []  # (import torch, sandboxed, --no-sandbox), back to back: same load
        for _ in range(ROUNDS):
            rounds.append(
                (
                    wall(python, "-c", "import torch"),
                    wall(*command, "--json", str(report)),
                    wall(*command, "--no-sandbox"),
                )
            )
        ratio = statistics.median(one / ref for ref, one, _ in rounds)
        plain_ratio = statistics.median(plain / ref for ref, _, plain in rounds)
        cost = statistics.median(one - plain for _, one, plain in rounds)
        one = statistics.median(one for _, one, _ in rounds)
        (notebook,) = json.loads(report.read_text())["notebooks"]
        print(
            f"\none notebook (01, 4 checks) through the command, {ROUNDS} rounds each beside "
            f"an `import torch`: median {one:.2f} s wall, {ratio:.2f} x import torch in the "
            f"sandbox, {plain_ratio:.2f} x with --no-sandbox; the sandbox costs {cost:+.2f} s "
            "per notebook (median of the rounds' differences)"
        )
        print(f"  {verdict(ratio, ONE_NOTEBOOK_TARGET)}")
        for phase, seconds in notebook["timings"].items():
            print(f"  {phase:<14}{seconds:6.2f} s")

        stems = sorted(p.stem for p in (ROOT / "exercises").glob("*.ipynb"))
        if args.notebooks:
            stems = [s for s in stems if s.split("_")[0] in args.notebooks.split(",")]
        roster, out = Path(tmp) / "class", Path(tmp) / "out"
        make_class(roster, args.students, stems, seed=0)
        count = args.students * len(stems)
        before = [wall(python, "-c", "import torch") for _ in range(3)]
        start = time.perf_counter()
        subprocess.run(
            [
                python,
                "-m",
                "attn_course",
                "grade",
                "--roster",
                str(roster),
                "--out",
                str(out),
                "--jobs",
                str(args.jobs),
            ],
            check=True,
            capture_output=True,
            env=ENV,
            cwd=ROOT,
        )
        seconds = time.perf_counter() - start
        beside = statistics.median(
            [*before, *(wall(python, "-c", "import torch") for _ in range(3))]
        )
        reports = [
            nb
            for path in (out / "students").glob("*.json")
            for nb in json.loads(path.read_text())["notebooks"]
        ]
        print(
            f"\nclass: {args.students} students x {len(stems)} notebooks = {count} notebooks, "
            f"--jobs {args.jobs}"
        )
        per_notebook = seconds / count / beside
        print(
            f"  wall {seconds:.0f} s, {60 * count / seconds:.1f} notebooks/minute, "
            f"{seconds / count:.2f} s per notebook: {per_notebook:.2f} x import torch "
            f"({beside:.2f} s, median of 3 runs just before and 3 just after the class); "
            f"{verdict(per_notebook, PER_NOTEBOOK_TARGET)}"
        )
        tally = Counter(check["status"] for nb in reports for check in nb["checks"])
        errors = sum(nb["error"] is not None for nb in reports)
        print(
            f"  {len(reports)} notebook reports, {errors} not gradable; verdicts: "
            + ", ".join(f"{status} {n}" for status, n in sorted(tally.items()))
        )
        errors = Counter(
            check["message"][:100]
            for nb in reports
            for check in nb["checks"]
            if check["status"] == "error"
        )
        for message, n in errors.most_common(5):
            print(f"    error x{n}: {message}")
        print("  where the time goes (summed over notebooks; the jobs overlap):")
        for phase, total in phases(reports).items():
            print(f"    {phase:<14}{total:8.1f} s  ({total / len(reports):.2f} s per notebook)")
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()

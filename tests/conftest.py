"""What the test files share: the repository root, a headless matplotlib, one torch thread.

pyproject.toml puts tests/ and benchmarks/ on the import path (``pythonpath``), so test files
import ``ROOT`` from here, the wrong-implementations library (``wrong_implementations``) and
benchmark helpers (``make_class``) by name.
"""

import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import torch

matplotlib.use("Agg")  # before any test imports pyplot: no window, the same pixels everywhere
# One thread per test process: `make test` runs two processes on two cores, and on the small
# tensors of the tests a second thread mostly spins (three times the CPU time of one).
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent


def grade_command(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``python -m attn_course grade ARGS`` from ``cwd``, this checkout importable and a
    test signing key in the environment (never the key in the tester's home folder)."""
    return subprocess.run(
        [sys.executable, "-m", "attn_course", "grade", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "ATTN_GRADE_KEY": "a test key, 32 characters long",
        },
        timeout=600,
    )

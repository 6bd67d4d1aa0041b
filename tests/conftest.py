"""What the test files share: the repository root, a headless matplotlib, one torch thread.

pyproject.toml puts tests/ and benchmarks/ on the import path (``pythonpath``), so test files
import ``ROOT`` from here, the wrong-implementations library (``wrong_implementations``) and
benchmark helpers (``make_class``) by name.
"""

from pathlib import Path

import matplotlib
import torch

matplotlib.use("Agg")  # before any test imports pyplot: no window, the same pixels everywhere
# One thread per test process: `make test` runs two processes on two cores, and on the small
# tensors of the tests a second thread mostly spins (three times the CPU time of one).
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parent.parent

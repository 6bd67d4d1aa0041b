"""How long the trained-model explorer (lecture 08) takes to answer a control.

Each row changes one control of ``model_explorer()`` back and forth between two values, as a
learner does, and reports the median move as ``bench_widgets`` measures it (the same
function): wall time (budget 150 ms) and the process's CPU time (the same work without
waiting for a core on a busy machine). One thread, as in the notebooks. The load average is
printed: on a busy machine wall time includes waiting.

Run: .venv/bin/python benchmarks/bench_model_explorer.py
"""

from __future__ import annotations

import os

import matplotlib
import torch
from bench_widgets import median_move_ms

from attn_course.ui.model_explorer import model_explorer

BUDGET_MS = 150.0

CASES = [  # (row, control, the two values it alternates between)
    ("seed (new sampled sequence)", "seed", (7, 123)),
    ("head", "head", (3, 0)),
    ("layer", "layer", (0, 1)),
    ("task", "task", ("kv-lookup", "induction")),
    ("trained on/off", "trained", (False, True)),
    ("typed sequence", "sequence", ("5 17 3 9 30 14 2 9 30 14 2", "")),
]


def main() -> None:
    matplotlib.use("Agg")
    torch.set_num_threads(1)
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"{'model_explorer(): control':<34} {'wall ms':>8} {'CPU ms':>7} {'budget':>7}  result")
    for name, control, values in CASES:
        wall, cpu, _ = median_move_ms(model_explorer, control, values)
        verdict = "PASS" if wall < BUDGET_MS else "MISS"
        print(f"{name:<34} {wall:>8.1f} {cpu:>7.1f} {BUDGET_MS:>7.0f}  {verdict}")


if __name__ == "__main__":
    main()

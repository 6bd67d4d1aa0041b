"""How long an explorer takes to answer a slider: compute the weights, draw, render SVG.

Each row moves one control of an explorer back and forth between two values, exactly as a
learner releasing a slider does (the control's observer runs ``Explorer.redraw``), at the
default sizes, and reports the median of 30 moves: wall time (the budget is 150 ms, what
still feels live) and the process's CPU time (the same work without the waiting for a core
on a busy machine). One thread, as in the notebooks.

"1st time" rows build a fresh explorer before every move, so nothing drawn before can help.

Run: .venv/bin/python benchmarks/bench_widgets.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import matplotlib
import torch

from attn_course.widgets import Explorer, attention_explorer, encoder_explorer

BUDGET_MS = 150.0
MOVES = 30

CASES = [  # (row, explorer, control, the two values it alternates between, fresh explorer)
    ("attention_explorer(): seed", attention_explorer, "seed", (7, 123), False),
    ("attention_explorer(): temperature", attention_explorer, "temperature", (2.0, 1.0), False),
    ("attention_explorer(): causal", attention_explorer, "causal", (False, True), False),
    ("attention_explorer(): heads 3<->2", attention_explorer, "num_heads", (3, 2), False),
    ("attention_explorer(): heads, 1st time", attention_explorer, "num_heads", (3, 3), True),
    ("encoder_explorer(): seed", encoder_explorer, "seed", (7, 123), False),
    ("encoder_explorer(): real tokens", encoder_explorer, "num_real", (5, 4), False),
    ("encoder_explorer(): real, 1st time", encoder_explorer, "num_real", (5, 5), True),
]


def median_move_ms(
    make: Callable[[], Explorer], control: str, values: tuple, fresh: bool
) -> tuple[float, float]:
    """Median (wall ms, CPU ms) of setting ``control`` to ``values[0]``, ``values[1]``, ...

    One warm-up move first; with ``fresh`` every move gets a new explorer.
    """
    explorer = make()
    explorer.controls[control].value = values[0]
    wall, cpu = [], []
    for move in range(MOVES):
        if fresh:
            explorer = make()
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        explorer.controls[control].value = values[(move + 1) % 2]
        wall.append(time.perf_counter() - start_wall)
        cpu.append(time.process_time() - start_cpu)
        assert not explorer.error.value, explorer.error.value
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu)


def main() -> None:
    matplotlib.use("Agg")
    torch.set_num_threads(1)
    print(
        f"{'slider moved (default sizes)':<38} {'wall ms':>8} {'CPU ms':>7} {'budget':>7}  result"
    )
    for name, make, control, values, fresh in CASES:
        wall, cpu = median_move_ms(make, control, values, fresh)
        verdict = "PASS" if wall < BUDGET_MS else "MISS"
        print(f"{name:<38} {wall:>8.1f} {cpu:>7.1f} {BUDGET_MS:>7.0f}  {verdict}")


if __name__ == "__main__":
    main()

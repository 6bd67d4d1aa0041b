"""How long an explorer takes to answer a slider: compute the weights, write the SVG.

Each row moves one control of an explorer back and forth between two values, exactly as a
learner releasing a slider does (the control's observer runs ``Explorer.set_config``), and
reports the median of 30 moves: wall time against the budget (100 ms at the default sizes,
150 ms at six heads) and the process's CPU time (the same work without the waiting for a
core on a busy machine). One thread, as in the notebooks.

The reference, measured in the same run on the same settings: the same picture drawn by
matplotlib (``viz.head_grid``) and written by its SVG backend, which is how the explorers
drew before; "× faster" is its median over the explorer's.

The language-model explorer (lecture 11, ``lm_explorer``) has its own rows, budget 150 ms:
each move runs the shipped Shakespeare model on the line, scores the head on the text and
redraws a kept canvas. Its reference is the same view drawn on a fresh matplotlib figure and
written as SVG (what a redraw without the kept canvas would cost).

Run: .venv/bin/python benchmarks/bench_widgets.py
"""

from __future__ import annotations

import io
import os
import statistics
import time
from collections.abc import Callable

import matplotlib
import matplotlib.pyplot as plt
import torch
from matplotlib.backends.backend_svg import FigureCanvasSVG

from attn_course import explore, viz
from attn_course.lm_views import LineCanvas, LineSettings, line_picture
from attn_course.model_views import figure_svg
from attn_course.ui.lm_explorer import lm_explorer
from attn_course.ui.widgets import Explorer, attention_explorer, encoder_explorer

MOVES = 30
REFERENCE_MOVES = 5

CASES = [  # (row, explorer, control, the two values it alternates between, budget ms)
    ("attention: seed", attention_explorer, "seed", (7, 123), 100),
    ("attention: temperature", attention_explorer, "temperature", (0.01, 1.0), 100),
    ("attention: head_dim", attention_explorer, "head_dim", (64, 2), 100),
    ("attention: causal", attention_explorer, "causal", (False, True), 100),
    ("attention: colour view", attention_explorer, "view", ("deviation", "weights"), 100),
    ("attention: example", attention_explorer, "example", ("journey", "dream"), 100),
    ("attention: heads 3<->2", attention_explorer, "num_heads", (3, 2), 100),
    ("attention: heads 6<->5", attention_explorer, "num_heads", (6, 5), 150),
    ("encoder: seed", encoder_explorer, "seed", (7, 123), 100),
    ("encoder: real tokens", encoder_explorer, "num_real", (5, 4), 100),
    ("encoder: heads 6<->4", encoder_explorer, "num_heads", (6, 4), 150),
]


def median_move_ms(make: Callable[[], Explorer], control: str, values: tuple) -> tuple:
    """Median (wall ms, CPU ms) of setting ``control`` to ``values[1]``, ``values[0]``, ...,
    and the explorer's settings after the first move (one warm-up move first)."""
    explorer = make()
    explorer.controls[control].value = values[0]
    wall, cpu = [], []
    for move in range(MOVES):
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        explorer.controls[control].value = values[(move + 1) % 2]
        wall.append(time.perf_counter() - start_wall)
        cpu.append(time.process_time() - start_cpu)
        assert not explorer.error.value, explorer.error.value
    return 1000 * statistics.median(wall), 1000 * statistics.median(cpu), explorer.settings


def matplotlib_ms(picture: Callable[[], explore.Picture]) -> float:
    """Median wall ms of the same picture through ``viz.head_grid`` and matplotlib's SVG."""
    times = []
    for _ in range(REFERENCE_MOVES):
        start = time.perf_counter()
        shown = picture()
        fig = viz.head_grid(shown.weights, shown.tokens, mask=shown.mask, title=shown.title)
        with plt.rc_context({"svg.fonttype": "none"}):
            FigureCanvasSVG(fig).print_svg(io.StringIO())
        plt.close(fig)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


LM_BUDGET_MS = 150
LM_CASES = [  # (row, control, the two values it alternates between)
    ("language model: head", "head", (1, 0)),
    ("language model: layer", "layer", (1, 0)),
    ("language model: typed line", "text",
     ("JULIET:\nO Romeo, Romeo! wherefore art thou Romeo?", LineSettings().text)),
]  # fmt: skip


def lm_fresh_figure_ms(settings: LineSettings, model, tokenizer) -> float:
    """Median wall ms of the same view drawn on a new figure each time, written as SVG."""
    times = []
    for _ in range(REFERENCE_MOVES):
        start = time.perf_counter()
        fig = LineCanvas(plt.figure()).draw(line_picture(settings, model, tokenizer))
        figure_svg(fig)
        plt.close(fig)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    matplotlib.use("Agg")
    torch.set_num_threads(1)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'slider moved':<26} {'wall ms':>8} {'CPU ms':>7} {'budget':>7}  result"
        f"  {'matplotlib ms':>13} {'× faster':>8}"
    )
    for name, make, control, values, budget in CASES:
        wall, cpu, settings = median_move_ms(make, control, values)
        make_picture = (
            explore.attention_picture if make is attention_explorer else (explore.encoder_picture)
        )
        reference = matplotlib_ms(lambda: make_picture(settings))  # noqa: B023
        verdict = "PASS" if wall <= budget else "MISS"
        print(
            f"{name:<26} {wall:>8.1f} {cpu:>7.1f} {budget:>7}  {verdict:<6}"
            f"  {reference:>13.1f} {reference / wall:>8.1f}"
        )
    print(f"\n{'slider moved':<26} {'wall ms':>8} {'CPU ms':>7} {'budget':>7}  result"
          f"  {'fresh figure ms':>15} {'× faster':>8}")  # fmt: skip
    for name, control, values in LM_CASES:
        wall, cpu, settings = median_move_ms(lm_explorer, control, values)
        explorer = lm_explorer()
        reference = lm_fresh_figure_ms(settings, explorer.model, explorer.tokenizer)
        verdict = "PASS" if wall <= LM_BUDGET_MS else "MISS"
        print(
            f"{name:<26} {wall:>8.1f} {cpu:>7.1f} {LM_BUDGET_MS:>7}  {verdict:<6}"
            f"  {reference:>15.1f} {reference / wall:>8.1f}"
        )


if __name__ == "__main__":
    main()

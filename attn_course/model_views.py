"""Pictures of the trained tiny transformer and the computation behind its explorer (lecture 08).

Plain functions and frozen settings, no ipywidgets: ``ui.model_explorer`` is the thin UI on top.
Heads are named ``L{layer} H{head}`` with 0-based numbers, the indices the code uses
(``model.layers[layer]``, ``ablated(model, [(layer, head)])``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.transforms import offset_copy

from .head_scores import head_scores
from .model import TinyTransformer
from .tasks import TASKS
from .training import model_config, pretrained

__all__ = [
    "draw_heads",
    "position_labels",
    "ModelSettings",
    "ModelPicture",
    "parse_sequence",
    "model_picture",
    "draw_view",
    "describe",
    "figure_svg",
    "HeadCanvas",
    "LabelledHeatmap",
]

CMAP = plt.get_cmap("viridis")
SHORT = {"previous-token": "prev", "induction": "ind", "first-token": "first",
         "diagonal": "diag", "row entropy": "ent"}  # fmt: skip


def position_labels(tokens: Sequence[int]) -> list[str]:
    """Tick labels "position:token" for a sequence of token ids: [5, 5] -> ["0:5", "1:5"]."""
    return [f"{position}:{token}" for position, token in enumerate(tokens)]


def draw_heads(
    weights: torch.Tensor,
    tokens: Sequence[int],
    title: str | None = None,
    scores: dict[str, torch.Tensor] | None = None,
    show: Sequence[str] = ("previous-token", "induction"),
) -> Figure:
    """Every head's weights on one sequence: a row of panels per layer, keys on x, queries on y.

    Each tick is labelled ``position:token`` ("22:12": position 22 holds token id 12), so that a
    row or key named by its position can be found even where token ids repeat.

    Args:
        weights: (num_layers, num_heads, num_tokens, num_tokens), e.g.
            ``model.attention_weights()[:, 0]`` after ``model(tokens[None])``.
        tokens: the num_tokens token ids, shown after each position in the tick labels.
        title: the figure title.
        scores: ``head_scores(...)`` output ({name: (num_layers, num_heads)}); the ``show`` ones
            are printed under each panel's name.

    Returns:
        The Figure, on a fixed 0-1 colour scale.
    """
    num_layers, num_heads, num_tokens, _ = weights.shape
    side = max(2.4, 0.13 * num_tokens)
    fig, axes = plt.subplots(
        num_layers, num_heads, figsize=(num_heads * side + 1.2, num_layers * (side + 0.55) + 0.5),
        squeeze=False, layout="constrained",
    )  # fmt: skip
    labels = position_labels(tokens)
    fontsize = 7 if num_tokens <= 24 else 5.5
    for layer in range(num_layers):
        for head in range(num_heads):
            ax = axes[layer, head]
            image = ax.imshow(weights[layer, head].numpy(), cmap=CMAP, norm=Normalize(0, 1))
            name = f"L{layer} H{head}"
            if scores is not None:
                name += "\n" + "  ".join(f"{SHORT[s]} {scores[s][layer, head]:.2f}" for s in show)
            ax.set_title(name, fontsize=9)
            ax.set_xticks(range(num_tokens), labels=labels, fontsize=fontsize, rotation=90)
            ax.set_yticks(range(num_tokens), labels=labels, fontsize=fontsize)
            ax.tick_params(length=0, pad=1.5)
    for ax in axes[-1]:
        ax.set_xlabel("keys (position:token id)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("queries (position:token id)", fontsize=8)
    fig.colorbar(image, ax=axes, shrink=0.7, label="attention weight")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


# --- the explorer's computation --------------------------------------------------------------


@dataclass(frozen=True)
class ModelSettings:
    """What the explorer shows. ``sequence``: token ids separated by spaces, or "" to sample
    one sequence of ``task`` with ``seed``. ``trained=False`` shows the same model before
    training (the initial weights of ``python -m attn_course train``)."""

    task: str = "induction"
    layer: int = 1
    head: int = 0
    sequence: str = ""
    seed: int = 0
    trained: bool = True


@dataclass(frozen=True)
class ModelPicture:
    """The numbers behind one picture: tokens, targets (None when typed), predictions, the
    head's weights (num_tokens, num_tokens) and its five scores."""

    settings: ModelSettings
    tokens: list[int]
    targets: list[int] | None
    scored: list[bool]
    predictions: list[int]
    weights: torch.Tensor
    scores: dict[str, float]


@lru_cache(maxsize=16)
def _model(task: str, trained: bool) -> TinyTransformer:
    if trained:
        return pretrained(task)
    with torch.random.fork_rng(devices=[]):  # the caller's RNG stays where it was
        torch.manual_seed(0)  # as training starts: TrainConfig().seed
        return TinyTransformer(model_config(TASKS[task])).eval()


def parse_sequence(text: str, vocab_size: int, context_length: int) -> list[int]:
    """Token ids from "3 14 15 9 ..." (commas allowed); ValueError with a readable reason."""
    parts = text.replace(",", " ").split()
    if not 2 <= len(parts) <= context_length:
        raise ValueError(f"type between 2 and {context_length} token ids, got {len(parts)}.")
    if not all(p.isdigit() and int(p) < vocab_size for p in parts):
        raise ValueError(f"token ids are whole numbers from 0 to {vocab_size - 1}: {text!r}.")
    return [int(p) for p in parts]


@torch.no_grad()
def model_picture(settings: ModelSettings) -> ModelPicture:
    """Run the model of ``settings.task`` on the sequence and collect what the picture needs."""
    if settings.task not in TASKS:
        raise ValueError(f"unknown task {settings.task!r}; choose one of {sorted(TASKS)}.")
    task = TASKS[settings.task]
    model = _model(settings.task, settings.trained)
    cfg = model.cfg
    if not (0 <= settings.layer < cfg.num_layers and 0 <= settings.head < cfg.num_heads):
        raise ValueError(
            f"layer {settings.layer}, head {settings.head} does not exist: layers 0.."
            f"{cfg.num_layers - 1}, heads 0..{cfg.num_heads - 1}."
        )
    if settings.sequence.strip():
        tokens = parse_sequence(settings.sequence, task.vocab_size, task.num_tokens)
        targets, scored = None, [False] * len(tokens)
    else:
        batch = task.batch(1, settings.seed)
        tokens, targets = batch.tokens[0].tolist(), batch.targets[0].tolist()
        scored = batch.scored[0].tolist()
    x = torch.tensor([tokens])
    predictions = model(x).argmax(dim=-1)[0].tolist()
    weights = model.attention_weights()  # (num_layers, 1, num_heads, num_tokens, num_tokens)
    repeats = len(set(tokens)) < len(tokens)  # else the induction score is undefined: NaN
    all_scores = head_scores(weights, x if repeats else None)
    return ModelPicture(
        settings=settings,
        tokens=tokens,
        targets=targets,
        scored=scored,
        predictions=predictions,
        weights=weights[settings.layer, 0, settings.head],
        scores={k: v[settings.layer, settings.head].item() for k, v in all_scores.items()},
    )


def describe(view: ModelPicture) -> str:
    """One status sentence: the head, its scores, and how many scored tokens were right."""
    s = view.settings
    scores = ", ".join(f"{name} {value:.2f}" for name, value in view.scores.items())
    text = f"{s.task}, {'trained' if s.trained else 'untrained'}, L{s.layer} H{s.head}: {scores}."
    if view.targets is not None and any(view.scored):
        right = sum(
            p == t for p, t, k in zip(view.predictions, view.targets, view.scored, strict=True) if k
        )
        text += f" Next-token predictions right: {right} of {sum(view.scored)} scored."
    return text


class LabelledHeatmap:
    """A 0-1 heatmap of (n, n) weights whose labels are plain texts kept between redraws (an
    explorer's canvas redraws by changing data and texts only).

    Args:
        fig: the Figure; rect: the axes' (left, bottom, width, height) in figure fractions;
        max_labels: the most labels per row or column of texts.
    """

    PAD = 2 / 72  # inches between the cells and the labels

    def __init__(self, fig: Figure, rect: tuple[float, float, float, float], max_labels: int):
        self.fig, self.max_labels = fig, max_labels
        self.ax = fig.add_axes(rect)
        self.image = self.ax.imshow(np.zeros((2, 2)), cmap=CMAP, norm=Normalize(0, 1))
        self.ax.set_axis_off()

    def texts(self, dx: int, dy: int, **kwargs) -> list:
        """``max_labels`` hidden texts placed at data points, shifted by ``dx``, ``dy`` pads."""
        offset = offset_copy(self.ax.transData, fig=self.fig, x=dx * self.PAD, y=dy * self.PAD,
                             units="inches")  # fmt: skip
        return [self.ax.text(0, 0, "", transform=offset, visible=False, **kwargs)
                for _ in range(self.max_labels)]  # fmt: skip

    def show(self, weights: torch.Tensor) -> None:
        """Draw (n, n) ``weights`` over cells 0 .. n - 1 (queries down, keys across)."""
        n = weights.shape[-1]
        self.image.set_data(weights.numpy())
        self.image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
        self.ax.set_xlim(-0.5, n - 0.5)
        self.ax.set_ylim(n - 0.5, -0.5)


class HeadCanvas:
    """The explorer's picture, kept between redraws: ``draw`` changes only the image data, the
    texts and their colours. The token labels are plain texts, not axis ticks, because ticks
    are laid out several times per draw, which would be most of a redraw's cost.

    Args:
        fig: the Figure to draw into, e.g. ``plt.figure()`` in a notebook or a bare
            ``matplotlib.figure.Figure()`` that pyplot never shows on its own.
    """

    def __init__(self, fig: Figure, max_tokens: int = 32):
        fig.set_size_inches(6.8, 5.8)
        self.fig = fig
        self.heatmap = LabelledHeatmap(fig, (0.11, 0.12, 0.647, 0.759), max_tokens)  # 4.4 in
        self.title = fig.text(0.434, 0.97, "", ha="center", va="top", fontsize=11)
        fig.text(0.434, 0.015, "keys (token ids)", ha="center", va="bottom", fontsize=9)
        fig.text(0.03, 0.5, "queries", rotation=90, va="center", fontsize=9)
        fig.text(0.83, 0.5, "predicted next token", rotation=90, va="center", fontsize=9)
        self.keys = self.heatmap.texts(0, -1, rotation=90, ha="center", va="top")
        self.queries = self.heatmap.texts(-1, 0, ha="right", va="center")
        self.predicted = self.heatmap.texts(1, 0, ha="left", va="center")
        cax = fig.add_axes((0.89, 0.25, 0.02, 0.5))
        fig.colorbar(self.heatmap.image, cax=cax, label="attention weight")

    def draw(self, view: ModelPicture) -> Figure:
        """Show ``view``: the chosen head's weights, each query's predicted next token on the
        right (green = scored and right, red = scored and wrong, grey = not scored)."""
        n = len(view.tokens)
        if n > len(self.keys):
            raise ValueError(f"{n} tokens do not fit a canvas for {len(self.keys)}.")
        self.heatmap.show(view.weights)
        fontsize = 8 if n <= 24 else 6.5
        for i in range(len(self.keys)):
            shown = i < n
            for column in (self.keys, self.queries, self.predicted):
                column[i].set_visible(shown)
            if not shown:
                continue
            label = str(view.tokens[i])
            self.keys[i].set(text=label, position=(i, n - 0.5), fontsize=fontsize)
            self.queries[i].set(text=label, position=(-0.5, i), fontsize=fontsize)
            if not view.scored[i]:
                color = "#888888"
            else:
                right = view.targets is not None and view.predictions[i] == view.targets[i]
                color = "#1a7f37" if right else "#cf222e"
            self.predicted[i].set(text=f"→ {view.predictions[i]}", position=(n - 0.5, i),
                                  fontsize=fontsize, color=color)  # fmt: skip
        s = view.settings
        untrained = "" if s.trained else " (untrained)"
        self.title.set_text(f"{s.task}: L{s.layer} H{s.head}{untrained}")
        return self.fig


def draw_view(view: ModelPicture) -> Figure:
    """A new pyplot figure of ``view`` (see ``HeadCanvas.draw``); close it after showing."""
    return HeadCanvas(plt.figure()).draw(view)


def figure_svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element whose text stays text (the browser draws the
    glyphs, which is most of what a PNG would cost); the figure stays open."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "attn-course"}):
        FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None})
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :].replace(
        "<svg ", '<svg style="max-width: 100%; height: auto" ', 1
    )

"""The language model reading the learner's own line (lecture 11): the computation behind
``ui.lm_explorer`` and its picture, without widgets.

``LineSettings`` (the line, a layer, a head) check themselves when built; ``line_picture``
runs a character model on the line and returns a ``LinePicture``: the head's weights over
the characters, its text scores (``text_heads``) and the model's most likely next characters.
``LineCanvas`` draws a picture and keeps its artists between redraws, as ``model_views``'
``HeadCanvas`` does: a redraw changes data and texts only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from .generation import GPTModel
from .model_views import CMAP, LabelledHeatmap
from .text_heads import text_head_scores

__all__ = [
    "LineSettings",
    "LinePicture",
    "line_picture",
    "describe",
    "LineCanvas",
    "show_char",
    "draw_text_heads",
]

MAX_CHARS = 64  # the picture's most characters (a longer line is cut from the left)
TOP = 5  # next-character predictions shown
SHOWN = {" ": "␣", "\n": "↵"}  # characters that would be invisible as labels


def show_char(ch: str) -> str:
    """A character as a readable label: a space is ␣, a line break ↵."""
    return SHOWN.get(ch, ch)


def draw_text_heads(weights: torch.Tensor, chars: str, titles: list[str], ncols: int = 3) -> Figure:
    """Heads side by side on one text: keys on x, queries on y, characters as labels.

    The panels share their axes, so the characters label only the outer ones: the queries
    on the left column, the keys under the bottom panel of each column (labelling every
    panel costs seconds of text layout per figure).

    Args:
        weights: (num_panels, num_chars, num_chars), one head's weights per panel.
        chars: the num_chars characters read.
        titles: one title per panel, e.g. "L1 H2: previous character 0.87".
        ncols: panels per row.

    Returns:
        The Figure, on a fixed 0-1 colour scale.
    """
    num_panels, n, _ = weights.shape
    nrows = -(-num_panels // ncols)
    side = max(3.0, 0.085 * n)
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * side + 1.0, nrows * (side + 0.5)),
                             squeeze=False, layout="constrained")  # fmt: skip
    labels = [show_char(ch) for ch in chars]
    fontsize = 8 if n <= 40 else 6
    for i, ax in enumerate(axes.flat):
        if i >= num_panels:
            ax.set_axis_off()
            continue
        image = ax.imshow(weights[i].numpy(), cmap=CMAP, norm=Normalize(0, 1))
        ax.set_title(titles[i], fontsize=9)
        bottom, left = i + ncols >= num_panels, i % ncols == 0  # of its column; of its row
        x_ticks, y_ticks = (range(n) if bottom else []), (range(n) if left else [])
        ax.set_xticks(x_ticks, labels=labels if bottom else [], fontsize=fontsize)
        ax.set_yticks(y_ticks, labels=labels if left else [], fontsize=fontsize)
        ax.tick_params(length=0, pad=1)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    fig.supxlabel("keys (characters read)", fontsize=9)
    fig.supylabel("queries", fontsize=9)
    return fig


class CharTokenizerLike(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


@dataclass(frozen=True)
class LineSettings:
    """What the explorer shows: the ``text`` the model reads ("\\n" for a line break), and the
    head ``layer``, ``head`` (counted from 0) whose weights are drawn."""

    text: str = "ROMEO:\nBut soft, what light through yonder window breaks?"
    layer: int = 0
    head: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise ValueError(f"text must be a string, got {type(self.text).__name__}.")
        for name in ("layer", "head"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name}={value!r} must be a whole number from 0 on.")


@dataclass(frozen=True)
class LinePicture:
    """The numbers behind one picture.

    Attributes:
        settings: what was asked for.
        chars: the characters read (the last ``MAX_CHARS`` of the text).
        weights: (num_chars, num_chars) weights of the chosen head.
        scores: the chosen head's ``text_head_scores`` (NaN where the line has no targets).
        predictions: the ``TOP`` most likely next characters and their probabilities.
        note: what was cut from the text, or "".
    """

    settings: LineSettings
    chars: str
    weights: torch.Tensor
    scores: dict[str, float]
    predictions: list[tuple[str, float]]
    note: str


@torch.no_grad()
def line_picture(
    settings: LineSettings, model: GPTModel, tokenizer: CharTokenizerLike
) -> LinePicture:
    """Run ``model`` on ``settings.text`` and collect what the picture needs.

    ValueError with a sentence for an empty text, characters the tokenizer does not know (its
    own message) and a layer or head the model does not have.
    """
    cfg = model.cfg
    if not (settings.layer < cfg.num_layers and settings.head < cfg.num_heads):
        raise ValueError(
            f"layer {settings.layer}, head {settings.head} does not exist: layers 0.."
            f"{cfg.num_layers - 1}, heads 0..{cfg.num_heads - 1}."
        )
    ids = tokenizer.encode(settings.text)  # the tokenizer's ValueError for unknown characters
    keep = min(MAX_CHARS, cfg.context_length)
    note = ""
    if len(ids) > keep:
        note = f"Only the last {keep} characters are shown: the first {len(ids) - keep} were cut."
        ids = ids[-keep:]
    x = torch.tensor([ids])
    probs = torch.softmax(model(x)[0, -1], dim=-1)  # (vocab_size,): after the last character
    top = probs.topk(min(TOP, probs.numel()))
    chars = tokenizer.decode(ids)
    weights = model.attention_weights()  # (num_layers, 1, num_heads, n, n)
    if len(ids) >= 2:
        all_scores = text_head_scores(weights, chars)
        scores = {k: float(v[settings.layer, settings.head]) for k, v in all_scores.items()}
    else:
        scores = {}
    return LinePicture(
        settings=settings,
        chars=chars,
        weights=weights[settings.layer, 0, settings.head],
        scores=scores,
        predictions=[
            (tokenizer.decode([int(i)]), float(p))
            for p, i in zip(top.values, top.indices, strict=True)
        ],
        note=note,
    )


def describe(view: LinePicture) -> tuple[str, ...]:
    """The status lines: the head and its scores, the predictions, what was cut."""
    s = view.settings
    scores = ", ".join(
        f"{name} {value:.2f}" for name, value in view.scores.items() if not np.isnan(value)
    )
    predictions = ", ".join(f"{show_char(ch)} {p:.0%}" for ch, p in view.predictions)
    lines = (
        f"L{s.layer} H{s.head} on {len(view.chars)} characters: {scores or 'no scores'}.",
        f"Next character: {predictions}.",
    )
    return (*lines, view.note) if view.note else lines


class LineCanvas:
    """The explorer's picture, kept between redraws: the head's weights over the characters
    (keys on x, queries on y) and a bar chart of the most likely next characters.

    Args:
        fig: the Figure to draw into (a bare ``matplotlib.figure.Figure()`` in the explorer).
    """

    def __init__(self, fig: Figure):
        fig.set_size_inches(9.0, 6.4)
        self.fig = fig
        self.heatmap = LabelledHeatmap(fig, (0.07, 0.1, 0.56, 0.787), MAX_CHARS)  # 5 inches
        self.title = fig.text(0.35, 0.975, "", ha="center", va="top", fontsize=12)
        fig.text(0.35, 0.01, "keys (characters read)", ha="center", va="bottom", fontsize=10)
        fig.text(0.01, 0.5, "queries", rotation=90, va="center", fontsize=10)
        self.keys = self.heatmap.texts(0, -1, ha="center", va="top")
        self.queries = self.heatmap.texts(-1, 0, ha="right", va="center")
        cax = fig.add_axes((0.645, 0.3, 0.012, 0.4))
        fig.colorbar(self.heatmap.image, cax=cax, label="attention weight")
        self.bars_ax = fig.add_axes((0.77, 0.3, 0.2, 0.4))
        self.bars = self.bars_ax.barh(range(TOP), np.zeros(TOP), color=CMAP(0.6))
        self.bars_ax.set_xlim(0, 1)
        self.bars_ax.set_ylim(TOP - 0.5, -0.5)
        self.bars_ax.set_yticks([])
        self.bars_ax.set_xlabel("probability", fontsize=10)
        self.bars_ax.set_title("next character", fontsize=11)
        self.bar_labels = [
            self.bars_ax.text(-0.03, i, "", ha="right", va="center", fontsize=12,
                              transform=self.bars_ax.get_yaxis_transform())
            for i in range(TOP)
        ]  # fmt: skip
        self.bar_values = [
            self.bars_ax.text(0, i, "", ha="left", va="center", fontsize=10) for i in range(TOP)
        ]

    def draw(self, view: LinePicture) -> Figure:
        """Show ``view``; returns the figure."""
        n = len(view.chars)
        self.heatmap.show(view.weights)
        fontsize = 11 if n <= 24 else 8 if n <= 40 else 6
        for i in range(MAX_CHARS):
            shown = i < n
            self.keys[i].set_visible(shown)
            self.queries[i].set_visible(shown)
            if shown:
                label = show_char(view.chars[i])
                self.keys[i].set(text=label, position=(i, n - 0.5), fontsize=fontsize)
                self.queries[i].set(text=label, position=(-0.5, i), fontsize=fontsize)
        for i, bar in enumerate(self.bars):
            ch, p = view.predictions[i] if i < len(view.predictions) else ("", 0.0)
            bar.set_width(p)
            self.bar_labels[i].set_text(show_char(ch))
            inside = p > 0.8  # a long bar holds its number, in white
            self.bar_values[i].set(text=f"{p:.2f}" if ch else "",
                                   position=(p - 0.02 if inside else p + 0.02, i),
                                   ha="right" if inside else "left",
                                   color="white" if inside else "black")  # fmt: skip
        s = view.settings
        self.title.set_text(f"layer {s.layer}, head {s.head}")
        return self.fig

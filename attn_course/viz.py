"""Pictures of attention in matplotlib: heatmaps of the weights, one panel per head, the
score pipeline, and the weights' deviation from uniform.

``heatmap``, ``head_grid`` and ``pipeline_strip`` return a matplotlib ``Figure``
(``plt.show()`` displays it in a notebook); ``deviation_from_uniform`` returns an array.
No function keeps state between calls. The explorers' SVG grid (``svg``) shares this module's
colour maps, input checks (``prepare_weights``) and font measure (``text_inches``).

Conventions of every picture: keys on the x axis, queries on the y axis, weights on a
fixed 0-1 colour scale, and cells hidden by a mask (True = hidden, the course convention)
drawn hatched light grey with no number, so "hidden" never looks like "weight 0".
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.collections import PatchCollection
from matplotlib.colors import Colormap, Normalize, TwoSlopeNorm
from matplotlib.figure import Figure, SubFigure
from matplotlib.font_manager import FontProperties
from matplotlib.image import AxesImage
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Rectangle
from matplotlib.textpath import text_to_path

from .numpy_attention import softmax

__all__ = ["heatmap", "head_grid", "pipeline_strip", "deviation_from_uniform"]

WEIGHT_CMAP = plt.get_cmap("viridis").with_extremes(bad="#e6e6e6")
SCORE_CMAP = plt.get_cmap("RdBu_r").with_extremes(bad="#e6e6e6")
HIDDEN_HATCH = "///"
ANNOTATE_MAX_TOKENS = 8  # annotate=None prints the numbers up to this many tokens
# Titles below get an explicit y=1.0: matplotlib then skips re-placing them above top tick
# labels (there are none) on every draw, which is a fifth of a redraw.


def _as_array(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """A float numpy copy of a tensor or array."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.array(x, dtype=float)


def _as_mask(mask: torch.Tensor | np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    """Boolean mask (True = hidden) broadcast to ``shape``; leading size-1 dims are dropped."""
    if mask is None:
        return np.zeros(shape, dtype=bool)
    array = _as_array(mask).astype(bool)
    while array.ndim > len(shape) and array.shape[0] == 1:
        array = array[0]
    try:
        return np.broadcast_to(array, shape)
    except ValueError:
        raise ValueError(
            f"the mask of shape {array.shape} does not broadcast to the weights' shape {shape}."
        ) from None


def _validate_tokens(shape: tuple[int, ...], tokens: Sequence[str]) -> None:
    """The last two dims of the weights are (num_tokens, num_tokens), one label per token."""
    num_tokens = len(tokens)
    if shape[-2:] != (num_tokens, num_tokens):
        raise ValueError(
            f"expected weights ending in ({num_tokens}, {num_tokens}) for the {num_tokens} "
            f"tokens {list(tokens)}, got shape {shape}."
        )


SHAPES = {2: "(num_tokens, num_tokens)", 3: "(num_heads, num_tokens, num_tokens)"}


def prepare_weights(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    mask: torch.Tensor | np.ndarray | None,
    rank: int,
    advice: str,
) -> tuple[np.ndarray, np.ndarray]:
    """The weights as an array of ``rank`` dims with a label per token, and the hidden cells.

    ``advice`` ends the error message for another rank: what to draw instead.
    """
    values = _as_array(weights)
    if values.ndim != rank:
        raise ValueError(f"expected {SHAPES[rank]} weights, got shape {values.shape}; {advice}.")
    _validate_tokens(values.shape, tokens)
    return values, _as_mask(mask, values.shape)


def labels_rotated(tokens: Sequence[str]) -> bool:
    """Whether the x tick labels are turned by 45 degrees (any token longer than 3 chars)."""
    return max(map(len, tokens)) > 3


def _draw(
    ax: Axes,
    values: np.ndarray,
    tokens: Sequence[str],
    hidden: np.ndarray,
    annotate: bool | None,
    cmap: Colormap,
    norm: Normalize,
) -> AxesImage:
    """Draw one (num_tokens, num_tokens) matrix on ``ax``; hidden cells hatched, no number."""
    num_tokens = len(tokens)
    image = ax.imshow(np.ma.masked_array(values, mask=hidden), cmap=cmap, norm=norm)
    if hidden.any():
        cells = [Rectangle((k - 0.5, q - 0.5), 1, 1) for q, k in np.argwhere(hidden)]
        ax.add_collection(
            PatchCollection(
                cells, facecolor="none", edgecolor="#9a9a9a", hatch=HIDDEN_HATCH, linewidth=0
            )
        )
    if annotate if annotate is not None else num_tokens <= ANNOTATE_MAX_TOKENS:
        fontsize = 9 if num_tokens <= 5 else 8
        for q, k in np.argwhere(~hidden):
            value = values[q, k]
            dark = sum(cmap(norm(value))[:3]) < 1.5
            ax.text(k, q, f"{value:.2f}", ha="center", va="center", fontsize=fontsize,
                    color="white" if dark else "black", in_layout=False)  # fmt: skip
    ax.set_xticks(range(num_tokens), labels=tokens, fontsize=9)
    ax.set_yticks(range(num_tokens), labels=tokens, fontsize=9)
    ax.tick_params(left=False, bottom=False)  # the cells are the ticks
    if labels_rotated(tokens):
        ax.tick_params(axis="x", labelrotation=45)
        for label in ax.get_xticklabels():
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
    ax.set_xlabel("keys (attended to)", fontsize=9)
    ax.set_ylabel("queries (attending)", fontsize=9)
    return image


def heatmap(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    ax: Axes | None = None,
    title: str | None = None,
    mask: torch.Tensor | np.ndarray | None = None,
    annotate: bool | None = None,
    colorbar: bool | None = None,
) -> Figure | SubFigure:
    """Heatmap of one attention-weight matrix on a fixed 0-1 colour scale.

    Args:
        weights: (num_tokens, num_tokens); row q holds how much query q attends to each key.
        tokens: the num_tokens labels, used on both axes (keys on x, queries on y).
        ax: draw into this Axes; None makes a new figure.
        title: the Axes title.
        mask: boolean, broadcastable to (num_tokens, num_tokens), True = hidden: those
            cells are hatched grey with no number.
        annotate: print the weights in the cells; None = only when num_tokens <= 8.
        colorbar: add the 0-1 colourbar beside the heatmap; None = only when ``ax`` is None.

    Returns:
        The Figure (or the SubFigure of ``ax``) drawn into.
    """
    values, hidden = prepare_weights(weights, tokens, mask, 2, "head_grid draws every head")
    fig: Figure | SubFigure
    if colorbar is None:
        colorbar = ax is None
    if ax is None:
        side = 2.2 + 0.45 * len(tokens)
        fig, ax = plt.subplots(figsize=(side + 1.0, side), layout="constrained")
    else:
        fig = ax.figure
    image = _draw(ax, values, tokens, hidden, annotate, WEIGHT_CMAP, Normalize(0, 1))
    if colorbar:
        fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    if title is not None:
        ax.set_title(title, fontsize=11, y=1.0, pad=6)
    return fig


def text_inches(text: str, fontsize: float) -> tuple[float, float]:
    """(width, height) of ``text`` in inches, measured from the font without drawing."""
    width, height, _ = text_to_path.get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False
    )
    return width / 72, height / 72


def head_grid(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    mask: torch.Tensor | np.ndarray | None = None,
    title: str | None = None,
) -> Figure:
    """One heatmap per head, titled "head 1", "head 2", ..., with one shared 0-1 colourbar.

    The panels are placed from measured label sizes rather than by a layout engine: the
    explorers redraw this figure on every slider move, and a constrained layout pass would
    cost as much as the drawing itself.

    Args:
        weights: (num_heads, num_tokens, num_tokens), e.g. ``module.attn_weights[0]``.
        tokens: the num_tokens labels (keys on x, queries on y).
        mask: boolean, broadcastable to the weights' shape, True = hidden; e.g. a causal
            (num_tokens, num_tokens) mask or a padding mask of shape (1, 1, 1, num_tokens).
        title: the figure title.

    Returns:
        The Figure, up to four panels a row.
    """
    values, hidden = prepare_weights(
        weights, tokens, mask, 3, "for a batch take one sequence: weights[0]"
    )
    num_heads = values.shape[0]
    ncols = min(num_heads, 4)
    nrows = math.ceil(num_heads / ncols)

    # Geometry in inches, from the label sizes (9 pt tick labels, ~7 pt from the axes).
    edge, gap = 0.1, 0.25
    line = text_inches("Xg", 9)[1] + 0.06  # one line of 9 pt text and its padding
    token_w = max(text_inches(token, 9)[0] for token in tokens) + 0.1
    token_h = line + (0.71 * token_w if labels_rotated(tokens) else 0.0)  # 45 degree x labels
    head_title = text_inches("head 1", 11)[1] + 0.12
    side = max(1.4, 0.42 * len(tokens))  # each square panel
    col_gap = gap + token_w  # the next panel's token labels
    row_gap = token_h + head_title + gap  # the labels below a panel, the titles above the next
    top = edge + head_title + (text_inches(title, 12)[1] + 0.15 if title else 0.0)
    left = edge + line + token_w  # the y label and the token labels
    grid_w = ncols * side + (ncols - 1) * col_gap
    grid_h = nrows * side + (nrows - 1) * row_gap
    colorbar_w = 0.25 + 0.12 + text_inches("0.0", 10)[0] + 0.1 + line  # gap, bar, ticks, label
    width = left + grid_w + colorbar_w + edge
    height = top + grid_h + token_h + line + edge
    grid_bottom = height - top - grid_h

    fig = plt.figure(figsize=(width, height))
    for head in range(num_heads):
        row, col = divmod(head, ncols)
        x0 = left + col * (side + col_gap)
        y0 = height - top - side - row * (side + row_gap)
        ax = fig.add_axes((x0 / width, y0 / height, side / width, side / height))
        image = _draw(ax, values[head], tokens, hidden[head], None, WEIGHT_CMAP, Normalize(0, 1))
        ax.set_title(f"head {head + 1}", fontsize=11, y=1.0, pad=6)
        if col:
            ax.set_ylabel("")
        if head < num_heads - ncols:
            ax.set_xlabel("")
    bar = (left + grid_w + 0.25, grid_bottom + 0.1 * grid_h, 0.12, 0.8 * grid_h)
    cax = fig.add_axes((bar[0] / width, bar[1] / height, bar[2] / width, bar[3] / height))
    fig.colorbar(image, cax=cax, label="attention weight")
    if title is not None:
        fig.suptitle(title, fontsize=12, y=1 - edge / height, va="top")
    return fig


def pipeline_strip(
    attn_scores: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    mask: torch.Tensor | np.ndarray | None = None,
    head_dim: int | None = None,
    title: str | None = None,
) -> Figure:
    """One head's path from raw scores to weights: attn_scores -> scaled -> masked -> weights.

    Args:
        attn_scores: (num_tokens, num_tokens) raw scores ``queries @ keys.T`` of one head.
        tokens: the num_tokens labels (keys on x, queries on y).
        mask: boolean, broadcastable to (num_tokens, num_tokens), True = hidden; None
            skips the masked panel.
        head_dim: the queries' width; the scaled panel divides by sqrt(head_dim). None
            means the scores are already scaled and skips the scaled panel.
        title: the figure title, e.g. which head the strip shows; None draws none.

    Returns:
        The Figure: scores on a shared diverging scale (0 = white), weights on 0-1.
    """
    scores, hidden = prepare_weights(attn_scores, tokens, mask, 2, "pipeline_strip draws one head")
    if head_dim is not None and head_dim < 1:
        raise ValueError(f"head_dim={head_dim} must be a positive int.")
    no_hidden = np.zeros(scores.shape, dtype=bool)
    stages = [("attn_scores\n= queries @ keys.T", scores, no_hidden)]
    scaled = scores
    if head_dim is not None:
        scaled = scores / math.sqrt(head_dim)
        stages.append((f"scaled\n= attn_scores / √{head_dim}", scaled, no_hidden))
    if mask is not None:
        stages.append(("masked\n(hidden = -inf)", scaled, hidden))
    attn_weights = softmax(np.where(hidden, -np.inf, scaled), axis=-1)

    side = 1.7 + 0.42 * len(tokens)
    title_h = 0.0 if title is None else 0.35  # room for the figure title above the panel titles
    fig, axes = plt.subplots(
        1, len(stages) + 1, figsize=(side * (len(stages) + 1) + 1.8, side + 0.5 + title_h),
        layout="constrained",
    )  # fmt: skip
    limit = max(float(np.abs(scores).max()), 1e-6)
    score_norm = TwoSlopeNorm(vcenter=0.0, vmin=-limit, vmax=limit)
    for ax, (stage_title, values, stage_hidden) in zip(axes[:-1], stages, strict=True):
        score_image = _draw(ax, values, tokens, stage_hidden, None, SCORE_CMAP, score_norm)
        ax.set_title(stage_title, fontsize=10, y=1.0, pad=6)
    weight_image = _draw(axes[-1], attn_weights, tokens, hidden, None, WEIGHT_CMAP, Normalize(0, 1))
    axes[-1].set_title("attn_weights\n= softmax(rows)", fontsize=10, y=1.0, pad=6)
    for ax in axes[1:]:
        ax.set_ylabel("")
    fig.colorbar(score_image, ax=axes[:-1].tolist(), shrink=0.8, label="score")
    fig.colorbar(weight_image, ax=axes[-1], shrink=0.8, label="weight")
    if title is not None:
        fig.suptitle(title, fontsize=12)
        engine = fig.get_layout_engine()
        assert isinstance(engine, ConstrainedLayoutEngine)  # figures here use layout="constrained"
        engine.set(h_pad=0.1)  # the default pad lets it touch the panel titles
    return fig


def deviation_from_uniform(
    weights: torch.Tensor | np.ndarray, mask: torch.Tensor | np.ndarray | None = None
) -> np.ndarray:
    """Each weight minus the uniform weight of its row, 1 / (number of visible keys).

    Args:
        weights: (..., num_tokens, num_tokens), rows summing to 1 over the visible keys.
        mask: boolean, broadcastable to ``weights``, True = hidden (those cells give 0).

    Returns:
        An array of the weights' shape; 0 everywhere means every row is uniform.
    """
    values = _as_array(weights)
    hidden = _as_mask(mask, values.shape)
    visible = (~hidden).sum(axis=-1, keepdims=True)
    return np.where(hidden, 0.0, values - 1.0 / np.maximum(visible, 1))

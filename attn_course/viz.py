"""Pictures of attention: heatmaps of the weights, one panel per head, the score pipeline.

Every function returns a matplotlib ``Figure`` (created with ``plt.subplots``, so
``plt.show()`` displays it in a notebook) and keeps no state between calls.

Conventions of every picture: keys on the x axis, queries on the y axis, weights on a
fixed 0-1 colour scale, and cells hidden by a mask (True = hidden, the course convention)
drawn hatched light grey with no number, so "hidden" never looks like "weight 0".
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.collections import PatchCollection
from matplotlib.colors import Colormap, Normalize, TwoSlopeNorm
from matplotlib.figure import Figure, SubFigure
from matplotlib.font_manager import FontProperties
from matplotlib.image import AxesImage
from matplotlib.patches import Rectangle
from matplotlib.textpath import text_to_path

from .numpy_attention import softmax

__all__ = ["heatmap", "head_grid", "head_grid_svg", "pipeline_strip", "deviation_from_uniform"]

WEIGHT_CMAP = plt.get_cmap("viridis").with_extremes(bad="#e6e6e6")
SCORE_CMAP = plt.get_cmap("RdBu_r").with_extremes(bad="#e6e6e6")
HIDDEN_HATCH = "///"
ANNOTATE_MAX_TOKENS = 8  # annotate=None prints the numbers up to this many tokens
VIEWS = ("weights", "deviation")  # head_grid_svg: the 0-1 weights, or weight - uniform
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


def _prepare(
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


def _rotated(tokens: Sequence[str]) -> bool:
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
    if _rotated(tokens):
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
) -> Figure | SubFigure:
    """Heatmap of one attention-weight matrix on a fixed 0-1 colour scale.

    Args:
        weights: (num_tokens, num_tokens); row q holds how much query q attends to each key.
        tokens: the num_tokens labels, used on both axes (keys on x, queries on y).
        ax: draw into this Axes (no colourbar is added then); None makes a new figure.
        title: the Axes title.
        mask: boolean, broadcastable to (num_tokens, num_tokens), True = hidden: those
            cells are hatched grey with no number.
        annotate: print the weights in the cells; None = only when num_tokens <= 8.

    Returns:
        The Figure (or the SubFigure of ``ax``) drawn into.
    """
    values, hidden = _prepare(weights, tokens, mask, 2, "head_grid draws every head")
    fig: Figure | SubFigure
    if ax is None:
        side = 2.2 + 0.45 * len(tokens)
        fig, ax = plt.subplots(figsize=(side + 1.0, side), layout="constrained")
        image = _draw(ax, values, tokens, hidden, annotate, WEIGHT_CMAP, Normalize(0, 1))
        fig.colorbar(image, ax=ax, shrink=0.8, label="attention weight")
    else:
        fig = ax.figure
        _draw(ax, values, tokens, hidden, annotate, WEIGHT_CMAP, Normalize(0, 1))
    if title is not None:
        ax.set_title(title, fontsize=11, y=1.0, pad=6)
    return fig


def _text_inches(text: str, fontsize: float) -> tuple[float, float]:
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
    values, hidden = _prepare(weights, tokens, mask, 3, "for a batch take one sequence: weights[0]")
    num_heads = values.shape[0]
    ncols = min(num_heads, 4)
    nrows = math.ceil(num_heads / ncols)

    # Geometry in inches, from the label sizes (9 pt tick labels, ~7 pt from the axes).
    edge, gap = 0.1, 0.25
    line = _text_inches("Xg", 9)[1] + 0.06  # one line of 9 pt text and its padding
    token_w = max(_text_inches(token, 9)[0] for token in tokens) + 0.1
    token_h = line + (0.71 * token_w if _rotated(tokens) else 0.0)  # 45 degree x labels
    head_title = _text_inches("head 1", 11)[1] + 0.12
    side = max(1.4, 0.42 * len(tokens))  # each square panel
    col_gap = gap + token_w  # the next panel's token labels
    row_gap = token_h + head_title + gap  # the labels below a panel, the titles above the next
    top = edge + head_title + (_text_inches(title, 12)[1] + 0.15 if title else 0.0)
    left = edge + line + token_w  # the y label and the token labels
    grid_w = ncols * side + (ncols - 1) * col_gap
    grid_h = nrows * side + (nrows - 1) * row_gap
    colorbar_w = 0.25 + 0.12 + _text_inches("0.0", 10)[0] + 0.1 + line  # gap, bar, ticks, label
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
) -> Figure:
    """One head's path from raw scores to weights: attn_scores -> scaled -> masked -> weights.

    Args:
        attn_scores: (num_tokens, num_tokens) raw scores ``queries @ keys.T`` of one head.
        tokens: the num_tokens labels (keys on x, queries on y).
        mask: boolean, broadcastable to (num_tokens, num_tokens), True = hidden; None
            skips the masked panel.
        head_dim: the queries' width; the scaled panel divides by sqrt(head_dim). None
            means the scores are already scaled and skips the scaled panel.

    Returns:
        The Figure: scores on a shared diverging scale (0 = white), weights on 0-1.
    """
    scores, hidden = _prepare(attn_scores, tokens, mask, 2, "pipeline_strip draws one head")
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
    fig, axes = plt.subplots(
        1, len(stages) + 1, figsize=(side * (len(stages) + 1) + 1.8, side + 0.5),
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


# --- the explorers' picture: the head grid as SVG markup ---------------------------------
# The explorers redraw on every slider move. Written directly as SVG (rectangles and real
# <text>), a grid of six heads takes a few milliseconds where matplotlib's SVG backend takes
# hundreds; sizes are CSS pixels, so the browser shows the fonts at these sizes as long as
# the grid fits the output area (SVG_MAX_WIDTH, measured in JupyterLab at 1366 px with the
# file browser open: the output area is about 920 px wide).

SVG_MAX_WIDTH = 860
SVG_FONT = 13  # px: token labels and axis labels
SVG_NUMBER_FONT = 12  # px: the numbers in the cells
SVG_CELL = 36  # px: one cell of a panel
SVG_HATCH = "attn-course-hidden"  # the id of the hatch pattern of hidden cells


def _svg_text(
    x: float,
    y: float,
    text: str,
    size: float = SVG_FONT,
    anchor: str = "middle",
    baseline: str = "central",
    rotate: float = 0,
    **style: str,
) -> str:
    """One <text> at (x, y), turned by ``rotate`` degrees about that point; ``style`` names
    are attributes with dashes written as underscores."""
    where = f'x="{x:.1f}" y="{y:.1f}"'
    if rotate:
        where = f'transform="translate({x:.1f},{y:.1f}) rotate({rotate})"'
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in style.items())
    return (
        f'<text {where} font-size="{size}" text-anchor="{anchor}" dominant-baseline="{baseline}"'
        f"{extra}>{html.escape(text)}</text>"
    )


def _svg_rect(x: float, y: float, width: float, height: float, fill: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" fill="{fill}"/>'
    )


def _hex_colours(rgba: np.ndarray) -> np.ndarray:
    """ "#rrggbb" strings of an array of RGBA colours (..., 4) in 0-1."""
    rgb = np.round(rgba[..., :3] * 255).astype(int)
    as_hex = np.vectorize(lambda r, g, b: f"#{r:02x}{g:02x}{b:02x}")
    return as_hex(rgb[..., 0], rgb[..., 1], rgb[..., 2])


@functools.lru_cache(maxsize=1024)
def _svg_width(text: str, size: float) -> float:
    """Width in px of ``text`` at ``size`` px, measured from the font (DejaVu Sans)."""
    return _text_inches(text, size)[0] * 72


def head_grid_svg(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    mask: torch.Tensor | np.ndarray | None = None,
    title: str | None = None,
    view: str = "weights",
) -> str:
    """One heatmap per head as SVG markup: the explorers' picture.

    Same conventions as ``head_grid`` (keys on x, queries on y, hidden cells hatched with no
    number, panels "head 1", "head 2", ...), sized in CSS pixels and at most
    ``SVG_MAX_WIDTH`` wide, so a notebook shows it unscaled: as many panels a row as fit.
    Colours and numbers both come from the value rounded as printed, so the markup is the
    same on every machine that prints the same numbers.

    Args:
        weights: (num_heads, num_tokens, num_tokens).
        tokens: the num_tokens labels.
        mask: boolean, broadcastable to the weights' shape, True = hidden.
        title: the title above the grid.
        view: "weights" (the 0-1 colour scale) or "deviation" (weight minus the uniform
            weight of its row, on a blue-white-red scale that this grid's largest
            deviation fills).

    Returns:
        An ``<svg>`` element (no XML prologue) with ``style="max-width: 100%"``.
    """
    values, hidden = _prepare(weights, tokens, mask, 3, "for a batch take one sequence: weights[0]")
    if view not in VIEWS:
        raise ValueError(f"view={view!r} must be one of {VIEWS}.")
    num_heads, num_tokens, _ = values.shape
    number: Callable[[float], str]
    if view == "weights":
        shown = np.round(values, 2)
        cmap, low, high = WEIGHT_CMAP, 0.0, 1.0
        label, ticks = "attention weight", [(0.0, "0"), (0.5, "0.5"), (1.0, "1")]
        number = "{:.2f}".format
    else:
        shown = np.round(deviation_from_uniform(values, hidden), 3) + 0.0  # no -0.000
        limit = max(float(np.abs(shown[~hidden]).max(initial=0.0)), 0.001)
        cmap, low, high = SCORE_CMAP, -limit, limit
        label, ticks = (
            "weight − uniform",
            [(-limit, f"{-limit:+.3f}"), (0.0, "0"), (limit, f"{limit:+.3f}")],
        )
        number = lambda v: f"{v:+.3f}".replace("0.", ".", 1)  # noqa: E731

    rgba = cmap((shown - low) / (high - low))  # (num_heads, num_tokens, num_tokens, 4)
    fills = _hex_colours(rgba)
    inks = np.where(rgba[..., :3] @ np.array([0.299, 0.587, 0.114]) < 0.5, "white", "black")
    number_font = SVG_NUMBER_FONT if view == "weights" else SVG_NUMBER_FONT - 1  # "+.012"

    # Geometry in px.
    font, cell, gap = SVG_FONT, SVG_CELL, 18
    side = cell * num_tokens
    token_w = max(_svg_width(token, font) for token in tokens) + 6
    x_labels_h = (0.71 * token_w + 0.71 * font if _rotated(tokens) else font) + 6
    title_h = font + 10
    left = font + 8 + token_w  # the y label, then the token labels
    bar_w = 14 + gap + max(_svg_width(text, font) for _, text in ticks) + 6 + font + 6
    max_cols = max(1, int((SVG_MAX_WIDTH - left - bar_w + gap) // (side + gap)))
    nrows = math.ceil(num_heads / min(num_heads, max_cols))
    ncols = math.ceil(num_heads / nrows)  # balanced rows: 4 heads as 2 + 2, not 3 + 1
    row_h = title_h + side + x_labels_h + font + 20  # head title, panel, labels, axis label
    top = (font + 16) if title else 4
    width = round(left + ncols * side + (ncols - 1) * gap + bar_w)
    height = round(top + nrows * row_h)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Verdana, sans-serif" '
        'style="max-width: 100%; height: auto">',
        f'<defs><pattern id="{SVG_HATCH}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e6e6e6"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="1.5"/></pattern></defs>',
        _svg_rect(0, 0, width, height, "white"),
    ]
    if title:
        parts.append(
            _svg_text(width / 2, 4, title, font + 2, baseline="hanging", font_weight="bold")
        )
    annotate = num_tokens <= ANNOTATE_MAX_TOKENS
    for head in range(num_heads):
        row, col = divmod(head, ncols)
        x0, y0 = left + col * (side + gap), top + row * row_h + title_h
        parts.append(
            _svg_text(x0 + side / 2, y0 - 8, f"head {head + 1}", font + 1, baseline="auto")
        )
        for q, k in np.ndindex(num_tokens, num_tokens):
            x, y = x0 + k * cell, y0 + q * cell
            if hidden[head, q, k]:
                parts.append(_svg_rect(x, y, cell, cell, f"url(#{SVG_HATCH})"))
                continue
            parts.append(_svg_rect(x, y, cell, cell, fills[head, q, k]))
            if annotate:
                text = number(shown[head, q, k])
                parts.append(
                    _svg_text(x + cell / 2, y + cell / 2, text, number_font, fill=inks[head, q, k])
                )
        for i, token in enumerate(tokens):
            centre = i * cell + cell / 2
            if col == 0:
                parts.append(_svg_text(x0 - 5, y0 + centre, token, anchor="end"))
            rotate, anchor = (-45, "end") if _rotated(tokens) else (0, "middle")
            x, y = x0 + centre, y0 + side + 5
            parts.append(_svg_text(x, y, token, anchor=anchor, baseline="hanging", rotate=rotate))
        y = y0 + side + x_labels_h + font
        parts.append(_svg_text(x0 + side / 2, y, "keys (attended to)", fill="#444"))
        if col == 0:
            y = y0 + side / 2
            parts.append(_svg_text(2, y, "queries (attending)", baseline="hanging", rotate=-90,
                                   fill="#444"))  # fmt: skip

    # The colour bar, beside the first row of panels.
    bar_x, bar_y, bar_h, slices = width - bar_w + gap, top + title_h, side, 32
    bar_colours = _hex_colours(cmap((slices - np.arange(slices) - 0.5) / slices))
    for i, fill in enumerate(bar_colours):
        parts.append(_svg_rect(bar_x, bar_y + i * bar_h / slices, 14, bar_h / slices + 0.3, fill))
    for value, text in ticks:
        y = bar_y + bar_h * (high - value) / (high - low)
        parts.append(_svg_text(bar_x + 18, y, text, anchor="start"))
    label_x = bar_x + bar_w - gap - font / 2
    parts.append(_svg_text(label_x, bar_y + bar_h / 2, label, rotate=90))
    parts.append("</svg>")
    return "".join(parts)

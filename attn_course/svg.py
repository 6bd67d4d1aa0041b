"""The explorers' picture: one heatmap per head written directly as SVG markup.

The explorers (``explore.draw``, ``widgets``) redraw on every slider move. Written directly
as SVG (rectangles and real ``<text>``), a grid of six heads takes a few milliseconds where
matplotlib's SVG backend takes hundreds. Sizes are CSS pixels, so the browser shows the
fonts at these sizes as long as the grid fits the output area (``MAX_WIDTH``, measured in
JupyterLab at 1366 px with the file browser open: the output area is about 920 px wide).
The conventions, colour maps, input checks and font measure are ``viz``'s.
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

from .viz import (
    ANNOTATE_MAX_TOKENS,
    SCORE_CMAP,
    WEIGHT_CMAP,
    deviation_from_uniform,
    labels_rotated,
    prepare_weights,
    text_inches,
)

__all__ = ["head_grid_svg"]

VIEWS = ("weights", "deviation")  # the 0-1 weights, or weight - uniform

MAX_WIDTH = 860
FONT = 13  # px: token labels and axis labels
NUMBER_FONT = 12  # px: the numbers in the cells
CELL = 36  # px: one cell of a panel
HATCH = "attn-course-hidden"  # the id of the hatch pattern of hidden cells


def _text(
    x: float,
    y: float,
    text: str,
    size: float = FONT,
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


def _rect(x: float, y: float, width: float, height: float, fill: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{height:.1f}" fill="{fill}"/>'
    )


def _hex_colours(rgba: np.ndarray) -> np.ndarray:
    """ "#rrggbb" strings of an array of RGBA colours (..., 4) in 0-1."""
    rgb = np.round(rgba[..., :3] * 255).astype(int)
    as_hex = np.vectorize(lambda r, g, b: f"#{r:02x}{g:02x}{b:02x}")
    return as_hex(rgb[..., 0], rgb[..., 1], rgb[..., 2])


@functools.lru_cache(maxsize=1024)
def _width(text: str, size: float) -> float:
    """Width in px of ``text`` at ``size`` px, measured from the font (DejaVu Sans)."""
    return text_inches(text, size)[0] * 72


def head_grid_svg(
    weights: torch.Tensor | np.ndarray,
    tokens: Sequence[str],
    mask: torch.Tensor | np.ndarray | None = None,
    title: str | None = None,
    view: str = "weights",
) -> str:
    """One heatmap per head as SVG markup: the explorers' picture.

    Same conventions as ``viz.head_grid`` (keys on x, queries on y, hidden cells hatched with no
    number, panels "head 1", "head 2", ...), sized in CSS pixels and at most
    ``MAX_WIDTH`` wide, so a notebook shows it unscaled: as many panels a row as fit.
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
    values, hidden = prepare_weights(
        weights, tokens, mask, 3, "for a batch take one sequence: weights[0]"
    )
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
    number_font = NUMBER_FONT if view == "weights" else NUMBER_FONT - 1  # "+.012"

    # Geometry in px.
    font, cell, gap = FONT, CELL, 18
    side = cell * num_tokens
    token_w = max(_width(token, font) for token in tokens) + 6
    x_labels_h = (0.71 * token_w + 0.71 * font if labels_rotated(tokens) else font) + 6
    title_h = font + 10
    left = font + 8 + token_w  # the y label, then the token labels
    bar_w = 14 + gap + max(_width(text, font) for _, text in ticks) + 6 + font + 6
    max_cols = max(1, int((MAX_WIDTH - left - bar_w + gap) // (side + gap)))
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
        f'<defs><pattern id="{HATCH}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e6e6e6"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="1.5"/></pattern></defs>',
        _rect(0, 0, width, height, "white"),
    ]
    if title:
        parts.append(_text(width / 2, 4, title, font + 2, baseline="hanging", font_weight="bold"))
    annotate = num_tokens <= ANNOTATE_MAX_TOKENS
    for head in range(num_heads):
        row, col = divmod(head, ncols)
        x0, y0 = left + col * (side + gap), top + row * row_h + title_h
        parts.append(_text(x0 + side / 2, y0 - 8, f"head {head + 1}", font + 1, baseline="auto"))
        for q, k in np.ndindex(num_tokens, num_tokens):
            x, y = x0 + k * cell, y0 + q * cell
            if hidden[head, q, k]:
                parts.append(_rect(x, y, cell, cell, f"url(#{HATCH})"))
                continue
            parts.append(_rect(x, y, cell, cell, fills[head, q, k]))
            if annotate:
                text = number(shown[head, q, k])
                parts.append(
                    _text(x + cell / 2, y + cell / 2, text, number_font, fill=inks[head, q, k])
                )
        for i, token in enumerate(tokens):
            centre = i * cell + cell / 2
            if col == 0:
                parts.append(_text(x0 - 5, y0 + centre, token, anchor="end"))
            rotate, anchor = (-45, "end") if labels_rotated(tokens) else (0, "middle")
            x, y = x0 + centre, y0 + side + 5
            parts.append(_text(x, y, token, anchor=anchor, baseline="hanging", rotate=rotate))
        y = y0 + side + x_labels_h + font
        parts.append(_text(x0 + side / 2, y, "keys (attended to)", fill="#444"))
        if col == 0:
            y = y0 + side / 2
            parts.append(_text(2, y, "queries (attending)", baseline="hanging", rotate=-90,
                                   fill="#444"))  # fmt: skip

    # The colour bar, beside the first row of panels.
    bar_x, bar_y, bar_h, slices = width - bar_w + gap, top + title_h, side, 32
    bar_colours = _hex_colours(cmap((slices - np.arange(slices) - 0.5) / slices))
    for i, fill in enumerate(bar_colours):
        parts.append(_rect(bar_x, bar_y + i * bar_h / slices, 14, bar_h / slices + 0.3, fill))
    for value, text in ticks:
        y = bar_y + bar_h * (high - value) / (high - low)
        parts.append(_text(bar_x + 18, y, text, anchor="start"))
    label_x = bar_x + bar_w - gap - font / 2
    parts.append(_text(label_x, bar_y + bar_h / 2, label, rotate=90))
    parts.append("</svg>")
    return "".join(parts)

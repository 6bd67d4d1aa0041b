"""The explorers' SVG grid: panels, numbers, hidden cells, sizes that fit, the deviation view."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import matplotlib.pyplot as plt
import numpy as np
import pytest

from attn_course import svg
from attn_course.attention import causal_mask

TOKENS = ("Dream", "big", "and", "work", "for", "it")
SVG = "{http://www.w3.org/2000/svg}"


def uniform_causal(num_tokens: int) -> np.ndarray:
    """Causal weights that spread evenly over the visible keys: row q is 1/(q+1)."""
    visible = np.tril(np.ones((num_tokens, num_tokens)))
    return visible / visible.sum(axis=1, keepdims=True)


def svg_texts(markup: str) -> list[tuple[str, float]]:
    """(text, font size in px) of every <text> of the markup."""
    root = ET.fromstring(markup)
    return [(t.text or "", float(t.get("font-size"))) for t in root.iter(f"{SVG}text")]


def cell_fills(markup: str) -> list[str]:
    """The fill of every rectangle of the markup, in order."""
    return [r.get("fill") for r in ET.fromstring(markup).iter(f"{SVG}rect")]


def test_head_grid_svg_panels_numbers_and_hidden_cells():
    weights = np.stack([uniform_causal(6), np.eye(6)])
    markup = svg.head_grid_svg(weights, TOKENS, mask=causal_mask(6), title="two heads")
    texts = [text for text, _ in svg_texts(markup)]
    assert [t for t in texts if t.startswith("head ")] == ["head 1", "head 2"]
    assert "two heads" in texts
    numbers = [t for t in texts if re.fullmatch(r"\d\.\d\d", t)]
    assert len(numbers) == 2 * 21  # the visible cells only
    assert numbers[:3] == ["1.00", "0.50", "0.50"] and numbers.count("0.00") == 15  # eye
    fills = cell_fills(markup)
    assert fills.count(f"url(#{svg.HATCH})") == 2 * 15
    viridis_one = "#" + "".join(f"{round(255 * c):02x}" for c in plt.get_cmap("viridis")(1.0)[:3])
    assert fills.count(viridis_one) >= 6 + 1  # eye's diagonal and uniform's first row


@pytest.mark.parametrize("num_heads", range(1, 7))
def test_head_grid_svg_fits_the_notebook_at_readable_sizes(num_heads):
    tokens = ("Your", "journey", "starts", "with", "one", "step")
    markup = svg.head_grid_svg(np.full((num_heads, 6, 6), 1 / 6), tokens, title="t")
    width = float(ET.fromstring(markup).get("width"))
    assert width <= svg.MAX_WIDTH
    assert min(size for _, size in svg_texts(markup)) >= 11
    heads = [t for t, _ in svg_texts(markup) if t.startswith("head ")]
    assert len(heads) == num_heads


def test_head_grid_svg_deviation_view():
    weights = np.stack([uniform_causal(3), np.eye(3)])
    markup = svg.head_grid_svg(weights, TOKENS[:3], mask=causal_mask(3), view="deviation")
    numbers = [t for t, _ in svg_texts(markup) if re.fullmatch(r"[+-]\.\d{3}", t)]
    # Head 1 is uniform over the visible keys; head 2 row "big" is (1, 0) instead of (.5, .5).
    assert numbers[:6] == ["+.000"] * 6
    assert numbers[6:9] == ["+.000", "-.500", "+.500"]
    texts = [t for t, _ in svg_texts(markup)]
    assert {"+0.667", "-0.667", "weight − uniform"} <= set(texts)  # "and": 1 - 1/3


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: svg.head_grid_svg(np.zeros((3, 3)), TOKENS[:3]), "num_heads"),
        (lambda: svg.head_grid_svg(np.zeros((1, 3, 3)), TOKENS[:2]), "3 tokens|2 tokens"),
        (lambda: svg.head_grid_svg(np.zeros((1, 3, 3)), TOKENS[:3], view="log"), "view"),
    ],
)
def test_head_grid_svg_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()

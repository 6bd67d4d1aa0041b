"""The pictures: panels, titles, token labels, the shared 0-1 scale, hidden cells, numbers."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.collections import PatchCollection
from matplotlib.image import AxesImage

from attn_course import viz
from attn_course.attention import causal_mask, padding_mask

TOKENS = ("Dream", "big", "and", "work", "for", "it")


@pytest.fixture(autouse=True)
def one_new_figure_then_close():
    """Every test starts and ends with no open figure."""
    plt.close("all")
    yield
    plt.close("all")


def uniform_causal(num_tokens: int) -> np.ndarray:
    """Causal weights that spread evenly over the visible keys: row q is 1/(q+1)."""
    visible = np.tril(np.ones((num_tokens, num_tokens)))
    return visible / visible.sum(axis=1, keepdims=True)


def image_of(ax) -> AxesImage:
    (image,) = [a for a in ax.get_children() if isinstance(a, AxesImage)]
    return image


def cell_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def hatched_cells(ax) -> int:
    """Number of hatched rectangles drawn over hidden cells."""
    return sum(len(c.get_paths()) for c in ax.collections if isinstance(c, PatchCollection))


def heat_axes(fig) -> list:
    """The heatmap panels of a figure (the colourbars left out)."""
    return [ax for ax in fig.axes if any(isinstance(a, AxesImage) for a in ax.get_children())]


def test_heatmap_labels_scale_and_numbers():
    weights = uniform_causal(6)
    fig = viz.heatmap(torch.tensor(weights), TOKENS, title="one head")
    assert len(plt.get_fignums()) == 1
    assert len(fig.axes) == 2  # the heatmap and its colourbar
    ax = heat_axes(fig)[0]
    assert ax.get_title() == "one head"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(TOKENS)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(TOKENS)
    assert image_of(ax).get_clim() == (0.0, 1.0)
    # Without a mask every cell is shown with its number: row "and" (q=2) is 1/3 three times.
    assert len(ax.texts) == 36 and hatched_cells(ax) == 0
    assert cell_texts(ax)[12:15] == ["0.33", "0.33", "0.33"]


def test_heatmap_hidden_cells_are_hatched_without_numbers():
    weights = uniform_causal(4)
    fig = viz.heatmap(weights, TOKENS[:4], mask=causal_mask(4))
    ax = heat_axes(fig)[0]
    hidden = 4 * 3 // 2  # above the diagonal
    assert hatched_cells(ax) == hidden
    assert len(ax.texts) == 16 - hidden
    assert "0.00" not in cell_texts(ax)  # a hidden cell never shows as a weight of 0
    shown = image_of(ax).get_array()
    assert np.array_equal(np.ma.getmaskarray(shown), np.triu(np.ones((4, 4), bool), k=1))


@pytest.mark.parametrize(("num_tokens", "annotate", "expected"), [(9, None, 0), (9, True, 81)])
def test_numbers_only_for_small_matrices_unless_asked(num_tokens, annotate, expected):
    weights = np.full((num_tokens, num_tokens), 1 / num_tokens)
    tokens = [f"t{i}" for i in range(num_tokens)]
    fig = viz.heatmap(weights, tokens, annotate=annotate)
    assert len(heat_axes(fig)[0].texts) == expected


def test_heatmap_draws_into_a_given_axes_without_a_colourbar():
    fig, ax = plt.subplots()
    assert viz.heatmap(uniform_causal(3), TOKENS[:3], ax=ax) is fig
    assert fig.axes == [ax]


def test_heatmap_in_a_given_axes_adds_a_colourbar_when_asked():
    fig, axes = plt.subplots(1, 2)
    viz.heatmap(uniform_causal(3), TOKENS[:3], ax=axes[0])
    viz.heatmap(np.eye(3), TOKENS[:3], ax=axes[1], colorbar=True)
    assert len(fig.axes) == 3 and heat_axes(fig) == list(axes)
    colourbar = next(ax for ax in fig.axes if ax not in axes)
    assert colourbar.get_ylabel() == "attention weight"
    assert colourbar.get_ylim() == (0.0, 1.0)


def test_heatmap_of_its_own_figure_can_leave_the_colourbar_out():
    fig = viz.heatmap(np.eye(3), TOKENS[:3], colorbar=False)
    assert len(fig.axes) == 1


def test_head_grid_one_panel_per_head_one_shared_colourbar():
    weights = np.stack([uniform_causal(6), np.eye(6), uniform_causal(6)])
    fig = viz.head_grid(weights, TOKENS, mask=causal_mask(6), title="three heads")
    panels = heat_axes(fig)
    assert [ax.get_title() for ax in panels] == ["head 1", "head 2", "head 3"]
    assert len(fig.axes) == len(panels) + 1  # one colourbar
    assert fig.get_suptitle() == "three heads"
    assert {image_of(ax).get_clim() for ax in panels} == {(0.0, 1.0)}
    for ax in panels:
        assert [t.get_text() for t in ax.get_xticklabels()] == list(TOKENS)
        assert hatched_cells(ax) == 15


def test_head_grid_wraps_after_four_heads():
    fig = viz.head_grid(np.full((5, 3, 3), 1 / 3), TOKENS[:3])
    titles = [ax.get_title() for ax in heat_axes(fig)]
    assert titles == [f"head {h}" for h in range(1, 6)]
    rows = {round(ax.get_position().y0, 3) for ax in heat_axes(fig)}
    assert len(rows) == 2


def test_head_grid_takes_a_padding_mask_of_the_batch():
    # 4 real tokens then 2 padding: the last two keys are hidden for every query and head.
    mask = padding_mask([4], 6)  # (1, 1, 1, 6)
    weights = np.zeros((2, 6, 6))
    weights[:, :, :4] = 0.25
    fig = viz.head_grid(weights, TOKENS, mask=mask)
    for ax in heat_axes(fig):
        assert hatched_cells(ax) == 6 * 2
        hidden = np.ma.getmaskarray(image_of(ax).get_array())
        assert hidden[:, 4:].all() and not hidden[:, :4].any()


def test_pipeline_strip_stages_and_their_numbers():
    # All scores equal 4 with head_dim 4: scaled = 4 / sqrt(4) = 2 everywhere, and the
    # softmax over the visible keys of row q is uniform, 1/(q+1).
    scores = torch.full((3, 3), 4.0)
    fig = viz.pipeline_strip(scores, TOKENS[:3], mask=causal_mask(3), head_dim=4)
    panels = heat_axes(fig)
    assert len(panels) == 4 and len(fig.axes) == 6  # two colourbars: scores and weights
    assert [ax.get_title().split("\n")[0] for ax in panels] == [
        "attn_scores",
        "scaled",
        "masked",
        "attn_weights",
    ]
    assert "√4" in panels[1].get_title()
    assert np.allclose(image_of(panels[1]).get_array(), 2.0)
    assert hatched_cells(panels[0]) == hatched_cells(panels[1]) == 0
    assert hatched_cells(panels[2]) == hatched_cells(panels[3]) == 3
    weights = image_of(panels[3]).get_array()
    assert np.allclose(weights.filled(0), uniform_causal(3))
    assert image_of(panels[3]).get_clim() == (0.0, 1.0)
    # One diverging scale for every score panel, centred on zero.
    norms = {id(image_of(ax).norm) for ax in panels[:3]}
    assert len(norms) == 1 and image_of(panels[0]).norm(0.0) == 0.5


def test_pipeline_strip_title_names_the_head():
    scores = torch.full((3, 3), 4.0)
    untitled = viz.pipeline_strip(scores, TOKENS[:3], mask=causal_mask(3), head_dim=4)
    assert untitled.get_suptitle() == ""
    fig = viz.pipeline_strip(scores, TOKENS[:3], mask=causal_mask(3), head_dim=4, title="head 2")
    assert fig.get_suptitle() == "head 2"
    fig.canvas.draw()  # the title sits above every panel, not on top of their titles
    title_bottom = fig._suptitle.get_window_extent().y0
    renderer = fig.canvas.get_renderer()
    assert all(ax.title.get_window_extent(renderer).y1 <= title_bottom for ax in heat_axes(fig))


def test_pipeline_strip_without_mask_and_scaling_has_two_panels():
    fig = viz.pipeline_strip(np.zeros((2, 2)), TOKENS[:2])
    assert len(heat_axes(fig)) == 2
    assert np.allclose(image_of(heat_axes(fig)[1]).get_array(), 0.5)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: viz.heatmap(np.zeros((3, 3)), TOKENS[:2]), "3 tokens|2 tokens"),
        (lambda: viz.heatmap(np.zeros((2, 3, 3)), TOKENS[:3]), "head_grid"),
        (lambda: viz.head_grid(np.zeros((3, 3)), TOKENS[:3]), "num_heads"),
        (lambda: viz.head_grid(np.zeros((1, 3, 3)), TOKENS[:3], mask=np.zeros(2)), "broadcast"),
        (lambda: viz.pipeline_strip(np.zeros((3, 3)), TOKENS[:3], head_dim=0), "head_dim"),
    ],
)
def test_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
    assert plt.get_fignums() == []  # nothing half-drawn left open


def test_importing_draws_nothing():
    import importlib

    importlib.reload(viz)
    assert plt.get_fignums() == []


def test_deviation_from_uniform():
    weights = np.array([[1.0, 0.0, 0.0], [0.2, 0.8, 0.0], [0.5, 0.25, 0.25]])
    expected = np.array([[0.0, 0.0, 0.0], [-0.3, 0.3, 0.0], [0.5 - 1 / 3, -1 / 12, -1 / 12]])
    got = viz.deviation_from_uniform(weights, causal_mask(3))
    assert np.allclose(got, expected)

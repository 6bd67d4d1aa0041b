"""The static pictures of the trained model (lecture 08): ``draw_heads``'s axes and labels."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from attn_course.model_views import draw_heads, position_labels


def test_position_labels_tell_repeated_tokens_apart():
    assert position_labels([12, 4, 12, 12]) == ["0:12", "1:4", "2:12", "3:12"]


def test_draw_heads_labels_positions_and_tokens_with_queries_on_y_and_keys_on_x():
    """A 4-token sequence with a repeated token; each head puts all of query 3's weight on key 1
    (and query t's on key 0 otherwise). The cell under the y label "3:9" and the x label "1:3"
    is 1: reading keys on y and queries on x instead would find 0 there."""
    tokens = [7, 3, 7, 9]
    weights = torch.zeros(2, 2, 4, 4)  # (num_layers, num_heads, num_tokens, num_tokens)
    weights[..., :, 0] = 1.0
    weights[..., 3, 0], weights[..., 3, 1] = 0.0, 1.0  # query 3 -> key 1
    fig = draw_heads(weights, tokens, "test")
    try:
        panels = [ax for ax in fig.axes if ax.images]
        assert len(panels) == 4
        for ax in panels:
            x_labels = [t.get_text() for t in ax.get_xticklabels()]
            y_labels = [t.get_text() for t in ax.get_yticklabels()]
            assert x_labels == y_labels == ["0:7", "1:3", "2:7", "3:9"]
            xs = dict(zip(x_labels, ax.get_xticks(), strict=True))
            ys = dict(zip(y_labels, ax.get_yticks(), strict=True))
            shown = ax.images[0].get_array()  # row = y position, column = x position
            assert shown[int(ys["3:9"]), int(xs["1:3"])] == 1.0
            assert shown[int(ys["1:3"]), int(xs["3:9"])] == 0.0
        bottom_left = panels[2]  # layer 1, head 0: carries both axis titles
        assert bottom_left.get_ylabel().startswith("queries")
        assert bottom_left.get_xlabel().startswith("keys")
    finally:
        plt.close(fig)

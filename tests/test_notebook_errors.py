"""The notebooks' intended errors are real. nbval passes a cell tagged ``raises-exception``
even when it does not raise, so the stored outputs and the claims behind them are checked here."""

from __future__ import annotations

import nbformat
import pytest
import torch
from support import ROOT
from torch import nn

from attn_course.attention import MultiHeadAttention
from attn_course.tools.protocol import RAISES_EXCEPTION, has_tag

TAGGED = [
    (path, index, cell)
    for path in sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("solutions/*.ipynb")])
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
    if has_tag(cell.metadata, RAISES_EXCEPTION)
]


@pytest.mark.parametrize(
    ("path", "index", "cell"), TAGGED, ids=[f"{p.stem}-cell{i}" for p, i, _ in TAGGED]
)
def test_a_raises_exception_cell_stored_its_error(path, index, cell):
    assert any(output.output_type == "error" for output in cell.outputs), (
        f"{path.name} cell {index} is tagged raises-exception but raised nothing when executed"
    )


def test_view_cannot_merge_the_heads_right_after_transpose():
    """04_stepwise_reshape: the swapped-back context is not contiguous."""
    context = torch.randn(1, 2, 3, 3)  # (b, num_heads, num_tokens, head_dim)
    swapped = context.transpose(1, 2)  # (b, num_tokens, num_heads, head_dim), not contiguous
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        swapped.view(1, 3, 6)
    assert swapped.contiguous().view(1, 3, 6).shape == (1, 3, 6)


def test_correct_weights_do_not_load_into_an_out_proj_of_the_wrong_width():
    """07_bug_zoo, bug 3: nn.Linear(d_out, d_in) breaks loading as soon as d_in != d_out."""
    right = MultiHeadAttention(3, 4, context_length=6, dropout=0.0, num_heads=2)
    wrong = MultiHeadAttention(3, 4, context_length=6, dropout=0.0, num_heads=2)
    wrong.out_proj = nn.Linear(4, 3)
    with pytest.raises(RuntimeError, match="size mismatch for out_proj.weight"):
        wrong.load_state_dict(right.state_dict())

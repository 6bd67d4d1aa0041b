"""Head scores on hand-built attention patterns whose scores are known."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course import head_scores as hs


def one_hot_rows(columns: list[int]) -> torch.Tensor:
    """(1, 1, n, n) pattern: row t puts all its weight on key columns[t]."""
    n = len(columns)
    w = torch.zeros(1, 1, n, n)
    w[0, 0, torch.arange(n), torch.tensor(columns)] = 1.0
    return w


def uniform_causal(n: int) -> torch.Tensor:
    w = torch.tril(torch.ones(n, n))
    return (w / w.sum(dim=1, keepdim=True))[None, None]


def test_previous_token_pattern():
    w = one_hot_rows([0, 0, 1, 2, 3, 4])
    assert hs.previous_token_score(w).tolist() == [1.0]
    assert hs.diagonal_score(w).tolist() == [0.0]
    assert hs.first_token_score(w).tolist() == [pytest.approx(1 / 5)]
    assert hs.row_entropy(w).tolist() == [0.0]


def test_uniform_pattern():
    n = 6
    w = uniform_causal(n)
    expected = sum(1 / (t + 1) for t in range(1, n)) / (n - 1)
    assert hs.first_token_score(w).item() == pytest.approx(expected)
    assert hs.diagonal_score(w).item() == pytest.approx(expected)
    assert hs.previous_token_score(w).item() == pytest.approx(expected)
    assert hs.row_entropy(w).item() == pytest.approx(1.0)


def test_scores_are_per_head_and_averaged_over_the_batch():
    prev, diag = one_hot_rows([0, 0, 1, 2]), one_hot_rows([0, 1, 2, 3])
    w = torch.cat([torch.cat([prev, diag], dim=1), torch.cat([diag, diag], dim=1)])  # (2, 2, 4, 4)
    assert hs.previous_token_score(w).tolist() == [0.5, 0.0]
    assert hs.diagonal_score(w).tolist() == [0.5, 1.0]


def test_induction_score_on_a_repeated_sequence():
    tokens = torch.tensor([[7, 1, 2, 3, 1, 2, 3]])
    # query 4 (token 1) -> key 2 (after the earlier 1), query 5 -> key 3, query 6 -> key 4
    induction = one_hot_rows([0, 0, 0, 0, 2, 3, 4])
    previous = one_hot_rows([0, 0, 1, 2, 3, 4, 5])
    w = torch.cat([induction, previous], dim=1)
    assert hs.induction_score(w, tokens).tolist() == [1.0, 0.0]


def test_induction_score_sums_over_several_earlier_copies():
    tokens = torch.tensor([[5, 9, 5, 9, 5]])
    w = uniform_causal(5)
    # rows 2 (target key 1), 3 (key 2), 4 (keys 1 and 3) have induction targets
    expected = (1 / 3 + 1 / 4 + 2 / 5) / 3
    assert hs.induction_score(w, tokens).item() == pytest.approx(expected)


def test_induction_score_restricted_to_some_rows():
    tokens = torch.tensor([[5, 9, 5, 9, 5]])
    w = uniform_causal(5)
    rows = torch.tensor([[False, False, False, True, True]])  # rows 3 (key 2), 4 (keys 1, 3)
    assert hs.induction_score(w, tokens, rows).item() == pytest.approx((1 / 4 + 2 / 5) / 2)
    with pytest.raises(ValueError, match="repeat"):
        hs.induction_score(w, tokens, torch.zeros(1, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="bool"):
        hs.induction_score(w, tokens, torch.ones(1, 5))


def test_induction_score_needs_a_repeat():
    with pytest.raises(ValueError, match="repeat"):
        hs.induction_score(uniform_causal(3), torch.tensor([[1, 2, 3]]))


def test_head_scores_stacks_layers():
    tokens = torch.tensor([[7, 1, 2, 3, 1, 2, 3]])
    w = torch.stack([uniform_causal(7).expand(1, 3, 7, 7)] * 2)  # (2 layers, 1, 3 heads, 7, 7)
    scores = hs.head_scores(w, tokens)
    assert list(scores) == list(hs.SCORES)
    assert all(s.shape == (2, 3) for s in scores.values())
    assert scores["row entropy"].mean().item() == pytest.approx(1.0)


@pytest.mark.parametrize("shape", [(4, 4), (1, 1, 3, 4), (1, 1, 1, 1)])
def test_bad_shapes(shape):
    with pytest.raises(ValueError):
        hs.previous_token_score(torch.ones(shape))


def test_entropy_of_a_half_half_row():
    w = one_hot_rows([0, 0, 0])
    w[0, 0, 2] = torch.tensor([0.5, 0.5, 0.0])
    # row 1: entropy 0; row 2: log 2 / log 3
    assert hs.row_entropy(w).item() == pytest.approx((0 + math.log(2) / math.log(3)) / 2)


def test_head_scores_without_tokens_leaves_induction_undefined():
    scores = hs.head_scores(torch.stack([uniform_causal(4)]), None)
    assert torch.isnan(scores["induction"]).all()
    assert scores["row entropy"].item() == pytest.approx(1.0)


def test_offset_weight_by_row_is_indexed_by_the_query_row():
    """Rows 22-30 look 9 back (keys 13-21), every other row at key 0: the result is 1 at the
    QUERY rows 22-30; indexed by key it would be 1 at 13-21 instead."""
    columns = [t - 9 if 22 <= t <= 30 else 0 for t in range(32)]
    got = hs.offset_weight_by_row(one_hot_rows(columns), 9)[0]  # (num_tokens,)
    assert got[:9].isnan().all()
    assert got[22:31].tolist() == [1.0] * 9
    assert got[13:22].tolist() == [0.0] * 9
    assert got[31].item() == 0.0


def test_offset_weight_by_row_rejects_an_offset_past_the_rows():
    with pytest.raises(ValueError, match="offset"):
        hs.offset_weight_by_row(uniform_causal(4), 4)

"""attn_course.foundations, against computations that do not share its code.

Weightless attention against a hand computation and a plain-Python loop; cross-attention
against PyTorch's ``nn.MultiheadAttention`` with its weights copied in, queries and keys of
different lengths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from attn_course.foundations import MultiHeadCrossAttention, weightless_attention


def test_weightless_attention_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    # scores X @ X.T = [[1, 0, 1], [0, 1, 1], [1, 1, 2]]; softmax of each row
    e = math.e
    want_weights = np.array(
        [
            [e, 1, e],
            [1, e, e],
            [e, e, e * e],
        ]
    ) / np.array([[2 * e + 1], [2 * e + 1], [2 * e + e * e]])
    # each context row: the weighted sum of the three token rows
    want_context = want_weights @ X
    context, weights = weightless_attention(X)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12)
    np.testing.assert_allclose(context, want_context, rtol=1e-12)
    np.testing.assert_allclose(context[0], [(e + e) / (2 * e + 1), (1 + e) / (2 * e + 1)])


def test_weightless_attention_equals_a_python_loop():
    X = np.random.default_rng(0).normal(size=(5, 4))
    context, weights = weightless_attention(X)
    for i, query in enumerate(X):
        scores = [sum(q * k for q, k in zip(query, key, strict=True)) for key in X]
        exps = [math.exp(s) for s in scores]
        row = [x / sum(exps) for x in exps]
        np.testing.assert_allclose(weights[i], row, rtol=1e-12)
        np.testing.assert_allclose(context[i], sum(w * x for w, x in zip(row, X, strict=True)))


def test_weightless_attention_survives_large_embeddings():
    """Scores of 10^4 overflow exp; the weights stay finite and every row sums to 1."""
    X = np.array([[100.0, 0.0], [0.0, 100.0], [100.0, 1.0]])
    context, weights = weightless_attention(X)
    assert np.isfinite(context).all() and np.isfinite(weights).all()
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    # the last token's scores are 10^4, 100 and 10^4 + 1: e^-1 : 0 : 1
    np.testing.assert_allclose(weights[2], [1 / (1 + math.e), 0.0, math.e / (1 + math.e)])


def torch_copy(ours: MultiHeadCrossAttention) -> nn.MultiheadAttention:
    """PyTorch's multi-head attention holding ``ours``'s weights."""
    theirs = nn.MultiheadAttention(ours.d_model, ours.num_heads, dropout=0.0, batch_first=True)
    projections = (ours.W_query, ours.W_key, ours.W_value)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))
        theirs.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    return theirs.eval()


@pytest.mark.parametrize("num_heads", [1, 2, 4])
@pytest.mark.parametrize("padded", [False, True])
def test_cross_attention_equals_torch_multihead_attention(num_heads, padded):
    torch.manual_seed(0)
    ours = MultiHeadCrossAttention(8, num_heads, dropout=0.0).eval()
    theirs = torch_copy(ours)
    query, key, value = torch.randn(2, 3, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8)
    hidden = torch.tensor([[False, False, False, True, True], [False] * 5])  # (b, num_keys)
    mask = hidden[:, None, None, :] if padded else None  # (b, 1, 1, num_keys), True = hidden
    got, got_weights = ours(query, key, value, mask)
    want, want_weights = theirs(
        query,
        key,
        value,
        key_padding_mask=hidden if padded else None,
        average_attn_weights=False,
    )
    assert got.shape == (2, 3, 8) and got_weights.shape == (2, num_heads, 3, 5)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_weights, want_weights, atol=1e-6, rtol=1e-5)
    if padded:
        assert (got_weights[0, ..., 3:] == 0).all()


def test_cross_attention_of_one_sequence_with_itself_is_self_attention():
    torch.manual_seed(1)
    ours = MultiHeadCrossAttention(6, 3, dropout=0.0).eval()
    x = torch.randn(2, 4, 6)
    want, _ = torch_copy(ours)(x, x, x, need_weights=False)
    torch.testing.assert_close(ours(x, x, x)[0], want, atol=1e-6, rtol=1e-5)

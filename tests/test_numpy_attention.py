"""attn_course.numpy_attention against the torch modules and the NumPy lecture (seed 004);
weightless attention against a hand computation and a plain-Python loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_course.attention import CausalAttention, MultiHeadAttention
from attn_course.numpy_attention import (
    multi_head_attention,
    self_attention,
    softmax,
    weightless_attention,
)

ATOL = 1e-10  # float64 on both sides


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def test_softmax_matches_torch_and_survives_huge_scores():
    x = np.random.default_rng(0).normal(size=(3, 4, 5)) * 10
    for axis in (-1, 0, 1):
        expected = torch.softmax(torch.from_numpy(x), dim=axis).numpy()
        np.testing.assert_allclose(softmax(x, axis=axis), expected, atol=ATOL)
    big = softmax(np.array([1000.0, 1000.0, -1000.0]))
    np.testing.assert_allclose(big, [0.5, 0.5, 0.0], atol=ATOL)


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


@pytest.mark.parametrize("num_tokens, d_in, d_out", [(1, 3, 2), (6, 3, 2), (5, 8, 4), (7, 4, 9)])
def test_causal_self_attention_matches_causal_attention(num_tokens, d_in, d_out):
    torch.manual_seed(num_tokens + d_in)
    head = CausalAttention(d_in, d_out, num_tokens, 0.0).double().eval()
    x = torch.randn(1, num_tokens, d_in, dtype=torch.float64)
    # nn.Linear stores (d_out, d_in); the NumPy lecture multiplies X @ W with W (d_in, d_out).
    W_Q, W_K, W_V = (_np(p.weight).T for p in (head.W_query, head.W_key, head.W_value))
    out, weights = self_attention(_np(x[0]), W_Q, W_K, W_V, causal=True)
    np.testing.assert_allclose(out, _np(head(x)[0]), atol=ATOL)
    np.testing.assert_allclose(weights, _np(head.attn_weights[0]), atol=ATOL)


def test_non_causal_self_attention_matches_functional_sdpa():
    rng = np.random.default_rng(1)
    X, W_Q, W_K, W_V = rng.normal(size=(5, 6)), *rng.normal(size=(3, 6, 4))
    out, weights = self_attention(X, W_Q, W_K, W_V)
    q, k, v = (torch.from_numpy(X @ W) for W in (W_Q, W_K, W_V))
    np.testing.assert_allclose(out, F.scaled_dot_product_attention(q, k, v).numpy(), atol=ATOL)
    np.testing.assert_allclose(weights.sum(-1), np.ones(5), atol=ATOL)


@pytest.mark.parametrize("num_tokens, d_model, num_heads", [(4, 12, 3), (1, 4, 1), (6, 8, 4)])
def test_multi_head_attention_matches_multihead_module(num_tokens, d_model, num_heads):
    torch.manual_seed(num_tokens * d_model)
    mha = MultiHeadAttention(d_model, d_model, num_tokens, 0.0, num_heads).double().eval()
    x = torch.randn(1, num_tokens, d_model, dtype=torch.float64)
    expected = mha(x)[0] - mha.out_proj.bias  # the NumPy lecture's W_O has no bias
    head_dim = d_model // num_heads

    def per_head(linear):  # head h owns output rows h*head_dim:(h+1)*head_dim
        return [_np(w).T for w in linear.weight.split(head_dim, dim=0)]

    out, weights = multi_head_attention(
        _np(x[0]),
        per_head(mha.W_query),
        per_head(mha.W_key),
        per_head(mha.W_value),
        _np(mha.out_proj.weight).T,
        causal=True,
    )
    np.testing.assert_allclose(out, _np(expected), atol=ATOL)
    np.testing.assert_allclose(weights, _np(mha.attn_weights[0]), atol=ATOL)


def test_lecture_scores_of_seed_004_are_reproduced():
    np.random.seed(42)
    X = np.random.randn(4, 6)
    np.random.seed(0)
    W_Q, W_K, W_V = np.random.randn(6, 6), np.random.randn(6, 6), np.random.randn(6, 6)
    # Printed by the lecture for scores = Q @ K.T and scaled_scores = scores / sqrt(6).
    printed_scores = np.array(
        [
            [2.51889084, -7.29616433, 13.79556179, 12.64020041],
            [4.97930562, 1.55709123, 28.89221706, 11.53667062],
            [14.57857978, 14.59243409, -59.0346232, -17.30294836],
            [0.92217982, -6.4552404, -4.47717683, 5.1656522],
        ]
    )
    printed_scaled = np.array(
        [
            [1.02833288, -2.97864661, 5.63201452, 5.16034021],
            [2.03279301, 0.63567983, 11.79519822, 4.70982606],
            [5.95168027, 5.95733627, -24.100784, -7.06389909],
            [0.37647834, -2.63534086, -1.82779979, 2.10886868],
        ]
    )
    np.testing.assert_allclose((X @ W_Q) @ (X @ W_K).T, printed_scores, atol=1e-7)
    np.testing.assert_allclose(printed_scores / np.sqrt(6), printed_scaled, atol=1e-7)
    out, weights = self_attention(X, W_Q, W_K, W_V)
    # self_attention's weights are the softmax of the printed scaled scores.
    e = np.exp(printed_scaled)
    np.testing.assert_allclose(weights, e / e.sum(axis=1, keepdims=True), atol=1e-7)
    np.testing.assert_allclose(out, weights @ (X @ W_V), atol=ATOL)


def test_multi_head_attention_needs_one_matrix_of_each_kind_per_head():
    X, W = np.ones((2, 4)), np.ones((4, 2))
    with pytest.raises(ValueError, match="same number of query, key and value"):
        multi_head_attention(X, [W, W], [W], [W, W], np.ones((4, 4)))


def test_a_mean_in_the_keys_is_ignored_a_mean_in_the_queries_is_not():
    """Lecture 00, section 5: q·(k + 1) adds one number per row (a query's level), which softmax
    ignores; (q + 1)·k adds 1·k, one number per key shared by every query (a bias per key),
    which changes the weights and widens a row's std from 1 to about sqrt(2)."""
    rng = np.random.default_rng(0)
    d_k = 512
    q, k = rng.standard_normal((50, d_k)), rng.standard_normal((400, d_k))
    scaled = q @ k.T / np.sqrt(d_k)
    keys_mean_1 = q @ (k + 1).T / np.sqrt(d_k)
    queries_mean_1 = (q + 1) @ k.T / np.sqrt(d_k)
    np.testing.assert_allclose(softmax(keys_mean_1), softmax(scaled), atol=1e-12)
    assert np.abs(softmax(queries_mean_1) - softmax(scaled)).max() > 0.01
    assert keys_mean_1.std(axis=-1).mean() == pytest.approx(1.0, rel=0.05)
    assert queries_mean_1.std(axis=-1).mean() == pytest.approx(math.sqrt(2), rel=0.05)
    per_key = (queries_mean_1 - scaled) * np.sqrt(d_k)  # (50, 400): the same in every row
    np.testing.assert_allclose(per_key, np.broadcast_to(k.sum(axis=1), per_key.shape), atol=1e-9)


def test_weights_sum_to_1_over_the_keys_and_symmetric_scores_hide_the_wrong_axis():
    """Lecture 00 §0 and §4 (review r00x): softmax runs over each row (a query's keys), so the
    rows sum to 1 and the columns (what a key receives in all) need not. On the symmetric
    scores of section 0, softmax over axis=0 is just the transpose; on section 5's head it is
    neither the weights nor their transpose."""
    from attn_course import data

    inputs = data.example("journey").embeddings.double().numpy()  # (6, 3)
    _, weights = weightless_attention(inputs)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    assert np.abs(weights.sum(axis=0) - 1).max() > 0.2  # columns: 0.754 to 1.297
    wrong_axis = softmax(inputs @ inputs.T, axis=0)
    assert not np.allclose(wrong_axis, weights)
    np.testing.assert_allclose(wrong_axis, weights.T, rtol=1e-12)

    np.random.seed(42)
    X = np.random.randn(4, 6)
    np.random.seed(0)
    W_Q, W_K, W_V = np.random.randn(6, 6), np.random.randn(6, 6), np.random.randn(6, 6)
    _, head_weights = self_attention(X, W_Q, W_K, W_V)
    np.testing.assert_allclose(head_weights.sum(axis=-1), 1.0, rtol=1e-12)
    assert np.abs(head_weights.sum(axis=0) - 1).max() > 0.5
    scaled = (X @ W_Q) @ (X @ W_K).T / np.sqrt(6)
    for other in (softmax(scaled, axis=0), softmax(scaled, axis=0).T):
        assert not np.allclose(other, head_weights, atol=1e-3)

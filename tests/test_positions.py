"""RoPE (attn_course.positions): rotations of interleaved pairs, relative scores, the cache."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course.attention import causal_mask
from attn_course.positions import (
    apply_rope,
    rope_angles,
    rope_attention,
    shift_matrix,
    sinusoidal_positions,
)


def test_rope_rotates_each_interleaved_pair_by_position_times_frequency():
    x = torch.randn(3, 8, dtype=torch.float64)  # 3 tokens, head_dim 8
    got = apply_rope(x)
    for m in range(3):
        for i in range(4):
            theta = m * 10000.0 ** (-2 * i / 8)
            c, s = math.cos(theta), math.sin(theta)
            x0, x1 = x[m, 2 * i].item(), x[m, 2 * i + 1].item()
            assert got[m, 2 * i].item() == pytest.approx(x0 * c - x1 * s, abs=1e-6)
            assert got[m, 2 * i + 1].item() == pytest.approx(x0 * s + x1 * c, abs=1e-6)


def test_rope_turns_the_opposite_way_to_the_shift_matrix():
    """08 §2: in the course's pair layout R_m = M_mᵀ (the sinusoidal table stores (sin, cos)):
    apply_rope at position m is x @ shift_matrix(m) (row vectors), not M_m x."""
    x = torch.randn(5, 64, dtype=torch.float64)
    for m in (1, 3, 9):
        rotated = apply_rope(x, start=m)[0]  # the first token stands at position m
        shift = shift_matrix(m, 64).double()  # M_m
        torch.testing.assert_close(rotated, shift.T @ x[0])
        assert not torch.allclose(rotated, shift @ x[0], atol=1e-3)


def test_rope_keeps_norms_and_leaves_position_zero_alone():
    x = torch.randn(2, 4, 16, 32)
    rotated = apply_rope(x)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[..., 0, :], x[..., 0, :])
    assert rotated.shape == x.shape and rotated.dtype == x.dtype


def test_rope_score_depends_only_on_the_offset():
    q, k = torch.randn(64, dtype=torch.float64), torch.randn(64, dtype=torch.float64)
    queries = apply_rope(q.expand(20, 64))  # the same query content at positions 0..19
    keys = apply_rope(k.expand(20, 64))
    scores = queries @ keys.T  # (20, 20)
    for offset in range(-19, 20):
        diagonal = scores.diagonal(offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-5, rtol=0)
    assert not torch.allclose(scores.diagonal(0)[0], scores.diagonal(-1)[0])


def test_rope_start_continues_the_positions_as_a_kv_cache_needs():
    x = torch.randn(1, 2, 10, 16)
    whole = apply_rope(x)
    tail = apply_rope(x[..., 6:, :], start=6)
    torch.testing.assert_close(tail, whole[..., 6:, :])


def test_rope_uses_the_sinusoidal_clocks():
    angles = rope_angles(12, 16)
    table = sinusoidal_positions(12, 16)
    torch.testing.assert_close(table[:, 0::2], angles.sin())
    torch.testing.assert_close(table[:, 1::2], angles.cos())


def test_rope_base_changes_the_frequencies():
    x = torch.randn(5, 8)
    assert not torch.allclose(apply_rope(x, base=100.0), apply_rope(x))
    torch.testing.assert_close(rope_angles(5, 8, base=100.0)[:, 2], torch.arange(5.0) / 10.0)


def test_rope_attention_rotates_queries_and_keys_not_values():
    q, k, v = (torch.randn(2, 3, 7, 8) for _ in range(3))
    scores = apply_rope(q) @ apply_rope(k).transpose(-2, -1) / 8**0.5
    weights = torch.softmax(scores.masked_fill(causal_mask(7), -torch.inf), dim=-1)
    torch.testing.assert_close(rope_attention(q, k, v), weights @ v)


@pytest.mark.parametrize(
    ("shape", "start", "words"),
    [((4, 7), 0, "even"), ((7,), 0, "num_tokens, head_dim"), ((4, 8), -1, "start")],
)
def test_rope_rejects_bad_input_with_a_sentence(shape, start, words):
    with pytest.raises(ValueError, match=words):
        apply_rope(torch.zeros(shape), start=start)


@pytest.mark.parametrize("k", [1, 3, 9])
def test_shift_matrix_moves_a_position_k_places_later_not_earlier(k):
    table = sinusoidal_positions(40, 64)  # (num_tokens, d_model)
    M = shift_matrix(k, 64)
    torch.testing.assert_close(table[:-k] @ M.T, table[k:], atol=1e-5, rtol=0)  # M PE[p] = PE[p+k]
    assert not torch.allclose(table[k:] @ M.T, table[:-k], atol=1e-2)  # not PE[p-k]
    torch.testing.assert_close(table[k:] @ M, table[:-k], atol=1e-5, rtol=0)  # Mᵀ goes back


@pytest.mark.parametrize("k", [1, 3, 9])
def test_a_head_with_w_qk_shift_matrix_looks_k_back_and_its_transpose_does_not(k):
    """score(p, j) = PE[p]ᵀ M_k PE[j] = PE[p] · PE[j + k] peaks at j = p - k (self-similarity);
    with M_kᵀ it would peak at j = p + k, which the causal mask hides, so it picks j = p."""
    table = sinusoidal_positions(32, 64)
    mask = causal_mask(32)
    for W, want in ((shift_matrix(k, 64), torch.arange(32) - k), (shift_matrix(k, 64).T, None)):
        scores = (table @ W @ table.T).masked_fill(mask, -torch.inf)  # (query p, key j)
        picked = scores.argmax(dim=-1)[k:]  # rows p >= k
        if want is not None:
            assert picked.tolist() == want[k:].tolist()
        else:
            assert picked.tolist() == list(range(k, 32))


def test_rope_score_depends_on_the_signed_offset_not_the_distance():
    """05 and 08: the score depends on m - n (query at m, key at n), and +3 differs from -3."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 8, dtype=torch.float64, generator=generator)  # 4 pairs each
    # the angles are float32 (rope_angles), so equal offsets agree to about 1e-6

    def score(m: int, n: int) -> float:
        queries = apply_rope(q.expand(m + 1, 8))[m]  # the query at position m
        keys = apply_rope(k.expand(n + 1, 8))[n]  # the key at position n
        return (queries @ keys).item()

    assert score(5, 2) == pytest.approx(score(10, 7), abs=1e-5)  # offset +3 anywhere
    assert score(2, 5) == pytest.approx(score(7, 10), abs=1e-5)  # offset -3 anywhere
    assert abs(score(5, 2) - score(2, 5)) > 0.1  # +3 and -3: another score


def test_rope_pair_contributes_cos_of_its_angle_plus_offset_so_parallel_pairs_score_evenly():
    """05: pair i contributes |q_i||k_i| cos(phi_i + (m - n) theta_i), phi_i the angle from the
    key's pair to the query's (the reverse angle gives another score); a key parallel to the
    query (k = q, k = 2.5 q) scores the same at +3 and -3, a random key does not."""
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 8, dtype=torch.float64, generator=generator)
    theta = rope_angles(2, 8)[1].double()  # (4,): the turn per position of each pair

    def score(query: torch.Tensor, key: torch.Tensor, m: int, n: int) -> float:
        return (apply_rope(query[None], start=m) @ apply_rope(key[None], start=n).T).item()

    def formula(offset: int, key_to_query: bool = True) -> float:
        q_angle, k_angle = torch.atan2(q[1::2], q[0::2]), torch.atan2(k[1::2], k[0::2])
        phi = q_angle - k_angle if key_to_query else k_angle - q_angle
        lengths = q.view(4, 2).norm(dim=-1) * k.view(4, 2).norm(dim=-1)
        return (lengths * torch.cos(phi + offset * theta)).sum().item()

    for m, n in ((5, 2), (2, 5), (9, 9)):
        assert score(q, k, m, n) == pytest.approx(formula(m - n), abs=1e-5)
    assert abs(score(q, k, 5, 2) - formula(3, key_to_query=False)) > 0.1  # the reverse angle
    assert abs(score(q, k, 5, 2) - score(q, k, 2, 5)) > 0.1
    for parallel in (q, 2.5 * q, -q):
        assert score(q, parallel, 5, 2) == pytest.approx(score(q, parallel, 2, 5), abs=1e-9)


def test_rope_long_offsets_are_read_mod_2pi_and_by_offset_not_position():
    """08 §3: trained on offsets 0 to 31, a 64-wide head's pair 6 reaches 22.58 rad at offset
    127, the rotation of 3.73 rad that offset 21 already gave: the score at offset 127 equals
    the one at offset 21 (query 127, key 0, or query 130, key 3: the offset counts, not the
    position), not the one at offset -21. Counted by the rotations apply_rope makes, pair 6
    lands outside its trained range at 12 of the offsets 32 to 127 and pair 11 at all 96 (read
    without mod 2π, pair 6 would be outside at all 96 too)."""
    generator = torch.Generator().manual_seed(0)
    head_dim = 64

    def only_pair(pair: int) -> tuple[torch.Tensor, torch.Tensor]:
        q, k = torch.zeros(2, head_dim, dtype=torch.float64)
        q[2 * pair : 2 * pair + 2], k[2 * pair : 2 * pair + 2] = torch.randn(
            2, 2, dtype=torch.float64, generator=generator
        )
        return q, k

    def score(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
        return (apply_rope(q[None], start=m) @ apply_rope(k[None], start=n).T).item()

    q, k = only_pair(6)
    assert rope_angles(128, head_dim)[127, 6].item() == pytest.approx(22.58, abs=5e-3)
    assert score(q, k, 127, 0) == pytest.approx(score(q, k, 21, 0), abs=2e-3)
    assert score(q, k, 130, 3) == pytest.approx(score(q, k, 21, 0), abs=2e-3)
    assert abs(score(q, k, 127, 0) - score(q, k, 0, 21)) > 0.1  # offset -21: another score

    def outside(pair: int) -> tuple[int, int]:
        """Offsets 32..127 whose rotation of pair ``pair`` lies outside the trained range, read
        mod 2π (the rotated vector's angle) and as a raw angle."""
        unit = torch.zeros(128, head_dim, dtype=torch.float64)
        unit[:, 2 * pair] = 1.0  # the same vector at every position 0..127
        rotated = apply_rope(unit)[:, 2 * pair : 2 * pair + 2]  # (128, 2)
        turned = torch.atan2(rotated[:, 1], rotated[:, 0]) % (2 * math.pi)  # angle mod 2π
        trained_max = turned[:32].max()
        raw = rope_angles(128, head_dim)[:, pair].double()
        return int((turned[32:] > trained_max).sum()), int((raw[32:] > raw[:32].max()).sum())

    assert outside(6) == (12, 96)
    assert outside(11) == (96, 96)

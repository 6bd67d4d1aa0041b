"""Online softmax (NumPy) and tiled attention (PyTorch) equal their one-shot versions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from support import saved_for_backward

from attn_course.attention import causal_mask, scaled_dot_product_attention
from attn_course.tiled import (
    TrafficCounter,
    attention_tile,
    online_softmax,
    online_softmax_update,
    peak_memory,
    tiled_attention,
)


def two_pass_softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


@pytest.mark.parametrize("block_size", [1, 2, 3, 7, 100])
def test_online_softmax_equals_two_pass(block_size):
    rng = np.random.default_rng(block_size)
    for size in (1, 5, 17):
        x = rng.normal(scale=10.0, size=size)
        np.testing.assert_allclose(online_softmax(x, block_size), two_pass_softmax(x), rtol=1e-12)


def test_online_softmax_survives_large_scores():
    x = np.array([1000.0, 1001.0, 999.0, -1000.0])  # exp(1000) overflows without the max
    np.testing.assert_allclose(online_softmax(x), two_pass_softmax(x), rtol=1e-12)


def test_online_softmax_update_by_hand():
    # After [1, 3]: m = 3, s = e^-2 + 1. Adding [2] keeps m = 3 and adds e^-1.
    m, s = online_softmax_update(-np.inf, 0.0, np.array([1.0, 3.0]))
    m, s = online_softmax_update(m, s, np.array([2.0]))
    assert m == 3.0
    assert s == pytest.approx(np.exp(-2) + 1 + np.exp(-1))
    # A new max rescales the old sum: adding [5] gives m = 5, s = (old s) * e^-2 + 1.
    m2, s2 = online_softmax_update(m, s, np.array([5.0]))
    assert m2 == 5.0
    assert s2 == pytest.approx(s * np.exp(-2) + 1)


def test_online_softmax_rejects_bad_rows():
    with pytest.raises(ValueError, match="1-D"):
        online_softmax(np.zeros((2, 2)))


SHAPES = [  # (b, num_heads, num_queries, num_keys, head_dim, d_v, block_size)
    (1, 1, 1, 1, 4, 4, 16),
    (2, 3, 17, 17, 8, 8, 4),
    (1, 2, 64, 64, 16, 16, 16),
    (2, 1, 65, 65, 16, 16, 16),
    (1, 4, 100, 100, 32, 32, 33),
    (1, 2, 31, 31, 8, 8, 64),
    (3, 2, 10, 23, 8, 5, 4),
    (1, 1, 1, 23, 8, 8, 4),
    (1, 1, 23, 10, 8, 8, 3),
]


CASES = [  # causal with more queries than keys is refused (tested below)
    (shape, causal)
    for shape in SHAPES
    for causal in (False, True)
    if not causal or shape[2] <= shape[3]
]


@pytest.mark.parametrize(("shape", "causal"), CASES, ids=str)
def test_tiled_equals_fused_and_course_attention(shape, causal):
    b, h, nq, nk, d, dv, block_size = shape
    g = torch.Generator().manual_seed(nq * 100 + nk)
    q, k = torch.randn(b, h, nq, d, generator=g), torch.randn(b, h, nk, d, generator=g)
    v = torch.randn(b, h, nk, dv, generator=g) * 3
    got = tiled_attention(q, k, v, causal=causal, block_size=block_size)
    # bottom-right: query i sits at position nk - nq + i and sees the keys up to it
    mask = torch.ones(nq, nk, dtype=torch.bool).triu(diagonal=nk - nq + 1) if causal else None
    fused = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
    torch.testing.assert_close(got, fused, rtol=1e-5, atol=1e-5)
    course, _ = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(got, course, rtol=1e-5, atol=1e-5)


def test_causal_queries_are_the_last_positions_as_with_a_kv_cache():
    """The last 10 queries against all 23 keys give the last 10 rows of full causal attention."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 23, 8, generator=g) for _ in range(3))
    full = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # 23 queries, 23 keys
    got = tiled_attention(q[:, -10:], k, v, causal=True, block_size=4)
    torch.testing.assert_close(got, full[:, -10:], rtol=1e-5, atol=1e-5)
    top_left = F.scaled_dot_product_attention(q[:, -10:], k, v, is_causal=True)
    assert not torch.allclose(got, top_left, atol=1e-3)  # the two alignments differ here


def test_causal_refuses_more_queries_than_keys():
    q, k = torch.zeros(1, 23, 4), torch.zeros(1, 10, 4)
    with pytest.raises(ValueError, match="23 queries but only 10 keys"):
        tiled_attention(q, k, k, causal=True)


def test_tiled_handles_large_scores_and_3d_inputs():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 40, 8, generator=g) for _ in range(3))
    q = q * 30  # scores in the hundreds: exp overflows without the running max
    got = tiled_attention(q, k, v, causal=True, block_size=7)
    want, _ = scaled_dot_product_attention(q, k, v, causal_mask(40))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_tiled_backward_matches():
    g = torch.Generator().manual_seed(1)
    inputs = [torch.randn(1, 2, 20, 8, generator=g, requires_grad=True) for _ in range(3)]
    tiled_attention(*inputs, causal=True, block_size=6).square().sum().backward()
    tiled_grads = [t.grad.clone() for t in inputs]
    for t in inputs:
        t.grad = None
    F.scaled_dot_product_attention(*inputs, is_causal=True).square().sum().backward()
    for mine, ref in zip(tiled_grads, (t.grad for t in inputs), strict=True):
        torch.testing.assert_close(mine, ref, rtol=1e-4, atol=1e-5)


def test_one_tile_equals_attention_over_its_keys():
    g = torch.Generator().manual_seed(2)
    q, k, v = (
        torch.randn(3, 5, 4, generator=g),
        torch.randn(3, 6, 4, generator=g),
        torch.randn(3, 6, 7, generator=g),
    )
    m0 = torch.full((3, 5, 1), -torch.inf)
    s0, acc0 = torch.zeros(3, 5, 1), torch.zeros(3, 5, 7)
    m, s, acc = attention_tile(q, k[:, :4], v[:, :4], m0, s0, acc0)
    m, s, acc = attention_tile(q, k[:, 4:], v[:, 4:], m, s, acc)
    want = torch.softmax(q @ k.transpose(1, 2), dim=-1) @ v
    torch.testing.assert_close(acc / s, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(m, (q @ k.transpose(1, 2)).amax(-1, keepdim=True))


def test_block_size_must_be_positive():
    x = torch.zeros(1, 4, 2)
    with pytest.raises(ValueError, match="block_size=0"):
        tiled_attention(x, x, x, block_size=0)


def test_traffic_counter_skips_aliasing_ops_and_counts_copies():
    q, k, v = (torch.randn(2, 8, 4) for _ in range(3))
    x = torch.randn(4, 8, 16)  # 2 KiB, not one of q, k, v
    nbytes = x.numel() * x.element_size()
    # aten._unsafe_view is not declared a view in its schema, but returns x's own memory.
    with TrafficCounter(q, k, v) as counter:
        y = torch.ops.aten._unsafe_view.default(x, (32, 16))
        _ = x.transpose(0, 1)  # a declared view
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert sum(counter.bytes.values()) == 0
    # A real copy reads x and writes as many bytes; an in-place write into x counts too.
    with TrafficCounter(q, k, v) as counter:
        _ = x.transpose(0, 1).contiguous()
    assert counter.bytes["other"] == 2 * nbytes
    with TrafficCounter(q, k, v) as counter:
        x.mul_(2.0)
    assert counter.bytes["other"] == 2 * nbytes  # x read, x written (the same storage)
    with TrafficCounter(q, k, v) as counter:
        _ = q * 2.0  # reads q, writes a new (2, 8, 4)
    assert counter.bytes == {"(n, n) tensors": 0, "reads of Q, K, V": 256, "other": 256}


def test_first_tile_from_minus_inf_needs_a_visible_key():
    """m starts at -inf: a first tile with every key hidden gives exp(-inf - -inf) = NaN."""
    q, k, v = torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 4)
    m, s, acc = torch.full((2, 1), -torch.inf), torch.zeros(2, 1), torch.zeros(2, 4)
    mask = torch.tensor([[True, True, True], [False, True, True]])  # row 0 all hidden
    m1, s1, acc1 = attention_tile(q, k, v, m, s, acc, mask)
    assert m1[0].item() == -torch.inf and s1[0].isnan().all() and acc1[0].isnan().all()
    assert torch.isfinite(s1[1]).all() and torch.allclose(acc1[1] / s1[1], v[0])


@pytest.mark.parametrize("num_queries", [10, 23])
def test_causal_masks_are_built_on_the_inputs_device(num_queries):
    """The causal mask must sit on the scores' device: on "meta" a CPU mask raises."""
    q = torch.empty(2, num_queries, 8, device="meta")
    kv = torch.empty(2, 23, 8, device="meta")
    out = tiled_attention(q, kv, kv, causal=True, block_size=4)
    assert out.device.type == "meta" and out.shape == (2, num_queries, 8)


@pytest.mark.parametrize(
    ("num_queries", "num_keys", "block_size", "want"),
    [
        (10, 13, 4, [1, 1, 1]),  # offset 3: key block 0 holds position 3 yet needs no mask
        (10, 23, 4, [2, 2, 1]),  # offset 13: the last query block is partial
        (23, 23, 1, [0] * 23),  # one query per block: no tile ever holds a later key
    ],
)
def test_masked_tiles_per_query_block(monkeypatch, num_queries, num_keys, block_size, want):
    """A tile is masked when it holds a key later than its query block's FIRST query."""
    import attn_course.tiled as tiled

    counts = []

    def counting_tile(queries, keys, values, m, s, acc, mask=None):
        if torch.isneginf(m).all():  # m = -inf: the first tile of a new query block
            counts.append(0)
        counts[-1] += mask is not None
        return attention_tile(queries, keys, values, m, s, acc, mask)

    monkeypatch.setattr(tiled, "attention_tile", counting_tile)
    q, k, v = torch.randn(num_queries, 8), torch.randn(num_keys, 8), torch.randn(num_keys, 8)
    got = tiled.tiled_attention(q, k, v, causal=True, block_size=block_size)
    assert counts == want
    want_out = scaled_dot_product_attention(q, k, v, mask=causal_mask(num_keys)[-num_queries:])
    torch.testing.assert_close(got, want_out[0], rtol=1e-5, atol=1e-6)


def test_traffic_counter_factories_and_overwrites():
    """new_* factories read nothing (new_empty writes nothing); copy_ does not read its target."""
    q, k, v = (torch.randn(2, 8, 4) for _ in range(3))
    x = torch.randn(4, 8, 16)  # 2 KiB, not one of q, k, v
    nbytes = x.numel() * x.element_size()
    with TrafficCounter(q, k, v) as counter:
        _ = x.new_empty(x.shape)
    assert sum(counter.bytes.values()) == 0
    for make in (lambda: x.new_zeros(x.shape), lambda: x.new_full(x.shape, 3.0)):
        with TrafficCounter(q, k, v) as counter:
            y = make()
        assert counter.bytes["other"] == nbytes  # the output written, the template not read
        assert y.shape == x.shape
    with TrafficCounter(q, k, v) as counter:
        q.new_zeros(2, 8, 4)  # q only lends its dtype and device
    assert counter.bytes == {"(n, n) tensors": 0, "reads of Q, K, V": 0, "other": 256}
    target = torch.zeros(4, 8, 16)
    with TrafficCounter(q, k, v) as counter:
        target[...] = x  # aten.copy_: reads x, writes target once
    assert counter.bytes["other"] == 2 * nbytes
    with TrafficCounter(q, k, v) as counter:
        target[:2] = x[:2]  # into a slice: half the bytes each way
    assert counter.bytes["other"] == nbytes
    with TrafficCounter(q, k, v) as counter:
        target.fill_(1.0)
    assert counter.bytes["other"] == nbytes


def test_naive_causal_extras_are_two_square_tensors_and_two_mask_reads():
    """10 §4: with the mask the naive path writes and reads two more (n, n) float tensors than
    the three it moves without it (5 against 3), and reads the (n, n) bool mask twice."""
    n = 64
    q, k, v = (torch.randn(1, 4, n, 8) for _ in range(3))
    mask = causal_mask(n)  # made beforehand, as in the notebook
    square = 4 * n * n * 4  # one (4, n, n) float32 tensor
    with torch.no_grad():
        with TrafficCounter(q, k, v) as plain:
            scaled_dot_product_attention(q, k, v)
        with TrafficCounter(q, k, v) as masked:
            scaled_dot_product_attention(q, k, v, mask)
    assert plain.bytes["(n, n) tensors"] == 3 * 2 * square  # each written once, read once
    assert masked.bytes["(n, n) tensors"] == 5 * 2 * square + 2 * n * n  # + the mask, twice


def test_loop_without_the_mask_makes_more_operator_calls_than_causal():
    """10 §4: without the mask the loop visits all 64 tiles at n = 1024, block 128, and makes
    more operator calls than the causal loop (36 tiles)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))

    x = torch.randn(1, 4, 1024, 64)
    counts = {}
    with torch.no_grad():
        for causal in (True, False):
            with Count() as counter:
                tiled_attention(x, x, x, causal=causal, block_size=128)
            counts[causal] = counter.calls
    assert counts[False] > counts[True], counts


def test_recomputing_saves_the_loops_training_memory_without_fusing():
    """10 §5: wrapped in torch.utils.checkpoint, the unfused loop keeps nothing but its inputs
    for the backward pass (plainly it keeps every tile), with the same gradients."""
    from torch.utils.checkpoint import checkpoint

    q, k, v = (torch.randn(1, 2, 256, 16, requires_grad=True) for _ in range(3))

    def loop(q, k, v):
        return tiled_attention(q, k, v, causal=True, block_size=32)

    def saved_bytes_and_grads(fn):
        out, saved = saved_for_backward(fn, q, k, v)
        return saved, torch.autograd.grad(out.square().sum(), (q, k, v))

    plain, plain_grads = saved_bytes_and_grads(loop)
    recomputed, grads = saved_bytes_and_grads(
        lambda q, k, v: checkpoint(loop, q, k, v, use_reentrant=False)
    )
    assert plain > 2 * 256 * 256 * 4 and recomputed == 0, (plain, recomputed)
    for a, b in zip(plain_grads, grads, strict=True):
        torch.testing.assert_close(a, b)


def test_checkpoint_does_not_lower_one_calls_training_peak():
    """10 §5: checkpointing the loop frees its tiles between forward and backward, but the
    backward re-runs the loop and saves them again: the peak of one call's forward and backward
    does not go down (the reversed reading, a lower peak, fails)."""
    from torch.utils.checkpoint import checkpoint

    q, k, v = (torch.randn(1, 2, 256, 16, requires_grad=True) for _ in range(3))

    def loop(q, k, v):
        return tiled_attention(q, k, v, causal=True, block_size=32)

    def plain(q, k, v):
        loop(q, k, v).sum().backward()

    def recomputed(q, k, v):
        checkpoint(loop, q, k, v, use_reentrant=False).sum().backward()

    plain_peak, recomputed_peak = peak_memory(plain, q, k, v), peak_memory(recomputed, q, k, v)
    # the saved tiles alone: more than one (2, 256, 256) float32 tensor's worth
    assert plain_peak > 2 * 256 * 256 * 4, plain_peak
    assert recomputed_peak >= 0.95 * plain_peak, (plain_peak, recomputed_peak)


def test_online_softmax_first_block_of_only_minus_inf_gives_nan():
    """10 §1: the online softmax equals the two-pass one for rows of finite scores; a FIRST block
    of only -inf gives exp(-inf - -inf) = NaN, so the result then depends on the block size.
    A later all -inf block is harmless (the reversed reading, a last block, fails)."""
    row = np.array([-np.inf, 1.0, 2.0])
    with np.errstate(invalid="ignore"):
        assert np.isnan(online_softmax(row, block_size=1)).all()
    for block_size in (2, 3):
        np.testing.assert_allclose(online_softmax(row, block_size), two_pass_softmax(row))
    last = np.array([1.0, 2.0, -np.inf])
    np.testing.assert_allclose(online_softmax(last, block_size=1), two_pass_softmax(last))


def test_online_softmax_differs_from_two_pass_in_float64_last_digits():
    """10 §1: the relative difference stays below the checked 1e-13, about 450 times float64's
    machine epsilon 2^-52 (the notebook prints the largest difference, 3.0 times it): on the
    notebook's own draws (rng 123, first use) and 20 other seeds the worst relative difference
    of s and of the softmax is within 10 units of float64's eps, far below the bound."""
    eps = np.finfo(np.float64).eps
    for seed in (123, *range(20)):
        rng, worst = np.random.default_rng(seed), 0.0
        for size in (1, 7, 100, 1000):  # the notebook's loop
            for block_size in (1, 3, 64):
                row = rng.normal(scale=20.0, size=size)
                m, s = -np.inf, 0.0
                for start in range(0, size, block_size):
                    m, s = online_softmax_update(m, s, row[start : start + block_size])
                s_error = abs(s / np.exp(row - row.max()).sum() - 1)
                ratio = online_softmax(row, block_size) / two_pass_softmax(row)
                worst = max(worst, s_error, np.max(np.abs(ratio - 1)))
        assert 0 < worst <= 10 * eps, (seed, worst / eps)


def test_4d_matmul_is_expands_views_one_bmm_and_an_unsafe_view():
    """10 §5: one Python `@` on 4-D tensors becomes several ATen calls (expand and view of each
    operand, bmm, _unsafe_view); the causal loop at n = 1024, block 128, makes two per tile."""
    from collections import Counter

    from torch.utils._python_dispatch import TorchDispatchMode

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    a, b = torch.randn(1, 4, 128, 64), torch.randn(1, 4, 64, 128)
    with torch.no_grad(), Ops() as one:
        _ = a @ b
    assert one.ops == {"expand": 2, "view": 2, "bmm": 1, "_unsafe_view": 1}, one.ops
    x = torch.randn(1, 4, 1024, 64)
    with torch.no_grad(), Ops() as loop:
        tiled_attention(x, x, x, causal=True, block_size=128)
    tiles = 8 * 9 // 2
    assert loop.ops["bmm"] == 2 * tiles and loop.ops["_unsafe_view"] == 2 * tiles
    assert loop.ops["expand"] == loop.ops["view"] == 4 * tiles and loop.ops.total() == 1050


def test_log_sum_exp_is_m_plus_log_s_after_the_last_key_block():
    """10 §5: LSE_i = m_i + log s_i from the running statistics, the logsumexp of query i's scaled
    scores over the KEYS (the reversed reading, over the queries, fails); exp(score - LSE)
    gives the attention weights without a max or a sum."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (
        torch.randn(2, 5, 8, generator=g),
        torch.randn(2, 11, 8, generator=g),
        torch.randn(2, 11, 3, generator=g),
    )
    scaled_q = q / 8**0.5
    m, s, acc = torch.full((2, 5, 1), -torch.inf), torch.zeros(2, 5, 1), torch.zeros(2, 5, 3)
    for start in range(0, 11, 4):
        m, s, acc = attention_tile(
            scaled_q, k[:, start : start + 4], v[:, start : start + 4], m, s, acc
        )
    lse = m + s.log()  # (2, 5, 1)
    scores = scaled_q @ k.transpose(-2, -1)  # (2, 5, 11): queries x keys
    torch.testing.assert_close(lse, torch.logsumexp(scores, dim=-1, keepdim=True))
    assert not torch.allclose(lse.squeeze(-1), torch.logsumexp(scores, dim=-2)[..., :5])
    torch.testing.assert_close(torch.exp(scores - lse), torch.softmax(scores, dim=-1))
    torch.testing.assert_close(acc / s, torch.exp(scores - lse) @ v)


def test_causal_lower_right_is_the_courses_bottom_right_mask():
    """10 §2: PyTorch's ``torch.nn.attention.bias.causal_lower_right(num_queries, num_keys)``
    aligns bottom-right like ``tiled_attention``: its allowed entries are the complement of the
    course's hidden ones (the last ``num_queries`` rows of the causal mask), not the top-left
    ``is_causal=True`` mask, which differs whenever there are fewer queries than keys."""
    from torch.nn.attention.bias import causal_lower_right, causal_upper_left

    for num_queries, num_keys in ((10, 23), (1, 5), (7, 7)):
        allowed = causal_lower_right(num_queries, num_keys)._materialize(torch.device("cpu"))
        hidden = causal_mask(num_keys)[-num_queries:]  # True = hidden, bottom-right
        assert torch.equal(allowed, ~hidden)
        top_left = causal_upper_left(num_queries, num_keys)._materialize(torch.device("cpu"))
        assert torch.equal(top_left, allowed) == (num_queries == num_keys)
        q, k, v = torch.randn(num_queries, 8), torch.randn(num_keys, 8), torch.randn(num_keys, 8)
        got = F.scaled_dot_product_attention(
            q[None], k[None], v[None], attn_mask=causal_lower_right(num_queries, num_keys)
        )[0]
        torch.testing.assert_close(got, tiled_attention(q, k, v, causal=True, block_size=4))

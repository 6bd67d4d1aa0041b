"""attn_course.attention against PyTorch's own attention, the causal property, dropout, and
the lectures' printed numbers (seed 001)."""

from __future__ import annotations

import math
import random

import pytest
import torch
import torch.nn.functional as F
from support import assert_causal
from torch import nn

from attn_course.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionSDPA,
    MultiHeadAttentionWrapper,
    causal_mask,
    copy_wrapper_weights,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)
from attn_course.data import example

ATOL = 1e-5


def _random_cases(n: int) -> list[tuple[int, int, int, int, int, bool]]:
    """``n`` seeded random (b, num_tokens, d_in, d_out, num_heads, qkv_bias) configurations."""
    rng = random.Random(2024)
    cases = []
    for _ in range(n):
        num_heads, head_dim = rng.randint(1, 4), rng.randint(1, 5)
        cases.append(
            (
                rng.randint(1, 3),
                rng.randint(1, 9),
                rng.randint(1, 12),
                num_heads * head_dim,
                num_heads,
                rng.random() < 0.5,
            )
        )
    return cases


# (b, num_tokens, d_in, d_out, num_heads, qkv_bias): the edge cases, then random ones.
CASES = [
    (1, 1, 4, 4, 1, False),  # batch 1, a single token, one head
    (1, 6, 6, 6, 2, True),
    (3, 5, 8, 12, 3, False),  # d_in < d_out
    (2, 7, 12, 8, 4, True),  # d_in > d_out
    (2, 9, 16, 16, 1, True),  # one wide head
    (4, 3, 5, 10, 5, False),  # head_dim 2
    *_random_cases(8),
]
SQUARE_CASES = [case for case in CASES if case[2] == case[3]]
MHA_CLASSES = [MultiHeadAttention, MultiHeadAttentionSDPA]


def _build(cls, case, dropout=0.0, context_length=None):
    """A seeded module of class ``cls`` for ``case`` and a random input batch for it."""
    b, num_tokens, d_in, d_out, num_heads, qkv_bias = case
    torch.manual_seed(sum(case[:5]))
    module = cls(d_in, d_out, context_length or num_tokens, dropout, num_heads, qkv_bias)
    return module.eval(), torch.randn(b, num_tokens, d_in)


def _fused_reference(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """``mha``'s forward pass rebuilt on ``F.scaled_dot_product_attention(is_causal=True)``."""
    b, num_tokens, _ = x.shape

    def heads(t):  # (b, num_tokens, d_out) -> (b, num_heads, num_tokens, head_dim)
        return t.reshape(b, num_tokens, mha.num_heads, -1).permute(0, 2, 1, 3)

    context = F.scaled_dot_product_attention(
        heads(mha.W_query(x)), heads(mha.W_key(x)), heads(mha.W_value(x)), is_causal=True
    )  # (b, num_heads, num_tokens, head_dim)
    return mha.out_proj(context.permute(0, 2, 1, 3).reshape(b, num_tokens, -1))


def _torch_multihead(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """A ``torch.nn.MultiheadAttention`` holding ``mha``'s weights (d_in must equal d_out)."""
    ref = nn.MultiheadAttention(mha.d_out, mha.num_heads, batch_first=True).eval()
    projections = (mha.W_query, mha.W_key, mha.W_value)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))
        if mha.W_query.bias is None:
            ref.in_proj_bias.zero_()
        else:
            ref.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))
        ref.out_proj.load_state_dict(mha.out_proj.state_dict())
    return ref


# --- equivalence --------------------------------------------------------------------------


@pytest.mark.parametrize("cls", MHA_CLASSES)
@pytest.mark.parametrize("case", CASES)
def test_multihead_matches_functional_sdpa(cls, case):
    mha, x = _build(cls, case)
    torch.testing.assert_close(mha(x), _fused_reference(mha, x), atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("cls", MHA_CLASSES)
@pytest.mark.parametrize("case", SQUARE_CASES)
def test_multihead_matches_torch_multihead_attention(cls, case):
    mha, x = _build(cls, case)
    ref = _torch_multihead(mha)
    # nn.MultiheadAttention's boolean attn_mask means True = not allowed, as in this course.
    expected, ref_weights = ref(
        x, x, x, attn_mask=causal_mask(x.shape[1]), average_attn_weights=False
    )
    torch.testing.assert_close(mha(x), expected, atol=ATOL, rtol=ATOL)
    if mha.attn_weights is not None:
        torch.testing.assert_close(mha.attn_weights, ref_weights, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("case", CASES)
def test_causal_attention_is_one_head_of_functional_sdpa(case):
    b, num_tokens, d_in, d_out, _, qkv_bias = case
    torch.manual_seed(sum(case[:4]))
    head = CausalAttention(d_in, d_out, num_tokens, 0.0, qkv_bias)
    x = torch.randn(b, num_tokens, d_in)
    expected = F.scaled_dot_product_attention(
        head.W_query(x), head.W_key(x), head.W_value(x), is_causal=True
    )
    torch.testing.assert_close(head(x), expected, atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("cls", MHA_CLASSES)
@pytest.mark.parametrize("case", CASES)
def test_wrapper_equals_multihead_after_copying_weights(cls, case):
    b, num_tokens, d_in, d_out, num_heads, qkv_bias = case
    torch.manual_seed(sum(case[:5]))
    wrapper = MultiHeadAttentionWrapper(
        d_in, d_out // num_heads, num_tokens, 0.0, num_heads, qkv_bias
    )
    mha = cls(d_in, d_out, num_tokens, 0.0, num_heads, qkv_bias)
    x = torch.randn(b, num_tokens, d_in)
    copy_wrapper_weights(wrapper, mha)
    torch.testing.assert_close(mha(x), wrapper(x), atol=ATOL, rtol=ATOL)
    if mha.attn_weights is not None:
        torch.testing.assert_close(mha.attn_weights, wrapper.attn_weights, atol=ATOL, rtol=ATOL)


def test_copied_heads_are_rows_of_the_weight_and_columns_of_the_papers_w():
    """03, section 5 and further reading: head h owns ROWS h*head_dim:(h+1)*head_dim of
    nn.Linear's stored (d_out, d_in) weight, i.e. the paper's W_i = weight.T (d_model, d_k) go
    side by side as COLUMNS; out_proj becomes weight I and bias 0. d_in != d_out, so the reversed
    stacking has another shape."""
    d_in, head_dim, num_heads = 5, 3, 2
    torch.manual_seed(7)
    wrapper = MultiHeadAttentionWrapper(d_in, head_dim, 4, 0.0, num_heads)
    mha = MultiHeadAttention(d_in, num_heads * head_dim, 4, 0.0, num_heads)
    copy_wrapper_weights(wrapper, mha)
    for name in ("W_query", "W_key", "W_value"):
        stored = [getattr(head, name).weight for head in wrapper.heads]  # (head_dim, d_in) each
        assert torch.equal(getattr(mha, name).weight, torch.cat(stored, dim=0))  # rows
        assert torch.cat(stored, dim=1).shape != getattr(mha, name).weight.shape  # not columns
        papers = [w.T for w in stored]  # W_i: (d_model, d_k) each
        assert torch.equal(getattr(mha, name).weight.T, torch.cat(papers, dim=1))  # columns
        assert torch.cat(papers, dim=0).shape != getattr(mha, name).weight.T.shape  # not rows
    assert torch.equal(mha.out_proj.weight, torch.eye(num_heads * head_dim))
    assert not mha.out_proj.bias.any()


def test_an_out_proj_of_nn_linear_d_out_d_in_stores_the_transpose_of_w_o():
    """03, section 3: nn.Linear(d_out, d_in) maps h*d_v = d_out features to d_model = d_in, as
    the paper's W^O (h*d_v, d_model) does with x @ W^O; its weight has the transposed shape."""
    d_in, d_out = 3, 4  # d_model = 3, h * d_v = 4
    torch.manual_seed(0)
    out_proj = nn.Linear(d_out, d_in)
    assert out_proj.weight.shape == (d_in, d_out) != (d_out, d_in)
    w_o = out_proj.weight.T  # (h * d_v, d_model), the paper's orientation
    concat = torch.randn(2, 5, d_out)  # (b, num_tokens, h * d_v)
    torch.testing.assert_close(out_proj(concat), concat @ w_o + out_proj.bias)
    with pytest.raises(RuntimeError):
        _ = concat @ out_proj.weight  # the weight is not W^O itself


@pytest.mark.parametrize("source_cls, target_cls", [MHA_CLASSES, MHA_CLASSES[::-1]])
@pytest.mark.parametrize("case", CASES)
def test_state_dict_loads_across_mha_and_sdpa(source_cls, target_cls, case):
    source, x = _build(source_cls, case)
    b, num_tokens, d_in, d_out, num_heads, qkv_bias = case
    torch.manual_seed(999)  # different initial weights, all overwritten by the load
    target = target_cls(d_in, d_out, num_tokens, 0.0, num_heads, qkv_bias).eval()
    target.load_state_dict(source.state_dict())  # strict: the same keys in both classes
    torch.testing.assert_close(target(x), source(x), atol=ATOL, rtol=ATOL)


# --- scaled_dot_product_attention, masks, split/merge --------------------------------------


@pytest.mark.parametrize("leading", [(), (3,), (2, 4), (2, 3, 2)])
def test_sdpa_function_matches_torch_for_any_leading_dims(leading):
    torch.manual_seed(len(leading))
    queries, keys = torch.randn(*leading, 5, 4), torch.randn(*leading, 7, 4)
    values = torch.randn(*leading, 7, 3)
    mask = torch.rand(5, 7) < 0.3
    mask[:, 0] = False  # every query keeps at least one key
    context, attn_weights = scaled_dot_product_attention(queries, keys, values, mask=mask)
    # PyTorch's boolean attn_mask means True = ALLOWED: the inverse of this course's mask.
    expected = F.scaled_dot_product_attention(queries, keys, values, attn_mask=~mask)
    torch.testing.assert_close(context, expected, atol=ATOL, rtol=ATOL)
    assert attn_weights.shape == (*leading, 5, 7)
    assert (attn_weights[..., mask] == 0).all()
    unmasked, _ = scaled_dot_product_attention(queries, keys, values)
    torch.testing.assert_close(unmasked, F.scaled_dot_product_attention(queries, keys, values))


def test_sdpa_function_fully_masked_row_gives_zero_weights_and_zero_context():
    torch.manual_seed(0)
    queries, keys, values = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    mask = torch.zeros(3, 5, dtype=torch.bool)
    mask[1] = True  # query 1 may look at nothing
    context, attn_weights = scaled_dot_product_attention(queries, keys, values, mask=mask)
    assert not context.isnan().any() and not attn_weights.isnan().any()
    assert (attn_weights[:, 1] == 0).all() and (context[:, 1] == 0).all()
    torch.testing.assert_close(attn_weights[:, [0, 2]].sum(-1), torch.ones(2, 2))


@pytest.mark.parametrize("fill", [-1e9, torch.finfo(torch.float32).min], ids=["-1e9", "finfo.min"])
def test_left_padding_with_a_causal_mask_and_a_finite_fill_attends_to_the_future(fill):
    """Lecture 05: with pads first and a causal mask, queries 0 and 1 hide every key; filled with
    a finite number, softmax makes those rows uniform over every key, so half of their weight
    lands on the real tokens 2 and 3, which come after them (keys after the query: the causal
    mask broken). The package gives those rows zero weights. Right padding, the reversed
    layout, leaves no row fully hidden and puts no weight on any later key."""
    torch.manual_seed(0)
    queries, keys = torch.randn(4, 8), torch.randn(4, 8)
    scaled = queries @ keys.T / 8**0.5  # (num_queries, num_keys)
    left_pad = torch.tensor([True, True, False, False])  # keys 0, 1 are padding
    future = causal_mask(4)  # True where the key comes after the query
    hidden = future | left_pad
    weights = torch.softmax(scaled.masked_fill(hidden, fill), dim=-1)
    torch.testing.assert_close(weights[:2], torch.full((2, 4), 0.25))
    torch.testing.assert_close(weights[:2, 2:].sum(dim=-1), torch.full((2,), 0.5))
    assert (weights[:2][future[:2]] > 0).all()  # rows 0 and 1 see the future
    assert (weights[2:][hidden[2:]] == 0).all()  # rows that keep a key obey the mask
    right_hidden = future | left_pad.flip(0)
    assert not right_hidden.all(dim=-1).any()
    right = torch.softmax(scaled.masked_fill(right_hidden, fill), dim=-1)
    assert (right[future] == 0).all()
    _, package = scaled_dot_product_attention(queries, keys, keys, mask=hidden)
    assert (package[:2] == 0).all()
    torch.testing.assert_close(package[2:], weights[2:])


# The first head's scores of the lecture notes' stepwise example, as they print them.
NOTES_HEAD_1_SCORES = [[-318.27, -21.97, -48.61], [-294.65, 9.55, -40.73], [-87.56, -1.77, -12.76]]


def _zero_and_renormalise(scaled: torch.Tensor) -> torch.Tensor:
    """Lecture 01's first way: the full softmax, the future zeroed, each row divided by its sum."""
    zeroed = torch.softmax(scaled, dim=-1) * torch.tril(torch.ones_like(scaled))  # 1 = visible
    return zeroed / zeroed.sum(dim=-1, keepdim=True)


@pytest.mark.parametrize(
    "scaled",
    [torch.tensor(NOTES_HEAD_1_SCORES) / 3**0.5, torch.tensor([[0.0, 120.0], [0.0, 0.0]])],
    ids=["notes' stepwise scores", "minimal"],
)
def test_renormalising_is_nan_where_masking_with_inf_stays_finite(scaled):
    """Lecture 01: a future score far above the visible ones makes row 0 of the renormalised
    weights 0/0 = NaN; the course's causal mask with -inf gives that query weight 1 on itself."""
    num_tokens = scaled.shape[-1]
    renormalised = _zero_and_renormalise(scaled)
    assert renormalised[0].isnan().all()
    assert not renormalised[1:].isnan().any()
    # The package's function on queries and keys whose scaled scores are exactly ``scaled``.
    queries, keys = scaled * num_tokens**0.5, torch.eye(num_tokens)
    _, attn_weights = scaled_dot_product_attention(
        queries, keys, keys, mask=causal_mask(num_tokens)
    )
    assert not attn_weights.isnan().any()
    torch.testing.assert_close(attn_weights[0], torch.eye(num_tokens)[0])
    torch.testing.assert_close(attn_weights[1:], renormalised[1:])
    # The mask turned the other way would let "The" see the future key: another answer.
    _, other_way = scaled_dot_product_attention(queries, keys, keys, mask=causal_mask(num_tokens).T)
    assert other_way[0, 0] < 0.5


SMALLEST_FLOAT32 = 2.0**-149  # the smallest positive (subnormal) float32


@pytest.mark.parametrize("gap", [103.4, 103.9, 104.05, 110.0])
def test_renormalising_is_nan_only_past_a_gap_of_104_not_103(gap):
    """Lecture 01: e^-gap rounds to 0 in float32 only below half the smallest positive float32,
    2^-150 = e^-103.97; between e^-103.28 (2^-149 itself) and e^-103.97 it still rounds up to
    2^-149, so the renormalised row is finite and right. A threshold of 103.3 would make the
    first two gaps NaN."""
    assert math.log(SMALLEST_FLOAT32) == pytest.approx(-103.28, abs=0.005)
    assert math.log(SMALLEST_FLOAT32 / 2) == pytest.approx(-103.97, abs=0.005)
    halves = torch.tensor([0.51, 0.5, 0.49]) * SMALLEST_FLOAT32
    assert halves.tolist() == [SMALLEST_FLOAT32, 0.0, 0.0]  # exactly half: a tie, to even 0
    # ties go to the even neighbour, not always down: 1.5 units round up to 2
    assert torch.tensor(1.5 * SMALLEST_FLOAT32).item() == 2 * SMALLEST_FLOAT32
    scaled = torch.tensor([[0.0, gap], [0.0, 0.0]])  # query 0 sees key 0; key 1 is its future
    renormalised = _zero_and_renormalise(scaled)
    visible = torch.softmax(scaled, dim=-1)[0, 0].item()
    if gap < -math.log(SMALLEST_FLOAT32 / 2):
        assert visible == SMALLEST_FLOAT32
        assert renormalised[0].tolist() == [1.0, 0.0]
    else:
        assert visible == 0.0
        assert renormalised[0].isnan().all()


@pytest.mark.parametrize("gap", [60.0, 80.0, 87.0, 95.0, 100.0, 101.0, 102.0, 103.0, 103.9, 104.1])
def test_renormalising_subnormal_weights_is_finite_but_wrong_between_gaps_87_and_104(gap):
    """Lecture 01's quiet failure: visible scores 0 and 0.3, a future score ``gap`` above the
    larger. Up to a gap of 87 (e^-87.34 = 2^-126, the smallest normal float32) renormalising
    agrees with -inf to float32 rounding; past it the visible weights are subnormal, whole
    multiples of 2^-149, and the renormalised weights are finite but wrong, more so as the gap
    grows (0.41176 at 101, 0.5 at 103, 0 at 103.9); past 104, NaN. The -inf way is right for
    every gap."""
    assert math.log(2.0**-126) == pytest.approx(-87.34, abs=0.005)
    scaled = torch.zeros(3, 3)
    scaled[1] = torch.tensor([0.0, 0.3, 0.3 + gap])  # query 1 sees keys 0 and 1; key 2 is future
    right = torch.softmax(torch.tensor([0.0, 0.3]), dim=-1)  # [0.42556, 0.57444]
    renormalised = _zero_and_renormalise(scaled)[1, :2]
    queries, keys = scaled * 3**0.5, torch.eye(3)
    _, attn_weights = scaled_dot_product_attention(queries, keys, keys, mask=causal_mask(3))
    torch.testing.assert_close(attn_weights[1, :2], right)
    error = (renormalised - right).abs().max().item()
    if gap <= 87.0:
        assert error < 1e-6
    elif gap < 104.0:
        assert renormalised.isfinite().all()
        # the printed drift: the fifth decimal at 95 and 100, then tenths
        least = {95.0: 5e-6, 100.0: 5e-6, 101.0: 0.01, 102.0: 0.002, 103.0: 0.07, 103.9: 0.4}
        assert error > least[gap]
    else:
        assert renormalised.isnan().all()


@pytest.mark.parametrize(
    ("dtype", "finite", "nan", "smallest"),
    [(torch.float16, 17.0, 17.4, 2.0**-24), (torch.bfloat16, 92.0, 92.9, 2.0**-133)],
)
def test_renormalising_weights_stored_in_16_bits_fails_at_smaller_gaps(
    dtype, finite, nan, smallest
):
    """Lecture 01: weights stored in float16 (normal numbers end at e^-9.70) renormalise to
    0.5 and 0.5 at a gap of 17 and to NaN past 17.33 = -log(half the smallest subnormal);
    bfloat16 has float32's normal range but 7 fraction bits, so its subnormals end at 2^-133,
    not 2^-149, and it is NaN past 92.88, float32 only past 103.97. The -inf way stays right
    in every dtype."""
    info = torch.finfo(dtype)
    assert info.tiny * info.eps == smallest  # the smallest subnormal
    if dtype == torch.bfloat16:
        assert info.tiny == torch.finfo(torch.float32).tiny  # the same normal range
        assert torch.tensor(smallest, dtype=dtype).item() == smallest
        assert torch.tensor(smallest / 2, dtype=dtype).item() == 0.0  # a tie, to even 0
    assert -math.log(info.tiny * info.eps / 2) == pytest.approx(nan, abs=0.1)
    future = torch.tensor([False, False, True])
    right = torch.softmax(torch.tensor([0.0, 0.3]), dim=-1).to(dtype)
    for gap in (finite, nan):
        row = torch.tensor([0.0, 0.3, 0.3 + gap])  # (num_keys,), float32
        full = torch.softmax(row, dim=-1)[:2]
        assert torch.isfinite(full / full.sum()).all()  # float32 is fine at both gaps
        stored = full.to(dtype)
        renormalised = stored / stored.sum()
        with_inf = torch.softmax(row.masked_fill(future, -torch.inf), dim=-1)[:2].to(dtype)
        assert torch.equal(with_inf, right)
        if gap == finite:
            assert renormalised.tolist() == [0.5, 0.5]
        else:
            assert renormalised.isnan().all()


@pytest.mark.parametrize(
    ("gap", "one_key", "many_keys"), [(95.0, "right", "wrong"), (100.0, "right", "nan")]
)
def test_many_future_keys_at_the_top_lower_every_gap_by_ln_n(gap, one_key, many_keys):
    """Lecture 01: the gaps (subnormal past 87.34, NaN past 103.97) are for one future key at
    the top. A visible weight is e^(s_j - s_max) / Z and Z counts every future key near the
    top, so 1000 tied future keys lower each gap by ln 1000 = 6.91 (to 80.43 and 97.06): at a
    gap of 95 renormalising gives 3/7 = 0.42857 instead of 0.42556, at 100 NaN, where one
    future key gives finite weights within 5e-5 of the right ones. More keys never raise a gap:
    the reversed reading (more keys, safer) fails both rows. The -inf way is right always."""
    right = torch.softmax(torch.tensor([0.0, 0.3]), dim=-1)  # [0.42556, 0.57444]
    assert math.log(2.0**126 / 1000) == pytest.approx(80.43, abs=0.005)
    assert math.log(2.0**150 / 1000) == pytest.approx(97.06, abs=0.005)
    for n, expected in ((1, one_key), (1000, many_keys)):
        row = torch.cat([torch.tensor([0.0, 0.3]), torch.full((n,), 0.3 + gap)])  # (num_keys,)
        full = torch.softmax(row, dim=-1)[:2]
        renormalised = full / full.sum()
        with_inf = torch.softmax(row.masked_fill(torch.arange(n + 2) >= 2, -torch.inf), dim=-1)
        torch.testing.assert_close(with_inf[:2], right)
        if expected == "right":
            torch.testing.assert_close(renormalised, right, atol=5e-5, rtol=0)
        elif expected == "wrong":
            assert renormalised.tolist() == pytest.approx([3 / 7, 4 / 7])
        else:
            assert renormalised.isnan().all()


@pytest.mark.parametrize("spread", [0.3, 5.0])
def test_flush_to_zero_sets_the_lowest_visible_weights_to_zero_first(spread):
    """Lecture 01, review r01b: with flush-to-zero every float32 result below 2^-126 is 0, so
    on a row [0, spread, spread + gap] renormalising is right up to about 87.34 - spread, then
    quietly one-hot on the higher visible key (the key with score ``spread``, not 0: the
    reversed reading fails), then NaN past 87.34. The quiet window is as wide as the spread of
    the visible scores (0.3 on the lecture's row, 5 on the review's row [0, 5, 5 + gap])."""
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush subnormals")
    try:
        right = torch.softmax(torch.tensor([0.0, spread]), dim=-1)
        limit = -math.log(2.0**-126)  # 87.34
        for gap, expected in (
            (limit - spread - 0.05, "right"),
            (limit - spread + 0.05, "one-hot"),
            (limit - 0.05, "one-hot"),
            (limit + 0.05, "nan"),
        ):
            full = torch.softmax(torch.tensor([0.0, spread, spread + gap]), dim=-1)[:2]
            renormalised = full / full.sum()
            if expected == "right":
                torch.testing.assert_close(renormalised, right)
            elif expected == "one-hot":
                assert renormalised.tolist() == [0.0, 1.0], gap
            else:
                assert renormalised.isnan().all(), gap
    finally:
        torch.set_flush_denormal(False)


def test_a_finite_fill_must_fit_the_scores_dtype():
    """Lecture 01: -1e9 is a valid fill in float32 and bfloat16 (stored as -998244352) but
    overflows float16 (most negative -65504); torch.finfo(dtype).min fits every dtype and,
    before the softmax, gives the visible keys their right weights."""
    future = torch.tensor([False, False, True])
    assert torch.zeros(3).masked_fill(future, -1e9)[2].item() == -1e9
    assert torch.zeros(3, dtype=torch.bfloat16).masked_fill(future, -1e9)[2].item() == -998244352
    with pytest.raises(RuntimeError, match="Half without overflow"):
        torch.zeros(3, dtype=torch.float16).masked_fill(future, -1e9)
    assert torch.finfo(torch.float16).min == -65504
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        scores = torch.tensor([0.0, 0.3, 50.0], dtype=dtype)
        weights = torch.softmax(scores.masked_fill(future, torch.finfo(dtype).min), dim=-1)
        assert weights[2] == 0
        torch.testing.assert_close(
            weights[:2].float(), torch.tensor([0.42556, 0.57444]), atol=5e-3, rtol=0
        )


def test_an_added_finfo_min_mask_rounds_float16_scores_to_steps_of_32():
    """Lecture 05: float16's spacing near -65504 is 32, so finfo.min + score overflows to -inf
    for a score of -16 or less and rounds UP one step, to -65472, for 16 to 48 (48 is a tie,
    to the even -65472), two steps for 49: in a fully hidden row the key lifted highest takes
    all the weight. float32 and bfloat16 give uniform weights."""
    low16 = torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16)
    scores = (-16.0, -15.0, 15.0, 16.0, 48.0, 49.0, 80.0)
    assert [(low16 + s).item() for s in scores] == [
        -torch.inf,
        -65504,
        -65504,
        -65472,
        -65472,
        -65440,
        -65408,
    ]
    row = torch.tensor([0.0, 5.0, 10.0, 20.0])  # every key hidden; only key 3 scores >= 16
    assert torch.softmax(row.half() + low16, dim=-1).tolist() == [0.0, 0.0, 0.0, 1.0]
    assert torch.softmax(row.flip(0).half() + low16, dim=-1).tolist() == [1.0, 0.0, 0.0, 0.0]
    for dtype in (torch.float32, torch.bfloat16):
        weights = torch.softmax(row.to(dtype) + torch.finfo(dtype).min, dim=-1)
        assert weights.float().tolist() == [0.25] * 4


def test_a_non_persistent_buffer_moves_but_stays_out_of_the_state_dict():
    """Lecture 01: a buffer is in the state_dict by default; persistent=False leaves it out
    (it still moves with the module). CausalAttention's mask is persistent, so a checkpoint of
    context_length 6 does not load into a module of context_length 8."""
    module = nn.Module()
    module.register_buffer("mask", causal_mask(4), persistent=False)
    module.register_buffer("kept", causal_mask(4))
    moved = module.to("meta")
    assert moved.mask.device.type == "meta"
    assert list(moved.state_dict()) == ["kept"]
    short, long = CausalAttention(3, 2, 6, 0.0), CausalAttention(3, 2, 8, 0.0)
    assert "mask" in short.state_dict()
    with pytest.raises(RuntimeError, match="size mismatch for mask"):
        long.load_state_dict(short.state_dict())


def test_a_fully_hidden_row_is_nan_with_inf_and_uniform_with_minus_1e9():
    """Lecture 01: -inf is safe only while a query keeps a visible key (the causal diagonal)."""
    assert torch.softmax(torch.full((3,), -torch.inf), dim=-1).isnan().all()
    torch.testing.assert_close(
        torch.softmax(torch.full((3,), -1e9), dim=-1), torch.full((3,), 1 / 3)
    )
    assert not causal_mask(5).all(dim=-1).any()  # the causal mask never hides a whole row


def test_renormalising_the_recomputed_stepwise_scores_is_nan_for_the_first_token():
    """The same on the float32 scores recomputed from the notes' weights (not the printed ones)."""
    x = example("kid").batch()  # (1, 3, 6): "The Kid Smiles"
    torch.manual_seed(0)
    Wq, Wk = torch.randn(6, 6), torch.randn(6, 6)
    queries, keys = split_heads(x @ Wq, 2), split_heads(x @ Wk, 2)  # (1, 2, 3, 3)
    scaled = (queries @ keys.transpose(2, 3))[0, 0] / 3**0.5  # head 1: (3, 3)
    torch.testing.assert_close(
        scaled * 3**0.5, torch.tensor(NOTES_HEAD_1_SCORES), atol=0.01, rtol=0
    )
    assert _zero_and_renormalise(scaled)[0].isnan().all()
    _, attn_weights = scaled_dot_product_attention(
        queries, keys, keys, mask=causal_mask(3)
    )  # (1, 2, 3, 3)
    assert not attn_weights.isnan().any()
    torch.testing.assert_close(attn_weights[0, 0, 0], torch.tensor([1.0, 0.0, 0.0]))


def test_causal_mask_hides_exactly_the_future():
    expected = torch.tensor([[0, 1, 1, 1], [0, 0, 1, 1], [0, 0, 0, 1], [0, 0, 0, 0]]).bool()
    assert torch.equal(causal_mask(4), expected)
    assert torch.equal(causal_mask(1), torch.tensor([[False]]))


def test_padding_mask_hides_exactly_the_padded_keys():
    mask = padding_mask([2, 4, 1], num_tokens=4)
    assert mask.shape == (3, 1, 1, 4) and mask.dtype == torch.bool
    expected = torch.tensor([[0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 1, 1]]).bool()
    assert torch.equal(mask[:, 0, 0], expected)

    torch.manual_seed(1)
    queries, keys, values = (torch.randn(3, 2, 4, 5) for _ in range(3))  # (b, heads, T, d)
    context, attn_weights = scaled_dot_product_attention(queries, keys, values, mask=mask)
    assert (attn_weights.masked_select(mask) == 0).all()
    torch.testing.assert_close(attn_weights.sum(-1), torch.ones(3, 2, 4))
    # Whatever sits at the padded positions cannot reach any output.
    garbage_keys, garbage_values = keys.clone(), values.clone()
    garbage_keys[mask.expand_as(attn_weights)[..., 0, :]] = 1e3
    garbage_values[mask.expand_as(attn_weights)[..., 0, :]] = -1e3
    context2, _ = scaled_dot_product_attention(queries, garbage_keys, garbage_values, mask=mask)
    torch.testing.assert_close(context2, context)


def test_split_and_merge_heads_are_inverse_and_group_columns_by_head():
    x = torch.arange(2 * 3 * 6.0).reshape(2, 3, 6)
    heads = split_heads(x, 2)
    assert heads.shape == (2, 2, 3, 3)
    assert torch.equal(heads[:, 1], x[..., 3:])  # head 1 owns columns 3..5
    assert torch.equal(merge_heads(heads), x)


@pytest.mark.parametrize("seed", range(3))
def test_reshape_of_a_transposed_tensor_follows_logical_order_not_memory_order(seed):
    """04: reshape fills the new shape in row-major (index) order whatever the strides; only for
    a contiguous tensor is that memory order. A transposed tensor tells the two apart."""
    torch.manual_seed(seed)
    x = torch.randn(2, 3, 4)  # contiguous
    swapped = x.transpose(1, 2)  # (2, 4, 3), the same memory as x
    assert not swapped.is_contiguous() and swapped.data_ptr() == x.data_ptr()
    logical = torch.tensor(
        [[swapped[i, j, k].item() for j in range(4) for k in range(3)] for i in range(2)]
    )
    memory = torch.as_strided(swapped, (2, 12), (12, 1))  # the numbers as stored
    assert torch.equal(swapped.reshape(2, 12), logical)
    assert not torch.equal(swapped.reshape(2, 12), memory)
    # contiguous: index order and memory order are the same thing
    assert torch.equal(x.reshape(2, 12), torch.as_strided(x, (2, 12), (12, 1)))


def test_reshape_of_the_notebooks_swapped_heads_gives_the_printed_row():
    """04, Part 4: the transposed (b, num_tokens, num_heads, head_dim) labels reshape to a first
    row [0, 1, 2, 9, 10, 11] (token 1 of both heads), not memory's [0, 1, 2, 3, 4, 5]."""
    context_vec = torch.arange(18).view(1, 2, 3, 3)  # (b, num_heads, num_tokens, head_dim)
    swapped = context_vec.transpose(1, 2)  # (b, num_tokens, num_heads, head_dim)
    assert swapped.reshape(1, 3, 6)[0, 0].tolist() == [0, 1, 2, 9, 10, 11]
    assert context_vec.flatten()[:6].tolist() == [0, 1, 2, 3, 4, 5]


# --- the causal property, weights and dropout ----------------------------------------------


def _causal_modules(d_in=6, context_length=8, dropout=0.0):
    """One of each causal module with 2 heads (of width 3 where the width is per head)."""
    torch.manual_seed(5)
    return {
        "CausalAttention": CausalAttention(d_in, 6, context_length, dropout),
        "Wrapper": MultiHeadAttentionWrapper(d_in, 3, context_length, dropout, num_heads=2),
        "MultiHeadAttention": MultiHeadAttention(d_in, 6, context_length, dropout, 2),
        "MultiHeadAttentionSDPA": MultiHeadAttentionSDPA(d_in, 6, context_length, dropout, 2),
    }


@pytest.mark.parametrize("name", list(_causal_modules()))
def test_changing_a_future_token_never_changes_an_earlier_output(name):
    module = _causal_modules()[name].eval()
    torch.manual_seed(6)
    assert_causal(module, torch.randn(2, 8, 6), ATOL)


@pytest.mark.parametrize(
    "name, expected_shape",
    [
        ("CausalAttention", (2, 5, 5)),
        ("Wrapper", (2, 2, 5, 5)),
        ("MultiHeadAttention", (2, 2, 5, 5)),
        ("MultiHeadAttentionSDPA", None),
    ],
)
def test_attn_weights_are_causal_rows_of_one_and_detached(name, expected_shape):
    module = _causal_modules()[name].eval()
    assert module.attn_weights is None  # nothing computed yet
    torch.manual_seed(7)
    module(torch.randn(2, 5, 6, requires_grad=True)).sum().backward()
    weights = module.attn_weights
    if expected_shape is None:
        assert weights is None  # the fused kernel never materialises them
        return
    assert weights.shape == expected_shape
    assert not weights.requires_grad and weights.grad_fn is None
    assert (weights[..., causal_mask(5)] == 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(expected_shape[:-1]))
    assert (weights[..., ~causal_mask(5)] > 0).all()


def _context_from_weights(module, x, weights):
    """The module's output recomputed from the weights it stored and its value projection."""
    if isinstance(module, CausalAttention):
        return weights @ module.W_value(x)
    if isinstance(module, MultiHeadAttentionWrapper):
        return torch.cat(
            [w @ h.W_value(x) for w, h in zip(weights.unbind(1), module.heads, strict=True)], -1
        )
    return module.out_proj(merge_heads(weights @ split_heads(module.W_value(x), 2)))


@pytest.mark.parametrize("name", ["CausalAttention", "Wrapper", "MultiHeadAttention"])
def test_dropout_is_identity_in_eval_and_rescales_survivors_in_train(name):
    p = 0.5
    module = _causal_modules(context_length=16, dropout=p)[name]
    no_dropout = _causal_modules(context_length=16, dropout=0.0)[name].eval()
    torch.manual_seed(8)
    x = torch.randn(3, 16, 6)
    module.eval()
    torch.testing.assert_close(module(x), no_dropout(x))  # same weights: same seed
    eval_weights = module.attn_weights

    module.train()
    out = module(x)
    train_weights = module.attn_weights
    kept = train_weights != 0
    torch.testing.assert_close(train_weights[kept], eval_weights[kept] / (1 - p))
    assert (train_weights[~kept] == 0).all()
    allowed = eval_weights > 0
    assert 0.3 < kept[allowed].float().mean() < 0.7  # about half of the weights survive
    torch.testing.assert_close(out, _context_from_weights(module, x, train_weights))


def test_sdpa_module_dropout_only_in_train():
    modules = _causal_modules(context_length=16, dropout=0.5)
    sdpa, mha = modules["MultiHeadAttentionSDPA"], modules["MultiHeadAttention"]
    sdpa.load_state_dict(mha.state_dict())
    torch.manual_seed(9)
    x = torch.randn(3, 16, 6)
    torch.testing.assert_close(sdpa.eval()(x), mha.eval()(x), atol=ATOL, rtol=ATOL)
    assert not torch.allclose(sdpa.train()(x), sdpa.eval()(x))


def test_sdpa_function_dropout_rescales_survivors():
    torch.manual_seed(10)
    queries, keys, values = (torch.randn(4, 12, 8) for _ in range(3))
    _, eval_weights = scaled_dot_product_attention(queries, keys, values)
    context, weights = scaled_dot_product_attention(
        queries, keys, values, dropout=nn.Dropout(0.25).train()
    )
    kept = weights != 0
    torch.testing.assert_close(weights[kept], eval_weights[kept] / 0.75)
    assert 0.6 < kept.float().mean() < 0.9
    torch.testing.assert_close(context, weights @ values)


# --- the lecture's printed numbers (seed 001) ----------------------------------------------
# Copied from the published notebook output. Each is compared at the precision it was
# printed with: half a unit of the last printed digit, never finer than 1e-4.


def assert_printed(actual: torch.Tensor, printed: list, decimals: int) -> None:
    """``actual`` equals the ``printed`` numbers up to the rounding of the printout."""
    atol = max(1e-4, 0.5 * 10**-decimals)
    torch.testing.assert_close(actual, torch.tensor(printed), atol=atol, rtol=0)


def test_stepwise_walkthrough_numbers():
    x = example("kid").batch()  # (1, 3, 6): "The Kid Smiles"
    torch.manual_seed(0)
    Wq, Wk, Wv = torch.randn(6, 6), torch.randn(6, 6), torch.randn(6, 6)
    Q, K, V = x @ Wq, x @ Wk, x @ Wv  # (1, 3, 6) each
    assert_printed(
        Q,
        [
            [
                [-9.0244, -11.7287, 15.5360, -1.4474, -4.5326, 9.4674],
                [-8.0564, -13.2309, 8.2228, -8.9680, 3.1995, 4.8321],
                [-2.4401, -3.5657, 3.3941, -1.4879, -0.1904, 2.0428],
            ]
        ],
        decimals=4,
    )
    assert_printed(
        K,
        [
            [
                [8.2602, 14.1116, -5.0345, -16.4865, -2.9948, 8.3139],
                [-6.1188, -0.1587, -5.0885, -14.3014, 4.9540, 5.6093],
                [0.3059, 1.9933, -1.4461, -4.3983, 0.2799, 1.9890],
            ]
        ],
        decimals=4,
    )
    assert_printed(
        V,
        [
            [
                [0.5076, -3.4353, 1.8576, 2.8041, 8.9427, 13.1841],
                [-1.9113, -3.6934, 1.8502, 1.7622, 1.6981, 3.0978],
                [-0.2005, -1.0184, 0.5297, 0.6523, 1.5201, 2.3260],
            ]
        ],
        decimals=4,
    )
    queries, keys, values = split_heads(Q, 2), split_heads(K, 2), split_heads(V, 2)
    assert_printed(
        queries @ keys.transpose(2, 3),
        [
            [
                [[-318.27, -21.97, -48.61], [-294.65, 9.55, -40.73], [-87.56, -1.77, -12.76]],
                [[116.15, 51.35, 23.93], [178.44, 171.21, 49.95], [42.08, 31.79, 10.55]],
            ]
        ],
        decimals=2,
    )
    _, attn_weights = scaled_dot_product_attention(queries, keys, values, mask=causal_mask(3))
    assert_printed(
        attn_weights,
        [
            [
                [[1.000, 0.000, 0.000], [0.000, 1.000, 0.000], [0.000, 0.998, 0.002]],
                [[1.000, 0.000, 0.000], [0.985, 0.015, 0.000], [0.997, 0.003, 0.000]],
            ]
        ],
        decimals=3,
    )


# The wrapper's printed output: from CausalAttention heads that used values as keys.
WRAPPER_PRINTED = [
    [
        [-0.5762, -0.1627, 0.5569, 0.3635],
        [-0.5650, -0.0622, 0.5600, 0.2991],
        [-0.5474, -0.1223, 0.5293, 0.3414],
        [-0.5786, -0.0938, 0.5637, 0.3375],
        [-0.5586, -0.0418, 0.5521, 0.3015],
        [-0.5271, -0.0006, 0.5282, 0.2698],
    ]
]
# The weight-split class's printed output: its masked_fill result was thrown away. Both
# batch items are the same "rows" example.
WEIGHT_SPLIT_PRINTED = [
    [
        [-0.3464, 0.3428, 0.3846, -0.1505, 0.1512, 0.0491],
        [-0.3462, 0.3426, 0.3844, -0.1505, 0.1516, 0.0493],
        [-0.3465, 0.3427, 0.3842, -0.1503, 0.1512, 0.0489],
    ]
] * 2


class KeysSwappedForValues(CausalAttention):
    """The wrapper seed's bug: ``queries @ values.transpose(1, 2)`` as attention scores."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        queries, values = self.W_query(x), self.W_value(x)  # (b, num_tokens, d_out)
        num_tokens = x.shape[1]
        attn_scores = queries @ values.transpose(1, 2)  # the bug: keys should be here
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / self.d_out**0.5, dim=-1)
        return attn_weights @ values


class MaskNotInPlace(MultiHeadAttention):
    """The weight-split seed's bug: ``masked_fill`` (not ``masked_fill_``), result discarded."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        queries = split_heads(self.W_query(x), self.num_heads)  # (b, h, num_tokens, head_dim)
        keys = split_heads(self.W_key(x), self.num_heads)
        values = split_heads(self.W_value(x), self.num_heads)
        attn_scores = queries @ keys.transpose(2, 3)  # (b, h, num_tokens, num_tokens)
        num_tokens = x.shape[1]
        attn_scores.masked_fill(self.mask[:num_tokens, :num_tokens], -torch.inf)  # the bug
        attn_weights = torch.softmax(attn_scores / self.head_dim**0.5, dim=-1)
        return self.out_proj(merge_heads(attn_weights @ values))


def _lecture_wrapper() -> MultiHeadAttentionWrapper:
    torch.manual_seed(123)
    return MultiHeadAttentionWrapper(3, 2, context_length=6, dropout=0.0, num_heads=2)


def _lecture_weight_split() -> MultiHeadAttention:
    torch.manual_seed(123)
    return MultiHeadAttention(6, 6, context_length=3, dropout=0.0, num_heads=2, qkv_bias=True)


def _mismatched_rows(actual: torch.Tensor, printed: list) -> list[int]:
    """Token positions whose printed row differs from ``actual`` by more than 1e-4."""
    far = (actual - torch.tensor(printed)).abs() > 1e-4  # (b, num_tokens, d_out)
    return far.any(dim=-1).any(dim=0).nonzero().flatten().tolist()


def test_wrapper_reproduces_the_only_correct_printed_row():
    out = _lecture_wrapper()(example("dream").batch())
    assert_printed(out[:, 0], [WRAPPER_PRINTED[0][0]], decimals=4)
    assert _mismatched_rows(out, WRAPPER_PRINTED) == [1, 2, 3, 4, 5]


def test_wrapper_head_h_owns_the_block_of_columns_h_times_d_out():
    """02, sections 2 and 4: heads[h]'s output is the block of columns h*d_out:(h+1)*d_out,
    not every num_heads-th column; d_in = 5, d_out = 3, num_heads = 4 all differ, so the
    readings give different columns. On the lecture's wrapper, head 1 (columns 0:2, not 2:4)
    is lecture 01's head built after torch.manual_seed(123)."""
    d_in, d_out, num_heads = 5, 3, 4
    torch.manual_seed(0)
    wrapper = MultiHeadAttentionWrapper(d_in, d_out, 7, 0.0, num_heads)
    x = torch.randn(2, 7, d_in)
    out = wrapper(x)
    assert out.shape == (2, 7, num_heads * d_out)
    for h, head in enumerate(wrapper.heads):
        assert torch.equal(out[..., h * d_out : (h + 1) * d_out], head(x))
        assert not torch.equal(out[..., h::num_heads], head(x))
        assert torch.equal(wrapper.attn_weights[:, h], head.attn_weights)
    dream = example("dream").batch()
    context_vecs = _lecture_wrapper()(dream)
    torch.manual_seed(123)
    lecture_01 = CausalAttention(3, 2, context_length=6, dropout=0.0)(dream)
    assert torch.equal(context_vecs[..., 0:2], lecture_01)
    assert not torch.allclose(context_vecs[..., 2:4], lecture_01, atol=1e-2)


def test_weight_split_reproduces_the_only_correct_printed_row():
    out = _lecture_weight_split()(example("rows").batch(2))
    assert_printed(out[:, 2], [row[2] for row in WEIGHT_SPLIT_PRINTED], decimals=4)
    assert _mismatched_rows(out, WEIGHT_SPLIT_PRINTED) == [0, 1]


def test_bug_zoo_keys_swapped_for_values_reproduces_the_printed_wrapper_output():
    heads = []
    for head in _lecture_wrapper().heads:
        buggy = KeysSwappedForValues(3, 2, context_length=6, dropout=0.0)
        buggy.load_state_dict(head.state_dict())
        heads.append(buggy)
    x = example("dream").batch()
    assert_printed(torch.cat([h(x) for h in heads], dim=-1), WRAPPER_PRINTED, decimals=4)


def test_bug_zoo_lost_mask_reproduces_the_printed_weight_split_output():
    buggy = MaskNotInPlace(6, 6, context_length=3, dropout=0.0, num_heads=2, qkv_bias=True)
    buggy.load_state_dict(_lecture_weight_split().state_dict())
    assert_printed(buggy(example("rows").batch(2)), WEIGHT_SPLIT_PRINTED, decimals=4)


def test_batched_matmul_on_transposed_heads_copies_them():
    """03: `view` and `transpose` copy nothing, but `@` copies the transposed q, k and v.

    matmul folds (b, num_heads) into one batch dim with `reshape`, which must copy a transposed
    view; `.contiguous()` copies the merged heads once more. num_tokens = 5 and head_dim = 3
    differ, so the shapes tell queries (b, h, 5, 3) from transposed keys (b, h, 3, 5). The copies
    need b, num_heads and num_tokens all > 1: with b = 1 only `.contiguous()` copies, with one
    head or one token nothing does.
    """
    from attn_course.tiled import layout_copies

    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 6, context_length=5, dropout=0.0, num_heads=2)
    x = torch.randn(2, 5, 6)
    with torch.no_grad():
        copies = layout_copies(mha, x)
        q = mha.W_query(x).view(2, 5, 2, 3).transpose(1, 2)  # (b, num_heads, num_tokens, head_dim)
        k = mha.W_key(x).view(2, 5, 2, 3).transpose(1, 2)
        views_only = layout_copies(lambda: mha.W_key(x).view(2, 5, 2, 3).transpose(1, 2).mT)
        scores = layout_copies(lambda: q @ k.transpose(2, 3))
        contiguous_scores = layout_copies(lambda: q.contiguous() @ k.transpose(2, 3).contiguous())
        one_sequence = layout_copies(mha, x[:1])
        one_token = layout_copies(mha, x[:, :1])
        one_head_mha = MultiHeadAttention(6, 6, context_length=5, dropout=0.0, num_heads=1)
        one_head = layout_copies(one_head_mha, x)
        q1 = one_head_mha.W_query(x).view(2, 5, 1, 6).transpose(1, 2)  # (b, 1, num_tokens, 6)
        k1 = one_head_mha.W_key(x).view(2, 5, 1, 6).transpose(1, 2)
        one_head_scores = layout_copies(lambda: q1 @ k1.transpose(2, 3))
        k_one_token = mha.W_key(x[:, :1]).view(2, 1, 2, 3).transpose(1, 2)  # (b, h, 1, head_dim)
        merged = torch.randn(2, 1, 5, 6).transpose(1, 2)  # one head's context, heads swapped back
    assert copies == [
        ("aten::matmul", (2, 2, 5, 3)),  # queries
        ("aten::matmul", (2, 2, 3, 5)),  # keys.transpose(2, 3)
        ("aten::matmul", (2, 2, 5, 3)),  # values
        ("aten::contiguous", (2, 5, 2, 3)),  # the merged heads
    ]
    assert views_only == []
    assert scores == [("aten::matmul", (2, 2, 5, 3)), ("aten::matmul", (2, 2, 3, 5))]
    assert [op for op, _ in contiguous_scores] == ["aten::contiguous", "aten::contiguous"]
    # b = 1: reshape merges the size-1 batch dim with the heads without copying.
    assert one_sequence == [("aten::contiguous", (1, 5, 2, 3))]
    # One token or one head: the transposes only move a size-1 dim, so nothing is copied at all,
    # and `.contiguous()` hands back the merged heads' own memory.
    assert one_token == []
    assert one_head == []
    # One head: the transposed keys (b, 1, head_dim, num_tokens) are NOT row by row (head_dim and
    # num_tokens swapped, both > 1), yet nothing is copied: (b, 1) folds into b whatever the
    # strides, and bmm takes a matrix stored by columns as it is.
    keys_t = k1.transpose(2, 3)
    assert keys_t.shape == (2, 1, 6, 5) and keys_t.stride() == (30, 6, 1, 6)
    assert not keys_t.is_contiguous()
    assert one_head_scores == []
    # One token: the transposes move only a size-1 dim, so the transposed keys stay row by row.
    assert k_one_token.transpose(2, 3).is_contiguous()
    # Neither b nor num_heads has size 1 there: the fold needs no copy because
    # stride(b) = num_heads * stride(heads) (6 = 2 * 3), not because of a size-1 dim.
    assert k_one_token.shape[:2] == (2, 2) and k_one_token.stride() == (6, 3, 6, 1)
    assert k_one_token.stride(0) == k_one_token.shape[1] * k_one_token.stride(1)
    assert merged.contiguous().data_ptr() == merged.data_ptr()


@pytest.mark.parametrize("num_heads", [1, 2, 3])
def test_wrapper_runs_five_products_per_head_and_the_split_class_two_batched(num_heads):
    """03: per head the wrapper runs 3 projections and 2 attention products (5 * num_heads in
    all); MultiHeadAttention runs 3 projections, 2 batched products over b * num_heads, out_proj.

    num_tokens = 5 and head_dim = 3 differ, so the shapes tell scores (queries @ keys^T) from the
    weighted sum (weights @ values).
    """
    from attn_course.tiled import matrix_products

    head_dim = 3
    torch.manual_seed(0)
    wrapper = MultiHeadAttentionWrapper(6, head_dim, 5, 0.0, num_heads)
    split = MultiHeadAttention(6, num_heads * head_dim, 5, 0.0, num_heads)
    x = torch.randn(2, 5, 6)  # (b, num_tokens, d_in)
    with torch.no_grad():
        wrapper_ops = [op for op, *_ in matrix_products(wrapper, x)]
        split_products = matrix_products(split, x)
    one_head = ["aten::mm"] * 3 + ["aten::bmm"] * 2  # projections, then scores and weighted sum
    assert wrapper_ops == one_head * num_heads
    assert len(wrapper_ops) == 5 * num_heads
    assert [op for op, *_ in split_products] == one_head + ["aten::addmm"]  # out_proj has a bias
    batch = 2 * num_heads  # b * num_heads
    assert split_products[3][1:] == ((batch, 5, head_dim), (batch, head_dim, 5))  # q @ k^T
    assert split_products[4][1:] == ((batch, 5, 5), (batch, 5, head_dim))  # weights @ values
    assert split_products[0][1:] == ((10, 6), (6, num_heads * head_dim))  # (b * num_tokens, d_in)
    # With qkv_bias=True each projection adds its bias: addmm instead of mm.
    with_bias = MultiHeadAttention(6, num_heads * head_dim, 5, 0.0, num_heads, qkv_bias=True)
    with torch.no_grad():
        bias_ops = [op for op, *_ in matrix_products(with_bias, x)]
    assert bias_ops == ["aten::addmm"] * 3 + ["aten::bmm"] * 2 + ["aten::addmm"]


def test_weight_split_masks_before_it_scales_by_sqrt_head_dim_and_the_order_changes_nothing():
    """03, step 5: the class masks the raw scores, then divides by sqrt(head_dim), not sqrt(d_out).

    Scaling first (the notebook's walk-through) gives the same weights bit for bit: the visible
    scores are divided identically, and -inf / sqrt(head_dim) is still -inf.
    """
    from attn_course.tiled import _profiled_events

    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 6, context_length=5, dropout=0.0, num_heads=2)
    x = torch.randn(2, 5, 6)
    with torch.no_grad():
        names = [e.name for e in _profiled_events(mha, x)]
        q = split_heads(mha.W_query(x), 2)  # (b, num_heads, num_tokens, head_dim)
        k = split_heads(mha.W_key(x), 2)
    assert names.index("aten::masked_fill_") < names.index("aten::div")
    attn_scores = q @ k.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
    mask = causal_mask(5)
    mask_first = torch.softmax(attn_scores.masked_fill(mask, -torch.inf) / 3**0.5, dim=-1)
    scale_first = torch.softmax((attn_scores / 3**0.5).masked_fill(mask, -torch.inf), dim=-1)
    assert torch.equal(mask_first, scale_first)
    by_d_out = torch.softmax(attn_scores.masked_fill(mask, -torch.inf) / 6**0.5, dim=-1)
    assert torch.allclose(mha.attn_weights, mask_first, atol=1e-6)
    assert not torch.allclose(mha.attn_weights, by_d_out, atol=1e-3)


@pytest.mark.skipif(torch.__version__.split("+")[0] != "2.13.0", reason="the pinned PyTorch only")
def test_each_addmm_fills_its_whole_output_with_the_bias():
    """tiled.layout_copies' docstring: outside a clone, each addmm's copy_ writes its whole
    (b * num_tokens, d_out) output: out_proj's alone with qkv_bias=False, every projection's
    with qkv_bias=True. Such copy_ calls are not clones, so layout_copies leaves them out."""
    from attn_course.tiled import _profiled_events

    x = torch.randn(2, 5, 6)
    for qkv_bias, addmms in ((False, 1), (True, 4)):
        mha = MultiHeadAttention(
            6, 6, context_length=5, dropout=0.0, num_heads=2, qkv_bias=qkv_bias
        )
        with torch.no_grad():
            events = _profiled_events(mha, x)
        fills = [
            tuple(e.input_shapes[0])
            for e in events
            if e.name == "aten::copy_"
            and e.cpu_parent is not None
            and e.cpu_parent.name == "aten::addmm"
        ]
        assert fills == [(10, 6)] * addmms


def test_bmm_takes_rows_or_columns_as_they_are_and_copies_another_layout():
    """03, "What copies": bmm takes a matrix stored by rows or by columns (one of its last two
    strides 1, the other spanning the matrix) without a copy; a layout with neither stride 1,
    broadcast rows (stride 0) or overlapping rows it copies, matrix by matrix (review r03f).
    (10, 8) @ (8, 10) is large enough that bmm does not use its plain loop for tiny products."""
    from attn_course.tiled import layout_copies

    torch.manual_seed(0)
    other = torch.randn(4, 8, 10)
    by_rows = torch.randn(4, 10, 8)
    by_columns = torch.randn(4, 8, 10).transpose(1, 2)  # (4, 10, 8), strides (80, 1, 10)
    odd = torch.randn(4, 20, 24)[:, ::2, ::3]  # (4, 10, 8), strides (480, 48, 3)
    assert by_columns.stride()[1:] == (1, 10) and odd.stride() == (480, 48, 3)
    assert layout_copies(torch.bmm, by_rows, other) == []
    assert layout_copies(torch.bmm, by_columns, other) == []
    assert layout_copies(torch.bmm, odd, other) == [("aten::bmm", (10, 8))] * 4
    broadcast = torch.randn(4, 1, 8).expand(4, 10, 8)  # strides (8, 0, 1): a unit stride
    overlapping = torch.randn(4, 44).as_strided((4, 10, 8), (44, 4, 1))  # rows 4 apart, 8 wide
    for unit_stride_but_shared in (broadcast, overlapping):
        assert (
            layout_copies(torch.bmm, unit_stride_but_shared, other) == [("aten::bmm", (10, 8))] * 4
        )


def test_split_on_distinct_sizes_hands_head_h_its_block_of_features():
    """03, shapes on sizes that all differ (b=2, num_tokens=5, d_in=4, num_heads=3, head_dim=7):
    after view + transpose, head h of token t holds features h*head_dim:(h+1)*head_dim of token
    t. The no-transpose view has the same shape and other numbers, and the module's weights are
    those of the block split, not of the no-transpose reading."""
    b, num_tokens, d_in, num_heads, head_dim = 2, 5, 4, 3, 7
    assert len({b, num_tokens, d_in, num_heads, head_dim, num_heads * head_dim}) == 6
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_in, num_heads * head_dim, num_tokens, 0.0, num_heads=num_heads)
    x = torch.randn(b, num_tokens, d_in)
    with torch.no_grad():
        mha(x)
        q, k = mha.W_query(x), mha.W_key(x)  # (b, num_tokens, d_out)
    grouped = q.view(b, num_tokens, num_heads, head_dim).transpose(1, 2)
    no_transpose = q.view(b, num_heads, num_tokens, head_dim)
    assert grouped.shape == no_transpose.shape == (2, 3, 5, 7)
    swapped = q.view(b, num_tokens, num_heads, head_dim).permute(3, 2, 1, 0)  # batch <-> head_dim
    assert swapped.shape != grouped.shape  # on these sizes the shape does catch this bug
    for h in range(num_heads):
        block = q[:, :, h * head_dim : (h + 1) * head_dim]  # (b, num_tokens, head_dim)
        assert torch.equal(grouped[:, h], block)
        assert not torch.equal(no_transpose[:, h], block)

    def weights(queries, keys):  # (b, num_heads, num_tokens, head_dim) each
        scores = queries @ keys.transpose(2, 3) / head_dim**0.5
        return torch.softmax(scores.masked_fill(causal_mask(num_tokens), -torch.inf), dim=-1)

    def by_blocks(t):
        return t.view(b, num_tokens, num_heads, head_dim).transpose(1, 2)

    def no_transposes(t):
        return t.view(b, num_heads, num_tokens, head_dim)

    assert torch.allclose(mha.attn_weights, weights(by_blocks(q), by_blocks(k)), atol=1e-6)
    wrong = weights(no_transposes(q), no_transposes(k))
    assert not torch.allclose(mha.attn_weights, wrong, atol=1e-3)


def test_parameter_counts_tell_d_in_from_d_out_and_qkv_bias_adds_3_d_out():
    """03, section 5: with qkv_bias=False the wrapper has num_heads * 3 * d_in * head_dim
    parameters and MultiHeadAttention adds out_proj's d_out * d_out + d_out; qkv_bias=True adds
    3 * d_out to both. On d_in = 3, d_out = 4 the swapped formula (d_in x d_in out_proj) fails."""
    from attn_course.blocks import count_parameters

    for d_in, num_heads, head_dim in ((3, 2, 2), (5, 3, 4), (6, 2, 3)):
        d_out = num_heads * head_dim
        for bias in (False, True):
            wrapper = MultiHeadAttentionWrapper(d_in, head_dim, 4, 0.0, num_heads, qkv_bias=bias)
            split = MultiHeadAttention(d_in, d_out, 4, 0.0, num_heads, qkv_bias=bias)
            extra = 3 * d_out if bias else 0
            assert count_parameters(wrapper) == num_heads * 3 * d_in * head_dim + extra
            assert count_parameters(split) == 3 * d_in * d_out + d_out * d_out + d_out + extra
    small = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    assert count_parameters(small) == 56 != 3 * 3 * 4 + 3 * 3 + 3  # the swapped formula
    width_d_in = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    width_d_in.out_proj = torch.nn.Linear(4, 3)  # out_proj of width d_in: nn.Linear(d_out, d_in)
    assert count_parameters(width_d_in) == 3 * 3 * 4 + 4 * 3 + 3 != 56

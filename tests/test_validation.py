"""Every bad input raises a ValueError whose message tells the learner what to change."""

from __future__ import annotations

import pytest
import torch

from attn_course.attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionSDPA,
    MultiHeadAttentionWrapper,
    causal_mask,
    copy_wrapper_weights,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)
from attn_course.blocks import (
    BlockConfig,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    MultiHeadSelfAttention,
    TransformerBlock,
)
from attn_course.validation import validate_config, validate_heads, validate_input

# Builders taking (d_model, num_heads, context_length, dropout), all with d_in = 6.
BUILDERS = {
    "CausalAttention": lambda d, h, ctx, p: CausalAttention(6, d, ctx, p),
    "Wrapper": lambda d, h, ctx, p: MultiHeadAttentionWrapper(6, d, ctx, p, h),
    "MultiHeadAttention": lambda d, h, ctx, p: MultiHeadAttention(6, d, ctx, p, h),
    "MultiHeadAttentionSDPA": lambda d, h, ctx, p: MultiHeadAttentionSDPA(6, d, ctx, p, h),
    "MultiHeadSelfAttention": lambda d, h, ctx, p: MultiHeadSelfAttention(6, h, p),
    "EncoderLayer": lambda d, h, ctx, p: EncoderLayer(6, h, 12, p),
    "TransformerBlock": lambda d, h, ctx, p: TransformerBlock(BlockConfig(6, ctx, h, p)),
}
CAUSAL = ["CausalAttention", "Wrapper", "MultiHeadAttention", "MultiHeadAttentionSDPA"]
WITH_HEADS = ["MultiHeadAttention", "MultiHeadAttentionSDPA", "MultiHeadSelfAttention"]
WITH_HEADS += ["EncoderLayer", "TransformerBlock"]


@pytest.mark.parametrize("name", WITH_HEADS)
def test_d_out_not_divisible_by_num_heads_names_the_valid_choices(name):
    with pytest.raises(ValueError, match=r"not divisible by num_heads=4.*\{1, 2, 3, 6\}"):
        BUILDERS[name](6, 4, 8, 0.0)


@pytest.mark.parametrize("name", list(BUILDERS))
@pytest.mark.parametrize("dropout", [-0.1, 1.0, 1.5])
def test_dropout_outside_0_1_is_refused(name, dropout):
    with pytest.raises(ValueError, match=r"dropout=.* must be in \[0, 1\)"):
        BUILDERS[name](6, 2, 8, dropout)


@pytest.mark.parametrize("name", list(BUILDERS))
@pytest.mark.parametrize("shape", [(4, 6), (1, 2, 4, 6), (6,)])
def test_input_not_rank_3_is_refused(name, shape):
    module = BUILDERS[name](6, 2, 8, 0.0)
    with pytest.raises(ValueError, match=r"\(b, num_tokens, .*\)"):
        module(torch.ones(shape))


@pytest.mark.parametrize("name", list(BUILDERS))
def test_wrong_feature_size_is_refused(name):
    module = BUILDERS[name](6, 2, 8, 0.0)
    if name in ("MultiHeadSelfAttention", "EncoderLayer"):
        pattern = r"\(b, num_tokens, 6\), got \(2, 3, 5\)"
    else:
        pattern = r"last dim of the input is 5.*d_in=6"
    with pytest.raises(ValueError, match=pattern):
        module(torch.ones(2, 3, 5))


@pytest.mark.parametrize("name", [*CAUSAL, "TransformerBlock"])
def test_more_tokens_than_context_length_is_refused(name):
    module = BUILDERS[name](6, 2, 8, 0.0)
    with pytest.raises(ValueError, match=r"num_tokens=9 .*context_length=8"):
        module(torch.ones(1, 9, 6))


@pytest.mark.parametrize("name", CAUSAL)
@pytest.mark.parametrize("field", ["d_out", "context_length"])
def test_sizes_must_be_positive_ints(name, field):
    sizes = {"d_out": 6, "context_length": 8, field: 0}
    with pytest.raises(ValueError, match=rf"{field}=0 must be a positive int"):
        BUILDERS[name](sizes["d_out"], 1, sizes["context_length"], 0.0)


def test_wrapper_needs_at_least_one_head():
    with pytest.raises(ValueError, match="num_heads=0 must be at least 1"):
        MultiHeadAttentionWrapper(6, 2, 8, 0.0, num_heads=0)


def test_position_wise_modules_check_the_feature_size():
    with pytest.raises(ValueError, match=r"last dim .* must be d_model=6.*shape \(3, 5\)"):
        LayerNorm(6)(torch.ones(3, 5))
    with pytest.raises(ValueError, match=r"last dim .* must be d_model=6.*shape \(2, 3, 5\)"):
        FeedForward(6, 24)(torch.ones(2, 3, 5))
    with pytest.raises(ValueError, match="'relu' or 'gelu'"):
        FeedForward(6, 24, activation="swish")


def test_function_boundaries():
    with pytest.raises(ValueError, match="num_tokens=0 must be at least 1"):
        causal_mask(0)
    with pytest.raises(ValueError, match=r"lengths must be .* in \[1, 4\]"):
        padding_mask([2, 5], num_tokens=4)
    with pytest.raises(ValueError, match=r"not divisible by num_heads=4.*\{1, 2, 3, 6\}"):
        split_heads(torch.ones(1, 2, 6), 4)
    q = torch.ones(2, 3)
    with pytest.raises(ValueError, match=r"boolean.*~keep\.bool\(\)"):
        scaled_dot_product_attention(q, q, q, mask=torch.ones(2, 2))


def test_copy_wrapper_weights_refuses_mismatched_heads():
    wrapper = MultiHeadAttentionWrapper(6, 2, 8, 0.0, num_heads=3)
    with pytest.raises(ValueError, match="3 heads of width 2.*2 heads of width 3"):
        copy_wrapper_weights(wrapper, MultiHeadAttention(6, 6, 8, 0.0, num_heads=2))
    with pytest.raises(ValueError, match="qkv_bias must be the same"):
        copy_wrapper_weights(wrapper, MultiHeadAttention(6, 6, 8, 0.0, 3, qkv_bias=True))


EDGES = {  # name: (the call at the edge of what is allowed, the call one step past it)
    "sizes of 1": (lambda: validate_config(1, 1, 1, 0.0), lambda: validate_config(1, 0, 1, 0.0)),
    "dropout below 1": (
        lambda: validate_config(3, 6, 4, 0.999),
        lambda: validate_config(3, 6, 4, 1.0),
    ),
    "one head per dim": (lambda: validate_heads(6, 6), lambda: validate_heads(6, 4)),
    "one head": (lambda: validate_heads(6, 1), lambda: validate_heads(6, 0)),
    "the full context": (
        lambda: validate_input(torch.ones(2, 4, 3), d_in=3, context_length=4),
        lambda: validate_input(torch.ones(2, 5, 3), d_in=3, context_length=4),
    ),
}


@pytest.mark.parametrize("edge", EDGES)
def test_public_checks_accept_the_edge_and_refuse_one_step_past_it(edge):
    accepted, refused = EDGES[edge]
    assert accepted() is None
    with pytest.raises(ValueError):
        refused()


# --- masks: every accepted shape is read one way; every other shape is refused --------------


def _self_attention(num_heads: int = 2) -> MultiHeadSelfAttention:
    torch.manual_seed(0)
    return MultiHeadSelfAttention(6, num_heads, dropout=0.0).eval()


def test_key_padding_mask_equals_the_rank4_padding_mask():
    attn, x = _self_attention(), torch.randn(2, 5, 6)
    padded = padding_mask([3, 5], num_tokens=5)  # (b, 1, 1, num_tokens)
    key_padding = padded[:, 0, 0, :]  # (b, num_tokens), True at padded positions
    expected, _ = attn(x, mask=padded)
    out, weights = attn(x, key_padding_mask=key_padding)
    assert torch.allclose(out, expected)
    assert (weights[0, :, :, 3:] == 0).all() and (weights[1] > 0).all()
    # Both at once are combined: a causal mask on top of the padding.
    _, weights = attn(x, mask=causal_mask(5)[None, None], key_padding_mask=key_padding)
    assert (weights[0, :, :, 3:] == 0).all() and (weights[1].triu(1) == 0).all()


def test_batch_by_tokens_mask_is_not_read_as_queries_by_keys():
    """A (b, num_tokens) key-padding mask with b == num_tokens once ran and gave wrong results."""
    layer = EncoderLayer(6, 2, 12, dropout=0.0).eval()
    x, key_padding = torch.randn(4, 4, 6), padding_mask([2, 3, 4, 1], 4)[:, 0, 0, :]
    with pytest.raises(ValueError, match=r"rank 4.*mask\[:, None, None, :\].*mask\[None, None\]"):
        layer(x, mask=key_padding)
    with pytest.raises(ValueError, match="rank 4"):
        _self_attention()(x, mask=causal_mask(4))


def test_batch_dim_never_lands_on_the_heads():
    """A (b, 1, num_tokens) mask with b == num_heads once broadcast onto the heads."""
    x = torch.randn(2, 5, 6)
    mask = padding_mask([3, 5], 5)[:, 0]  # (b, 1, num_tokens), as seed 004 builds it
    with pytest.raises(ValueError, match=r"\(b, 1, num_tokens\) mask -> mask\[:, None\]"):
        _self_attention(num_heads=2)(x, mask=mask)
    q = torch.randn(2, 2, 5, 3)  # (b, num_heads, num_tokens, head_dim) with b == num_heads
    with pytest.raises(ValueError, match=r"head dim made explicit: mask\[:, None\]"):
        scaled_dot_product_attention(q, q, q, mask=mask)


@pytest.mark.parametrize(
    "shape",
    [(3, 1, 1, 5), (2, 1, 1, 4), (2, 1, 1, 1), (2, 3, 5, 5), (2, 1, 4, 5), (5,), (1, 2, 1, 1, 5)],
    ids=[
        "wrong-batch",
        "wrong-length",
        "length-1",
        "wrong-heads",
        "wrong-queries",
        "rank-1",
        "rank-5",
    ],
)
def test_misfit_masks_raise_a_value_error_naming_the_accepted_shapes(shape):
    x = torch.randn(2, 5, 6)
    with pytest.raises(ValueError, match=r"(Accepted|rank 4).*"):
        _self_attention()(x, mask=torch.zeros(shape, dtype=torch.bool))
    q = torch.randn(2, 2, 5, 3)
    with pytest.raises(
        ValueError,
        match=r"Accepted: \(num_queries or 1, num_keys\) = \(5 or 1, 5\), .*last dim is 5",
    ):
        scaled_dot_product_attention(q, q, q, mask=torch.zeros(shape, dtype=torch.bool))


def test_key_padding_mask_shape_is_checked():
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(b, num_tokens\)"):
        _self_attention()(torch.randn(2, 5, 6), key_padding_mask=torch.zeros(5, 2, dtype=bool))
    with pytest.raises(ValueError, match="key_padding_mask must be a boolean"):
        _self_attention()(torch.randn(2, 5, 6), key_padding_mask=torch.ones(2, 5))


@pytest.mark.parametrize(
    "shape", [(5, 5), (1, 5), (2, 2, 5, 5), (1, 1, 5, 5), (2, 1, 1, 5), (1, 2, 5, 5)]
)
def test_sdpa_accepts_the_documented_mask_shapes(shape):
    q = torch.randn(2, 2, 5, 3)
    mask = torch.zeros(shape, dtype=torch.bool)
    context, _ = scaled_dot_product_attention(q, q, q, mask=mask)
    assert torch.allclose(context, scaled_dot_product_attention(q, q, q)[0])


def test_sdpa_reads_a_2d_mask_as_queries_by_keys_even_when_b_equals_num_queries():
    """A 2-D mask is (num_queries, num_keys) for every sequence and head, whatever the sizes:
    with b == num_queries a (b, num_keys) key-padding mask is accepted and row i hides keys from
    query i of every sequence (07 says so); with b != num_queries it is refused with the
    conversion mask[:, None, None, :]."""
    mask = padding_mask([4, 3, 2, 1], 4)[:, 0, 0]  # (b, num_keys) = (4, 4)
    q = torch.randn(4, 2, 4, 3)  # (b, num_heads, num_queries, head_dim), b == num_queries
    _, weights = scaled_dot_product_attention(q, q, q, mask=mask)
    assert torch.equal(weights == 0, mask.expand(4, 2, 4, 4))  # per query, not per sequence
    assert not (weights[0] == 0).all(dim=-1).any() and (weights[0, :, 1:] == 0).any()
    q = torch.randn(4, 2, 5, 3)  # num_queries = 5 != b
    mask = padding_mask([4, 3, 2, 1], 5)[:, 0, 0]  # (b, num_keys) = (4, 5)
    with pytest.raises(ValueError, match=r"mask\[:, None, None, :\]; a rank-2 mask here is always"):
        scaled_dot_product_attention(q, q, q, mask=mask)


def test_sdpa_takes_a_3d_mask_for_3d_scores_but_not_for_4d():
    """07: "accepts no 3-D mask for 4-D (multi-head) scores: it wants the mask at the scores'
    rank, or 2-D". With 3-D scores a (b, 1, num_keys) padding mask is the scores' rank."""
    mask = padding_mask([5, 3], 5)[:, 0]  # (b, 1, num_keys)
    q3 = torch.randn(2, 5, 4)  # (b, num_tokens, head_dim): 3-D scores
    _, weights = scaled_dot_product_attention(q3, q3, q3, mask=mask)
    assert weights.shape == (2, 5, 5)
    assert (weights[1, :, 3:] == 0).all() and (weights[0] > 0).all()
    q4 = torch.randn(2, 2, 5, 4)  # (b, num_heads, num_tokens, head_dim): 4-D scores
    with pytest.raises(ValueError, match="rank-4 mask"):
        scaled_dot_product_attention(q4, q4, q4, mask=mask)

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
from attn_course.validation import check_config, check_heads, check_input

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


def test_public_checks_accept_good_values():
    check_config(3, 6, 4, 0.0)
    check_heads(6, 3)
    check_input(torch.ones(2, 4, 3), d_in=3, context_length=4)

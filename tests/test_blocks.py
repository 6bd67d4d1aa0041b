"""attn_course.blocks: components against torch (cross-attention against
``nn.MultiheadAttention`` with its weights copied in), post-LN vs pre-LN structure, padding,
causality and GPT-2 parameter counts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from support import assert_causal
from torch import nn

from attn_course.attention import MultiHeadAttention, causal_mask, padding_mask
from attn_course.blocks import (
    GELU,
    GPT2_CONFIGS,
    BlockConfig,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    MultiHeadCrossAttention,
    MultiHeadSelfAttention,
    TransformerBlock,
    block_parameter_counts,
    count_parameters,
    swiglu_hidden,
)

ATOL = 1e-5


def _ln(t: torch.Tensor) -> torch.Tensor:
    """Layer norm over the 8 features with scale 1 and shift 0 (a new LayerNorm's)."""
    return F.layer_norm(t, (8,))


def _zero_(linear: nn.Linear) -> None:
    """Make ``linear`` output zeros."""
    with torch.no_grad():
        linear.weight.zero_()
        linear.bias.zero_()


def test_layer_norm_matches_torch():
    torch.manual_seed(0)
    ours, ref = LayerNorm(8), nn.LayerNorm(8)
    with torch.no_grad():
        ours.scale.normal_()
        ours.shift.normal_()
    ref.weight.data, ref.bias.data = ours.scale.data.clone(), ours.shift.data.clone()
    x = torch.randn(2, 5, 8) * 3 + 1
    torch.testing.assert_close(ours(x), ref(x), atol=ATOL, rtol=ATOL)
    assert {name for name, _ in ours.named_parameters()} == {"scale", "shift"}


def test_gelu_is_the_tanh_approximation():
    x = torch.linspace(-6, 6, 101)
    torch.testing.assert_close(GELU()(x), F.gelu(x, approximate="tanh"))


@pytest.mark.parametrize("activation, reference", [("relu", F.relu), ("gelu", None)])
def test_feed_forward_shapes_and_activation(activation, reference):
    torch.manual_seed(1)
    ff = FeedForward(6, 24, dropout=0.5, activation=activation).eval()
    x = torch.randn(2, 3, 6)
    out = ff(x)
    assert out.shape == (2, 3, 6) and ff.linear1.out_features == 24
    act = reference or (lambda h: F.gelu(h, approximate="tanh"))
    torch.testing.assert_close(out, ff.linear2(act(ff.linear1(x))))


def test_only_one_token_at_a_time_tells_the_feed_forward_network_from_attention():
    """05 cell 18: both modules pass "shuffle in, shuffle out" (self-attention without positions
    or a mask treats its tokens as a set), but only the position-wise network gives the same
    output run one token at a time."""
    torch.manual_seed(0)
    x, perm = torch.randn(2, 5, 8), torch.tensor([3, 0, 4, 1, 2])  # (b, num_tokens, d_model)
    ff, att = FeedForward(8, 32, dropout=0.0), MultiHeadSelfAttention(8, 2, 0.0).eval()
    for module, position_wise in ((ff, True), (lambda h: att(h)[0], False)):
        whole = module(x)  # (b, num_tokens, d_model)
        assert torch.allclose(module(x[:, perm]), whole[:, perm], atol=ATOL)
        alone = torch.cat([module(x[:, t : t + 1]) for t in range(5)], dim=1)
        assert torch.allclose(alone, whole, atol=ATOL) is position_wise


# --- cross-attention -------------------------------------------------------------------------


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


def _moved(before: torch.Tensor, after: torch.Tensor) -> list[int]:
    """The query positions (from 0) whose output changed: (b, T, d_model) each."""
    return [t for t in range(before.shape[1]) if not torch.allclose(before[:, t], after[:, t])]


def test_cross_attention_target_tokens_do_not_meet_and_read_the_whole_source():
    """05: changing the FIRST target token moves only its own output (causal self-attention over
    the target, the wrong variant, moves every later one; changing the LAST target token cannot
    tell them apart), and changing the LAST real source token moves every target token (a
    causal mask over the memory, the wrong variant, moves none; the first source token cannot
    tell them apart)."""
    torch.manual_seed(3)
    cross = MultiHeadCrossAttention(8, 2, dropout=0.0).eval()
    memory, target = torch.randn(2, 6, 8), torch.randn(2, 3, 8)
    source_mask = padding_mask([6, 4], 6)  # (b, 1, 1, S)

    def causal_self(x: torch.Tensor) -> torch.Tensor:
        return cross(x, x, x, mask=causal_mask(x.shape[1]))[0]

    def with_change(x: torch.Tensor, positions: list[int]) -> torch.Tensor:
        changed = x.clone()
        for seq, position in enumerate(positions):
            changed[seq, position] += 1.0
        return changed

    out = cross(target, memory, memory, mask=source_mask)[0]
    first, last = with_change(target, [0, 0]), with_change(target, [2, 2])
    assert _moved(out, cross(first, memory, memory, mask=source_mask)[0]) == [0]
    assert _moved(causal_self(target), causal_self(first)) == [0, 1, 2]
    assert _moved(out, cross(last, memory, memory, mask=source_mask)[0]) == [2]
    assert _moved(causal_self(target), causal_self(last)) == [2]  # no difference: a weak test

    memory_causal = causal_mask(6)[:3] | source_mask  # (b, 1, T, S): target t sees sources <= t
    for positions, right, wrong in (([5, 3], [0, 1, 2], []), ([0, 0], [0, 1, 2], [0, 1, 2])):
        changed = with_change(memory, positions)  # the last real source token, then the first
        got = [
            _moved(
                cross(target, memory, memory, mask=m)[0], cross(target, changed, changed, mask=m)[0]
            )
            for m in (source_mask, memory_causal)
        ]
        assert got == [right, wrong]


# --- the post-LN encoder layer ---------------------------------------------------------------


def _encoder(d_model=8, num_heads=2, d_ff=16) -> EncoderLayer:
    torch.manual_seed(2)
    return EncoderLayer(d_model, num_heads, d_ff, dropout=0.1).eval()


def test_encoder_output_is_layer_normalised():
    layer = _encoder()
    with torch.no_grad():
        layer.norm2.scale.uniform_(0.5, 2.0)
        layer.norm2.shift.normal_()
    torch.manual_seed(3)
    out = layer(torch.randn(3, 5, 8) * 4)
    normalised = (out - layer.norm2.shift) / layer.norm2.scale  # undo the last scale/shift
    torch.testing.assert_close(normalised.mean(-1), torch.zeros(3, 5), atol=1e-5, rtol=0)
    torch.testing.assert_close(
        normalised.var(-1, unbiased=False), torch.ones(3, 5), atol=1e-3, rtol=0
    )


def test_encoder_is_post_ln_with_residuals():
    layer = _encoder()
    torch.manual_seed(4)
    x = torch.randn(2, 5, 8) * 3

    # The formula: h = LN(x + attn(x)); out = LN(h + ffn(h)) (default scale 1, shift 0).
    h = _ln(x + layer.att(x)[0])
    torch.testing.assert_close(layer(x), _ln(h + layer.feed_forward(h)), atol=ATOL, rtol=ATOL)
    # With the attention silenced the first sub-layer is the identity before its norm.
    _zero_(layer.att.out_proj)
    torch.testing.assert_close(
        layer(x), _ln(_ln(x) + layer.feed_forward(_ln(x))), atol=ATOL, rtol=ATOL
    )
    # Both sub-layers silenced: only the residual paths and the norms remain.
    _zero_(layer.feed_forward.linear2)
    torch.testing.assert_close(layer(x), _ln(x), atol=1e-4, rtol=0)


def test_encoder_padding_mask_keeps_padded_keys_out():
    layer = _encoder()
    torch.manual_seed(5)
    x = torch.randn(2, 5, 8)
    mask = padding_mask([3, 5], num_tokens=5)
    out = layer(x, mask=mask)
    changed = x.clone()
    changed[0, 3:] = torch.randn(2, 8) * 10  # new padding for sequence 0
    new_out = layer(changed, mask=mask)
    torch.testing.assert_close(new_out[0, :3], out[0, :3], atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(new_out[1], out[1])
    # Without the mask the real tokens do see the padding.
    assert not torch.allclose(layer(changed)[0, :3], layer(x)[0, :3])
    weights = layer.att.attn_weights
    assert weights.shape == (2, 2, 5, 5)


def test_self_attention_returns_weights_that_skip_padding():
    torch.manual_seed(6)
    attn = MultiHeadSelfAttention(8, 4, dropout=0.0)
    out, weights = attn(torch.randn(2, 4, 8), mask=padding_mask([2, 4], 4))
    assert out.shape == (2, 4, 8) and weights.shape == (2, 4, 4, 4)
    assert (weights[0, ..., 2:] == 0).all() and (weights[1] > 0).all()
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 4))


# --- the pre-LN GPT-2 block ---------------------------------------------------------------------


def _block() -> TransformerBlock:
    torch.manual_seed(7)
    cfg = BlockConfig(d_model=8, context_length=6, num_heads=2, dropout=0.1, qkv_bias=True)
    return TransformerBlock(cfg).eval()


def test_transformer_block_is_pre_ln():
    block = _block()
    torch.manual_seed(8)
    x = torch.randn(2, 6, 8) * 3

    h = x + block.att(_ln(x))
    torch.testing.assert_close(block(x), h + block.ff(_ln(h)), atol=ATOL, rtol=ATOL)
    # Both sub-layers silenced: pre-LN leaves the residual stream untouched.
    _zero_(block.att.out_proj)
    _zero_(block.ff.linear2)
    torch.testing.assert_close(block(x), x)


def test_transformer_block_is_causal():
    block = _block()
    torch.manual_seed(9)
    assert_causal(block, torch.randn(2, 6, 8), ATOL)


# --- parameter counts -----------------------------------------------------------------------


def _block_parameters(d: int) -> int:
    """A GPT-2 block's parameters with qkv_bias=True, counted layer by layer."""
    attention = 3 * (d * d + d) + (d * d + d)  # W_query, W_key, W_value, out_proj
    feed_forward = (d * 4 * d + 4 * d) + (4 * d * d + d)  # linear1, linear2
    norms = 2 * (d + d)  # scale and shift, twice
    return attention + feed_forward + norms  # = 12 d^2 + 13 d


def test_gpt2_small_attention_and_block_counts():
    with torch.device("meta"):  # shapes only: nothing is allocated
        attention = MultiHeadAttention(768, 768, 1024, 0.0, num_heads=12, qkv_bias=False)
        block = TransformerBlock(GPT2_CONFIGS["small"])
        lecture_block = TransformerBlock(BlockConfig())  # the lectures' default: no qkv bias
    assert count_parameters(attention) == 2_360_064
    assert count_parameters(block) == 7_087_872 == _block_parameters(768)
    assert count_parameters(lecture_block) == 7_087_872 - 3 * 768


def test_gpt2_small_total_is_the_published_count():
    cfg = GPT2_CONFIGS["small"]
    with torch.device("meta"):
        model = nn.Sequential(
            nn.Embedding(50257, 768),  # token embedding, tied with the output head
            nn.Embedding(1024, 768),  # position embedding
            *[TransformerBlock(cfg) for _ in range(cfg.num_layers)],
            LayerNorm(768),  # final norm
        )
    assert cfg.num_layers == 12
    assert count_parameters(model) == 124_439_808


@pytest.mark.parametrize(
    "name, d, heads, layers",
    [
        ("small", 768, 12, 12),
        ("medium", 1024, 16, 24),
        ("large", 1280, 20, 36),
        ("xl", 1600, 25, 48),
    ],
)
def test_gpt2_block_counts_follow_12_d2_plus_13_d(name, d, heads, layers):
    cfg = GPT2_CONFIGS[name]
    assert (cfg.d_model, cfg.num_heads, cfg.num_layers, cfg.d_ff) == (d, heads, layers, 4 * d)
    with torch.device("meta"):
        block = TransformerBlock(cfg)
    assert cfg.qkv_bias, "GPT-2's query, key and value projections have biases"
    assert count_parameters(block) == _block_parameters(d) == 12 * d * d + 13 * d


def test_count_parameters_skips_buffers_and_frozen_weights():
    attention = MultiHeadAttention(4, 4, 100, 0.0, num_heads=2)  # a 100x100 mask buffer
    assert count_parameters(attention) == 4 * (4 * 4) + 4
    attention.out_proj.requires_grad_(False)
    assert count_parameters(attention) == 3 * (4 * 4)


def test_swiglu_hidden_follows_llama():
    """2/3 of 4d, rounded up to a multiple of 256: Llama-7B's 11,008 at d = 4,096."""
    assert swiglu_hidden(4096) == 11_008
    assert swiglu_hidden(768) == 2_048  # exactly 2/3 of 3,072
    assert swiglu_hidden(100, multiple_of=1) == 266


def test_block_parameter_counts_gpt2_equals_the_package_block():
    for d_model, num_heads in ((768, 12), (64, 4)):
        cfg = BlockConfig(d_model=d_model, context_length=32, num_heads=num_heads, qkv_bias=True)
        with torch.device("meta"):
            block = TransformerBlock(cfg)
        parts = block_parameter_counts(d_model, cfg.d_ff, "gpt2")
        assert parts == {
            "attention": count_parameters(block.att),
            "feed-forward": count_parameters(block.ff),
            "norms": count_parameters(block.norm1) + count_parameters(block.norm2),
            "block": count_parameters(block),
        }


def test_block_parameter_counts_llama_has_no_biases_and_three_matrices():
    """Llama-style: 4d^2 attention, 3 * d * d_ff SwiGLU, d per RMSNorm; GPT-2's differ."""
    d, d_ff = 768, 2048
    llama = block_parameter_counts(d, d_ff, "llama")
    assert llama == {
        "attention": 4 * d * d,
        "feed-forward": 3 * d * d_ff,
        "norms": 2 * d,
        "block": 4 * d * d + 3 * d * d_ff + 2 * d,
    }
    gpt2 = block_parameter_counts(d, d_ff, "gpt2")
    assert gpt2["feed-forward"] == 2 * d * d_ff + d_ff + d and gpt2["norms"] == 4 * d
    with pytest.raises(ValueError, match="choose 'gpt2' or 'llama'"):
        block_parameter_counts(d, d_ff, "mistral")

"""The explorers without widgets: settings check themselves, weights are the modules' own."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from attn_course import explore
from attn_course.attention import MultiHeadAttention, MultiHeadAttentionWrapper, causal_mask
from attn_course.blocks import MultiHeadSelfAttention
from attn_course.data import example
from attn_course.explore import AttentionSettings, EncoderSettings


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AttentionSettings(num_heads=0), "num_heads=0"),
        (lambda: AttentionSettings(head_dim=0), "head_dim=0"),
        (lambda: AttentionSettings(temperature=0.0), "temperature"),
        (lambda: AttentionSettings(example="poem"), "unknown example"),
        (lambda: AttentionSettings(model="gpt"), "model"),
        (lambda: AttentionSettings(view="log"), "view"),
        (lambda: EncoderSettings(num_heads=5), "not divisible"),
        (lambda: EncoderSettings(num_real=9), "num_real=9: .* has 6 tokens"),
        (lambda: EncoderSettings(example="kid"), "num_real=4: .* has 3 tokens"),
        (lambda: EncoderSettings(mask_kind="both"), "mask_kind"),
    ],
)
def test_invalid_settings_raise_a_value_error_when_built(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_settings_are_frozen_and_replace_checks_again():
    settings = AttentionSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.num_heads = 3
    assert dataclasses.replace(settings, num_heads=3).num_heads == 3
    with pytest.raises(ValueError, match="temperature"):
        dataclasses.replace(settings, temperature=-1.0)


def test_weights_are_the_modules_own():
    x = example("dream").batch()  # (1, 6, 3)
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    mha(x)
    assert torch.allclose(explore.attention_weights(), mha.attn_weights[0])
    torch.manual_seed(5)
    wrapper = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3)
    wrapper(x)
    got = explore.attention_weights(AttentionSettings(num_heads=3, seed=5, model="wrapper"))
    assert torch.allclose(got, wrapper.attn_weights[0])


def test_six_heads_of_width_1_and_one_of_width_6_share_their_projections():
    """03, cell after the explorer: same seed and same d_out draw the same projection weights,
    cut into heads differently; the 1 x 6 picture is the one big head, the 6 x 1 its columns."""
    x = example("dream").batch()  # (1, num_tokens, d_in)
    d_in, num_tokens = x.shape[-1], x.shape[1]
    torch.manual_seed(123)
    six = MultiHeadAttention(d_in, 6, num_tokens, 0.0, num_heads=6)
    torch.manual_seed(123)
    one = MultiHeadAttention(d_in, 6, num_tokens, 0.0, num_heads=1)
    assert torch.equal(six.W_query.weight, one.W_query.weight)
    assert torch.equal(six.W_key.weight, one.W_key.weight)
    q, k = six.W_query(x)[0], six.W_key(x)[0]  # (num_tokens, 6)
    mask = causal_mask(num_tokens)
    whole = torch.softmax((q @ k.T / 6**0.5).masked_fill(mask, -torch.inf), dim=-1)
    per_feature = torch.softmax(
        (q.T[:, :, None] * k.T[:, None, :]).masked_fill(mask, -torch.inf), dim=-1
    )  # (6, num_tokens, num_tokens): head f scores with feature f alone
    one_pic = explore.attention_weights(AttentionSettings(num_heads=1, head_dim=6))
    six_pic = explore.attention_weights(AttentionSettings(num_heads=6, head_dim=1))
    torch.testing.assert_close(one_pic[0], whole)
    torch.testing.assert_close(six_pic, per_feature)
    assert not torch.allclose(six_pic[0], one_pic[0], atol=1e-3)


def test_temperature_and_causal_toggle():
    # A huge temperature flattens every row over its visible keys: row q is 1/(q+1).
    flat = explore.attention_weights(AttentionSettings(temperature=1e6))
    expected = torch.tril(torch.ones(6, 6)) / torch.arange(1, 7)[:, None]
    assert torch.allclose(flat, expected.expand(2, 6, 6), atol=1e-4)
    # The slider's smallest temperature, 0.01, sharpens every row towards its largest score.
    peak = explore.attention_weights().max(dim=-1).values
    sharp_peak = explore.attention_weights(AttentionSettings(temperature=0.01)).max(dim=-1).values
    assert peak[:, 0].eq(1).all() and (sharp_peak[:, 1:] > peak[:, 1:]).all()
    # Without the causal mask the future gets weight too; rows still sum to 1.
    open_ = explore.attention_weights(AttentionSettings(causal=False))
    future = torch.ones(6, 6, dtype=torch.bool).triu(diagonal=1)
    assert (open_[:, future] > 0).all()
    assert torch.allclose(open_.sum(dim=-1), torch.ones(2, 6))


@pytest.mark.parametrize("head_dim", [1, 4, 16, 64])
def test_without_scaling_the_scores_spread_by_sqrt_head_dim(head_dim):
    settings = AttentionSettings(head_dim=head_dim, causal=False)
    scaled = explore.attention_picture(settings)
    raw = explore.attention_picture(dataclasses.replace(settings, scaled=False))
    assert raw.row_std == pytest.approx(scaled.row_std * math.sqrt(head_dim), rel=1e-4)
    # The module's own weights are the scaled ones.
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2 * head_dim, 6, 0.0, num_heads=2)
    queries = mha.W_query(example("dream").batch()).view(6, 2, head_dim).transpose(0, 1)
    keys = mha.W_key(example("dream").batch()).view(6, 2, head_dim).transpose(0, 1)
    expected = torch.softmax(queries @ keys.transpose(1, 2) / math.sqrt(head_dim), dim=-1)
    assert torch.allclose(scaled.weights, expected, atol=1e-6)
    cold = explore.attention_picture(dataclasses.replace(settings, temperature=0.5))
    assert cold.row_std == pytest.approx(2 * scaled.row_std, rel=1e-4)


def test_row_max_against_hand_made_pictures():
    eye = explore.Picture(torch.eye(4)[None], ("a", "b", "c", "d"), None, "", "weights", 0.0)
    assert eye.row_max() == pytest.approx((1.0, 0.25))
    visible = torch.tril(torch.ones(3, 3))
    uniform = explore.Picture(
        (visible / visible.sum(dim=1, keepdim=True))[None], ("a", "b", "c"), causal_mask(3),
        "", "weights", 0.0,
    )  # fmt: skip
    # Rows with a choice: q = 1 (two keys) and q = 2 (three keys).
    assert uniform.row_max() == pytest.approx(((1 / 2 + 1 / 3) / 2,) * 2)
    # The row that sees one key is left out, and the status line says so.
    assert "per row 0.417 on average (uniform 0.417; rows that see ≥ 2 keys)" in uniform.facts()


def test_the_status_line_shows_a_gap_to_uniform_under_001():
    # Six keys, largest weight 0.174 against a uniform 0.167: to 2 decimals both read 0.17.
    row = torch.tensor([0.174] + [(1 - 0.174) / 5] * 5)
    near = explore.Picture(row.expand(6, 6)[None], tuple("abcdef"), None, "", "weights", 0.0)
    assert "per row 0.174 on average (uniform 0.167; rows that see ≥ 2 keys)" in near.facts()
    # A setting the notebooks suggest: 6 heads of width 64, no mask (0.175 against 0.167).
    settings = AttentionSettings(model="wrapper", num_heads=6, head_dim=64, causal=False)
    largest, uniform = explore.attention_picture(settings).row_max()
    assert f"{largest:.2f}" == f"{uniform:.2f}" != f"{largest:.3f}"
    assert f"per row {largest:.3f} on average (uniform 0.167;" in (
        explore.attention_picture(settings).facts()
    )


def test_the_callers_random_state_is_left_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    explore.attention_weights(AttentionSettings(seed=99))
    explore.encoder_weights(EncoderSettings(seed=99))
    assert torch.equal(torch.rand(3), expected)


def test_encoder_picture_hides_the_padding():
    picture = explore.encoder_picture(EncoderSettings())
    assert picture.tokens == ("Your", "journey", "starts", "with", "<pad>", "<pad>")
    assert picture.weights.shape == (3, 6, 6)
    assert (picture.weights[..., 4:] == 0).all()  # nobody attends to padding
    # The same as an embedding layer and the module itself on the padded input.
    torch.manual_seed(123)
    embed = torch.nn.Linear(3, 12, bias=False)
    module = MultiHeadSelfAttention(12, 3, dropout=0.0)
    x = embed(example("journey").batch())
    x[:, 4:] = 0.0
    _, expected = module(x, mask=picture.mask[None])  # (1, 1, 1, num_tokens)
    assert torch.allclose(picture.weights, expected[0], atol=1e-6)


def test_encoder_causal_mode():
    picture = explore.encoder_picture(EncoderSettings(num_real=2, mask_kind="causal"))
    assert "<pad>" not in picture.tokens  # causal: every token is real
    assert (torch.triu(picture.weights, diagonal=1) == 0).all()
    assert torch.allclose(picture.weights.sum(dim=-1), torch.ones(3, 6))


def test_describe_names_the_example_and_the_split():
    assert (
        AttentionSettings(example="journey", num_heads=3)
        .describe()
        .startswith('"Your journey starts with one step" · 3 heads × head_dim 2 = d_out 6')
    )
    assert "not scaled" in AttentionSettings(scaled=False).describe()
    assert (
        EncoderSettings(num_heads=4)
        .describe()
        .startswith('"Your journey starts with one step" · 4 heads × head_dim 3 = d_model 12')
    )


def test_draw_is_svg_markup_of_the_picture():
    markup = explore.draw_attention(AttentionSettings(num_heads=3))
    assert markup.startswith("<svg") and markup.count(">head ") == 3
    # One row of three panels: the y labels beside the first panel, the x labels under each.
    assert explore.draw_encoder().count(">&lt;pad&gt;</text>") == 2 + 2 * 3


def test_row_std_is_the_spread_within_each_visible_row():
    g = torch.Generator().manual_seed(5)
    queries, keys = torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 4, generator=g) + 3.0
    mask = torch.ones(5, 5, dtype=torch.bool).triu(diagonal=1)  # row 0 sees one key only
    _, row_std = explore._softmax_scores(queries, keys, 2.0, mask)
    scaled = queries @ keys.transpose(1, 2) / 2.0
    per_row = [scaled[h, i, : i + 1].std(correction=0) for h in range(2) for i in range(1, 5)]
    assert row_std == pytest.approx(float(torch.stack(per_row).mean()), rel=1e-5)
    sample = [scaled[h, i, : i + 1].std(correction=1) for h in range(2) for i in range(1, 5)]
    assert row_std != pytest.approx(float(torch.stack(sample).mean()), rel=1e-2)  # not n - 1
    assert row_std < float(scaled[~mask.expand(2, 5, 5)].std())  # the row offsets are left out

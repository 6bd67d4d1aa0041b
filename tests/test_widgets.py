"""The slider explorers, headless: controls redraw the SVG, invalid settings show a message."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import ipywidgets
import matplotlib.pyplot as plt
import pytest
import torch

from attn_course import widgets
from attn_course.attention import MultiHeadAttention, MultiHeadAttentionWrapper
from attn_course.blocks import MultiHeadSelfAttention
from attn_course.data import example


@pytest.fixture(autouse=True)
def no_open_figures():
    yield
    assert plt.get_fignums() == [], "an explorer left a figure open"


def head_titles(explorer) -> list[str]:
    """The "head N" titles as real SVG <text> elements, as the browser sees them."""
    return re.findall(r">(head \d+)</text>", explorer.figure.value)


def error_shown(explorer) -> bool:
    return explorer.error.layout.display != "none" and bool(explorer.error.value)


def sliders(explorer) -> list:
    return [
        c
        for c in explorer.controls.values()
        if isinstance(c, ipywidgets.IntSlider | ipywidgets.FloatSlider | ipywidgets.SelectionSlider)
    ]


@pytest.mark.parametrize("make", [widgets.attention_explorer, widgets.encoder_explorer])
def test_dom_contract(make):
    explorer = make()
    assert "attn-explorer" in explorer._dom_classes
    assert "attn-explorer-figure" in explorer.figure._dom_classes
    assert "attn-explorer-status" in explorer.status._dom_classes
    assert "attn-explorer-error" in explorer.error._dom_classes
    assert explorer.figure.value.startswith("<svg") and "<?xml" not in explorer.figure.value
    assert explorer.controls["num_heads"].description == "heads"
    assert all(not s.continuous_update for s in sliders(explorer))
    assert not error_shown(explorer)


def test_heads_slider_redraws_the_heads_and_the_status():
    explorer = widgets.attention_explorer()
    assert head_titles(explorer) == ["head 1", "head 2"]
    assert explorer.status.value.startswith("2 heads × head_dim 2 = d_out 4")
    explorer.controls["num_heads"].value = 3
    assert head_titles(explorer) == ["head 1", "head 2", "head 3"]
    assert explorer.status.value.startswith("3 heads × head_dim 2 = d_out 6")
    explorer.controls["head_dim"].value = 4
    assert explorer.status.value.startswith("3 heads × head_dim 4 = d_out 12")


def test_moving_back_draws_the_same_picture_as_a_fresh_explorer():
    moved = widgets.attention_explorer()
    moved.controls["seed"].value = 7
    moved.controls["num_heads"].value = 3
    moved.controls["num_heads"].value = 2
    assert moved.figure.value == widgets.attention_explorer(seed=7).figure.value


def test_every_other_control_redraws():
    explorer = widgets.attention_explorer()
    for name, value in [
        ("seed", 7),
        ("temperature", 3.0),
        ("causal", False),
        ("example", "journey"),
    ]:
        before = explorer.figure.value
        explorer.controls[name].value = value
        assert explorer.figure.value != before, name
    assert ">journey</text>" in explorer.figure.value
    assert "no mask" in explorer.status.value and "temperature 3" in explorer.status.value


def test_slider_choices_are_always_valid():
    # Any heads and head_dim the sliders offer give d_out = heads * head_dim, divisible.
    explorer = widgets.attention_explorer()
    heads, head_dim = explorer.controls["num_heads"], explorer.controls["head_dim"]
    assert heads.min >= 1 and head_dim.min >= 1
    for h in range(heads.min, heads.max + 1):
        for d in range(head_dim.min, head_dim.max + 1):
            weights = widgets.attention_weights(num_heads=h, head_dim=d)
            assert weights.shape == (h, 6, 6)
    # The encoder's heads slider offers exactly the divisors of d_model, for every example.
    encoder = widgets.encoder_explorer()
    for name, d_model in [("journey", 3), ("rows", 6), ("kid", 6)]:
        encoder.controls["example"].value = name
        assert encoder.controls["num_heads"].options == tuple(
            h for h in range(1, 7) if d_model % h == 0
        )
        assert not error_shown(encoder)


def test_invalid_programmatic_settings_show_a_message_not_a_traceback():
    explorer = widgets.attention_explorer()
    figure, status = explorer.figure.value, explorer.status.value
    assert explorer.set_config(d_out=7) is False  # 7 is not divisible by 2 heads
    assert error_shown(explorer) and "not divisible" in explorer.error.value
    assert (explorer.figure.value, explorer.status.value) == (figure, status)
    assert explorer.controls["head_dim"].value == 2
    assert explorer.set_config(temperature=0.0) is False
    assert "temperature" in explorer.error.value
    assert explorer.set_config(colour="red") is False
    assert "colour" in explorer.error.value
    # A valid one clears the message; values beyond a slider's range widen it.
    assert explorer.set_config(num_heads=8, d_out=16) is True
    assert not error_shown(explorer)
    assert len(head_titles(explorer)) == 8 and explorer.controls["head_dim"].value == 2
    assert explorer.status.value.startswith("8 heads × head_dim 2 = d_out 16")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: widgets.attention_explorer(num_heads=0), "num_heads=0"),
        (lambda: widgets.attention_explorer(temperature=0.0), "temperature"),
        (lambda: widgets.attention_explorer(example="poem"), "unknown example"),
        (lambda: widgets.attention_explorer(model="gpt"), "model"),
        (lambda: widgets.encoder_explorer(num_heads=2), "not divisible"),
        (lambda: widgets.encoder_explorer(num_real=9), "num_real=9: .* has 6 tokens"),
        (lambda: widgets.encoder_explorer(mask_kind="both"), "mask_kind"),
    ],
)
def test_invalid_starting_values_show_a_message_not_a_traceback(make, message):
    explorer = make()
    assert error_shown(explorer) and re.search(message, explorer.error.value)


def test_valid_starting_values_beyond_a_slider_widen_it():
    explorer = widgets.attention_explorer(num_heads=8, temperature=0.05)
    assert not error_shown(explorer) and len(head_titles(explorer)) == 8
    assert explorer.controls["num_heads"].max == 8
    assert explorer.controls["temperature"].value == pytest.approx(0.05)


def test_plain_functions_raise_the_packages_value_error():
    with pytest.raises(ValueError, match="num_heads=0"):
        widgets.draw_attention(num_heads=0)
    with pytest.raises(ValueError, match="temperature"):
        widgets.draw_attention(temperature=-1.0)
    with pytest.raises(ValueError, match="model"):
        widgets.draw_attention(model="transformer")
    with pytest.raises(ValueError, match="not divisible"):
        widgets.draw_encoder(example="journey", num_heads=2)
    with pytest.raises(ValueError, match="unknown example"):
        widgets.draw_encoder(example="poem")


def test_weights_are_the_modules_own():
    x = example("dream").batch()  # (1, 6, 3)
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    mha(x)
    assert torch.allclose(widgets.attention_weights(seed=123), mha.attn_weights[0])
    torch.manual_seed(5)
    wrapper = MultiHeadAttentionWrapper(3, 2, 6, 0.0, num_heads=3)
    wrapper(x)
    got = widgets.attention_weights(num_heads=3, seed=5, model="wrapper")
    assert torch.allclose(got, wrapper.attn_weights[0])


def test_temperature_and_causal_toggle():
    # A huge temperature flattens every row over its visible keys: row q is 1/(q+1).
    flat = widgets.attention_weights(temperature=1e6)
    expected = torch.tril(torch.ones(6, 6)) / torch.arange(1, 7)[:, None]
    assert torch.allclose(flat, expected.expand(2, 6, 6), atol=1e-4)
    # A small one sharpens every row towards its largest score.
    peak = widgets.attention_weights().max(dim=-1).values
    sharp_peak = widgets.attention_weights(temperature=0.01).max(dim=-1).values
    assert peak[:, 0].eq(1).all() and (sharp_peak[:, 1:] > peak[:, 1:]).all()
    # Without the causal mask the future gets weight too; rows still sum to 1.
    open_ = widgets.attention_weights(causal=False)
    future = torch.ones(6, 6, dtype=torch.bool).triu(diagonal=1)
    assert (open_[:, future] > 0).all()
    assert torch.allclose(open_.sum(dim=-1), torch.ones(2, 6))


def test_the_callers_random_state_is_left_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    widgets.attention_weights(seed=99)
    widgets.encoder_weights(seed=99)
    assert torch.equal(torch.rand(3), expected)


def test_encoder_weights_hide_the_padding():
    weights, tokens, mask = widgets.encoder_weights(example="journey", num_heads=3, num_real=4)
    assert tokens == ("Your", "journey", "starts", "with", "<pad>", "<pad>")
    assert weights.shape == (3, 6, 6)
    assert (weights[..., 4:] == 0).all()  # nobody attends to padding
    assert torch.allclose(weights.sum(dim=-1), torch.ones(3, 6))
    # The same as the module itself on the padded input.
    x = example("journey").batch()
    x[:, 4:] = 0.0
    torch.manual_seed(123)
    module = MultiHeadSelfAttention(3, 3, dropout=0.0)
    _, expected = module(x, mask=mask[None])  # (1, 1, 1, num_tokens)
    assert torch.allclose(weights, expected[0])


def test_encoder_causal_mode():
    weights, tokens, _ = widgets.encoder_weights(num_real=2, mask_kind="causal")
    assert "<pad>" not in tokens  # causal: every token is real
    assert (torch.triu(weights, diagonal=1) == 0).all()
    with pytest.raises(ValueError, match="mask_kind"):
        widgets.encoder_weights(mask_kind="both")


def test_encoder_explorer_controls():
    explorer = widgets.encoder_explorer()
    assert head_titles(explorer) == ["head 1", "head 2", "head 3"]
    assert explorer.status.value.startswith("3 heads × head_dim 1 = d_model 3")
    assert explorer.figure.value.count(">&lt;pad&gt;</text>") == 2 * 2 * 3  # both axes, 3 heads
    explorer.controls["num_real"].value = 6
    assert "&lt;pad&gt;" not in explorer.figure.value
    explorer.controls["num_heads"].value = 1
    assert head_titles(explorer) == ["head 1"]
    explorer.controls["mask_kind"].value = "causal"
    assert explorer.controls["num_real"].disabled and "causal" in explorer.status.value
    # Changing the example narrows the length slider and offers that example's heads.
    explorer.controls["mask_kind"].value = "padding"
    explorer.controls["example"].value = "kid"  # 3 tokens, d_model 6
    assert explorer.controls["num_real"].max == 3
    assert not error_shown(explorer)
    assert explorer.set_config(num_heads=4) is False and "not divisible" in explorer.error.value


def test_encoder_example_change_keeps_what_still_fits():
    explorer = widgets.encoder_explorer(example="journey", num_heads=3, num_real=4)
    # "kid": 3 tokens, d_model 6. 3 heads still divide 6; 4 real tokens clamp to 3.
    assert explorer.set_config(example="kid") is True
    assert (explorer.config["num_heads"], explorer.config["num_real"]) == (3, 3)
    assert explorer.status.value.startswith("3 heads × head_dim 2 = d_model 6")
    # Back to "journey" (d_model 3) with 2 heads chosen on "kid": 2 does not divide 3.
    explorer.controls["num_heads"].value = 2
    explorer.controls["example"].value = "journey"
    assert explorer.config["num_heads"] in (1, 3) and not error_shown(explorer)
    heads = explorer.config["num_heads"]
    assert explorer.status.value.startswith(f"{heads} head{'s' if heads > 1 else ''} ×")

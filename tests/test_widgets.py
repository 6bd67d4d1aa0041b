"""The slider explorers, headless: controls redraw the SVG, invalid settings show a message."""

from __future__ import annotations

import dataclasses
import html
import re

import ipywidgets
import pytest

from attn_course.explore import AttentionSettings, attention_weights
from attn_course.ui import widgets


def head_titles(explorer) -> list[str]:
    """The "head N" titles as real SVG <text> elements, as the browser sees them."""
    return re.findall(r">(head \d+)</text>", explorer.figure.value)


def error_shown(explorer) -> bool:
    return explorer.error.layout.display != "none" and bool(explorer.error.value)


def sliders(explorer) -> list:
    kinds = (ipywidgets.IntSlider, ipywidgets.FloatLogSlider, ipywidgets.SelectionSlider)
    return [c for c in explorer.controls.values() if isinstance(c, kinds)]


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
    # The controls show the settings drawn.
    for name, control in explorer.controls.items():
        assert control.value == pytest.approx(getattr(explorer.settings, name)), name


def test_heads_slider_redraws_the_heads_and_the_status():
    explorer = widgets.attention_explorer()
    assert head_titles(explorer) == ["head 1", "head 2"]
    assert "2 heads × head_dim 2 = d_out 4" in explorer.status.value
    explorer.controls["num_heads"].value = 3
    assert head_titles(explorer) == ["head 1", "head 2", "head 3"]
    assert "3 heads × head_dim 2 = d_out 6" in explorer.status.value
    explorer.controls["head_dim"].value = 4
    assert "3 heads × head_dim 4 = d_out 12" in explorer.status.value


def test_moving_back_draws_the_same_picture_as_a_fresh_explorer():
    moved = widgets.attention_explorer()
    moved.controls["seed"].value = 7
    moved.controls["num_heads"].value = 3
    moved.controls["num_heads"].value = 2
    assert moved.figure.value == widgets.attention_explorer(seed=7).figure.value


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("seed", 7, "seed 7"),
        ("temperature", 0.01, "temperature 0.01"),
        ("head_dim", 64, "head_dim 64"),
        ("scaled", False, "not scaled"),
        ("causal", False, "no mask"),
        ("example", "journey", "Your journey starts with one step"),
        ("view", "deviation", "weight − uniform"),
    ],
)
def test_every_control_changes_the_picture_and_the_status(name, value, said):
    explorer = widgets.attention_explorer()
    before = explorer.figure.value, explorer.status.value
    explorer.controls[name].value = value
    assert explorer.figure.value != before[0] and explorer.status.value != before[1]
    assert said in explorer.status.value or said in explorer.figure.value


def test_the_status_states_the_numbers_behind_the_picture():
    explorer = widgets.attention_explorer(model="wrapper", causal=False)
    explorer.controls["temperature"].value = 0.01
    largest = attention_weights(AttentionSettings(model="wrapper", causal=False, temperature=0.01))
    expected = float(largest.amax(dim=-1).mean())
    assert f"largest weight per row {expected:.3f} on average (uniform 0.167; rows that" in (
        explorer.status.value
    )


def test_slider_choices_are_always_valid():
    # Any heads and head_dim the sliders offer give d_out = heads * head_dim, divisible.
    explorer = widgets.attention_explorer()
    heads, head_dim = explorer.controls["num_heads"], explorer.controls["head_dim"]
    assert (heads.min, heads.max, head_dim.min, head_dim.max) == (1, 6, 1, 64)
    temperature = explorer.controls["temperature"]
    assert temperature.base**temperature.min == pytest.approx(0.01)
    # The encoder's heads slider offers the divisors of d_model = 12 up to 6, for every example.
    encoder = widgets.encoder_explorer()
    assert encoder.controls["num_heads"].options == (1, 2, 3, 4, 6)
    for name, num_tokens in [("kid", 3), ("rows", 3), ("dream", 6)]:
        encoder.controls["example"].value = name
        assert encoder.controls["num_real"].max == num_tokens
        for heads in encoder.controls["num_heads"].options:
            encoder.controls["num_heads"].value = heads
            assert head_titles(encoder)[-1] == f"head {heads}" and not error_shown(encoder)


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
    assert explorer.controls["num_heads"].max == 8
    assert "8 heads × head_dim 2 = d_out 16" in explorer.status.value


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: widgets.attention_explorer(num_heads=0), "num_heads=0"),
        (lambda: widgets.attention_explorer(temperature=0.0), "temperature"),
        (lambda: widgets.attention_explorer(example="poem"), "unknown example"),
        (lambda: widgets.attention_explorer(model="gpt"), "model"),
        (lambda: widgets.encoder_explorer(num_heads=5), "not divisible"),
        (lambda: widgets.encoder_explorer(num_real=9), "num_real=9: .* has 6 tokens"),
        (lambda: widgets.encoder_explorer(mask_kind="both"), "mask_kind"),
    ],
)
def test_invalid_starting_values_show_a_message_not_a_traceback(make, message):
    explorer = make()
    assert error_shown(explorer) and re.search(message, explorer.error.value)
    assert explorer.figure.value.startswith("<svg")  # the valid rest is drawn


@pytest.mark.parametrize("make", [widgets.attention_explorer, widgets.encoder_explorer])
def test_unknown_keywords_show_a_message_listing_the_known_ones(make):
    explorer = make(colour="red", seed=7, num_heads=0)
    error = html.unescape(explorer.error.value)
    known = [field.name for field in dataclasses.fields(explorer.settings)]
    assert f"unknown setting(s) ['colour']; the settings are {known}." in error
    assert "num_heads=0" in error  # the invalid value's message too
    assert explorer.settings.seed == 7 and "<svg" in explorer.figure.value


def test_invalid_starting_values_keep_the_valid_ones():
    explorer = widgets.attention_explorer(model="wrapper", temperature=-1.0, seed=7)
    assert error_shown(explorer)
    assert (explorer.settings.model, explorer.settings.seed) == ("wrapper", 7)


def test_valid_starting_values_beyond_a_slider_widen_it():
    explorer = widgets.attention_explorer(num_heads=8, temperature=0.005)
    assert not error_shown(explorer) and len(head_titles(explorer)) == 8
    assert explorer.controls["num_heads"].max == 8
    assert explorer.controls["temperature"].value == pytest.approx(0.005)


def test_encoder_explorer_controls():
    explorer = widgets.encoder_explorer()
    assert head_titles(explorer) == ["head 1", "head 2", "head 3"]
    assert "3 heads × head_dim 4 = d_model 12" in explorer.status.value
    assert "&lt;pad&gt;" in explorer.figure.value
    explorer.controls["num_real"].value = 6
    assert "&lt;pad&gt;" not in explorer.figure.value
    explorer.controls["num_heads"].value = 1
    assert head_titles(explorer) == ["head 1"]
    explorer.controls["mask_kind"].value = "causal"
    assert explorer.controls["num_real"].disabled and "causal" in explorer.status.value
    explorer.controls["mask_kind"].value = "padding"
    assert not explorer.controls["num_real"].disabled
    assert explorer.set_config(num_heads=5) is False and "not divisible" in explorer.error.value


def test_encoder_example_change_keeps_what_still_fits():
    explorer = widgets.encoder_explorer(num_real=4)
    before = explorer.status.value
    explorer.controls["example"].value = "kid"  # 3 tokens: 4 real tokens clamp to 3
    assert explorer.settings.num_real == 3 == explorer.controls["num_real"].value
    assert explorer.controls["num_real"].max == 3
    assert "The Kid Smiles" in explorer.status.value and explorer.status.value != before
    assert not error_shown(explorer)
    explorer.controls["example"].value = "dream"  # 6 tokens: 3 real tokens still fit
    assert explorer.settings.num_real == 3 and explorer.controls["num_real"].max == 6

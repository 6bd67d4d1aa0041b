"""The trained-model explorer, headless: the computation, the picture and the controls."""

from __future__ import annotations

import html

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from attn_course.model_views import (
    HeadCanvas,
    ModelSettings,
    describe,
    draw_view,
    model_picture,
    parse_sequence,
)
from attn_course.tasks import TASKS
from attn_course.ui.model_explorer import model_explorer


@pytest.fixture(autouse=True)
def no_open_figures():
    yield
    assert plt.get_fignums() == [], "a figure was left open"


def test_explore_sampled_sequence_matches_the_task():
    view = model_picture(ModelSettings(task="induction", layer=1, head=2, seed=5))
    batch = TASKS["induction"].batch(1, 5)
    assert view.tokens == batch.tokens[0].tolist()
    assert view.scored == batch.scored[0].tolist()
    assert view.weights.shape == (32, 32)
    assert torch.allclose(view.weights.sum(dim=-1), torch.ones(32))
    assert view.scores["induction"] > 0.5  # a layer-1 head of the trained induction model
    assert "right: " in describe(view) and "of" in describe(view)


def test_untrained_heads_are_flatter():
    trained = model_picture(ModelSettings(layer=0, head=3))
    untrained = model_picture(ModelSettings(layer=0, head=3, trained=False))
    assert untrained.scores["row entropy"] > trained.scores["row entropy"] + 0.3
    assert "untrained" in describe(untrained)


def test_typed_sequence():
    view = model_picture(ModelSettings(sequence="5, 17 3 9 30 14 9 30", layer=1))
    assert view.tokens == [5, 17, 3, 9, 30, 14, 9, 30]
    assert view.targets is None and not any(view.scored)
    assert "right" not in describe(view)
    assert view.predictions[6] == 30  # after the second 9 the induction model says 30
    no_repeat = model_picture(ModelSettings(sequence="1 2 3 4"))
    assert no_repeat.scores["induction"] != no_repeat.scores["induction"]  # NaN: undefined


@pytest.mark.parametrize(
    "text, words",
    [("7", "between 2 and 32"), ("1 2 32", "0 to 31"), ("1 -2", "0 to 31"), ("a b", "0 to 31")],
)
def test_parse_sequence_errors(text, words):
    with pytest.raises(ValueError, match=words):
        parse_sequence(text, 32, 32)


@pytest.mark.parametrize(
    "settings, words",
    [(dict(layer=2), "does not exist"), (dict(head=4), "does not exist"), (dict(task="x"), "task")],
)
def test_explore_errors(settings, words):
    with pytest.raises(ValueError, match=words):
        model_picture(ModelSettings(**settings))


def test_draw_view_labels_and_colours():
    view = model_picture(ModelSettings(seed=1))
    plt.close(draw_view(view))
    canvas = HeadCanvas(Figure())
    canvas.draw(view)
    assert [t.get_text() for t in canvas.keys[:32]] == [str(t) for t in view.tokens]
    colours = [label.get_color() for label in canvas.predicted[:32]]
    assert colours.count("#1a7f37") == sum(view.scored)  # the trained model gets all right
    assert colours.count("#888888") == len(view.tokens) - sum(view.scored)
    assert canvas.predicted[0].get_text() == "→ " + str(view.predictions[0])
    canvas.draw(model_picture(ModelSettings(sequence="4 5 6")))
    assert [t.get_visible() for t in canvas.queries[:4]] == [True, True, True, False]


def test_controls_redraw_status_and_picture():
    explorer = model_explorer()
    first_status, first_svg = explorer.status.value, explorer.figure.value
    assert first_svg.startswith("<svg") and "L1 H0" in first_svg
    explorer.controls["head"].value = 3
    assert "L1 H3" in explorer.status.value and "L1 H3" in explorer.figure.value
    explorer.controls["seed"].value = 9
    assert explorer.status.value != first_status
    explorer.controls["task"].value = "kv-lookup"
    assert explorer.status.value.startswith("<div>kv-lookup")


def test_bad_input_shows_an_error_and_keeps_the_picture():
    explorer = model_explorer()
    svg = explorer.figure.value
    explorer.controls["sequence"].value = "1 2 99"
    assert "0 to 31" in explorer.error.value and explorer.error.layout.display != "none"
    assert explorer.figure.value == svg
    explorer.controls["sequence"].value = "3 1 4 1 5"
    assert explorer.error.layout.display == "none"


def test_unknown_setting_is_shown_with_the_known_ones():
    explorer = model_explorer(colour="red", head=2)
    error = html.unescape(explorer.error.value)
    assert "unknown setting(s) ['colour']" in error
    assert "['task', 'layer', 'head', 'sequence', 'seed', 'trained']" in html.unescape(
        explorer.error.value
    )
    assert explorer.settings.head == 2 and "<svg" in explorer.figure.value


def test_a_layer_the_model_lacks_is_refused_and_the_slider_keeps_its_range():
    explorer = model_explorer(layer=5, head=1)
    assert "layer 5, head 1 does not exist: layers 0..1" in html.unescape(explorer.error.value)
    assert explorer.settings == ModelSettings(head=1)
    assert (explorer.controls["layer"].max, explorer.controls["layer"].value) == (1, 1)
    explorer.controls["head"].value = 3  # a later move draws layer 1, not layer 5
    assert explorer.settings == ModelSettings(head=3)
    assert explorer.error.layout.display == "none" and "L1 H3" in explorer.status.value


def test_the_untrained_model_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    model_picture(ModelSettings(task="kv-lookup", trained=False, seed=11))
    assert torch.equal(torch.random.get_rng_state(), state)

"""The language-model explorer (lecture 11) on a small untrained model: what it computes, and
how it refuses bad settings (in the explorer, never as a traceback)."""

from __future__ import annotations

import html

import pytest
import torch

from attn_course.corpus import load_corpus
from attn_course.generation import GPTConfig, GPTModel
from attn_course.lm_views import MAX_CHARS, LineSettings, describe, line_picture
from attn_course.text_heads import text_head_scores
from attn_course.tokenizer import CharTokenizer
from attn_course.ui.lm_explorer import lm_explorer

LINE = "JULIET:\nO Romeo, Romeo!"


@pytest.fixture(scope="module")
def model_and_tokenizer() -> tuple[GPTModel, CharTokenizer]:
    tok = CharTokenizer(load_corpus().charset)
    torch.manual_seed(0)
    cfg = GPTConfig(d_model=32, context_length=96, num_heads=4, dropout=0.0, num_layers=2,
                    vocab_size=tok.vocab_size)  # fmt: skip
    return GPTModel(cfg).eval(), tok


def text_of(widget) -> str:
    return html.unescape(widget.value)


def test_line_picture_gives_the_heads_weights_scores_and_predictions(model_and_tokenizer):
    model, tok = model_and_tokenizer
    view = line_picture(LineSettings(text=LINE, layer=1, head=2), model, tok)
    n = len(LINE)
    assert view.chars == LINE and view.weights.shape == (n, n) and not view.note
    assert torch.allclose(view.weights.sum(dim=-1), torch.ones(n))
    assert torch.equal(view.weights.triu(1), torch.zeros(n, n))  # causal
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([tok.encode(LINE)]))[0, -1], dim=-1)
    top = probs.topk(5)
    assert [ch for ch, _ in view.predictions] == [tok.decode([int(i)]) for i in top.indices]
    assert [p for _, p in view.predictions] == pytest.approx(top.values.tolist())
    scores = text_head_scores(torch.stack([b.att.attn_weights for b in model.trf_blocks]), LINE)
    assert view.scores["speaker name"] == pytest.approx(scores["speaker name"][1, 2].item())
    assert f"L1 H2 on {n} characters" in describe(view)[0]


def test_a_long_line_is_cut_from_the_left_and_says_so(model_and_tokenizer):
    model, tok = model_and_tokenizer
    text = "a" * 10 + "b" * MAX_CHARS
    view = line_picture(LineSettings(text=text), model, tok)
    assert view.chars == "b" * MAX_CHARS
    assert "the first 10 were cut" in view.note and view.note in describe(view)


@pytest.mark.parametrize(
    "settings, message",
    [
        (LineSettings(layer=2), "layer 2, head 0 does not exist: layers 0..1"),
        (LineSettings(text="Café"), "does not know the character(s) 'é'"),
        (LineSettings(text=""), "the text is empty"),
    ],
)
def test_line_picture_refuses_with_a_sentence(model_and_tokenizer, settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        line_picture(settings, *model_and_tokenizer)


@pytest.mark.parametrize("changes", [{"layer": -1}, {"head": True}, {"head": 1.5}, {"text": 3}])
def test_settings_validate_themselves(changes):
    with pytest.raises(ValueError):
        LineSettings(**changes)


def test_unknown_keywords_are_listed_in_the_explorer(model_and_tokenizer):
    explorer = lm_explorer(*model_and_tokenizer, colour="red", head=3)
    error = text_of(explorer.error)
    assert "unknown setting(s) ['colour']" in error and "['text', 'layer', 'head']" in error
    assert explorer.settings.head == 3 and "<svg" in explorer.figure.value


def test_an_impossible_start_shows_why_and_starts_from_the_defaults(model_and_tokenizer):
    explorer = lm_explorer(*model_and_tokenizer, layer=7)
    assert "layer 7, head 0 does not exist" in text_of(explorer.error)
    assert explorer.settings == LineSettings() and explorer.controls["layer"].max == 1


def test_controls_redraw_and_bad_text_shows_the_tokenizer_message(model_and_tokenizer):
    explorer = lm_explorer(*model_and_tokenizer)
    figure = explorer.figure.value
    explorer.controls["head"].value = 3
    assert "L0 H3" in text_of(explorer.status) and explorer.figure.value != figure
    explorer.controls["text"].value = LINE
    assert f"on {len(LINE)} characters" in text_of(explorer.status)
    assert "↵" in explorer.figure.value  # the line break, drawn as a label
    explorer.controls["text"].value = "Café"
    assert "does not know the character(s) 'é'" in text_of(explorer.error)
    assert explorer.settings.text == LINE  # the picture stays as it was


def test_draw_text_heads_puts_queries_on_rows_and_keys_on_columns():
    import matplotlib.pyplot as plt

    from attn_course.lm_views import draw_text_heads

    chars = "abcd"
    weights = torch.zeros(1, 4, 4)
    weights[0, torch.arange(1, 4), torch.arange(3)] = 1.0  # query t reads key t - 1
    weights[0, 0, 0] = 1.0
    fig = draw_text_heads(weights, chars, ["previous"], ncols=1)
    ax = fig.axes[0]
    shown = torch.tensor(ax.images[0].get_array())  # row i of the image is drawn at y = i
    assert torch.equal(shown, weights[0])  # below the diagonal: the transpose would sit above
    assert fig.get_supylabel() == "queries"
    assert fig.get_supxlabel() == "keys (characters read)"
    plt.close(fig)


def test_next_character_labels_are_drawn_upright():
    """Review r11zf read the bar chart's labels as turned 90° (' like -). They are upright: drawn
    at 200 dpi, the apostrophe's ink is taller than wide and the hyphen's wider than tall
    (turned 90°, both would swap)."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from attn_course.lm_views import LineCanvas

    canvas = LineCanvas(Figure(dpi=200))
    for label in canvas.bar_labels:
        label.set_text("")
    canvas.bar_labels[0].set_text("'")
    canvas.bar_labels[1].set_text("-")
    agg = FigureCanvasAgg(canvas.fig)
    agg.draw()
    pixels = np.asarray(agg.buffer_rgba())[..., :3].min(axis=-1)
    height = pixels.shape[0]
    for label, upright in ((canvas.bar_labels[0], "tall"), (canvas.bar_labels[1], "wide")):
        assert label.get_rotation() == 0
        box = label.get_window_extent()  # pixels from the bottom left
        ink = pixels[int(height - box.y1) : int(height - box.y0), int(box.x0) : int(box.x1)] < 128
        rows, cols = np.nonzero(ink)
        tall = rows.max() - rows.min() > cols.max() - cols.min()
        assert tall == (upright == "tall"), (label.get_text(), np.ptp(rows), np.ptp(cols))

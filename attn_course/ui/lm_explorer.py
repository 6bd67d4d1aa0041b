"""The learner's own line (lecture 11): a ``widgets.Explorer`` over ``lm_views``.

Type a line, pick a layer and a head: the picture shows that head's attention over the
characters and the model's most likely next characters. Settings are validated the explorer's
one way: an unknown keyword, a layer the model lacks or a character the tokenizer does not
know shows its message in the explorer, never a traceback.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..generation import GPTModel
from ..lm import pretrained_lm, tokenizer
from ..lm_views import LineCanvas, LineSettings, describe, line_picture
from ..model_views import figure_svg
from .widgets import LABEL, Explorer, slider, starting_settings

__all__ = ["LMExplorer", "lm_explorer", "shipped_model"]


@cache
def shipped_model() -> tuple[GPTModel, Any]:
    """The course's trained Shakespeare model and its character tokenizer (loaded once)."""
    return pretrained_lm(), tokenizer()


class LMExplorer(Explorer):
    """A text box, layer and head sliders; the picture is ``lm_views``' canvas."""

    def __init__(self, settings: LineSettings, model: GPTModel, tokenizer: Any, message: str = ""):
        self.model, self.tokenizer = model, tokenizer
        self.canvas = LineCanvas(Figure())
        cfg = model.cfg
        controls = {
            "text": widgets.Textarea(
                description="your line",
                placeholder="type a line of a play, then click outside the box",
                continuous_update=False,
                rows=2,
                style=LABEL,
                layout=widgets.Layout(width="36em"),
            ),
            "layer": slider("layer", 0, cfg.num_layers - 1),
            "head": slider("head", 0, cfg.num_heads - 1),
        }
        super().__init__(settings, controls, message)

    def render(self, settings: LineSettings) -> tuple[str, tuple[str, ...]]:
        view = line_picture(settings, self.model, self.tokenizer)
        return figure_svg(self.canvas.draw(view)), describe(view)


def lm_explorer(
    model: GPTModel | None = None, tokenizer: Any = None, **settings: Any
) -> LMExplorer:
    """An explorer of a character language model on the learner's own line.

    Args:
        model, tokenizer: a ``GPTModel`` and its ``CharTokenizer``; by default the course's
            shipped Shakespeare model.
        settings: the starting ``LineSettings`` (``text``, ``layer``, ``head``). An unknown
            keyword or an invalid value starts from the defaults and shows why.

    Returns:
        The explorer widget (an ``ipywidgets.VBox`` of class ``attn-explorer``).
    """
    if model is None or tokenizer is None:
        model, tokenizer = shipped_model()
    start, message = starting_settings(
        LineSettings, settings, check=lambda line: line_picture(line, model, tokenizer)
    )
    return LMExplorer(start, model, tokenizer, message)

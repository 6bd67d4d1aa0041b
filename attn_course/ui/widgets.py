"""Slider explorers: ipywidgets controls around ``explore``'s settings and pictures.

``attention_explorer`` and ``encoder_explorer`` each have one code path: a control changes
-> the explorer's settings (a frozen dataclass of ``explore``) are replaced with the
control's value, which checks them -> the ``explore`` function of those settings builds the
module and returns a ``Picture`` -> ``explore.draw`` writes it as SVG markup by hand
(``svg.head_grid_svg``, a few milliseconds). An invalid combination shows the package's
ValueError message instead of a traceback and leaves the picture as it was. ``Explorer``
and ``starting_settings`` are also the base of ``model_explorer`` and ``lm_explorer``, whose
``render`` writes a kept matplotlib canvas as SVG instead (``model_views.figure_svg``).

DOM contract (the browser test relies on it): the container has CSS class
``attn-explorer``; the heads control has description "heads"; the picture is an
``ipywidgets.HTML`` of class ``attn-explorer-figure`` holding an inline ``<svg>`` whose
text is real ``<text>``; ``attn-explorer-status`` states the configuration and the numbers
behind the picture in words, and ``attn-explorer-error`` shows a friendly message when a
setting is invalid.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets

from .. import data, explore
from ..explore import (
    AttentionSettings,
    EncoderSettings,
    Picture,
    attention_picture,
    attention_weights,
    draw_attention,
    draw_encoder,
    encoder_picture,
    encoder_weights,
)
from ..validation import validate_heads

__all__ = [
    "AttentionSettings",
    "EncoderSettings",
    "attention_weights",
    "draw_attention",
    "attention_explorer",
    "encoder_weights",
    "draw_encoder",
    "encoder_explorer",
    "Explorer",
    "AttentionExplorer",
    "EncoderExplorer",
    "starting_settings",
]

# Wide enough for the longest example sentence, "Your journey starts with one step".
EXAMPLE_WIDTH = "24em"
LABEL = {"description_width": "initial"}  # a control's label as wide as its text
VIEW_OPTIONS = (("weights", "weights"), ("weight − uniform", "deviation"))
ENCODER_HEADS = tuple(h for h in range(1, 7) if EncoderSettings.d_model % h == 0)


class Explorer(widgets.VBox):
    """Controls, a status line, an error line and a picture redrawn whenever a control changes.

    A subclass sets ``picture`` (settings -> ``explore.Picture``, ValueError for invalid
    settings) or overrides ``render``.

    Args:
        settings: the starting settings, a frozen dataclass.
        controls: field name of ``settings`` -> control; the control's value is the field.
        message: an error to show from the start (why the requested settings were not used).
    """

    picture: Callable[[Any], Picture]

    def __init__(self, settings: Any, controls: dict[str, widgets.ValueWidget], message: str = ""):
        self.settings = settings
        self._quiet = False
        self.controls = controls
        self.figure = widgets.HTML()
        self.figure.add_class("attn-explorer-figure")
        self.status = widgets.HTML()
        self.status.add_class("attn-explorer-status")
        self.error = widgets.HTML(layout=widgets.Layout(display="none"))
        self.error.add_class("attn-explorer-error")
        boxes = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        super().__init__([boxes, self.status, self.error, self.figure])
        self.add_class("attn-explorer")
        self._show(settings)
        for control in controls.values():
            control.observe(self._on_change, names="value")
        self.redraw(settings)
        if message:
            self.show_error(message)

    def _on_change(self, _change: dict) -> None:
        if not self._quiet:
            self.set_config(**{name: control.value for name, control in self.controls.items()})

    @contextmanager
    def _holding(self):
        """Change controls without redrawing (the caller redraws once)."""
        quiet, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = quiet

    def render(self, settings: Any) -> tuple[str, tuple[str, ...]]:
        """The picture of ``settings`` as inline SVG and the status lines stating it."""
        picture = self.picture(settings)
        return explore.draw(picture), (settings.describe(), picture.facts())

    def redraw(self, settings: Any) -> bool:
        """Draw ``settings``; on ValueError show it, keep the old picture and return False."""
        try:
            svg, lines = self.render(settings)
        except ValueError as error:
            self.show_error(str(error))
            return False
        self.settings = settings
        self.figure.value = svg
        self.status.value = "".join(f"<div>{html.escape(line)}</div>" for line in lines)
        self.error.value = ""
        self.error.layout.display = "none"
        return True

    def show_error(self, message: str) -> None:
        """Show ``message`` in the error line (the picture and the controls stay as they are)."""
        self.error.value = f"<b>That combination does not work:</b> {html.escape(message)}"
        self.error.layout.display = None

    def set_config(self, **changes: Any) -> bool:
        """Change settings (by field name); an invalid one shows the error, changes nothing
        and returns False."""
        unknown = _unknown_settings(type(self.settings), changes)
        if unknown:
            self.show_error(unknown)
            return False
        try:
            settings = dataclasses.replace(self.settings, **changes)
        except ValueError as error:
            self.show_error(str(error))
            return False
        if not self.redraw(settings):
            return False
        with self._holding():
            self._show(settings)
        return True

    def _show(self, settings: Any) -> None:
        """Set every control to its field of ``settings``, widening a slider to hold it."""
        for name, control in self.controls.items():
            _show_value(control, getattr(settings, name))


def _show_value(control: widgets.ValueWidget, value: Any) -> None:
    """Set ``control`` to ``value``, widening a slider's range to hold it."""
    if isinstance(control, widgets.FloatLogSlider):
        exponent = math.log(value, control.base)
        control.min, control.max = min(control.min, exponent), max(control.max, exponent)
    elif isinstance(control, widgets.IntSlider | widgets.FloatSlider):
        control.min, control.max = min(control.min, value), max(control.max, value)
    elif isinstance(control, widgets.SelectionSlider) and value not in control.options:
        control.options = sorted({*control.options, value})
    control.value = value


def slider(description: str, low: int, high: int) -> widgets.IntSlider:
    """An IntSlider that updates on release only."""
    return widgets.IntSlider(
        min=low, max=high, description=description, continuous_update=False, style=LABEL
    )


def _sentence_controls() -> dict[str, widgets.ValueWidget]:
    """The controls both sentence explorers start with: the example and the colour view."""
    example = widgets.Dropdown(
        options=[(sentence, name) for name, sentence in data.EXAMPLES.items()],
        description="example",
        style=LABEL,
        layout=widgets.Layout(width=EXAMPLE_WIDTH),
    )
    return {"example": example, "view": _toggle("colour", VIEW_OPTIONS)}


def _toggle(description: str, options: tuple) -> widgets.ToggleButtons:
    return widgets.ToggleButtons(
        options=options, description=description, style={**LABEL, "button_width": "auto"}
    )


def _unknown_settings(settings_class: type, requested: dict[str, Any]) -> str:
    """A sentence naming the keywords that are not fields of ``settings_class``, or ""."""
    known = [field.name for field in dataclasses.fields(settings_class)]
    unknown = sorted(set(requested) - set(known))
    return f"unknown setting(s) {unknown}; the settings are {known}." if unknown else ""


def starting_settings(
    settings_class: type, requested: dict[str, Any], check: Callable[[Any], object] = repr
) -> tuple[Any, str]:
    """Every explorer's start: ``settings_class(**requested)`` if it is valid and ``check``
    accepts it, else the defaults keeping what of ``requested`` still fits, and the message
    to show in the explorer. An unknown keyword's message lists the known ones.

    ``check(settings)`` raises ValueError for settings the explorer's model cannot show
    (such as a layer it lacks); by default (``repr``) it accepts all.
    """

    def valid(candidate: dict[str, Any]) -> Any:
        settings = settings_class(**candidate)
        check(settings)
        return settings

    known = {field.name for field in dataclasses.fields(settings_class)}
    usable = {name: value for name, value in requested.items() if name in known}
    try:
        start, message = valid(usable), ""
    except ValueError as error:
        kept: dict[str, Any] = {}
        for name, value in usable.items():
            try:
                valid({**kept, name: value})
            except ValueError:
                continue
            kept[name] = value
        start, message = valid(kept), str(error)
    return start, f"{_unknown_settings(settings_class, requested)} {message}".strip()


class AttentionExplorer(Explorer):
    """The explorer of ``attention_explorer``; ``set_config`` also accepts ``d_out``."""

    picture = staticmethod(attention_picture)

    def set_config(self, **changes: Any) -> bool:
        """Change settings; ``d_out=...`` sets head_dim = d_out / num_heads (must divide)."""
        if "d_out" in changes:
            d_out = changes.pop("d_out")
            num_heads = changes.get("num_heads", self.settings.num_heads)
            try:
                validate_heads(d_out, num_heads)
            except ValueError as error:
                self.show_error(str(error))
                return False
            changes["head_dim"] = d_out // num_heads
        return super().set_config(**changes)


def attention_explorer(**settings: Any) -> AttentionExplorer:
    """Controls for heads, head width, scaling, temperature, seed, mask and colour scale.

    The width is chosen per head (d_out = num_heads * head_dim), so every slider position is
    a valid configuration. Keyword arguments are the starting ``AttentionSettings``, e.g.
    ``model="wrapper"`` explores ``MultiHeadAttentionWrapper``; an invalid combination shows
    its message in the explorer.

    Returns:
        The explorer widget (an ``ipywidgets.VBox`` of class ``attn-explorer``).
    """
    start, message = starting_settings(AttentionSettings, settings)
    controls = {
        **_sentence_controls(),
        "num_heads": slider("heads", 1, 6),
        "head_dim": slider("head_dim" if start.model == "mha" else "d_out per head", 1, 64),
        "scaled": widgets.Checkbox(description="divide scores by √head_dim", indent=False),
        "temperature": widgets.FloatLogSlider(
            min=-2,
            max=math.log10(5),
            step=0.1,
            description="temperature",
            readout_format=".3g",
            continuous_update=False,
            style=LABEL,
        ),
        "seed": slider("seed", 0, 999),
        "causal": widgets.Checkbox(description="causal mask", indent=False),
    }
    return AttentionExplorer(start, controls, message)


class EncoderExplorer(Explorer):
    """The explorer of ``encoder_explorer``: the real-tokens slider follows the example."""

    picture = staticmethod(encoder_picture)

    def set_config(self, **changes: Any) -> bool:
        """Change settings; a new example keeps the number of real tokens where it fits,
        else clamps it as the slider does."""
        if changes.get("example") in data.EXAMPLES:
            num_tokens = len(data.example(changes["example"]).tokens)
            with self._holding():
                self.controls["num_real"].max = num_tokens
            changes["num_real"] = min(changes.get("num_real", self.settings.num_real), num_tokens)
        if not super().set_config(**changes):
            return False
        self.controls["num_real"].disabled = self.settings.mask_kind == "causal"
        return True


def encoder_explorer(**settings: Any) -> EncoderExplorer:
    """Controls over ``blocks.MultiHeadSelfAttention``: heads, real tokens, seed, mask kind.

    The heads slider offers the divisors of d_model = 12 up to 6; the tokens after the first
    ``num_real`` are padding. Keyword arguments are the starting ``EncoderSettings``; an
    invalid combination shows its message in the explorer.

    Returns:
        The explorer widget (an ``ipywidgets.VBox`` of class ``attn-explorer``).
    """
    start, message = starting_settings(EncoderSettings, settings)
    controls = {
        **_sentence_controls(),
        "num_heads": widgets.SelectionSlider(
            options=ENCODER_HEADS, description="heads", continuous_update=False, style=LABEL
        ),
        "num_real": slider("real tokens", 1, len(data.example(start.example).tokens)),
        "seed": slider("seed", 0, 999),
        "mask_kind": _toggle("mask", explore.MASK_KINDS),
    }
    controls["num_real"].disabled = start.mask_kind == "causal"
    return EncoderExplorer(start, controls, message)

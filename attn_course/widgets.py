"""Slider explorers of attention weights, and the plain drawing functions behind them.

Each explorer has one code path: a control changes -> the plain ``draw_*`` function builds
the module from the settings, runs the example and returns a ``viz.head_grid`` figure ->
the figure becomes inline SVG. Calling ``draw_*`` directly gives the same picture without
widgets (and raises the package's ValueError for an invalid setting; the explorers show
that message instead of a traceback).

DOM contract (the browser test relies on it): the container has CSS class
``attn-explorer``; the heads control has description "heads"; the picture is an
``ipywidgets.HTML`` of class ``attn-explorer-figure`` holding an inline ``<svg>`` whose
text is real ``<text>`` (``svg.fonttype: none``); ``attn-explorer-status`` states the
configuration in words and ``attn-explorer-error`` shows a friendly message when a
setting is invalid.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure

from . import data, viz
from .attention import (
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)
from .blocks import MultiHeadSelfAttention
from .data import EXAMPLES
from .validation import check_heads

__all__ = [
    "attention_weights",
    "draw_attention",
    "attention_explorer",
    "encoder_weights",
    "draw_encoder",
    "encoder_explorer",
    "Explorer",
    "AttentionExplorer",
    "EncoderExplorer",
]

MODELS = ("mha", "wrapper")
MASK_KINDS = ("padding", "causal")
PAD = "<pad>"


# --- plain functions: compute, then draw -------------------------------------------------


@torch.no_grad()
def attention_weights(
    example: str = "dream",
    num_heads: int = 2,
    head_dim: int = 2,
    seed: int = 123,
    temperature: float = 1.0,
    causal: bool = True,
    model: str = "mha",
) -> torch.Tensor:
    """The per-head attention weights of a freshly built module on an example.

    ``torch.manual_seed(seed)`` then the module's construction (dropout 0), as in the
    lectures, without touching the caller's random state. The weights are recomputed from
    the module's own query and key projections with
    ``attention.scaled_dot_product_attention``, the queries divided by ``temperature``
    (so the scaled scores are), and the causal mask only when ``causal``. With
    ``temperature=1`` and ``causal=True`` they equal the module's ``attn_weights``.

    Args:
        example: a name of ``data.EXAMPLES`` ("dream", "journey", "rows", "kid").
        num_heads: number of heads, at least 1.
        head_dim: width of each head; ``MultiHeadAttention`` gets d_out = num_heads *
            head_dim, ``MultiHeadAttentionWrapper`` gets d_out = head_dim per head.
        seed: the seed set right before building the module.
        temperature: > 0; above 1 flattens each row of weights, below 1 sharpens it.
        causal: hide the future (keys after each query).
        model: "mha" (MultiHeadAttention) or "wrapper" (MultiHeadAttentionWrapper).

    Returns:
        (num_heads, num_tokens, num_tokens) weights; each row sums to 1.
    """
    if model not in MODELS:
        raise ValueError(f"model={model!r} must be one of {MODELS}.")
    if not temperature > 0:
        raise ValueError(
            f"temperature={temperature} must be positive: the scores are divided by it."
        )
    if head_dim < 1:
        raise ValueError(f"head_dim={head_dim} must be at least 1: each head needs a width.")
    check_heads(num_heads * head_dim, num_heads)
    x = data.example(example).batch()  # (1, num_tokens, d_in)
    _, num_tokens, d_in = x.shape
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if model == "mha":
            mha = MultiHeadAttention(d_in, num_heads * head_dim, num_tokens, 0.0, num_heads)
        else:
            wrapper = MultiHeadAttentionWrapper(d_in, head_dim, num_tokens, 0.0, num_heads)
    if model == "mha":
        queries = split_heads(mha.W_query(x), num_heads)  # (1, num_heads, num_tokens, head_dim)
        keys = split_heads(mha.W_key(x), num_heads)  # (1, num_heads, num_tokens, head_dim)
    else:
        queries = torch.stack([head.W_query(x) for head in wrapper.heads], dim=1)  # same shape
        keys = torch.stack([head.W_key(x) for head in wrapper.heads], dim=1)
    mask = causal_mask(num_tokens) if causal else None
    _, attn_weights = scaled_dot_product_attention(queries / temperature, keys, keys, mask)
    return attn_weights[0]  # (num_heads, num_tokens, num_tokens)


def draw_attention(
    example: str = "dream",
    num_heads: int = 2,
    head_dim: int = 2,
    seed: int = 123,
    temperature: float = 1.0,
    causal: bool = True,
    model: str = "mha",
) -> Figure:
    """``viz.head_grid`` of ``attention_weights(...)`` (same arguments), future cells hatched.

    Returns:
        The Figure, one panel per head.
    """
    weights = attention_weights(example, num_heads, head_dim, seed, temperature, causal, model)
    num_tokens = weights.shape[-1]
    return viz.head_grid(
        weights,
        data.example(example).tokens,
        mask=causal_mask(num_tokens) if causal else None,
        title=f'"{EXAMPLES[example]}"',
    )


@torch.no_grad()
def encoder_weights(
    example: str = "journey",
    num_heads: int = 3,
    num_real: int | None = 4,
    seed: int = 123,
    mask_kind: str = "padding",
) -> tuple[torch.Tensor, tuple[str, ...], torch.Tensor]:
    """Weights of a fresh ``blocks.MultiHeadSelfAttention`` (dropout 0) on a padded example.

    With ``mask_kind="padding"`` the tokens from position ``num_real`` on are padding:
    their embeddings are zeros, their labels ``<pad>``, and ``attention.padding_mask``
    hides them as keys. With ``"causal"`` every token is real and the future is hidden.

    Args:
        example: a name of ``data.EXAMPLES``; d_model is its embedding width.
        num_heads: must divide d_model.
        num_real: number of real tokens, 1..num_tokens; None = all real (no mask).
        seed: the seed set right before building the module.
        mask_kind: "padding" or "causal".

    Returns:
        ``(weights, tokens, mask)``: weights (num_heads, num_tokens, num_tokens), the
        token labels, and the boolean mask used (True = hidden), broadcastable to weights.
    """
    if mask_kind not in MASK_KINDS:
        raise ValueError(f"mask_kind={mask_kind!r} must be one of {MASK_KINDS}.")
    chosen = data.example(example)
    num_tokens, d_model = chosen.embeddings.shape
    if mask_kind == "padding" and num_real is not None:
        if not 1 <= num_real <= num_tokens:
            raise ValueError(
                f"num_real={num_real}: {EXAMPLES[example]!r} has {num_tokens} tokens, so "
                f"choose 1 to {num_tokens} real tokens."
            )
        mask = padding_mask([num_real], num_tokens)[0]  # (1, 1, num_tokens)
    else:
        num_real = num_tokens
        mask = causal_mask(num_tokens) if mask_kind == "causal" else None
    x = chosen.batch()  # (1, num_tokens, d_model)
    x[:, num_real:] = 0.0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = MultiHeadSelfAttention(d_model, num_heads, dropout=0.0)
    module_mask = None if mask is None else mask.expand(1, 1, num_tokens, num_tokens)
    _, attn_weights = module(x, mask=module_mask)  # (1, num_heads, num_tokens, num_tokens)
    tokens = chosen.tokens[:num_real] + (PAD,) * (num_tokens - num_real)
    return attn_weights[0], tokens, mask


def draw_encoder(
    example: str = "journey",
    num_heads: int = 3,
    num_real: int | None = 4,
    seed: int = 123,
    mask_kind: str = "padding",
) -> Figure:
    """``viz.head_grid`` of ``encoder_weights(...)`` (same arguments), hidden cells hatched.

    Returns:
        The Figure, one panel per head.
    """
    weights, tokens, mask = encoder_weights(example, num_heads, num_real, seed, mask_kind)
    return viz.head_grid(weights, tokens, mask=mask, title=f"{mask_kind} mask")


# --- the explorers -----------------------------------------------------------------------


def figure_svg(fig: Figure) -> str:
    """The figure as an inline ``<svg>`` element with real ``<text>`` (the same figure gives
    the same string); closes the figure."""
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "attn-course"}):
        # The SVG canvas directly: one draw, no layout pass (head_grid places its axes).
        FigureCanvasSVG(fig).print_svg(buffer, metadata={"Date": None})
    plt.close(fig)
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :].replace(
        "<svg ", '<svg style="max-width: 100%; height: auto" ', 1
    )


class Explorer(widgets.VBox):
    """Controls, a status line, an error line and a picture redrawn whenever a control changes.

    Args:
        draw: keyword-only settings -> Figure (the plain ``draw_*`` function).
        describe: the same settings -> one sentence for the status line.
        controls: setting name -> control; the control's value is the setting.
        fixed: settings that have no control (passed to ``draw`` and ``describe`` as is).
    """

    def __init__(
        self,
        draw: Callable[..., Figure],
        describe: Callable[..., str],
        controls: dict[str, widgets.ValueWidget],
        fixed: dict[str, Any] | None = None,
    ):
        self._draw = draw
        self._describe = describe
        self._fixed = dict(fixed or {})
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
        for control in controls.values():
            control.observe(self._on_change, names="value")
        self.redraw()

    @property
    def config(self) -> dict[str, Any]:
        """The current settings: the controls' values and the fixed ones."""
        return {**{name: c.value for name, c in self.controls.items()}, **self._fixed}

    def _on_change(self, _change: dict) -> None:
        if not self._quiet:
            self.redraw()

    @contextmanager
    def _holding(self):
        """Change controls without redrawing (the caller redraws once)."""
        quiet, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = quiet

    def redraw(self, config: dict[str, Any] | None = None) -> bool:
        """Draw ``config`` (default: the current settings); on ValueError show it, keep the old
        picture and return False."""
        config = self.config if config is None else config
        try:
            fig = self._draw(**config)
        except ValueError as error:
            self.show_error(str(error))
            return False
        self.figure.value = figure_svg(fig)
        self.status.value = html.escape(self._describe(**config))
        self.error.value = ""
        self.error.layout.display = "none"
        return True

    def show_error(self, message: str) -> None:
        """Show ``message`` in the error line (the picture and the controls stay as they are)."""
        self.error.value = f"<b>That combination does not work:</b> {html.escape(message)}"
        self.error.layout.display = None

    def set_config(self, **changes: Any) -> bool:
        """Change settings programmatically; an invalid one shows the error, changes nothing
        and returns False."""
        unknown = sorted(set(changes) - set(self.config))
        if unknown:
            self.show_error(
                f"unknown setting(s) {unknown}; the settings are {sorted(self.config)}."
            )
            return False
        if not self.redraw({**self.config, **changes}):
            return False
        with self._holding():
            self._fixed.update((k, v) for k, v in changes.items() if k in self._fixed)
            for name in (name for name in self.controls if name in changes):
                control, value = self.controls[name], changes[name]
                if isinstance(control, widgets.IntSlider | widgets.FloatSlider):
                    control.max = max(control.max, value)
                    control.min = min(control.min, value)
                control.value = value
        return True


def _slider(description: str, value: float, low: float, high: float, step: float = 1) -> Any:
    """An IntSlider (or FloatSlider for a float step) that updates on release only.

    A ``value`` outside [low, high] starts clamped; ``_start`` then asks for it.
    """
    kind = widgets.FloatSlider if isinstance(step, float) else widgets.IntSlider
    return kind(
        value=value,
        min=low,
        max=high,
        step=step,
        description=description,
        continuous_update=False,
        style={"description_width": "initial"},
    )


def _start(explorer: Explorer, requested: dict[str, Any]) -> Explorer:
    """Ask for the starting settings the controls could not take (out of range or invalid):
    a valid one widens its slider, an invalid one shows its message instead of raising."""
    if {**explorer.config, **requested} != explorer.config:
        explorer.set_config(**requested)
    return explorer


def _describe_attention(
    example: str,
    num_heads: int,
    head_dim: int,
    seed: int,
    temperature: float,
    causal: bool,
    model: str,
) -> str:
    """One sentence for the attention explorer's status line."""
    heads = f"{num_heads} head{'s' if num_heads > 1 else ''}"
    if model == "mha":
        width = f"{heads} × head_dim {head_dim} = d_out {num_heads * head_dim}"
    else:
        width = f"{heads} × head_dim {head_dim} = width {num_heads * head_dim} (d_out is per head)"
    mask = "causal mask on" if causal else "no mask (every token sees every token)"
    return f"{width} · temperature {temperature:g} · {mask} · seed {seed}"


class AttentionExplorer(Explorer):
    """The explorer of ``attention_explorer``; ``set_config`` also accepts ``d_out``."""

    def set_config(self, **changes: Any) -> bool:
        """Change settings; ``d_out=...`` sets head_dim = d_out / num_heads (must divide)."""
        if "d_out" in changes:
            d_out = changes.pop("d_out")
            num_heads = changes.get("num_heads", self.config["num_heads"])
            try:
                check_heads(d_out, num_heads)
            except ValueError as error:
                self.show_error(str(error))
                return False
            changes["head_dim"] = d_out // num_heads
        return super().set_config(**changes)


def attention_explorer(
    example: str = "dream",
    num_heads: int = 2,
    head_dim: int = 2,
    seed: int = 123,
    temperature: float = 1.0,
    causal: bool = True,
    model: str = "mha",
) -> AttentionExplorer:
    """Sliders for heads, head width, seed, temperature and the causal mask; one heatmap a head.

    The width is chosen per head (d_out = num_heads * head_dim), so every slider position is
    a valid configuration. Arguments are the starting values (see ``attention_weights``);
    ``model="wrapper"`` explores ``MultiHeadAttentionWrapper`` instead.

    Returns:
        The explorer widget (an ``ipywidgets.VBox`` of class ``attn-explorer``).
    """
    controls = {
        "example": widgets.Dropdown(
            options=[(sentence, name) for name, sentence in EXAMPLES.items()],
            value=example if example in EXAMPLES else "dream",
            description="example",
        ),
        "num_heads": _slider("heads", num_heads, 1, 6),
        "head_dim": _slider("head_dim" if model == "mha" else "d_out per head", head_dim, 1, 4),
        "seed": _slider("seed", seed, 0, 999),
        "temperature": _slider("temperature", temperature, 0.1, 5.0, step=0.1),
        "causal": widgets.Checkbox(value=causal, description="causal mask", indent=False),
    }
    explorer = AttentionExplorer(
        draw_attention, _describe_attention, controls, fixed={"model": model}
    )
    requested = dict(example=example, num_heads=num_heads, head_dim=head_dim, seed=seed,
                     temperature=temperature, causal=causal)  # fmt: skip
    return _start(explorer, requested)


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order."""
    return [k for k in range(1, n + 1) if n % k == 0]


def _describe_encoder(
    example: str, num_heads: int, num_real: int, seed: int, mask_kind: str
) -> str:
    """One sentence for the encoder explorer's status line."""
    num_tokens, d_model = data.example(example).embeddings.shape
    heads = f"{num_heads} head{'s' if num_heads > 1 else ''}"
    width = f"{heads} × head_dim {d_model // num_heads} = d_model {d_model}"
    if mask_kind == "padding":
        mask = f"{num_real} real token(s) + {num_tokens - num_real} padding, padding keys hidden"
    else:
        mask = f"all {num_tokens} tokens real, the future hidden (causal mask)"
    return f"{width} · {mask} · seed {seed}"


class EncoderExplorer(Explorer):
    """The explorer of ``encoder_explorer``: the heads and length choices follow the example."""

    def _on_change(self, change: dict) -> None:
        if change["owner"] is self.controls["example"]:
            num_tokens, d_model = data.example(change["new"]).embeddings.shape
            heads = self.controls["num_heads"]
            with self._holding():
                kept = heads.value
                heads.options = _divisors(d_model)  # resets the value to the first option
                if kept in heads.options:
                    heads.value = kept
                self.controls["num_real"].max = num_tokens
        self.controls["num_real"].disabled = self.controls["mask_kind"].value == "causal"
        super()._on_change(change)

    def set_config(self, **changes: Any) -> bool:
        """Change settings; a new example keeps the length and heads where they fit, else
        clamps them as the sliders do."""
        if changes.get("example") in EXAMPLES:
            num_tokens, d_model = data.example(changes["example"]).embeddings.shape
            changes.setdefault("num_real", min(self.config["num_real"], num_tokens))
            if d_model % self.config["num_heads"]:
                changes.setdefault("num_heads", 1)
        return super().set_config(**changes)


def encoder_explorer(
    example: str = "journey",
    num_heads: int = 3,
    num_real: int = 4,
    seed: int = 123,
    mask_kind: str = "padding",
) -> EncoderExplorer:
    """Sliders over ``blocks.MultiHeadSelfAttention``: heads, real tokens, seed, mask kind.

    The heads slider offers only the divisors of d_model (the example's embedding width);
    the tokens after the first ``num_real`` are padding. Arguments are the starting values
    (see ``encoder_weights``).

    Returns:
        The explorer widget (an ``ipywidgets.VBox`` of class ``attn-explorer``).
    """
    shown = example if example in EXAMPLES else "journey"
    num_tokens, d_model = data.example(shown).embeddings.shape
    controls = {
        "example": widgets.Dropdown(
            options=[(sentence, name) for name, sentence in EXAMPLES.items()],
            value=shown,
            description="example",
        ),
        "num_heads": widgets.SelectionSlider(
            options=_divisors(d_model),
            value=num_heads if num_heads in _divisors(d_model) else 1,
            description="heads",
            continuous_update=False,
        ),
        "num_real": _slider("real tokens", num_real, 1, num_tokens),
        "seed": _slider("seed", seed, 0, 999),
        "mask_kind": widgets.ToggleButtons(
            options=MASK_KINDS,
            value=mask_kind if mask_kind in MASK_KINDS else "padding",
            description="mask",
        ),
    }
    controls["num_real"].disabled = controls["mask_kind"].value == "causal"
    explorer = EncoderExplorer(draw_encoder, _describe_encoder, controls)
    requested = dict(example=example, num_heads=num_heads, num_real=num_real, seed=seed,
                     mask_kind=mask_kind)  # fmt: skip
    return _start(explorer, requested)

"""What the slider explorers show, without widgets: settings in, weights and a picture out.

An explorer's settings are a frozen dataclass (``AttentionSettings``, ``EncoderSettings``)
that checks itself when built, so an invalid combination raises the package's ValueError
before anything is computed. ``attention_picture`` / ``encoder_picture`` build the module
the settings describe (under their own seed, the caller's random state untouched), run the
example and return a ``Picture``: the per-head weights, token labels, mask, title and the
numbers behind the picture. ``draw`` turns a Picture into SVG markup
(``svg.head_grid_svg``); ``ui.widgets`` puts controls around the same functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch

from . import data, svg, viz
from .attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionWrapper,
    causal_mask,
    padding_mask,
    split_heads,
)
from .blocks import MultiHeadSelfAttention
from .validation import validate_heads

__all__ = [
    "AttentionSettings",
    "EncoderSettings",
    "Picture",
    "attention_picture",
    "attention_weights",
    "draw",
    "draw_attention",
    "draw_encoder",
    "encoder_picture",
    "encoder_weights",
]

MODELS = ("mha", "wrapper")
MASK_KINDS = ("padding", "causal")
VIEWS = svg.VIEWS  # "weights": the 0-1 scale; "deviation": weight - uniform, own scale
PAD = "<pad>"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _validate_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name}={value!r} must be one of {choices}.")


@dataclass(frozen=True)
class Picture:
    """What an explorer draws: one weight matrix per head and the numbers behind it.

    Attributes:
        weights: (num_heads, num_tokens, num_tokens); each row sums to 1 over its visible keys.
        tokens: the num_tokens labels (keys on x, queries on y).
        mask: boolean, broadcastable to ``weights``, True = hidden; None = nothing hidden.
        title: the figure title.
        view: "weights" (fixed 0-1 scale) or "deviation" (weight - uniform, own scale).
        row_std: population standard deviation (divided by the number of visible keys, not
            by that number minus one) of the scores softmax sees within a row (over its visible
            keys), averaged over the rows with at least two visible keys. The spread across
            rows is left out: softmax(s + c) = softmax(s), so a row's common level is invisible.
    """

    weights: torch.Tensor
    tokens: tuple[str, ...]
    mask: torch.Tensor | None
    title: str
    view: str
    row_std: float

    def row_max(self) -> tuple[float, float]:
        """(mean of the largest weight per row, the same for uniform rows), over every row
        of every head that has at least two visible keys."""
        hidden = self._hidden()
        visible = (~hidden).sum(dim=-1)  # (num_heads, num_tokens)
        choice = visible >= 2
        largest = self.weights.amax(dim=-1)[choice].mean()
        uniform = (1.0 / visible[choice]).mean()
        return float(largest), float(uniform)

    def facts(self) -> str:
        """The numbers behind the picture, in words (the status line's second half)."""
        largest, uniform = self.row_max()
        facts = (
            f"largest weight per row {largest:.3f} on average (uniform {uniform:.3f}; rows that see"
            f" ≥ 2 keys) · "
            f"scores softmax sees: std {self.row_std:.3g} within a row"
        )
        if self.view == "deviation":
            deviation = viz.deviation_from_uniform(self.weights, self.mask)
            facts += f" · colours: weight − uniform, up to ±{abs(deviation).max():.3f}"
        return facts

    def _hidden(self) -> torch.Tensor:
        if self.mask is None:
            return torch.zeros(self.weights.shape, dtype=torch.bool)
        return self.mask.to(torch.bool).expand(self.weights.shape)


def draw(picture: Picture) -> str:
    """``svg.head_grid_svg`` of a Picture: SVG markup, one panel per head, hidden cells
    hatched (``IPython.display.SVG(markup)`` shows it in a notebook)."""
    return svg.head_grid_svg(
        picture.weights, picture.tokens, mask=picture.mask, title=picture.title, view=picture.view
    )


def _softmax_scores(
    queries: torch.Tensor, keys: torch.Tensor, divisor: float, mask: torch.Tensor | None
) -> tuple[torch.Tensor, float]:
    """Per head, ``softmax(queries @ keys.T / divisor)`` with ``mask``'s cells hidden.

    Args:
        queries, keys: (num_heads, num_tokens, head_dim).
        divisor: what the raw scores are divided by (sqrt(head_dim) times a temperature).
        mask: boolean, broadcastable to (num_heads, num_tokens, num_tokens), True = hidden.

    Returns:
        The (num_heads, num_tokens, num_tokens) weights and the population standard deviation
        (divided by the number of visible keys, not by that number minus one) of the divided
        scores within each row (its visible cells: what softmax sees), averaged over the rows
        with at least two visible keys.
    """
    scaled = queries @ keys.transpose(1, 2) / divisor  # (num_heads, num_tokens, num_tokens)
    hidden = torch.zeros_like(scaled, dtype=torch.bool)
    if mask is not None:
        hidden = mask.expand(scaled.shape)
    attn_weights = torch.softmax(scaled.masked_fill(hidden, -torch.inf), dim=-1)
    visible = (~hidden).sum(dim=-1, keepdim=True)  # (num_heads, num_tokens, 1)
    row_mean = scaled.masked_fill(hidden, 0.0).sum(dim=-1, keepdim=True) / visible
    spread = (scaled - row_mean).masked_fill(hidden, 0.0)  # (num_heads, num_tokens, num_tokens)
    row_std = (spread.square().sum(dim=-1, keepdim=True) / visible).sqrt()  # (h, n, 1)
    return attn_weights, float(row_std[visible >= 2].mean())


# --- the attention explorer (lectures 02 and 03) ------------------------------------------


@dataclass(frozen=True)
class AttentionSettings:
    """One configuration of the attention explorer; invalid ones raise ValueError.

    Attributes:
        example: a name of ``data.EXAMPLES`` ("dream", "journey", "rows", "kid").
        num_heads: number of heads, at least 1.
        head_dim: width of each head; ``MultiHeadAttention`` gets d_out = num_heads *
            head_dim, ``MultiHeadAttentionWrapper`` gets d_out = head_dim per head.
        seed: the seed set right before building the module.
        temperature: > 0; the scores softmax sees are divided by it (below 1 sharpens).
        scaled: divide the scores by sqrt(head_dim), as attention does; False shows why.
        causal: hide the future (keys after each query).
        model: "mha" (MultiHeadAttention) or "wrapper" (MultiHeadAttentionWrapper).
        view: "weights" or "deviation" (weight minus the uniform weight of its row).
    """

    example: str = "dream"
    num_heads: int = 2
    head_dim: int = 2
    seed: int = 123
    temperature: float = 1.0
    scaled: bool = True
    causal: bool = True
    model: str = "mha"
    view: str = "weights"

    def __post_init__(self) -> None:
        data.example(self.example)  # raises for an unknown name
        _validate_choice("model", self.model, MODELS)
        _validate_choice("view", self.view, VIEWS)
        if not self.temperature > 0:
            raise ValueError(
                f"temperature={self.temperature} must be positive: the scores are divided by it."
            )
        if self.head_dim < 1:
            raise ValueError(
                f"head_dim={self.head_dim} must be at least 1: each head needs a width."
            )
        validate_heads(self.num_heads * self.head_dim, self.num_heads)

    def describe(self) -> str:
        """The configuration in one line (the status line's first half)."""
        heads = _plural(self.num_heads, "head")
        width = self.num_heads * self.head_dim
        if self.model == "mha":
            split = f"{heads} × head_dim {self.head_dim} = d_out {width}"
        else:
            split = f"{heads} × head_dim {self.head_dim} = width {width} (d_out is per head)"
        scale = f"÷√{self.head_dim}" if self.scaled else "not scaled"
        mask = "causal mask on" if self.causal else "no mask"
        return (
            f'"{data.EXAMPLES[self.example]}" · {split} · scores {scale} · '
            f"temperature {self.temperature:.3g} · {mask} · seed {self.seed}"
        )


@torch.no_grad()
def attention_picture(settings: AttentionSettings) -> Picture:
    """The heads of a freshly built module on the settings' example.

    ``torch.manual_seed(settings.seed)`` then the module's construction (dropout 0), as in
    the lectures, without touching the caller's random state. The weights are recomputed
    from the module's own query and key projections: ``softmax(queries @ keys.T / s / T)``
    with s = sqrt(head_dim) when ``scaled`` (else 1) and T the temperature, future keys
    hidden when ``causal``. At the defaults they equal the module's ``attn_weights``.
    """
    chosen = data.example(settings.example)
    x = chosen.batch()  # (1, num_tokens, d_in)
    _, num_tokens, d_in = x.shape
    num_heads, head_dim = settings.num_heads, settings.head_dim
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        if settings.model == "mha":
            mha = MultiHeadAttention(d_in, num_heads * head_dim, num_tokens, 0.0, num_heads)
        else:
            wrapper = MultiHeadAttentionWrapper(d_in, head_dim, num_tokens, 0.0, num_heads)
    if settings.model == "mha":
        queries = split_heads(mha.W_query(x), num_heads)[0]  # (num_heads, num_tokens, head_dim)
        keys = split_heads(mha.W_key(x), num_heads)[0]  # (num_heads, num_tokens, head_dim)
    else:
        heads = [cast(CausalAttention, head) for head in wrapper.heads]
        queries = torch.stack([head.W_query(x)[0] for head in heads])  # same shape
        keys = torch.stack([head.W_key(x)[0] for head in heads])
    scale = math.sqrt(head_dim) if settings.scaled else 1.0
    mask = causal_mask(num_tokens) if settings.causal else None
    weights, row_std = _softmax_scores(queries, keys, scale * settings.temperature, mask)
    # Typographic quotes: IPython re-serialises SVG with minidom, which escapes a straight " in
    # text as &quot; from Python 3.13 on, so the stored output would depend on the Python version.
    title = f"“{chosen.sentence}”"
    return Picture(weights, chosen.tokens, mask, title, settings.view, row_std)


def attention_weights(settings: AttentionSettings = AttentionSettings()) -> torch.Tensor:
    """(num_heads, num_tokens, num_tokens) weights of ``attention_picture(settings)``."""
    return attention_picture(settings).weights


def draw_attention(settings: AttentionSettings = AttentionSettings()) -> str:
    """The attention explorer's picture as SVG markup (see ``draw``)."""
    return draw(attention_picture(settings))


# --- the encoder explorer (lecture 05) ----------------------------------------------------


@dataclass(frozen=True)
class EncoderSettings:
    """One configuration of the encoder explorer; invalid ones raise ValueError.

    The example's embeddings are first mapped to ``d_model`` features by a bias-free linear
    layer drawn under the seed (an embedding layer), so that many head counts divide it.

    Attributes:
        example: a name of ``data.EXAMPLES``.
        num_heads: must divide d_model.
        num_real: number of real tokens, 1..num_tokens; the rest are padding
            (zero embeddings, label ``<pad>``, hidden as keys). Ignored when causal.
        seed: the seed set right before building the layers.
        mask_kind: "padding" or "causal" (every token real, the future hidden).
        d_model: the width attention works in.
        view: "weights" or "deviation" (weight minus the uniform weight of its row).
    """

    example: str = "journey"
    num_heads: int = 3
    num_real: int = 4
    seed: int = 123
    mask_kind: str = "padding"
    d_model: int = 12
    view: str = "weights"

    def __post_init__(self) -> None:
        num_tokens = len(data.example(self.example).tokens)
        _validate_choice("mask_kind", self.mask_kind, MASK_KINDS)
        _validate_choice("view", self.view, VIEWS)
        if not 1 <= self.num_real <= num_tokens:
            raise ValueError(
                f"num_real={self.num_real}: {data.EXAMPLES[self.example]!r} has {num_tokens} "
                f"tokens, so choose 1 to {num_tokens} real tokens."
            )
        validate_heads(self.d_model, self.num_heads, width="d_model")

    @property
    def real_tokens(self) -> int:
        """How many tokens are real (all of them under the causal mask)."""
        num_tokens = len(data.example(self.example).tokens)
        return self.num_real if self.mask_kind == "padding" else num_tokens

    def describe(self) -> str:
        """The configuration in one line (the status line's first half)."""
        num_tokens = len(data.example(self.example).tokens)
        heads = _plural(self.num_heads, "head")
        split = f"{heads} × head_dim {self.d_model // self.num_heads} = d_model {self.d_model}"
        if self.mask_kind == "padding":
            padding = num_tokens - self.num_real
            mask = f"{self.num_real} real + {padding} padding, padding keys hidden"
        else:
            mask = f"all {num_tokens} tokens real, the future hidden (causal mask)"
        return f'"{data.EXAMPLES[self.example]}" · {split} · {mask} · seed {self.seed}'


@torch.no_grad()
def encoder_picture(settings: EncoderSettings) -> Picture:
    """Heads of a fresh ``blocks.MultiHeadSelfAttention`` (dropout 0) on a padded example.

    Under ``torch.manual_seed(settings.seed)`` (the caller's random state untouched): an
    ``nn.Linear(d_in, d_model, bias=False)`` embedding, then the attention module. Padding
    positions get zero embeddings, ``<pad>`` labels and ``attention.padding_mask``.
    """
    chosen = data.example(settings.example)
    num_tokens, d_in = chosen.embeddings.shape
    num_real = settings.real_tokens
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.seed)
        embed = torch.nn.Linear(d_in, settings.d_model, bias=False)
        module = MultiHeadSelfAttention(settings.d_model, settings.num_heads, dropout=0.0)
    x = embed(chosen.batch())  # (1, num_tokens, d_model)
    x[:, num_real:] = 0.0
    if settings.mask_kind == "causal":
        mask = causal_mask(num_tokens)
    else:
        mask = padding_mask([num_real], num_tokens)[0]  # (1, 1, num_tokens)
    queries = split_heads(module.W_query(x), settings.num_heads)[0]  # (num_heads, n, head_dim)
    keys = split_heads(module.W_key(x), settings.num_heads)[0]  # (num_heads, n, head_dim)
    head_dim = settings.d_model // settings.num_heads
    weights, row_std = _softmax_scores(queries, keys, math.sqrt(head_dim), mask)
    tokens = chosen.tokens[:num_real] + (PAD,) * (num_tokens - num_real)
    return Picture(weights, tokens, mask, f"{settings.mask_kind} mask", settings.view, row_std)


def encoder_weights(settings: EncoderSettings = EncoderSettings()) -> torch.Tensor:
    """(num_heads, num_tokens, num_tokens) weights of ``encoder_picture(settings)``."""
    return encoder_picture(settings).weights


def draw_encoder(settings: EncoderSettings = EncoderSettings()) -> str:
    """The encoder explorer's picture as SVG markup (see ``draw``)."""
    return draw(encoder_picture(settings))

"""A tiny decoder-only, attention-only transformer built from the course's own attention.

Token embedding + position information, then ``num_layers`` residual layers of the lectures'
``MultiHeadAttention`` (causal), then a linear read-out to the vocabulary. No MLPs: every
computation between tokens is attention, so each head's pattern can be read off and tested.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import cast

import torch
from torch import nn

from .attention import MultiHeadAttention
from .positions import sinusoidal_positions

__all__ = ["ModelConfig", "TinyTransformer", "ablated"]

POSITIONS = ("learned", "sinusoidal", "none")


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of a ``TinyTransformer``; ``positions`` is 'learned', 'sinusoidal' or 'none'."""

    vocab_size: int
    context_length: int
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    positions: str = "learned"

    def __post_init__(self) -> None:
        if self.positions not in POSITIONS:
            raise ValueError(f"positions={self.positions!r} must be one of {POSITIONS}.")
        if self.num_layers < 1 or self.vocab_size < 2:
            raise ValueError("a model needs num_layers >= 1 and vocab_size >= 2.")

    def to_dict(self) -> dict:
        return asdict(self)


class TinyTransformer(nn.Module):
    """Attention-only decoder: x = emb(tokens) + pos; x = x + att_l(x) per layer; logits.

    ``forward(tokens)`` maps (b, num_tokens) token ids to (b, num_tokens, vocab_size) logits.
    After each forward pass ``attention_weights()`` returns the weights every head used:
    (num_layers, b, num_heads, num_tokens, num_tokens).
    """

    pos_table: torch.Tensor  # a buffer, registered in __init__ for sinusoidal positions

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.positions == "learned":
            self.pos_emb = nn.Embedding(cfg.context_length, cfg.d_model)
        elif cfg.positions == "sinusoidal":
            self.register_buffer(
                "pos_table", sinusoidal_positions(cfg.context_length, cfg.d_model), persistent=False
            )
        self.layers = nn.ModuleList(
            [
                MultiHeadAttention(cfg.d_model, cfg.d_model, cfg.context_length, 0.0, cfg.num_heads)
                for _ in range(cfg.num_layers)
            ]
        )
        self.out_head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def positions(self, num_tokens: int) -> torch.Tensor:
        """The position vectors added to the first ``num_tokens`` tokens: (num_tokens, d_model)."""
        if self.cfg.positions == "learned":
            return self.pos_emb.weight[:num_tokens]
        if self.cfg.positions == "sinusoidal":
            return self.pos_table[:num_tokens]
        return torch.zeros(num_tokens, self.cfg.d_model)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.ndim != 2 or tokens.dtype != torch.long:
            raise ValueError(
                f"expected token ids of shape (b, num_tokens) and dtype long, got shape "
                f"{tuple(tokens.shape)} and dtype {tokens.dtype}."
            )
        num_tokens = tokens.shape[1]
        if num_tokens > self.cfg.context_length:
            raise ValueError(
                f"{num_tokens} tokens do not fit the context_length={self.cfg.context_length}."
            )
        x = self.tok_emb(tokens) + self.positions(num_tokens)  # (b, num_tokens, d_model)
        for att in self.layers:
            x = x + att(x)  # (b, num_tokens, d_model): each layer adds to the residual stream
        return self.out_head(x)  # (b, num_tokens, vocab_size)

    def attention_weights(self) -> torch.Tensor:
        """(num_layers, b, num_heads, num_tokens, num_tokens) weights of the last forward pass."""
        weights = []
        for att in self.layers:
            if not isinstance(att.attn_weights, torch.Tensor):
                raise ValueError("run the model on some tokens first: model(tokens).")
            weights.append(att.attn_weights)
        return torch.stack(weights)


@contextmanager
def ablated(model: TinyTransformer, heads: list[tuple[int, int]]) -> Iterator[TinyTransformer]:
    """Within the ``with`` block, the listed (layer, head) heads write nothing.

    A head reaches the residual stream only through its ``head_dim`` columns of its layer's
    ``out_proj``; zeroing those columns zeroes the head's output. They are restored on exit.
    """
    saved = []
    with torch.no_grad():
        for layer, head in heads:
            att = cast(MultiHeadAttention, model.layers[layer])
            if not 0 <= head < att.num_heads:
                raise ValueError(f"head={head} is not in 0..{att.num_heads - 1}.")
            cols = slice(head * att.head_dim, (head + 1) * att.head_dim)
            saved.append((att, cols, att.out_proj.weight[:, cols].clone()))
            att.out_proj.weight[:, cols] = 0.0
    try:
        yield model
    finally:
        with torch.no_grad():
            for att, cols, weight in reversed(saved):
                att.out_proj.weight[:, cols] = weight

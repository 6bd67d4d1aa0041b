"""Transformer components around attention (lecture 05), in their correct versions.

* ``MultiHeadCrossAttention``: queries from one sequence, keys and values from another, as
  in the decoder of an encoder-decoder transformer. Called with the same tensor three times
  it is plain (bidirectional) multi-head self-attention.
* ``MultiHeadSelfAttention`` + ``EncoderLayer``: the "Attention Is All You Need" encoder,
  post-LN, with padding masks. The seed listing's encoder layer computed the residual
  sums in comments only and never applied its norms; here both are done.
* ``TransformerBlock``: a GPT-2 style pre-LN causal block configured by ``BlockConfig``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Self

import torch
from torch import nn

from .attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads
from .validation import (
    self_attention_mask,
    validate_dropout,
    validate_features,
    validate_heads,
    validate_input,
    validate_sizes,
)

# Shapes: b batch size, T num_tokens, h num_heads. The classes the lecture shows spell them
# out: (b, num_tokens, d_model).

__all__ = [
    "GELU",
    "LayerNorm",
    "FeedForward",
    "MultiHeadCrossAttention",
    "MultiHeadSelfAttention",
    "EncoderLayer",
    "BlockConfig",
    "GPT2_CONFIGS",
    "TransformerBlock",
    "count_parameters",
    "swiglu_hidden",
    "block_parameter_counts",
]


class GELU(nn.Module):
    """GELU, tanh approximation (as in GPT-2): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


class LayerNorm(nn.Module):
    """Normalise each token vector to mean 0 and variance 1, then scale and shift (learned)."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(d_model))
        self.shift = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_features(x, self.scale.shape[0])
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1): biased, like nn.LayerNorm
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


class FeedForward(nn.Module):
    """Position-wise feed-forward: Linear(d_model, d_ff) -> activation -> dropout -> Linear back.

    ``activation`` is ``"relu"`` (the original transformer) or ``"gelu"`` (GPT-2).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1, activation: str = "relu"):
        super().__init__()
        validate_sizes(d_model=d_model, d_ff=d_ff)
        validate_dropout(dropout)
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation={activation!r} must be 'relu' or 'gelu'.")
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = nn.ReLU() if activation == "relu" else GELU()
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_features(x, self.linear1.in_features)
        x = self.linear1(x)  # (b, num_tokens, d_ff)
        x = self.dropout(self.activation(x))  # (b, num_tokens, d_ff)
        return self.linear2(x)  # (b, num_tokens, d_model)


class MultiHeadCrossAttention(nn.Module):
    """Multi-head attention whose queries and keys/values may come from different sequences.

    ``forward(query, key, value, mask=None)`` returns ``(output, attn_weights)``:
    query (b, num_queries, d_model); key and value (b, num_keys, d_model); mask boolean,
    True = hidden, broadcastable to (b, num_heads, num_queries, num_keys), e.g. the
    (b, 1, 1, num_keys) result of ``attention.padding_mask``. Output (b, num_queries,
    d_model), weights (b, num_heads, num_queries, num_keys).
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.1):
        super().__init__()
        validate_sizes(d_model=d_model)
        validate_dropout(dropout)
        validate_heads(d_model, num_heads, width="d_model")
        self.d_model = d_model
        self.num_heads = num_heads
        self.W_query = nn.Linear(d_model, d_model)
        self.W_key = nn.Linear(d_model, d_model)
        self.W_value = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.ndim != 3 or x.shape[-1] != self.d_model or x.shape[0] != query.shape[0]:
                raise ValueError(
                    f"{name} must have shape (b, length, {self.d_model}) with the query's "
                    f"b={query.shape[0]}; got {tuple(x.shape)}."
                )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value need the same length (one value per key); got "
                f"{key.shape[1]} keys and {value.shape[1]} values."
            )
        h = self.num_heads
        queries = split_heads(self.W_query(query), h)  # (b, num_heads, num_queries, head_dim)
        keys = split_heads(self.W_key(key), h)  # (b, num_heads, num_keys, head_dim)
        values = split_heads(self.W_value(value), h)  # (b, num_heads, num_keys, head_dim)
        context, attn_weights = scaled_dot_product_attention(
            queries, keys, values, mask=mask, dropout=self.dropout
        )  # (b, num_heads, num_queries, head_dim), (b, num_heads, num_queries, num_keys)
        self.attn_weights = attn_weights.detach()
        return self.out_proj(merge_heads(context)), attn_weights  # (b, num_queries, d_model)


class MultiHeadSelfAttention(MultiHeadCrossAttention):
    """Bidirectional multi-head self-attention: cross-attention of a sequence with itself.

    ``forward(x, mask=None, key_padding_mask=None)`` returns ``(output, attn_weights)``. Both
    masks are boolean, True = hidden: ``mask`` is rank 4, broadcastable to
    (b, num_heads, num_tokens, num_tokens), e.g. the (b, 1, 1, num_tokens) result of
    ``attention.padding_mask``; ``key_padding_mask`` is (b, num_tokens), True at padded
    positions, as in PyTorch. Any other shape raises ValueError (``self_attention_mask``).
    """

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"expected input of shape (b, num_tokens, {self.d_model}), got {tuple(x.shape)}."
            )
        b, num_tokens, _ = x.shape
        mask = self_attention_mask(mask, key_padding_mask, b, self.num_heads, num_tokens)
        return super().forward(x, x, x, mask)  # (b, T, d_model), (b, h, T, T)


class EncoderLayer(nn.Module):
    """Post-LN encoder layer: x = norm1(x + drop(attn(x))); x = norm2(x + drop(ffn(x)))."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.att = MultiHeadSelfAttention(d_model, num_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        attn_out, _ = self.att(x, mask=mask)  # (b, num_tokens, d_model)
        x = self.norm1(x + self.dropout(attn_out))  # Add & Norm
        ffn_out = self.feed_forward(x)  # (b, num_tokens, d_model)
        return self.norm2(x + self.dropout(ffn_out))  # Add & Norm


# LLMs-from-scratch's GPT_CONFIG_124M keys -> BlockConfig's (and GPTConfig's) fields
LLMS_FROM_SCRATCH = {
    "vocab_size": "vocab_size",
    "context_length": "context_length",
    "emb_dim": "d_model",
    "n_heads": "num_heads",
    "n_layers": "num_layers",
    "drop_rate": "dropout",
    "qkv_bias": "qkv_bias",
}


@dataclass(frozen=True)
class BlockConfig:
    """Sizes of a GPT-style block, and ``num_layers``: how many a ``GPTModel`` stacks.

    ``d_ff`` is 4 * d_model in GPT-2. The defaults are GPT-2 small's, without its biases.
    The field names are the lectures'; a config dict of the book *Build a Large Language
    Model (From Scratch)* (``emb_dim``, ``n_heads``, ...) converts with
    ``from_llms_from_scratch``.
    """

    d_model: int = 768
    context_length: int = 1024
    num_heads: int = 12
    dropout: float = 0.1
    qkv_bias: bool = False
    num_layers: int = 12

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """Refuse the book's key names with a sentence (the constructor alone would raise a
        bare TypeError)."""
        book = sorted(k for k in kwargs if LLMS_FROM_SCRATCH.get(k, k) != k)
        if book:
            renamed = ", ".join(f"{k} -> {LLMS_FROM_SCRATCH[k]}" for k in book)
            raise TypeError(
                f"{cls.__name__} has no field(s) {book}: those are LLMs-from-scratch's names. "
                f"Here they are {renamed}; or convert the book's dict with "
                f"{cls.__name__}.from_llms_from_scratch(cfg)."
            )
        return super().__new__(cls)

    @classmethod
    def from_llms_from_scratch(cls, cfg: dict[str, Any]) -> Self:
        """Convert LLMs-from-scratch's config dict (``GPT_CONFIG_124M``: ``vocab_size``,
        ``context_length``, ``emb_dim``, ``n_heads``, ``n_layers``, ``drop_rate``,
        ``qkv_bias``) to this class. A block has no vocabulary: ``BlockConfig`` leaves
        ``vocab_size`` out, ``GPTConfig`` keeps it."""
        unknown = sorted(set(cfg) - set(LLMS_FROM_SCRATCH))
        if unknown:
            raise ValueError(
                f"unknown LLMs-from-scratch keys {unknown}; the known ones are "
                f"{sorted(LLMS_FROM_SCRATCH)}."
            )
        names = {field.name for field in fields(cls)}
        converted = {LLMS_FROM_SCRATCH[k]: v for k, v in cfg.items()}
        return cls(**{name: v for name, v in converted.items() if name in names})

    @property
    def d_ff(self) -> int:
        return 4 * self.d_model


# GPT-2's released sizes. GPT-2's query/key/value projections have biases, so these configs
# do too; BlockConfig's own default (no bias) is the lectures'.
GPT2_CONFIGS: dict[str, BlockConfig] = {
    name: BlockConfig(d_model=d_model, num_heads=heads, qkv_bias=True, num_layers=layers)
    for name, d_model, heads, layers in (
        ("small", 768, 12, 12),
        ("medium", 1024, 16, 24),
        ("large", 1280, 20, 36),
        ("xl", 1600, 25, 48),
    )
}


class TransformerBlock(nn.Module):
    """GPT-2 style pre-LN block: x = x + drop(attn(norm1(x))); x = x + drop(ff(norm2(x)))."""

    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg.d_model,
            d_out=cfg.d_model,
            context_length=cfg.context_length,
            dropout=cfg.dropout,
            num_heads=cfg.num_heads,
            qkv_bias=cfg.qkv_bias,
        )
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, dropout=0.0, activation="gelu")
        self.norm1 = LayerNorm(cfg.d_model)
        self.norm2 = LayerNorm(cfg.d_model)
        self.drop_shortcut = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_input(x, self.att.d_in, self.att.context_length)  # before norm1 fails cryptically
        x = x + self.drop_shortcut(self.att(self.norm1(x)))  # (b, num_tokens, d_model)
        return x + self.drop_shortcut(self.ff(self.norm2(x)))  # (b, num_tokens, d_model)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters (buffers such as the causal mask do not count)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def swiglu_hidden(d_model: int, multiple_of: int = 256) -> int:
    """Llama's SwiGLU hidden width: 2/3 of GPT-2's 4 * d_model, rounded up to ``multiple_of``.

    SwiGLU has three matrices instead of two; 2/3 of 4d keeps the feed-forward's parameter
    count near GPT-2's 8d^2 (Shazeer 2020; Llama's ``multiple_of`` rounding).
    """
    hidden = int(2 * 4 * d_model / 3)
    return multiple_of * -(-hidden // multiple_of)  # round up


def block_parameter_counts(d_model: int, d_ff: int, style: str = "gpt2") -> dict[str, int]:
    """Parameters of one decoder block by part, counted on PyTorch modules built on ``meta``.

    ``style="gpt2"``: LayerNorms (scale and shift), biased query, key, value and output
    projections, a biased GELU feed-forward ``d_model -> d_ff -> d_model``.
    ``style="llama"``: RMSNorms (scale only), bias-free projections, a bias-free SwiGLU
    feed-forward (gate and up ``d_model -> d_ff``, down ``d_ff -> d_model``). RoPE rotates the
    queries and keys by fixed angles: it adds no parameters.
    Returns ``{"attention", "feed-forward", "norms", "block"}``.
    """
    if style not in ("gpt2", "llama"):
        raise ValueError(f"style={style!r}: choose 'gpt2' or 'llama'.")
    bias = style == "gpt2"
    norm = nn.LayerNorm if style == "gpt2" else nn.RMSNorm
    with torch.device("meta"):
        attention = [nn.Linear(d_model, d_model, bias=bias) for _ in range(4)]  # q, k, v, out
        up = [nn.Linear(d_model, d_ff, bias=bias) for _ in range(1 if style == "gpt2" else 2)]
        feed_forward = [*up, nn.Linear(d_ff, d_model, bias=bias)]
        norms = [norm(d_model), norm(d_model)]
    parts = {
        name: sum(count_parameters(m) for m in modules)
        for name, modules in (("attention", attention), ("feed-forward", feed_forward),
                              ("norms", norms))
    }  # fmt: skip
    parts["block"] = sum(parts.values())
    return parts

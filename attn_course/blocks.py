"""Transformer components around attention (lecture 05), in their correct versions.

* ``MultiHeadSelfAttention`` + ``EncoderLayer``: the "Attention Is All You Need" encoder,
  post-LN, with padding masks. The seed listing's encoder layer computed the residual
  sums in comments only and never applied its norms; here both are done.
* ``TransformerBlock``: a GPT-2 style pre-LN causal block configured by ``BlockConfig``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from .attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads
from .validation import (
    check_config,
    check_features,
    check_heads,
    check_input,
    self_attention_mask,
)

__all__ = [
    "GELU",
    "LayerNorm",
    "FeedForward",
    "MultiHeadSelfAttention",
    "EncoderLayer",
    "BlockConfig",
    "GPT2_CONFIGS",
    "TransformerBlock",
    "count_parameters",
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
        check_features(x, self.scale.shape[0])
        mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, keepdim=True, unbiased=False)  # (..., 1): biased, like nn.LayerNorm
        return self.scale * (x - mean) / torch.sqrt(var + self.eps) + self.shift


class FeedForward(nn.Module):
    """Position-wise feed-forward: Linear(d_model, d_ff) -> activation -> dropout -> Linear back.

    ``activation`` is ``"relu"`` (the original transformer) or ``"gelu"`` (GPT-2).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.1, activation: str = "relu"):
        super().__init__()
        check_config(d_model, d_ff, 1, dropout)
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation={activation!r} must be 'relu' or 'gelu'.")
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = nn.ReLU() if activation == "relu" else GELU()
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_features(x, self.linear1.in_features)
        x = self.linear1(x)  # (b, num_tokens, d_ff)
        x = self.dropout(self.activation(x))  # (b, num_tokens, d_ff)
        return self.linear2(x)  # (b, num_tokens, d_model)


class MultiHeadSelfAttention(nn.Module):
    """Bidirectional multi-head self-attention with an optional (padding) mask.

    ``forward(x, mask=None, key_padding_mask=None)`` returns ``(output, attn_weights)``. Both
    masks are boolean, True = hidden: ``mask`` is rank 4, broadcastable to
    (b, n_heads, num_tokens, num_tokens), e.g. the (b, 1, 1, num_tokens) result of
    ``attention.padding_mask``; ``key_padding_mask`` is (b, num_tokens), True at padded
    positions, as in PyTorch. Any other shape raises ValueError (``self_attention_mask``).
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.1):
        super().__init__()
        check_config(d_model, d_model, 1, dropout)
        check_heads(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.W_query = nn.Linear(d_model, d_model)
        self.W_key = nn.Linear(d_model, d_model)
        self.W_value = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def forward(
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
        mask = self_attention_mask(mask, key_padding_mask, b, self.n_heads, num_tokens)
        queries = split_heads(self.W_query(x), self.n_heads)  # (b, num_heads, num_tokens, head_dim)
        keys = split_heads(self.W_key(x), self.n_heads)  # (b, num_heads, num_tokens, head_dim)
        values = split_heads(self.W_value(x), self.n_heads)  # (b, num_heads, num_tokens, head_dim)
        context, attn_weights = scaled_dot_product_attention(
            queries, keys, values, mask=mask, dropout=self.dropout
        )  # (b, num_heads, num_tokens, head_dim), (b, num_heads, num_tokens, num_tokens)
        self.attn_weights = attn_weights.detach()
        return self.out_proj(merge_heads(context)), attn_weights  # (b, num_tokens, d_model)


class EncoderLayer(nn.Module):
    """Post-LN encoder layer: x = norm1(x + drop(attn(x))); x = norm2(x + drop(ffn(x)))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1):
        super().__init__()
        self.self_attention = MultiHeadSelfAttention(d_model, n_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        attn_out, _ = self.self_attention(x, mask=mask)  # (b, num_tokens, d_model)
        x = self.norm1(x + self.dropout(attn_out))  # Add & Norm
        ffn_out = self.feed_forward(x)  # (b, num_tokens, d_model)
        return self.norm2(x + self.dropout(ffn_out))  # Add & Norm


@dataclass(frozen=True)
class BlockConfig:
    """Sizes of a GPT-style block. ``d_ff`` is 4 * emb_dim in GPT-2."""

    emb_dim: int = 768
    context_length: int = 1024
    n_heads: int = 12
    drop_rate: float = 0.1
    qkv_bias: bool = False

    @property
    def d_ff(self) -> int:
        return 4 * self.emb_dim


# GPT-2's released sizes: (emb_dim, n_heads, n_layers). GPT-2's query/key/value projections
# have biases, so these configs do too; BlockConfig's own default (no bias) is the lectures'.
GPT2_CONFIGS: dict[str, tuple[BlockConfig, int]] = {
    name: (BlockConfig(emb_dim=emb, n_heads=heads, qkv_bias=True), layers)
    for name, emb, heads, layers in (
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
            d_in=cfg.emb_dim,
            d_out=cfg.emb_dim,
            context_length=cfg.context_length,
            dropout=cfg.drop_rate,
            num_heads=cfg.n_heads,
            qkv_bias=cfg.qkv_bias,
        )
        self.ff = FeedForward(cfg.emb_dim, cfg.d_ff, dropout=0.0, activation="gelu")
        self.norm1 = LayerNorm(cfg.emb_dim)
        self.norm2 = LayerNorm(cfg.emb_dim)
        self.drop_shortcut = nn.Dropout(cfg.drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_input(x, self.att.d_in, self.att.context_length)  # before norm1 can fail cryptically
        x = x + self.drop_shortcut(self.att(self.norm1(x)))  # (b, num_tokens, emb_dim)
        return x + self.drop_shortcut(self.ff(self.norm2(x)))  # (b, num_tokens, emb_dim)


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters (buffers such as the causal mask do not count)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)

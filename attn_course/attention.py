"""Attention in PyTorch, written the way the lectures teach it.

Mask convention of the whole course: a boolean mask is ``True`` where a score is HIDDEN
(masked out). Two other conventions exist and the notebooks point them out:

* ``torch.nn.functional.scaled_dot_product_attention`` takes a boolean ``attn_mask``
  that is ``True`` where attention is ALLOWED -- the opposite meaning.
* The padding masks of the transformer lecture are float tensors with ``1 = keep`` and
  ``0 = pad``; ``~keep.bool()`` turns one into this course's convention.
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from .validation import validate_config, validate_heads, validate_input, validate_mask

# Shapes: b batch size, T num_tokens, h num_heads, hd head_dim. The lecture classes spell
# them out as the seeds do: (b, num_tokens, d_out).

__all__ = [
    "causal_mask",
    "sliding_window_mask",
    "padding_mask",
    "scaled_dot_product_attention",
    "split_heads",
    "merge_heads",
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
    "MultiHeadAttentionSDPA",
    "copy_wrapper_weights",
]


def causal_mask(num_tokens: int) -> torch.Tensor:
    """Boolean (num_tokens, num_tokens) mask, True above the diagonal = the future, hidden."""
    if num_tokens < 1:
        raise ValueError(f"num_tokens={num_tokens} must be at least 1.")
    return torch.triu(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=1)


def sliding_window_mask(num_tokens: int, window: int) -> torch.Tensor:
    """Boolean (num_tokens, num_tokens) causal mask that also hides keys ``window`` or more back.

    Query ``i`` sees keys ``i - window + 1 .. i`` (itself and the ``window - 1`` before it);
    True = hidden, like ``causal_mask``. ``window >= num_tokens`` gives ``causal_mask``.
    """
    if window < 1:
        raise ValueError(f"window={window} must be at least 1: a token always sees itself.")
    too_old = torch.tril(torch.ones(num_tokens, num_tokens, dtype=torch.bool), diagonal=-window)
    return causal_mask(num_tokens) | too_old


def padding_mask(lengths: torch.Tensor | list[int], num_tokens: int) -> torch.Tensor:
    """Boolean (b, 1, 1, num_tokens) mask, True at the padded key positions of each sequence.

    ``lengths[i]`` is the number of real tokens of sequence ``i``; positions from there on
    are padding. The two singleton dims broadcast over heads and query positions.
    """
    lengths = torch.as_tensor(lengths)
    if lengths.ndim != 1 or ((lengths < 1) | (lengths > num_tokens)).any():
        raise ValueError(
            f"lengths must be a 1-D list of ints in [1, {num_tokens}] (one per sequence), "
            f"got {lengths.tolist()}."
        )
    positions = torch.arange(num_tokens)
    return (positions[None, :] >= lengths[:, None])[:, None, None, :]  # (b, 1, 1, num_tokens)


def scaled_dot_product_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout: nn.Module | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q K^T / sqrt(head_dim)) V for any leading (batch, head, ...) dims.

    Args:
        queries: (..., num_queries, head_dim)
        keys: (..., num_keys, head_dim)
        values: (..., num_keys, d_v)
        mask: boolean, True = hidden: (num_queries, num_keys) for every sequence and head,
            or the scores' own rank with each dim 1 or equal, e.g. (b, 1, 1, num_keys).
            Other shapes raise ValueError (see ``validation.validate_mask``).
        dropout: optional module applied to the attention weights (e.g. ``nn.Dropout``).

    Returns:
        ``(context, attn_weights)`` of shapes (..., num_queries, d_v) and
        (..., num_queries, num_keys).

    A query whose keys are ALL hidden has nothing to attend to. The softmax formula is 0/0
    there; PyTorch's stable softmax subtracts the row's maximum first, and that maximum is
    -inf, so NaN appears already at -inf - (-inf), before the exponential (an epsilon in the
    denominator would not help). This function returns zero weights and a zero context
    vector for such rows instead, as PyTorch's fused kernel also does in the pinned torch 2.13.
    """
    attn_scores = queries @ keys.transpose(-2, -1)  # (..., num_queries, num_keys)
    scaled = attn_scores / keys.shape[-1] ** 0.5
    if mask is None:
        attn_weights = torch.softmax(scaled, dim=-1)
    else:
        validate_mask(mask, tuple(scaled.shape))
        masked = scaled.masked_fill(mask, -torch.inf)
        attn_weights = torch.softmax(masked, dim=-1)
        # Rows with every key hidden came out as NaN (-inf - (-inf)): make them all-zero.
        attn_weights = attn_weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
    if dropout is not None:
        attn_weights = dropout(attn_weights)
    context = attn_weights @ values  # (..., num_queries, d_v)
    return context, attn_weights


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(b, T, d_out) -> (b, h, T, hd): the last dim cut into ``num_heads`` heads."""
    b, num_tokens, d_out = x.shape
    validate_heads(d_out, num_heads)
    x = x.view(b, num_tokens, num_heads, d_out // num_heads)  # (b, T, h, hd)
    return x.transpose(1, 2)  # (b, h, T, hd)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(b, h, T, hd) -> (b, T, h * hd): the heads side by side again."""
    b, num_heads, num_tokens, head_dim = x.shape
    x = x.transpose(1, 2)  # (b, T, h, hd)
    return x.contiguous().view(b, num_tokens, num_heads * head_dim)  # (b, T, d_out)


# --- the lecture classes -----------------------------------------------------------------


class CausalAttention(nn.Module):
    """One causal self-attention head (lecture 01).

    After each forward pass ``self.attn_weights`` holds the weights used, detached, of
    shape (b, num_tokens, num_tokens).
    """

    mask: torch.Tensor  # a buffer, registered in __init__

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        qkv_bias: bool = False,
    ):
        super().__init__()
        validate_config(d_in, d_out, context_length, dropout)
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))
        self.attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_input(x, self.d_in, self.context_length)
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, num_tokens, d_out)
        queries = self.W_query(x)  # (b, num_tokens, d_out)
        values = self.W_value(x)  # (b, num_tokens, d_out)

        attn_scores = queries @ keys.transpose(1, 2)  # (b, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        self.attn_weights = attn_weights.detach()

        context_vec = attn_weights @ values  # (b, num_tokens, d_out)
        return context_vec


class MultiHeadAttentionWrapper(nn.Module):
    """``num_heads`` independent ``CausalAttention`` heads, outputs concatenated (lecture 02).

    Careful: here ``d_out`` is the width of ONE head, so the output has
    ``num_heads * d_out`` features. In ``MultiHeadAttention`` ``d_out`` is the total width.
    ``self.attn_weights`` stacks the heads' weights: (b, num_heads, num_tokens, num_tokens).
    """

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ):
        super().__init__()
        validate_config(d_in, d_out, context_length, dropout)
        if num_heads < 1:
            raise ValueError(f"num_heads={num_heads} must be at least 1.")
        self.heads = nn.ModuleList(
            [
                CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
                for _ in range(num_heads)
            ]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The heads' outputs side by side: (b, num_tokens, num_heads * d_out)
        return torch.cat([head(x) for head in self.heads], dim=-1)

    @property
    def attn_weights(self) -> torch.Tensor | None:
        weights = []
        for head in self.heads:
            if not isinstance(head.attn_weights, torch.Tensor):
                return None  # no forward pass yet
            weights.append(head.attn_weights)
        return torch.stack(weights, dim=1)


class MultiHeadAttention(nn.Module):
    """Multi-head causal self-attention (lecture 03): one projection per role (``W_query``,
    ``W_key``, ``W_value``), each split into heads, then ``out_proj`` mixes the heads.

    ``d_out`` is the total width; each head works on ``head_dim = d_out // num_heads``.
    After each forward pass ``self.attn_weights`` holds the weights used, detached:
    (b, num_heads, num_tokens, num_tokens).
    """

    mask: torch.Tensor  # a buffer, registered in __init__

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        qkv_bias: bool = False,
    ):
        super().__init__()
        validate_config(d_in, d_out, context_length, dropout)
        validate_heads(d_out, num_heads)
        self.d_in = d_in
        self.d_out = d_out
        self.context_length = context_length
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # combines the heads' outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", causal_mask(context_length))
        self.attn_weights: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_input(x, self.d_in, self.context_length)
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)  # (b, num_tokens, d_out)
        queries = self.W_query(x)  # (b, num_tokens, d_out)
        values = self.W_value(x)  # (b, num_tokens, d_out)

        # Unroll the last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)

        # Group by head: -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        attn_scores = queries @ keys.transpose(2, 3)  # (b, num_heads, num_tokens, num_tokens)
        attn_scores.masked_fill_(self.mask[:num_tokens, :num_tokens], -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        self.attn_weights = attn_weights.detach()

        # Weighted sum of the values, heads swapped back: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)
        # Merge the heads (view needs contiguous memory): (b, num_tokens, d_out)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)  # (b, num_tokens, d_out)


class MultiHeadAttentionSDPA(MultiHeadAttention):
    """``MultiHeadAttention`` computed with PyTorch's fused ``F.scaled_dot_product_attention``.

    Same constructor and the same ``state_dict`` (the unused ``mask`` buffer included), so
    weights load across in both directions and give the same outputs. The fused kernel
    never materialises the attention weights: ``self.attn_weights`` stays ``None``.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_input(x, self.d_in, self.context_length)
        queries = split_heads(self.W_query(x), self.num_heads)  # (b, h, T, hd)
        keys = split_heads(self.W_key(x), self.num_heads)  # (b, h, T, hd)
        values = split_heads(self.W_value(x), self.num_heads)  # (b, h, T, hd)
        dropout_p = self.dropout.p if self.training else 0.0
        context_vec = F.scaled_dot_product_attention(
            queries, keys, values, dropout_p=dropout_p, is_causal=True
        )  # (b, h, T, hd)
        return self.out_proj(merge_heads(context_vec))  # (b, T, d_out)


@torch.no_grad()
def copy_wrapper_weights(wrapper: MultiHeadAttentionWrapper, mha: MultiHeadAttention) -> None:
    """Copy the wrapper's per-head weights into ``mha`` so both compute the same heads.

    Head ``h`` of the wrapper owns rows ``h*head_dim:(h+1)*head_dim`` of each of ``mha``'s
    projections. The wrapper has no output projection, so ``mha.out_proj`` becomes the
    identity: then ``mha(x)`` equals ``wrapper(x)``.
    """
    heads = wrapper.heads
    if len(heads) != mha.num_heads or heads[0].d_out != mha.head_dim:
        raise ValueError(
            f"the wrapper has {len(heads)} heads of width {heads[0].d_out}, the "
            f"MultiHeadAttention {mha.num_heads} heads of width {mha.head_dim}: they must match."
        )
    if heads[0].d_in != mha.d_in:
        raise ValueError(
            f"the wrapper reads d_in={heads[0].d_in} features, the MultiHeadAttention "
            f"d_in={mha.d_in}: they must match."
        )
    if (cast(CausalAttention, heads[0]).W_query.bias is None) != (mha.W_query.bias is None):
        raise ValueError("qkv_bias must be the same for the wrapper and the MultiHeadAttention.")
    for name in ("W_query", "W_key", "W_value"):
        target = getattr(mha, name)
        target.weight.copy_(torch.cat([getattr(h, name).weight for h in heads], dim=0))
        if target.bias is not None:
            target.bias.copy_(torch.cat([getattr(h, name).bias for h in heads], dim=0))
    mha.out_proj.weight.copy_(torch.eye(mha.d_out))
    mha.out_proj.bias.zero_()

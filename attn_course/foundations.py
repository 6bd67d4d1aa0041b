"""Two foundations around the lectures' classes: attention with no weights, and cross-attention.

* ``weightless_attention`` (lecture 00): every token is its own query, key and value;
  dot products as similarity, softmax, weighted sum. No trainable weights at all.
* ``MultiHeadCrossAttention`` (lecture 05): queries from one sequence, keys and values from
  another, as in the decoder of an encoder-decoder transformer. Called with the same tensor
  three times it is plain (bidirectional) multi-head self-attention.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .attention import merge_heads, scaled_dot_product_attention, split_heads
from .numpy_attention import softmax
from .validation import validate_dropout, validate_heads, validate_sizes

__all__ = ["weightless_attention", "MultiHeadCrossAttention"]


def weightless_attention(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Attention with no trainable weights: each token attends with its own embedding.

    Args:
        X: (num_tokens, d_in) token embeddings.

    Returns:
        ``(context, weights)`` of shapes (num_tokens, d_in) and (num_tokens, num_tokens).
    """
    attn_scores = X @ X.T  # (num_tokens, num_tokens): similarity of every pair of tokens
    attn_weights = softmax(attn_scores, axis=-1)  # each row sums to 1
    return attn_weights @ X, attn_weights  # (num_tokens, d_in), (num_tokens, num_tokens)


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

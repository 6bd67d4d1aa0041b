"""Attention from scratch in NumPy (lecture 00): no autograd, no modules, only matrices.

Convention: row vectors, so a projection is ``X @ W`` with ``W`` of shape (d_in, d_out).
(``torch.nn.Linear`` stores the transpose: ``linear.weight`` is (d_out, d_in).)
"""

from __future__ import annotations

import numpy as np

__all__ = ["softmax", "weightless_attention", "self_attention", "multi_head_attention"]


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax: subtracting the row max changes nothing but avoids overflow."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    e_x = np.exp(shifted)
    return e_x / e_x.sum(axis=axis, keepdims=True)


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


def self_attention(
    X: np.ndarray,
    W_Q: np.ndarray,
    W_K: np.ndarray,
    W_V: np.ndarray,
    causal: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """One attention head.

    Args:
        X: (num_tokens, d_in) token embeddings.
        W_Q, W_K: (d_in, d_k) projections; W_V: (d_in, d_v).
        causal: hide the future (keys after each query).

    Returns:
        ``(output, weights)`` of shapes (num_tokens, d_v) and (num_tokens, num_tokens).
    """
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (num_tokens, d_k), (num_tokens, d_k), (num_tokens, d_v)
    scores = Q @ K.T  # (num_tokens, num_tokens)
    scaled = scores / np.sqrt(K.shape[-1])
    if causal:
        num_tokens = X.shape[0]
        future = np.triu(np.ones((num_tokens, num_tokens), dtype=bool), k=1)
        scaled = np.where(future, -np.inf, scaled)
    weights = softmax(scaled, axis=-1)
    return weights @ V, weights  # (num_tokens, d_v), (num_tokens, num_tokens)


def multi_head_attention(
    X: np.ndarray,
    W_Q_heads: list[np.ndarray],
    W_K_heads: list[np.ndarray],
    W_V_heads: list[np.ndarray],
    W_O: np.ndarray,
    causal: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Several heads side by side, concatenated, then mixed by ``W_O``.

    Args:
        X: (num_tokens, d_model).
        W_Q_heads, W_K_heads, W_V_heads: one (d_model, head_dim) matrix per head.
        W_O: (num_heads * head_dim, d_model) output projection.

    Returns:
        ``(output, weights)``: (num_tokens, d_model) and (num_heads, num_tokens, num_tokens).
    """
    if not len(W_Q_heads) == len(W_K_heads) == len(W_V_heads):
        raise ValueError("give the same number of query, key and value matrices (one per head).")
    outputs, weights = [], []
    for W_Q, W_K, W_V in zip(W_Q_heads, W_K_heads, W_V_heads, strict=True):
        head_output, head_weights = self_attention(X, W_Q, W_K, W_V, causal=causal)
        outputs.append(head_output)
        weights.append(head_weights)
    concatenated = np.concatenate(outputs, axis=-1)  # (num_tokens, num_heads * head_dim)
    output = concatenated @ W_O  # (num_tokens, d_model)
    return output, np.stack(weights)  # weights: (num_heads, num_tokens, num_tokens)

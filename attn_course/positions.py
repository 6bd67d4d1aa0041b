"""Position information (lecture 08): attention alone cannot tell where a token stands.

``sinusoidal_positions`` is the fixed table of "Attention Is All You Need"; a learned table
is simply an ``nn.Embedding(context_length, d_model)``, as in GPT-2. ``apply_rope`` is the
rotary alternative (Su et al., RoFormer): instead of adding a position vector to the token,
it rotates each query and key by an angle proportional to its position, so that a query-key
dot product depends on the two positions only through their difference.

RoPE convention of this course: the rotated pairs are the **interleaved** dimensions
``(2i, 2i + 1)`` of a head, the same pairs as the sinusoidal table's sin/cos columns and
Su et al.'s equation (34); pair ``i`` turns by ``position * base ** (-2i / head_dim)``.
GPT-NeoX and Hugging Face's LLaMA code pair dimension ``i`` with ``i + head_dim / 2``
("rotate_half") instead: a fixed permutation of the head's dimensions, equally valid, but
weights trained with one pairing do not work with the other.
"""

from __future__ import annotations

import torch

from .attention import causal_mask, scaled_dot_product_attention

__all__ = ["sinusoidal_positions", "shift_matrix", "rope_angles", "apply_rope", "rope_attention"]

ROPE_BASE = 10000.0


def sinusoidal_positions(num_tokens: int, d_model: int) -> torch.Tensor:
    """(num_tokens, d_model) table: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(.).

    Each pair of columns is a clock of its own frequency, from one turn every 2*pi
    positions (columns 0 and 1) down to one turn every 2*pi*10000^((d-2)/d) positions for the
    last pair (2*pi*7499 for d = 64).
    """
    if num_tokens < 1:
        raise ValueError(f"num_tokens={num_tokens} must be at least 1.")
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model={d_model} must be a positive even number: sin and cos pairs.")
    positions = torch.arange(num_tokens, dtype=torch.float32)[:, None]  # (num_tokens, 1)
    exponents = torch.arange(0, d_model, 2, dtype=torch.float32) / d_model  # (d_model/2,)
    angles = positions / 10000.0**exponents  # (num_tokens, d_model/2)
    table = torch.empty(num_tokens, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """(d_model, d_model) M_k with PE[p + k] = M_k @ PE[p]: each (sin, cos) pair turns by k θ_i.

    M_k moves a position vector k places LATER; its transpose M_kᵀ = M_(-k) moves it k places
    earlier (a rotation: M_kᵀ M_k = I).
    """
    angle = rope_angles(1, d_model, start=k)[0]  # (d_model/2,): k θ_i
    c, s = angle.cos(), angle.sin()
    even = torch.arange(0, d_model, 2)
    M = torch.zeros(d_model, d_model)
    M[even, even], M[even, even + 1] = c, s  # sin(a + b) = sin a cos b + cos a sin b
    M[even + 1, even], M[even + 1, even + 1] = -s, c  # cos(a + b) = cos a cos b - sin a sin b
    return M


def rope_angles(
    num_tokens: int, head_dim: int, start: int = 0, base: float = ROPE_BASE
) -> torch.Tensor:
    """(num_tokens, head_dim/2) angles: row m, pair i turns by (start + m) * base^(-2i/head_dim).

    The same clocks as ``sinusoidal_positions``: ``sinusoidal_positions(n, d)`` holds the sin
    and cos of ``rope_angles(n, d)``.
    """
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim={head_dim} must be a positive even number: RoPE turns pairs.")
    if start < 0:
        raise ValueError(f"start={start} must be at least 0: it is the first token's position.")
    positions = torch.arange(start, start + num_tokens, dtype=torch.float32)[:, None]
    exponents = torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim  # (head_dim/2,)
    return positions / base**exponents  # (num_tokens, head_dim/2)


def apply_rope(x: torch.Tensor, start: int = 0, base: float = ROPE_BASE) -> torch.Tensor:
    """Rotate each pair ``(x[..., 2i], x[..., 2i+1])`` of the token at position m by angle m θ_i.

    Args:
        x: queries or keys, (..., num_tokens, head_dim), e.g. (b, num_heads, num_tokens,
            head_dim). Token k of ``x`` stands at position ``start + k``.
        start: the position of the first token (non-zero when new tokens are appended to a
            KV cache: the cache keeps keys that are already rotated).
        base: θ_i = base^(-2i/head_dim); 10000 in RoFormer and LLaMA 1/2 (Llama 3: 500,000).

    Returns:
        A new tensor of x's shape and dtype: (x0 cos - x1 sin, x0 sin + x1 cos) per pair.
    """
    if x.ndim < 2:
        raise ValueError(f"expected x of shape (..., num_tokens, head_dim), got {tuple(x.shape)}.")
    angles = rope_angles(x.shape[-2], x.shape[-1], start, base)  # (num_tokens, head_dim/2)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (..., num_tokens, head_dim/2) each
    rotated = torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    return rotated.flatten(-2)  # (..., num_tokens, head_dim): pairs interleaved again


def rope_attention(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, base: float = ROPE_BASE
) -> torch.Tensor:
    """Causal attention with RoPE: rotate queries and keys (never values), then softmax(QKᵀ/√d)V.

    ``queries``, ``keys``, ``values``: (..., num_tokens, head_dim); returns the context vectors
    (..., num_tokens, head_dim).
    """
    mask = causal_mask(queries.shape[-2])  # (num_tokens, num_tokens), True = hidden
    context, _ = scaled_dot_product_attention(
        apply_rope(queries, base=base), apply_rope(keys, base=base), values, mask
    )
    return context

"""Position information (lecture 08): attention alone cannot tell where a token stands.

``sinusoidal_positions`` is the fixed table of "Attention Is All You Need"; a learned table
is simply an ``nn.Embedding(context_length, d_model)``, as in GPT-2.
"""

from __future__ import annotations

import torch

__all__ = ["sinusoidal_positions"]


def sinusoidal_positions(num_tokens: int, d_model: int) -> torch.Tensor:
    """(num_tokens, d_model) table: PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(.).

    Each pair of columns is a clock of its own frequency, from one turn every 2*pi
    positions (column 0) down to one turn every 2*pi*10000 positions.
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

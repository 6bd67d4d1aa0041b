"""Input checks shared by every module: a clear ValueError instead of a cryptic one later.

Public so that the notebooks' teaching copies of the classes can call them too.
"""

from __future__ import annotations

import torch

__all__ = ["check_config", "check_features", "check_heads", "check_input"]


def check_heads(d_out: int, num_heads: int) -> None:
    """``d_out`` must split evenly into ``num_heads`` heads."""
    if num_heads < 1:
        raise ValueError(f"num_heads={num_heads} must be at least 1.")
    if d_out % num_heads != 0:
        choices = ", ".join(str(h) for h in range(1, d_out + 1) if d_out % h == 0)
        raise ValueError(
            f"d_out={d_out} is not divisible by num_heads={num_heads}: every head gets "
            f"d_out // num_heads dimensions. Choose num_heads in {{{choices}}}."
        )


def check_config(d_in: int, d_out: int, context_length: int, dropout: float) -> None:
    """Sizes are positive ints and ``dropout`` is a probability in [0, 1)."""
    for name, value in (("d_in", d_in), ("d_out", d_out), ("context_length", context_length)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive int.")
    if not 0.0 <= dropout < 1.0:
        raise ValueError(
            f"dropout={dropout} must be in [0, 1): it is the probability of dropping a weight."
        )


def check_input(x: torch.Tensor, d_in: int, context_length: int) -> None:
    """``x`` is (b, num_tokens, d_in) with num_tokens <= context_length."""
    if x.ndim != 3:
        raise ValueError(
            f"expected input of shape (b, num_tokens, d_in) = (b, num_tokens, {d_in}), got a "
            f"rank-{x.ndim} tensor of shape {tuple(x.shape)}. A single sequence needs a batch "
            "dim: x.unsqueeze(0)."
        )
    if x.shape[-1] != d_in:
        raise ValueError(
            f"the last dim of the input is {x.shape[-1]} but this module was built with "
            f"d_in={d_in}; input shape {tuple(x.shape)}."
        )
    if x.shape[1] > context_length:
        raise ValueError(
            f"the input has num_tokens={x.shape[1]} tokens but the causal mask was built for "
            f"context_length={context_length}; build the module with a larger context_length "
            "or truncate the input."
        )


def check_features(x: torch.Tensor, d_model: int) -> None:
    """The last dim of ``x`` is the ``d_model`` features the module was built for."""
    if x.ndim == 0 or x.shape[-1] != d_model:
        raise ValueError(
            f"the last dim of the input must be d_model={d_model} (the size this module was "
            f"built with); got an input of shape {tuple(x.shape)}."
        )

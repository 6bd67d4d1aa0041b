"""Input validation shared by every module: a clear ValueError instead of a cryptic one later.

Public so that the notebooks' teaching copies of the classes can call them too. (The word
"check" belongs to grading: ``grading.check`` and the exercise checks.)
"""

from __future__ import annotations

import torch

__all__ = [
    "validate_config",
    "validate_dropout",
    "validate_features",
    "validate_heads",
    "validate_input",
    "validate_mask",
    "validate_sizes",
    "self_attention_mask",
]


def validate_heads(d_out: int, num_heads: int, width: str = "d_out") -> None:
    """``d_out`` (or the width named ``width``) must split evenly into ``num_heads`` heads."""
    if num_heads < 1:
        raise ValueError(f"num_heads={num_heads} must be at least 1.")
    if d_out % num_heads != 0:
        choices = ", ".join(str(h) for h in range(1, d_out + 1) if d_out % h == 0)
        raise ValueError(
            f"{width}={d_out} is not divisible by num_heads={num_heads}: every head gets "
            f"{width} // num_heads dimensions. Choose num_heads in {{{choices}}}."
        )


def validate_sizes(**sizes: int) -> None:
    """Every size, given by name (``validate_sizes(d_model=8)``), is a positive int."""
    for name, value in sizes.items():
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive int.")


def validate_dropout(dropout: float) -> None:
    """``dropout`` is a probability in [0, 1)."""
    if not 0.0 <= dropout < 1.0:
        raise ValueError(
            f"dropout={dropout} must be in [0, 1): it is the probability of dropping a weight."
        )


def validate_config(d_in: int, d_out: int, context_length: int, dropout: float) -> None:
    """The lecture classes' sizes are positive ints and ``dropout`` is a probability."""
    validate_sizes(d_in=d_in, d_out=d_out, context_length=context_length)
    validate_dropout(dropout)


def validate_input(x: torch.Tensor, d_in: int, context_length: int) -> None:
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


def validate_features(x: torch.Tensor, d_model: int) -> None:
    """The last dim of ``x`` is the ``d_model`` features the module was built for."""
    if x.ndim == 0 or x.shape[-1] != d_model:
        raise ValueError(
            f"the last dim of the input must be d_model={d_model} (the size this module was "
            f"built with); got an input of shape {tuple(x.shape)}."
        )


def _mask_dtype(mask: torch.Tensor, name: str = "mask") -> None:
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be a boolean tensor (True = hidden), got dtype {mask.dtype}. "
            "A float padding mask with 1 = keep converts with `~keep.bool()`."
        )


def validate_mask(mask: torch.Tensor, scores_shape: tuple[int, ...]) -> None:
    """``mask`` fits attention scores of shape (..., num_queries, num_keys), read one way only.

    Accepted: a boolean (num_queries or 1, num_keys) mask shared by every sequence and head, or
    a mask of the scores' own rank whose last dim is num_keys and every other dim 1 or the
    scores' dim. Any other rank is refused, because broadcasting would align it from the right
    and could put a batch dim on the heads (a (b, 1, num_keys) mask with b == num_heads) without
    an error.
    """
    _mask_dtype(mask)
    *lead, num_queries, num_keys = scores_shape
    shape = tuple(mask.shape)
    if mask.ndim == 2:
        fits = shape[1] == num_keys and shape[0] in (1, num_queries)
    elif mask.ndim == len(scores_shape):
        fits = shape[-1] == num_keys and all(
            m in (1, s) for m, s in zip(shape, scores_shape, strict=True)
        )
    else:
        fits = False
    if fits:
        return
    advice = ""
    if len(scores_shape) == 4 and mask.ndim == 3:
        advice = (
            " A (b, 1, num_keys) padding mask needs its head dim made explicit: "
            "mask[:, None] (shape (b, 1, 1, num_keys))."
        )
    elif len(scores_shape) == 4 and mask.ndim == 2 and shape == (lead[0], num_keys):
        advice = (
            " A (b, num_keys) key-padding mask converts with mask[:, None, None, :]; a rank-2 "
            "mask here is always read as (num_queries, num_keys)."
        )
    raise ValueError(
        f"a mask of shape {shape} does not fit attention scores of shape "
        f"{tuple(scores_shape)} (..., num_queries, num_keys). Accepted: "
        f"(num_queries or 1, num_keys) = ({num_queries} or 1, {num_keys}), or a "
        f"rank-{len(scores_shape)} mask whose last dim is {num_keys} and other dims each 1 or "
        f"equal to {tuple(scores_shape)}.{advice}"
    )


def self_attention_mask(
    mask: torch.Tensor | None,
    key_padding_mask: torch.Tensor | None,
    b: int,
    num_heads: int,
    num_tokens: int,
) -> torch.Tensor | None:
    """The one (b|1, 1|num_heads, 1|num_tokens, num_tokens) mask a self-attention module applies.

    ``mask`` must be rank 4 (e.g. ``attention.padding_mask``'s (b, 1, 1, num_tokens)), so that a
    (b, num_tokens) key-padding mask is never mistaken for a (num_tokens, num_tokens) one when
    b == num_tokens; a (b, num_tokens) key-padding mask (True = padded, as in PyTorch's
    ``key_padding_mask``) goes to ``key_padding_mask``. Both may be given; they are combined.
    """
    scores_shape = (b, num_heads, num_tokens, num_tokens)
    if mask is not None:
        _mask_dtype(mask)
        if mask.ndim != 4:
            raise ValueError(
                f"mask must be rank 4, broadcastable to (b, num_heads, num_tokens, num_tokens) "
                f"= {scores_shape}; got shape {tuple(mask.shape)}. Convert: a (b, num_tokens) "
                "key-padding mask -> key_padding_mask=mask (or mask[:, None, None, :]); a "
                "(b, 1, num_tokens) mask -> mask[:, None]; a (num_tokens, num_tokens) mask for "
                "every sequence -> mask[None, None]."
            )
        validate_mask(mask, scores_shape)
    if key_padding_mask is not None:
        _mask_dtype(key_padding_mask, "key_padding_mask")
        if tuple(key_padding_mask.shape) != (b, num_tokens):
            raise ValueError(
                f"key_padding_mask must have shape (b, num_tokens) = {(b, num_tokens)}, True at "
                f"the padded positions; got {tuple(key_padding_mask.shape)}. Other masks go to "
                "mask= as rank-4 tensors."
            )
        padding = key_padding_mask[:, None, None, :]  # (b, 1, 1, num_tokens)
        mask = padding if mask is None else mask | padding
    return mask

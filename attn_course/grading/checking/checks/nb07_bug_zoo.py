"""Checks of 07_bug_zoo: each fixed class must behave as the lecture's correct one."""

from __future__ import annotations

from ..registry import register
from ..shared_checks import (
    check_causal_class,
    check_cross_attention_class,
    check_encoder_class,
    check_mha_class,
)

NOTEBOOK = "07_bug_zoo"


@register("bug_mask_in_place", NOTEBOOK, time_limit=5.0)
def check_bug_mask_in_place(cls: type) -> str:
    """The fixed CausalAttention of the "nearly identical rows" bug."""
    check_causal_class(cls)
    return "the mask is applied: every token now ignores the future."


@register("bug_keys_for_values", NOTEBOOK, time_limit=5.0)
def check_bug_keys_for_values(cls: type) -> str:
    """The fixed CausalAttention of the wrapper's printed numbers."""
    check_causal_class(cls)
    return "the scores compare queries with keys again."


@register("bug_out_proj_width", NOTEBOOK, time_limit=5.0)
def check_bug_out_proj_width(cls: type) -> str:
    """The fixed MultiHeadAttention whose out_proj returned d_in, not the promised d_out."""
    check_mha_class(cls)
    return "out_proj maps d_out to d_out, also when d_in != d_out."


@register("bug_head_scale", NOTEBOOK, time_limit=5.0)
def check_bug_head_scale(cls: type) -> str:
    """The fixed MultiHeadAttention that scaled the scores by sqrt(d_out)."""
    check_mha_class(cls)
    return "each head's scores are scaled by 1/sqrt(head_dim)."


@register("bug_encoder_residual", NOTEBOOK, time_limit=10.0)
def check_bug_encoder_residual(cls: type) -> str:
    """The fixed EncoderLayer that skipped its residuals and norms."""
    check_encoder_class(cls)
    return "residual connections and post-LN norms are back."


@register("bug_padding_mask_unsqueeze", NOTEBOOK, time_limit=10.0)
def check_bug_padding_mask_unsqueeze(cls: type) -> str:
    """The fixed cross-attention whose (b, 1, 1, S) padding mask got one dim too many."""
    check_cross_attention_class(cls)
    return "a (b, 1, 1, num_keys) padding mask broadcasts as it is: no extra unsqueeze."

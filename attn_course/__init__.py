"""attn_course: the helper package of the attention course.

Modules: ``attention`` (the lecture classes), ``numpy_attention`` (lecture 00 in NumPy),
``blocks`` (transformer components), ``data`` (example inputs), ``viz`` (heatmaps),
``explore`` and ``widgets`` (the explorers' settings and pictures, and their sliders),
``grading`` (exercise checks). Importing draws and prints nothing.
"""

from .attention import (
    CausalAttention,
    MultiHeadAttention,
    MultiHeadAttentionSDPA,
    MultiHeadAttentionWrapper,
    causal_mask,
    scaled_dot_product_attention,
)

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionSDPA",
    "MultiHeadAttentionWrapper",
    "causal_mask",
    "scaled_dot_product_attention",
]

"""attn_course: the helper package of the attention course.

Modules: ``attention`` (the lecture classes), ``numpy_attention`` (lecture 00 in NumPy),
``blocks`` (transformer components), ``data`` (example inputs), ``viz`` (heatmaps),
``explore`` and ``widgets`` (the explorers' settings and pictures, and their sliders),
``grading`` (exercise checks); for lecture 08 ``positions``, ``model`` (the tiny
transformer), ``tasks``, ``training`` (also the ``train`` command and the shipped weights),
``head_scores``, ``model_views`` and ``model_explorer``. Importing draws and prints nothing,
and imports torch only when one of the names below is first used (so that
``python -m attn_course grade`` can start its kernels while torch loads).
"""

import importlib

__all__ = [
    "CausalAttention",
    "MultiHeadAttention",
    "MultiHeadAttentionSDPA",
    "MultiHeadAttentionWrapper",
    "causal_mask",
    "scaled_dot_product_attention",
]


def __getattr__(name: str) -> object:
    """The lecture classes and functions, imported from ``attention`` on first use."""
    if name in __all__:
        return getattr(importlib.import_module(".attention", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

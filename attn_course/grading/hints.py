"""Every hint a learner can see for a recognised mistake, in one catalogue.

``HINTS`` maps a mistake name (the key a ``*_mistakes`` function or a check uses) to its
text. Torch wording; ``NUMPY_HINTS`` overrides the names whose fix reads differently in
the NumPy exercises. ``tests/test_checks.py`` asserts that every mistake a check can
diagnose has a hint here.
"""

from __future__ import annotations

__all__ = ["HINTS", "NUMPY_HINTS"]

HINTS: dict[str, str] = {
    # scaled dot-product attention
    "no_scale": "missing the 1/sqrt(head_dim) scaling: divide the scores by "
    "keys.shape[-1] ** 0.5 before the softmax.",
    "scale_by_d": "the scores are divided by head_dim instead of sqrt(head_dim).",
    "softmax_dim": "softmax over the wrong dim: the columns sum to 1 instead of the rows; "
    "use softmax(..., dim=-1) so each query's weights over the keys sum to 1.",
    "mask_lost": "the mask is not applied. Is it applied in place? masked_fill returns a new "
    "tensor; use masked_fill_ or assign the result (scores = scores.masked_fill(...)).",
    "mask_inverted": "mask inverted: True means HIDDEN in this course, so fill the scores "
    "where the mask is True (not where it is False).",
    "mask_diagonal": "mask off by one: the diagonal is hidden too, but a token may attend to "
    "itself; torch.triu(..., diagonal=1) keeps the diagonal visible.",
    "zero_fill": "hidden scores are set to 0 instead of -inf: exp(0) = 1, so hidden keys "
    "still get weight. Fill with -torch.inf.",
    "mask_after_softmax": "the mask is applied after the softmax: the rows no longer sum to 1. "
    "Mask the scores with -inf BEFORE the softmax.",
    "keys_are_values": "the scores use the values instead of the keys: they must be "
    "queries @ keys.transpose(-2, -1).",
    "keys_queries_swapped": "the scores are keys @ queries^T (transposed): "
    "use queries @ keys.transpose(-2, -1) so row i belongs to query i.",
}

NUMPY_HINTS: dict[str, str] = {
    "softmax_dim": "softmax along the wrong axis: the columns sum to 1 instead of the rows; "
    "normalise along axis=-1 so each query's weights over the keys sum to 1.",
    "mask_lost": "the causal mask is not applied: set the scores above the diagonal to -np.inf "
    "(np.where(mask, -np.inf, scores)) before the softmax.",
    "mask_inverted": "mask inverted: hide the FUTURE (above the diagonal, np.triu(..., k=1)), "
    "not the past.",
    "mask_diagonal": "mask off by one: the diagonal is hidden too, but a token may attend to "
    "itself; np.triu(np.ones((T, T), dtype=bool), k=1) keeps the diagonal visible.",
    "zero_fill": "hidden scores are set to 0 instead of -np.inf: exp(0) = 1, so hidden keys "
    "still get weight.",
    "mask_after_softmax": "the mask is applied after the softmax: the rows no longer sum to 1. "
    "Set the hidden scores to -np.inf BEFORE the softmax.",
    "keys_are_values": "the scores use the values instead of the keys: they must be "
    "Q @ K.T.",
    "keys_queries_swapped": "the scores are K @ Q.T (transposed): use Q @ K.T so row i "
    "belongs to query i.",
    "no_scale": "missing the 1/sqrt(d_k) scaling: divide the scores by np.sqrt(K.shape[-1]) "
    "before the softmax.",
    "scale_by_d": "the scores are divided by d_k instead of np.sqrt(d_k).",
}

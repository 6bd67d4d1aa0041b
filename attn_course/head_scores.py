"""Name a head's pattern by a number (lecture 08): each score is a mean attention weight.

Every function takes attention weights of shape (b, num_heads, num_tokens, num_tokens) (rows =
queries, columns = keys, causal) and returns one score per head, shape (num_heads,), averaged
over the batch and the query rows named in its docstring. Scores lie in [0, 1]; a head that
spreads its weight evenly scores about 1/(t+1) on the first three.
"""

from __future__ import annotations

import torch

__all__ = [
    "previous_token_score",
    "first_token_score",
    "diagonal_score",
    "induction_score",
    "row_entropy",
    "offset_weight_by_row",
    "SCORES",
    "head_scores",
]


def _validate(attn_weights: torch.Tensor) -> None:
    if attn_weights.ndim != 4 or attn_weights.shape[-1] != attn_weights.shape[-2]:
        raise ValueError(
            "expected attention weights of shape (b, num_heads, num_tokens, num_tokens), got "
            f"{tuple(attn_weights.shape)}."
        )
    if attn_weights.shape[-1] < 2:
        raise ValueError("scores need at least 2 tokens.")


def previous_token_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight from query t to key t - 1, over rows t = 1 .. num_tokens - 1."""
    _validate(attn_weights)
    return attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def first_token_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight on key 0, over rows t = 1 .. num_tokens - 1 (row 0 has no choice)."""
    _validate(attn_weights)
    return attn_weights[:, :, 1:, 0].mean(dim=(0, 2))


def diagonal_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight a query gives to itself, over rows t = 1 .. num_tokens - 1."""
    _validate(attn_weights)
    return attn_weights.diagonal(dim1=-2, dim2=-1)[:, :, 1:].mean(dim=(0, 2))


def induction_score(
    attn_weights: torch.Tensor, tokens: torch.Tensor, rows: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean total weight from query t to the keys just AFTER earlier copies of token t.

    Key j is an induction target of query t when j <= t and tokens[j - 1] == tokens[t]: the
    token that followed the current token last time. Averaged over the rows that have at
    least one target (``tokens``: (b, num_tokens)), or only over those of them that
    ``rows`` (b, num_tokens) bool marks, e.g. the repeated segment.

    This is the course's score, not Olsson et al.'s or ARENA's: those average over the
    second half of a sequence of random tokens repeated twice, where every row has exactly
    one target, j < t. Here filler tokens that happen to repeat count too, and so does
    j = t (a token right after a copy of itself).
    """
    _validate(attn_weights)
    b, num_heads, num_tokens, _ = attn_weights.shape
    if tokens.shape != (b, num_tokens):
        raise ValueError(f"tokens must have shape {(b, num_tokens)}, got {tuple(tokens.shape)}.")
    same = tokens[:, :, None] == tokens[:, None, :]  # (b, num_tokens, num_tokens): query t, key i
    targets = torch.zeros_like(same)
    targets[:, :, 1:] = same[:, :, :-1]  # key j is a target when token j-1 equals token t
    targets &= torch.ones_like(same).tril()  # causal: j <= t
    counted = targets.any(dim=-1)  # (b, num_tokens)
    if rows is not None:
        if rows.shape != (b, num_tokens) or rows.dtype != torch.bool:
            raise ValueError(f"rows must be a bool tensor of shape {(b, num_tokens)}.")
        counted = counted & rows
    if not counted.any():
        raise ValueError("no token repeats in `tokens`: induction needs a repeated sequence.")
    weight = (attn_weights * targets[:, None]).sum(dim=-1)  # (b, num_heads, num_tokens)
    return (weight * counted[:, None]).sum(dim=(0, 2)) / counted.sum()


def row_entropy(attn_weights: torch.Tensor) -> torch.Tensor:
    """Entropy of each row divided by its maximum log(t + 1), over rows t = 1 .. num_tokens - 1.

    1 = uniform over the visible keys (the untrained look), 0 = all weight on one key.
    """
    _validate(attn_weights)
    w = attn_weights[:, :, 1:]  # (b, num_heads, num_tokens - 1, num_tokens)
    entropy = -(w * torch.log(w.clamp_min(1e-12))).sum(dim=-1)
    max_entropy = torch.log(torch.arange(2, attn_weights.shape[-1] + 1, dtype=w.dtype))
    return (entropy / max_entropy).mean(dim=(0, 2))


def offset_weight_by_row(attn_weights: torch.Tensor, offset: int) -> torch.Tensor:
    """(num_heads, num_tokens): mean weight from query row t to key t - offset, per row t.

    Indexed by the QUERY row t (not by the key); rows t < offset have no such key: NaN.
    Averaged over the batch only, so a head that looks ``offset`` back at some query
    positions and elsewhere at others shows it row by row.
    """
    _validate(attn_weights)
    num_tokens = attn_weights.shape[-1]
    if not 0 <= offset < num_tokens:
        raise ValueError(f"offset={offset} must be in 0..{num_tokens - 1}.")
    out = torch.full((attn_weights.shape[1], num_tokens), torch.nan, dtype=attn_weights.dtype)
    # diagonal(-offset)[..., i] is query i + offset, key i: shift it onto the query rows
    out[:, offset:] = attn_weights.diagonal(offset=-offset, dim1=-2, dim2=-1).mean(dim=0)
    return out


SCORES = ("previous-token", "induction", "first-token", "diagonal", "row entropy")


def head_scores(attn_weights: torch.Tensor, tokens: torch.Tensor | None) -> dict[str, torch.Tensor]:
    """All five scores for every layer and head.

    Args:
        attn_weights: (num_layers, b, num_heads, num_tokens, num_tokens), e.g.
            ``model.attention_weights()`` after ``model(tokens)``.
        tokens: (b, num_tokens), the input that produced them; None when no token repeats,
            which makes every induction score NaN (undefined).

    Returns:
        ``{score name: (num_layers, num_heads) tensor}`` in the order of ``SCORES``.
    """
    functions = {
        "previous-token": previous_token_score,
        "induction": lambda w: (
            induction_score(w, tokens)
            if tokens is not None
            else torch.full(w.shape[1:2], torch.nan)
        ),
        "first-token": first_token_score,
        "diagonal": diagonal_score,
        "row entropy": row_entropy,
    }
    return {name: torch.stack([functions[name](w) for w in attn_weights]) for name in SCORES}

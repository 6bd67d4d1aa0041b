"""Name a language model's heads by numbers on real text (lecture 11).

``head_scores`` (lecture 08) scores patterns that need no text: the previous token, the first
token. On characters of a play, some heads follow the text's own structure: the first letter
of the current word, the line break that starts the line, the speaker's name. Each score here
is the same kind of number: the mean total attention weight a query gives to its *target*
keys, over the queries that have targets. A score lies in [0, 1]; 1 means every such query
puts all its weight on its targets. A head that spreads its weight evenly over t + 1 visible
keys scores about (number of targets) / (t + 1).

The targets exclude the query itself and the character just before it, so that a
previous-character head or a head that looks at itself does not also score as a word-start
or line-start head. Every function takes attention weights (b, num_heads, num_tokens,
num_tokens) for one ``text`` of num_tokens characters (every batch row reads that text) and
returns one score per head, shape (num_heads,).
"""

from __future__ import annotations

import torch

from .head_scores import first_token_score, previous_token_score

__all__ = [
    "target_score",
    "two_back_score",
    "word_start_targets",
    "line_start_targets",
    "speaker_targets",
    "repeat_targets",
    "TEXT_SCORES",
    "text_head_scores",
    "best_heads",
    "offset_profile",
    "NAMED_AT",
    "ABOVE_BASELINE",
    "head_name",
]

WORD_BREAKS = " \n"


def target_score(attn_weights: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean total weight a query gives to its targets, over the queries that have any.

    Args:
        attn_weights: (b, num_heads, num_tokens, num_tokens), rows = queries.
        targets: bool (num_tokens, num_tokens), ``targets[t, j]``: key j is a target of query t.

    Returns:
        (num_heads,) scores; ValueError when no query has a target.
    """
    num_tokens = attn_weights.shape[-1]
    if attn_weights.ndim != 4 or targets.shape != (num_tokens, num_tokens):
        raise ValueError(
            "expected attention weights (b, num_heads, num_tokens, num_tokens) and targets "
            f"(num_tokens, num_tokens), got {tuple(attn_weights.shape)} and "
            f"{tuple(targets.shape)}."
        )
    rows = targets.any(dim=-1)  # (num_tokens,): the queries that have a target
    if not rows.any():
        raise ValueError("no character of the text has a target for this score.")
    weight = (attn_weights * targets).sum(dim=-1)  # (b, num_heads, num_tokens)
    return weight[:, :, rows].mean(dim=(0, 2))


def two_back_score(attn_weights: torch.Tensor) -> torch.Tensor:
    """Mean weight from query t to key t - 2, over rows t = 2 .. num_tokens - 1."""
    if attn_weights.ndim != 4 or attn_weights.shape[-1] < 3:
        raise ValueError(
            "expected attention weights (b, num_heads, num_tokens, num_tokens) with at least "
            f"3 tokens, got {tuple(attn_weights.shape)}."
        )
    return attn_weights.diagonal(offset=-2, dim1=-2, dim2=-1).mean(dim=(0, 2))


def _anchored(text: str, breaks: str, offset: int) -> torch.Tensor:
    """bool (n, n): the target of query t is key j = (the last character in ``breaks`` before
    t) + 1 - ``offset``, wherever 0 <= j <= t - 2 (with no break before t, j = -offset)."""
    n = len(text)
    targets = torch.zeros(n, n, dtype=torch.bool)
    j = -offset
    for t in range(n):
        if 0 <= j <= t - 2:
            targets[t, j] = True
        if text[t] in breaks:
            j = t + 1 - offset
    return targets


def word_start_targets(text: str) -> torch.Tensor:
    """bool (n, n): the target of query t is the first letter of its word.

    A word starts after a space or a line break (or at the text's start); a space or line
    break belongs to the word before it. Only queries at least two characters past the first
    letter count (the third letter of a word and later).
    """
    return _anchored(text, WORD_BREAKS, offset=0)


def line_start_targets(text: str) -> torch.Tensor:
    """bool (n, n): the target of query t is the line break that starts its line.

    A line break belongs to the line it ends (its target is the break before that line). Only
    queries at least two characters past that line break count; the text's first line, which
    has none, does not.
    """
    return _anchored(text, "\n", offset=1)


def speaker_targets(text: str) -> torch.Tensor:
    """bool (n, n): the targets of query t are the letters of the current speaker's name.

    A speaker line is a line of capitals ending in ':' (``ROMEO:``); the queries are the
    characters after its line break, up to the next speaker line. Its letters are the targets.
    """
    n = len(text)
    targets = torch.zeros(n, n, dtype=torch.bool)
    name: list[int] = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line)  # the position of this line's "\n" (n for the last line)
        if len(line) > 1 and line.endswith(":") and line[:-1].replace(" ", "").isupper():
            name = [start + i for i, ch in enumerate(line[:-1]) if ch.isalpha()]
            start = end  # of the name line itself only its line break reads the name
        if name:
            targets[start : end + 1, name] = True
        start = end + 1
    return targets


def repeat_targets(num_tokens: int, period: int) -> torch.Tensor:
    """bool (n, n) for a text whose second half repeats its first (``period`` characters on):
    the target of query t >= period is key t - period + 1, the character that FOLLOWED the
    earlier occurrence of the current character. An induction head (Olsson et al. 2022) looks
    there to predict the next character by copying.
    """
    if period < 3:
        raise ValueError(f"period={period} must be at least 3 (else the target is the query "
                         "itself or the previous character).")  # fmt: skip
    targets = torch.zeros(num_tokens, num_tokens, dtype=torch.bool)
    rows = torch.arange(period, num_tokens)
    targets[rows, rows - period + 1] = True
    return targets


TEXT_SCORES = (
    "previous character",
    "two back",
    "word start",
    "line start",
    "speaker name",
    "first token",
)


def text_head_scores(attn_weights: torch.Tensor, text: str) -> dict[str, torch.Tensor]:
    """Every score of ``TEXT_SCORES`` for every layer and head on ``text``.

    Args:
        attn_weights: (num_layers, b, num_heads, num_tokens, num_tokens) for ``text``
            (num_tokens characters).
        text: the characters the model read.

    Returns:
        ``{score name: (num_layers, num_heads)}``; a score whose targets the text lacks (no
        speaker line, say) is NaN.
    """
    if attn_weights.ndim != 5 or attn_weights.shape[-1] != len(text):
        raise ValueError(
            f"expected weights (num_layers, b, num_heads, {len(text)}, {len(text)}) for a "
            f"text of {len(text)} characters, got {tuple(attn_weights.shape)}."
        )
    targets = {
        "word start": word_start_targets(text),
        "line start": line_start_targets(text),
        "speaker name": speaker_targets(text),
    }

    def score(name: str, w: torch.Tensor) -> torch.Tensor:
        if name == "previous character":
            return previous_token_score(w)
        if name == "two back":
            return two_back_score(w)
        if name == "first token":
            return first_token_score(w)
        if not targets[name].any():
            return torch.full(w.shape[1:2], torch.nan)
        return target_score(w, targets[name])

    return {name: torch.stack([score(name, w) for w in attn_weights]) for name in TEXT_SCORES}


def best_heads(scores: dict[str, torch.Tensor]) -> dict[str, tuple[int, int, float]]:
    """For each score, the (layer, head, score) of the head that scores highest."""
    best = {}
    for name, values in scores.items():
        flat = int(torch.nan_to_num(values, nan=-1.0).argmax())
        layer, head = divmod(flat, values.shape[1])
        best[name] = (layer, head, float(values[layer, head]))
    return best


def offset_profile(attn_weights: torch.Tensor, max_offset: int) -> torch.Tensor:
    """Mean weight a query puts on the key ``k`` characters BACK, for k = 0 .. ``max_offset``.

    Entry k is the mean of ``attn_weights[..., t, t - k]`` (query t, key t - k) over the
    queries t >= ``max_offset``, which all see every one of those keys; the rest of their
    weight, 1 minus the entries' sum, lies further back. A previous-character head peaks at
    k = 1; a head that stays on its own character, at k = 0.

    Args:
        attn_weights: (..., num_tokens, num_tokens), rows = queries, columns = keys.
        max_offset: the largest offset, 0 <= max_offset < num_tokens.

    Returns:
        (..., max_offset + 1).
    """
    num_tokens = attn_weights.shape[-1]
    if attn_weights.ndim < 2 or attn_weights.shape[-2] != num_tokens:
        raise ValueError(
            "expected attention weights (..., num_tokens, num_tokens), got "
            f"{tuple(attn_weights.shape)}."
        )
    if not 0 <= max_offset < num_tokens:
        raise ValueError(f"max_offset={max_offset} must lie in 0..{num_tokens - 1}.")
    # diagonal(offset=-k) holds (t, t - k) for t = k, k + 1, ...: keep t >= max_offset
    return torch.stack(
        [
            attn_weights.diagonal(offset=-k, dim1=-2, dim2=-1)[..., max_offset - k :].mean(-1)
            for k in range(max_offset + 1)
        ],
        dim=-1,
    )


NAMED_AT = 0.5  # named by a pattern when its score (a mean over queries with targets) is >= this
ABOVE_BASELINE = 0.05  # an unnamed head's best pattern must beat the baseline by this much


def head_name(
    scores: dict[str, float],
    threshold: float = NAMED_AT,
    *,
    baseline: dict[str, float] | None = None,
    margin: float = ABOVE_BASELINE,
) -> str:
    """Name a head by its scores: ``"previous character 0.98"`` when its best score reaches
    ``threshold``, else ``"unnamed (best word start 0.21)"``, else, when no score stands
    ``margin`` or more above ``baseline``, ``"unnamed (no score 0.05 above uniform)"``.

    The best pattern is the one whose score stands furthest above ``baseline`` (the same
    scores for a head that spreads its weight evenly; a pattern missing from it counts 0):
    an even spread already gives a speaker's several letters 0.17. NaN scores (a text
    without that pattern's targets) are skipped."""
    known = {name: value for name, value in scores.items() if value == value}
    if not known:
        raise ValueError("every score is NaN: the text has no target for any pattern.")
    base = baseline or {}
    excess = {name: value - base.get(name, 0.0) for name, value in known.items()}
    name = max(excess, key=lambda n: excess[n])
    label = f"{name} {known[name]:.2f}"
    if known[name] >= threshold:
        return label
    if excess[name] < margin:
        return f"unnamed (no score {margin:.2f} above uniform)"
    return f"unnamed (best {label})"

"""Synthetic tasks for the tiny transformer (lecture 08), generated as whole batches.

Every task returns a ``Batch``: input ``tokens``, the ``targets`` to predict at each
position, and ``scored``, the positions whose prediction counts in the loss and accuracy.
Each scored target is predictable in principle, so a perfect model reaches 100 %.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

__all__ = [
    "Batch",
    "Task",
    "TASKS",
    "previous_token_batch",
    "induction_batch",
    "kv_lookup_batch",
    "ambiguous",
    "latest_copy_rule",
]

NUM_TOKENS = 32
VOCAB_SIZE = 32


@dataclass(frozen=True)
class Batch:
    """tokens, targets: (b, num_tokens) long; scored: (b, num_tokens) bool."""

    tokens: torch.Tensor
    targets: torch.Tensor
    scored: torch.Tensor


def _distinct_tokens(batch_size: int, vocab_size: int, generator: torch.Generator) -> torch.Tensor:
    """A random permutation of the vocabulary per row: (batch_size, vocab_size)."""
    return torch.rand(batch_size, vocab_size, generator=generator).argsort(dim=1)


def previous_token_batch(
    batch_size: int,
    generator: torch.Generator,
    num_tokens: int = NUM_TOKENS,
    vocab_size: int = VOCAB_SIZE,
) -> Batch:
    """Random tokens; at position t predict the token at t - 1 (scored from t = 1 on)."""
    tokens = torch.randint(vocab_size, (batch_size, num_tokens), generator=generator)
    targets = torch.zeros_like(tokens)
    targets[:, 1:] = tokens[:, :-1]
    scored = torch.ones_like(tokens, dtype=torch.bool)
    scored[:, 0] = False
    return Batch(tokens, targets, scored)


def induction_batch(
    batch_size: int,
    generator: torch.Generator,
    num_tokens: int = NUM_TOKENS,
    vocab_size: int = VOCAB_SIZE,
    min_len: int = 3,
    max_len: int = 10,
    fixed_offset: bool = False,
    distinct: bool = True,
) -> Batch:
    """A segment of distinct tokens, repeated at once, inside filler tokens; predict the next token.

    The segment's length is drawn from [min_len, max_len] and its start anywhere it fits,
    so no fixed relative position finds the answer: only looking up the current token's
    earlier occurrence does. Filler tokens never occur in the segment, hence every token of
    the repeat occurred exactly once before. Scored: the repeat's positions whose next token
    is also in the repeat. ``fixed_offset=True`` always puts a ``max_len`` segment at the same
    place (the positional-shortcut trap). ``distinct=False`` draws the filler from the whole
    vocabulary instead: it may hold segment tokens, and some scored tokens become ambiguous
    (see ``ambiguous``).
    """
    if not 1 <= min_len <= max_len or 2 * max_len > num_tokens or max_len >= vocab_size:
        raise ValueError(
            f"need 1 <= min_len <= max_len, 2*max_len <= num_tokens and max_len < vocab_size; "
            f"got min_len={min_len}, max_len={max_len}, num_tokens={num_tokens}, "
            f"vocab_size={vocab_size}."
        )
    perm = _distinct_tokens(batch_size, vocab_size, generator)  # (b, vocab_size)
    segment = perm[:, :max_len]  # (b, max_len) distinct tokens
    filler_idx = torch.randint(max_len, vocab_size, (batch_size, num_tokens), generator=generator)
    filler = perm.gather(1, filler_idx)  # (b, num_tokens): never a segment token
    if not distinct:
        filler = torch.randint(vocab_size, (batch_size, num_tokens), generator=generator)
    if fixed_offset:
        lengths = torch.full((batch_size,), max_len)
        starts = torch.full((batch_size,), num_tokens - 2 * max_len)
    else:
        lengths = torch.randint(min_len, max_len + 1, (batch_size,), generator=generator)
        room = num_tokens - 2 * lengths + 1  # (b,) possible starts
        starts = (torch.rand(batch_size, generator=generator) * room).long()
    rel = torch.arange(num_tokens)[None, :] - starts[:, None]  # (b, num_tokens)
    lengths = lengths[:, None]  # (b, 1)
    first = (rel >= 0) & (rel < lengths)
    second = (rel >= lengths) & (rel < 2 * lengths)
    seg_idx = torch.where(second, rel - lengths, rel).clamp(0, max_len - 1)
    tokens = torch.where(first | second, segment.gather(1, seg_idx), filler)
    targets = torch.zeros_like(tokens)
    targets[:, :-1] = tokens[:, 1:]
    scored = second & (rel < 2 * lengths - 1)
    return Batch(tokens, targets, scored)


def kv_lookup_batch(
    batch_size: int,
    generator: torch.Generator,
    num_tokens: int = NUM_TOKENS,
    vocab_size: int = VOCAB_SIZE,
) -> Batch:
    """Key-value pairs ``k1 v1 ... kn vn``, then every key again in a new order, each followed
    by its value. At a repeated key predict its value.

    Keys are the lower half of the vocabulary (distinct within a sequence), values the upper
    half (may repeat). n = num_tokens // 4 pairs.
    """
    n_keys = vocab_size // 2
    n_pairs = num_tokens // 4
    if n_pairs < 1 or n_pairs > n_keys or num_tokens % 4:
        raise ValueError(
            f"num_tokens={num_tokens} must be a multiple of 4 with num_tokens // 4 <= "
            f"vocab_size // 2 = {n_keys}."
        )
    keys = _distinct_tokens(batch_size, n_keys, generator)[:, :n_pairs]  # (b, n_pairs)
    values = torch.randint(n_keys, vocab_size, (batch_size, n_pairs), generator=generator)
    order = _distinct_tokens(batch_size, n_pairs, generator)  # (b, n_pairs) query order
    pairs = torch.stack([keys, values], dim=2).view(batch_size, 2 * n_pairs)
    queries = torch.stack([keys.gather(1, order), values.gather(1, order)], dim=2)
    tokens = torch.cat([pairs, queries.view(batch_size, 2 * n_pairs)], dim=1)
    targets = torch.zeros_like(tokens)
    targets[:, :-1] = tokens[:, 1:]
    scored = torch.zeros_like(tokens, dtype=torch.bool)
    scored[:, 2 * n_pairs :: 2] = True  # the repeated keys
    return Batch(tokens, targets, scored)


def ambiguous(batch: Batch) -> torch.Tensor:
    """(b, num_tokens) bool: scored positions where some earlier copy of the current token is
    followed by a token other than the target. "Copy what followed the current token" then
    has candidates that disagree, and only their order (the latest copy wins) can decide.
    """
    tokens, targets = batch.tokens, batch.targets
    same = tokens[:, :, None] == tokens[:, None, :]  # (b, query t, key j): same token
    earlier = same & torch.ones_like(same).tril(diagonal=-1)  # j < t
    follower = torch.roll(tokens, -1, dims=1)[:, None, :]  # (b, 1, key j): the token after j
    disagree = earlier & (follower != targets[:, :, None])  # (b, t, j)
    return disagree.any(dim=-1) & batch.scored


def latest_copy_rule(tokens: torch.Tensor) -> torch.Tensor:
    """(b, num_tokens) predictions of the rule "the token after the latest earlier copy of the
    current token" (the current token itself where it has no earlier copy). On every
    induction variant, ``induction-colliding`` included, it is right at every scored position:
    the latest copy is always the segment's.
    """
    num_tokens = tokens.shape[1]
    same = tokens[:, :, None] == tokens[:, None, :]  # (b, query t, key j): same token
    earlier = same & torch.ones_like(same).tril(diagonal=-1)  # j < t
    j = torch.arange(num_tokens).expand_as(earlier)
    latest = torch.where(earlier, j, -1).amax(dim=-1)  # (b, num_tokens), -1: no earlier copy
    followers = tokens.gather(1, (latest + 1).clamp(max=num_tokens - 1))
    return torch.where(latest >= 0, followers, tokens)


@dataclass(frozen=True)
class Task:
    """A named task: its batch generator and the sizes a model for it needs."""

    name: str
    description: str
    make_batch: Callable[[int, torch.Generator], Batch]
    vocab_size: int = VOCAB_SIZE
    num_tokens: int = NUM_TOKENS

    def batch(self, batch_size: int, seed: int) -> Batch:
        """A reproducible batch: the same seed gives the same tokens on every machine."""
        return self.make_batch(batch_size, torch.Generator().manual_seed(seed))


TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task("previous-token", "copy the previous token", previous_token_batch),
        Task(
            "induction", "continue a repeated segment of varying length and start", induction_batch
        ),
        Task(
            "induction-fixed",
            "the same with the repeat always at one offset (a trap)",
            lambda b, g: induction_batch(b, g, fixed_offset=True),
        ),
        Task(
            "induction-colliding",
            "the same with filler that may repeat segment tokens (needs the latest copy)",
            lambda b, g: induction_batch(b, g, distinct=False),
        ),
        Task("kv-lookup", "recall the value stored under a key", kv_lookup_batch),
    )
}

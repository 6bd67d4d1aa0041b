"""Choosing the next token from a model's logits: greedy, temperature, top-k, top-p (nucleus).

Every strategy is a step on the logits of the last position, shape (..., vocab_size), applied
in this order (the order of Hugging Face's ``generate``):

1. **temperature** ``T``: logits / T. T < 1 sharpens the distribution, T > 1 flattens it, and
   ``T = 0`` means greedy: always the most likely token (the lowest id among equal logits).
2. **top-k**: keep the ``k`` largest logits. Tie rule: every token whose logit EQUALS the k-th
   largest is kept too, so more than ``k`` survive when the k-th place is shared. A token's fate
   depends on its logit only, never on its id or its place in a sort.
3. **top-p** (nucleus, Holtzman et al. 2020): keep the smallest set of most likely tokens whose
   probabilities add up to at least ``p``. Tie rule: a token is kept when the tokens strictly
   MORE likely than it hold less than ``p`` of the probability; tokens with equal
   probabilities are therefore kept or dropped together.

Dropped tokens get the logit -inf, so softmax gives them probability 0.

**Drawing a token portably.** Sampled text is fragile: the same model gives logits that differ
in the last bits between CPU kernels (AVX2 or generic) and thread counts, and a draw that
lands on the boundary between two tokens' shares flips one token and changes everything
after it. ``sample_next`` makes the draw itself exact: it rounds each probability to
``decimals`` digits, token ``i`` owns ``round(p_i · 10**decimals)`` of the integers
``0 .. total - 1``, and one uniform integer picks the owner. Integer sums come out the same
on every machine and in every order, unlike a float cumulative sum or ``torch.multinomial``,
whose algorithm is free to change. What remains is the model: a token flips only if a
last-bit change of a probability moves a share AND the drawn integer is the one that moved,
or moves a token across the top-k or top-p cut (a tie at the k-th logit; a token whose more
likely tokens hold almost exactly ``p``, compared in float32): each a chance about the size of
the change (1e-6 of a float32 probability) per token.
Rounding costs little: a token with probability below ``0.5 · 10**-decimals`` is never drawn
(``integer_shares`` counts what each token owns).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = [
    "validate_sampling",
    "apply_temperature",
    "top_k_filter",
    "top_p_filter",
    "sampling_probabilities",
    "integer_shares",
    "sample_next",
]

DECIMALS = 6  # digits the probabilities are rounded to before a draw


def validate_sampling(
    temperature: float, top_k: int | None = None, top_p: float | None = None
) -> None:
    """Raise a ``ValueError`` that names the setting when one is out of range."""
    if not temperature >= 0:  # also catches NaN
        raise ValueError(
            f"temperature={temperature} must be 0 or more: 0 is greedy, 1 samples from the "
            f"model's own probabilities, below 1 sharpens and above 1 flattens them."
        )
    if top_k is not None and top_k < 1:
        raise ValueError(f"top_k={top_k} must be at least 1 (or None to keep every token).")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(
            f"top_p={top_p} must be in (0, 1]: the share of probability the kept tokens cover "
            f"(1 keeps every token)."
        )


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Logits divided by ``temperature`` (> 0), BEFORE the softmax: softmax(logits / T)."""
    if not temperature > 0:
        raise ValueError(f"temperature={temperature} must be positive to divide the logits.")
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Set every logit below the k-th largest of its row to -inf (ties at the k-th are kept)."""
    validate_sampling(1.0, top_k=k)
    k = min(k, logits.shape[-1])
    kth_largest = logits.topk(k, dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth_largest, -torch.inf)


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the most likely tokens covering probability ``p``; the others' logits become -inf.

    A token survives when the tokens strictly more likely than it hold less than ``p``.
    """
    validate_sampling(1.0, top_p=p)
    if p == 1:
        return logits  # every token (float sums may reach 1 before the least likely one)
    probs = torch.softmax(logits, dim=-1)  # (..., vocab_size)
    # vocab_size² comparisons: plain, and cheap for the course's vocabularies (a few hundred)
    # more_likely[..., i, j]: token j is strictly more likely than token i
    more_likely = probs.unsqueeze(-2) > probs.unsqueeze(-1)  # (..., vocab_size, vocab_size)
    mass_above = (more_likely * probs.unsqueeze(-2)).sum(dim=-1)  # (..., vocab_size)
    return logits.masked_fill(mass_above >= p, -torch.inf)


def sampling_probabilities(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> torch.Tensor:
    """The distribution a token is drawn from: temperature, then top-k, then top-p, softmax.

    ``temperature=0`` (greedy) gives probability 1 to the first most likely token.
    """
    validate_sampling(temperature, top_k, top_p)
    if temperature == 0:
        greedy = logits.argmax(dim=-1, keepdim=True)  # (..., 1): the first maximum
        return torch.zeros_like(logits).scatter_(-1, greedy, 1.0)
    logits = apply_temperature(logits, temperature)
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    if top_p is not None:
        logits = top_p_filter(logits, top_p)
    return torch.softmax(logits, dim=-1)


def integer_shares(probs: torch.Tensor, decimals: int = DECIMALS) -> torch.Tensor:
    """How many of the integers ``sample_next`` draws from each token owns: (..., vocab_size).

    ``round(p_i · 10**decimals)``, so a token with ``p_i < 0.5 · 10**-decimals`` owns none and
    is never drawn, although its probability is above 0; the most likely token of a row owns at
    least 1, so that a row's total is never 0.
    """
    shares = torch.round(probs.double() * 10**decimals).long()  # (..., vocab_size)
    top = probs.argmax(dim=-1, keepdim=True)  # (..., 1): it keeps a share of at least 1
    return shares.scatter_reduce_(-1, top, torch.ones_like(top), reduce="amax")


def sample_next(
    logits: torch.Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | Sequence[torch.Generator] | None = None,
    decimals: int = DECIMALS,
) -> torch.Tensor:
    """One token per row of ``logits`` (b, vocab_size) -> ids (b, 1), drawn portably.

    The probabilities of ``sampling_probabilities`` are rounded to ``decimals`` digits and a
    uniform integer below their sum picks the token (see the module docstring). ``generator``
    makes the draws reproducible: one generator for the whole batch, or a list of b, one per
    row (row i then draws what a batch of one row would draw from ``generator[i]``: seeds can
    run side by side). Greedy (``temperature=0``) draws nothing.
    """
    if isinstance(generator, Sequence) and len(generator) != logits.shape[0]:
        raise ValueError(
            f"{len(generator)} generators for {logits.shape[0]} rows: give one generator per "
            f"row of the batch, or a single one for all of them."
        )
    probs = sampling_probabilities(logits, temperature, top_k, top_p)  # (b, vocab_size)
    if temperature == 0:
        return probs.argmax(dim=-1, keepdim=True)  # (b, 1)
    shares = integer_shares(probs, decimals)  # (b, vocab_size)
    ends = shares.cumsum(dim=-1)  # (b, vocab_size): token i owns [ends[i] - shares[i], ends[i])
    if isinstance(generator, Sequence):  # one uniform number from each row's own generator
        uniform = torch.cat([torch.rand(1, 1, generator=g, dtype=torch.float64) for g in generator])
    else:
        uniform = torch.rand(logits.shape[0], 1, generator=generator, dtype=torch.float64)
    draw = (uniform * ends[:, -1:]).long()  # (b, 1): an integer in [0, total)
    return (ends <= draw).sum(dim=-1, keepdim=True)  # (b, 1): the owner of the drawn integer

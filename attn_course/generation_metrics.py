"""How good is generated text? A few numbers per sampling strategy, on the same prompts and seeds.

- **real words**: the fraction of generated words that occur in a word list (the training
  plays): does the model spell? (``drop_unfinished``: leave out a last word the text's length
  limit may have cut.)
- **distinct-n** (Li et al. 2016): distinct word n-grams / all word n-grams: does it repeat
  itself? Greedy decoding loops, so its distinct-2 is low.
- **loops**: how many texts fell into a loop, by the rule that more than half of their word
  pairs are repeats (``loops``: distinct-2 below ``LOOP_DISTINCT_2`` = 0.5). Texts loop or
  they do not, so a strategy's distinct-2 has two clusters, and a mean ± std alone hides which
  it is.
- ``fisher_exact``: could two loop counts (``hits_a`` of ``n_a`` texts, ``hits_b`` of ``n_b``)
  come from strategies that loop equally often? The two-sided p-value of Fisher's exact test.
- **loss**: the mean negative log-likelihood, in nats per token, of the generated tokens under
  the model's own (temperature 1) distribution: how likely the model finds its text. Greedy
  text is the most likely and random draws the least, so a low loss alone is no praise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from .generation import GPTModel, generate

__all__ = [
    "words",
    "real_word_fraction",
    "distinct_n",
    "loops",
    "generated_loss",
    "LOOP_DISTINCT_2",
    "StrategyScores",
    "TextScores",
    "mean_and_std",
    "fisher_exact",
    "score_texts",
    "summarize_texts",
    "format_scores",
    "STRATEGIES",
]

WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")

LOOP_DISTINCT_2 = 0.5  # a text whose distinct-2 is below this counts as a loop

# name -> keyword arguments of ``generate``
STRATEGIES: dict[str, dict[str, Any]] = {
    "greedy": {"temperature": 0.0},
    "T = 1.0": {"temperature": 1.0},
    "T = 0.8": {"temperature": 0.8},
    "T = 0.8, top-k 10": {"temperature": 0.8, "top_k": 10},
    "T = 0.8, top-p 0.9": {"temperature": 0.8, "top_p": 0.9},
}


class Tokenizer(Protocol):
    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def words(text: str) -> list[str]:
    """Lower-cased words of ``text``: letters, inner apostrophes kept ("o'er"; "'tis" -> "tis")."""
    return WORD.findall(text.lower())


def real_word_fraction(text: str, known: set[str], *, drop_unfinished: bool = False) -> float:
    """The fraction of the words of ``text`` that are in ``known`` (lower case); 0 if none.

    With ``drop_unfinished``, a last word that runs to the very end of ``text`` (an apostrophe
    after it included) is left out: a text cut at a fixed length may stop inside a word
    ("the silve"), and the fragment would count as a misspelling.
    """
    found = list(WORD.finditer(text.lower()))
    if drop_unfinished and found and found[-1].end() >= len(text.rstrip("'")):
        found = found[:-1]
    return sum(m.group() in known for m in found) / len(found) if found else 0.0


def distinct_n(text: str, n: int) -> float:
    """Distinct word n-grams of ``text`` divided by all its word n-grams; 0 if it has none."""
    found = words(text)
    grams = [tuple(found[i : i + n]) for i in range(len(found) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def loops(text: str) -> bool:
    """Whether ``text`` fell into a loop: more than half of its word pairs repeat an earlier pair
    (distinct-2 below ``LOOP_DISTINCT_2``; a text without a word pair counts too)."""
    return distinct_n(text, 2) < LOOP_DISTINCT_2


def generated_loss(tokens: torch.Tensor, logits: torch.Tensor) -> float:
    """Mean nats per token of the new tokens under the logits they were drawn from.

    ``tokens`` (b, num_new) and ``logits`` (b, num_new, vocab_size), as ``generate`` returns
    them (its tokens without the prompt).
    """
    log_probs = torch.log_softmax(logits.double(), dim=-1)  # (b, num_new, vocab_size)
    return -log_probs.gather(-1, tokens.unsqueeze(-1)).mean().item()


@dataclass(frozen=True)
class StrategyScores:
    """One strategy's scores: their means over its texts (prompts x seeds), their standard
    deviations (``*_std``, over the same texts; 0 for one text), how many of its texts loop
    (distinct-2 below ``LOOP_DISTINCT_2``) and its first text."""

    name: str
    real_words: float
    distinct_1: float
    distinct_2: float
    loss: float
    sample: str
    num_texts: int = 1
    real_words_std: float = 0.0
    distinct_1_std: float = 0.0
    distinct_2_std: float = 0.0
    loss_std: float = 0.0
    loops: int = 0


def mean_and_std(values: Sequence[float]) -> tuple[float, float]:
    """The mean and the sample standard deviation (n - 1 in the denominator; 0 for one value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def fisher_exact(hits_a: int, n_a: int, hits_b: int, n_b: int) -> float:
    """Two-sided p-value of Fisher's exact test for ``hits_a`` of ``n_a`` against ``hits_b`` of
    ``n_b``: if both groups had the same rate, the chance of a split of the ``hits_a + hits_b``
    hits at most as likely as the observed one (hypergeometric probabilities, summed)."""
    if not (0 <= hits_a <= n_a and 0 <= hits_b <= n_b and n_a >= 1 and n_b >= 1):
        raise ValueError(
            f"counts must satisfy 0 <= hits <= n and n >= 1: got {hits_a} of {n_a} and "
            f"{hits_b} of {n_b}."
        )
    hits, total = hits_a + hits_b, n_a + n_b

    def probability(k: int) -> float:  # k of the hits in group a
        return math.comb(n_a, k) * math.comb(n_b, hits - k) / math.comb(total, hits)

    observed = probability(hits_a)
    splits = range(max(0, hits - n_b), min(hits, n_a) + 1)
    # relative tolerance: splits as likely as the observed one must not be lost to rounding
    as_extreme = [q for k in splits if (q := probability(k)) <= observed * (1 + 1e-9)]
    return min(1.0, sum(as_extreme))


@dataclass(frozen=True)
class TextScores:
    """One generated text and its scores (``summarize_texts`` averages them)."""

    text: str
    real_words: float
    distinct_1: float
    distinct_2: float
    loss: float


def score_texts(
    model: GPTModel,
    tokenizer: Tokenizer,
    prompts: Sequence[str],
    known: set[str],
    seeds: Iterable[int] = (0, 1, 2),
    max_new_tokens: int = 300,
    strategies: Mapping[str, Mapping[str, Any]] = STRATEGIES,
    *,
    drop_unfinished: bool = False,
) -> dict[str, list[TextScores]]:
    """Generate with every strategy from every prompt and seed (KV cache on); score each text.

    Returns, by strategy name, its texts' scores, prompt by prompt and within a prompt seed by
    seed. The seeds of a prompt run side by side, one row of a batch each with its own
    generator: the same texts as one run per seed, in a fraction of the time. A strategy that
    draws nothing (``temperature=0``, greedy) writes the same text for every seed, so it runs
    once per prompt (with the first seed): ``len(prompts)`` texts. ``drop_unfinished`` is
    ``real_word_fraction``'s: real words leave out a last word the length limit may have cut.
    """
    seeds = list(seeds)
    scored = {}
    for name, settings in strategies.items():
        texts, losses = [], []
        draws = seeds if settings.get("temperature", 0.0) > 0 else seeds[:1]
        for prompt in prompts:
            idx = torch.tensor([tokenizer.encode(prompt)] * len(draws))  # (seeds, num_tokens)
            generators = [torch.Generator().manual_seed(seed) for seed in draws]
            tokens, logits = generate(model, idx, max_new_tokens, generator=generators, **settings)
            new = tokens[:, idx.shape[1] :]  # (seeds, max_new_tokens)
            for row in range(len(draws)):
                texts.append(tokenizer.decode(new[row].tolist()))
                losses.append(generated_loss(new[row : row + 1], logits[row : row + 1]))
        scored[name] = [
            TextScores(
                text,
                real_word_fraction(text, known, drop_unfinished=drop_unfinished),
                distinct_n(text, 1),
                distinct_n(text, 2),
                loss,
            )
            for text, loss in zip(texts, losses, strict=True)
        ]
    return scored


def summarize_texts(scored: Mapping[str, Sequence[TextScores]]) -> list[StrategyScores]:
    """``score_texts``'s texts, summarised: each strategy's mean and spread over its texts."""
    rows = []
    for name, scores in scored.items():
        texts = [s.text for s in scores]
        real_words = mean_and_std([s.real_words for s in scores])
        distinct_1 = mean_and_std([s.distinct_1 for s in scores])
        distinct_2 = mean_and_std([s.distinct_2 for s in scores])
        loss = mean_and_std([s.loss for s in scores])
        rows.append(
            StrategyScores(
                name,
                real_words[0],
                distinct_1[0],
                distinct_2[0],
                loss[0],
                texts[0],
                len(texts),
                real_words[1],
                distinct_1[1],
                distinct_2[1],
                loss[1],
                sum(loops(t) for t in texts),
            )
        )
    return rows


def format_scores(rows: Sequence[StrategyScores], spread: bool = False) -> str:
    """A table: one line per strategy, rounded so that it prints the same on every machine.

    With ``spread``, every score is "mean ± standard deviation" over the strategy's texts, and
    a column gives how many of them loop, out of how many.
    """
    if not spread:
        lines = [
            f"{'strategy':<20}{'real words':>11}{'distinct-1':>11}{'distinct-2':>11}{'loss':>7}"
        ]
        for row in rows:
            lines.append(
                f"{row.name:<20}{row.real_words:>10.0%} {row.distinct_1:>10.2f} "
                f"{row.distinct_2:>10.2f} {row.loss:>6.2f}"
            )
        return "\n".join(lines)
    lines = [
        f"{'strategy':<20}{'loops':>7}{'real words':>13}{'distinct-1':>13}{'distinct-2':>13}"
        f"{'loss':>13}"
    ]
    for row in rows:
        lines.append(
            f"{row.name:<20}{f'{row.loops}/{row.num_texts}':>7}"
            f"{row.real_words:>7.0%} ± {row.real_words_std:>2.0%}"
            f"{row.distinct_1:>8.2f} ± {row.distinct_1_std:.2f}"
            f"{row.distinct_2:>8.2f} ± {row.distinct_2_std:.2f}"
            f"{row.loss:>8.2f} ± {row.loss_std:.2f}"
        )
    return "\n".join(lines)

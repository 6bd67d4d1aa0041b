"""How good is generated text? Three numbers per sampling strategy, on the same prompts and seeds.

- **real words**: the fraction of generated words that occur in a word list (the training
  plays): does the model spell?
- **distinct-n** (Li et al. 2016): distinct word n-grams / all word n-grams: does it repeat
  itself? Greedy decoding loops, so its distinct-2 is low.
- **loss**: the mean negative log-likelihood, in nats per token, of the generated tokens under
  the model's own (temperature 1) distribution: how likely the model finds its text. Greedy
  text is the most likely and random draws the least, so a low loss alone is no praise.
"""

from __future__ import annotations

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
    "generated_loss",
    "StrategyScores",
    "compare_strategies",
    "format_scores",
    "STRATEGIES",
]

WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")

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


def real_word_fraction(text: str, known: set[str]) -> float:
    """The fraction of the words of ``text`` that are in ``known`` (lower case); 0 if none."""
    found = words(text)
    return sum(word in known for word in found) / len(found) if found else 0.0


def distinct_n(text: str, n: int) -> float:
    """Distinct word n-grams of ``text`` divided by all its word n-grams; 0 if it has none."""
    found = words(text)
    grams = [tuple(found[i : i + n]) for i in range(len(found) - n + 1)]
    return len(set(grams)) / len(grams) if grams else 0.0


def generated_loss(tokens: torch.Tensor, logits: torch.Tensor) -> float:
    """Mean nats per token of the new tokens under the logits they were drawn from.

    ``tokens`` (b, num_new) and ``logits`` (b, num_new, vocab_size), as ``generate`` returns
    them (its tokens without the prompt).
    """
    log_probs = torch.log_softmax(logits.double(), dim=-1)  # (b, num_new, vocab_size)
    return -log_probs.gather(-1, tokens.unsqueeze(-1)).mean().item()


@dataclass(frozen=True)
class StrategyScores:
    """The scores of one strategy, averaged over prompts and seeds, and its first sample."""

    name: str
    real_words: float
    distinct_1: float
    distinct_2: float
    loss: float
    sample: str


def compare_strategies(
    model: GPTModel,
    tokenizer: Tokenizer,
    prompts: Sequence[str],
    known: set[str],
    seeds: Iterable[int] = (0, 1, 2),
    max_new_tokens: int = 300,
    strategies: Mapping[str, Mapping[str, Any]] = STRATEGIES,
) -> list[StrategyScores]:
    """Generate with every strategy from every prompt and seed (KV cache on); score the text."""
    rows = []
    for name, settings in strategies.items():
        texts, losses = [], []
        for prompt in prompts:
            idx = torch.tensor([tokenizer.encode(prompt)])  # (1, num_tokens)
            for seed in seeds:
                generator = torch.Generator().manual_seed(seed)
                tokens, logits = generate(
                    model, idx, max_new_tokens, generator=generator, **settings
                )
                new = tokens[:, idx.shape[1] :]  # (1, max_new_tokens)
                texts.append(tokenizer.decode(new[0].tolist()))
                losses.append(generated_loss(new, logits))
        rows.append(
            StrategyScores(
                name,
                sum(real_word_fraction(t, known) for t in texts) / len(texts),
                sum(distinct_n(t, 1) for t in texts) / len(texts),
                sum(distinct_n(t, 2) for t in texts) / len(texts),
                sum(losses) / len(losses),
                texts[0],
            )
        )
    return rows


def format_scores(rows: Sequence[StrategyScores]) -> str:
    """A table: one line per strategy, rounded so that it prints the same on every machine."""
    lines = [f"{'strategy':<20}{'real words':>11}{'distinct-1':>11}{'distinct-2':>11}{'loss':>7}"]
    for row in rows:
        lines.append(
            f"{row.name:<20}{row.real_words:>10.0%} {row.distinct_1:>10.2f} "
            f"{row.distinct_2:>10.2f} {row.loss:>6.2f}"
        )
    return "\n".join(lines)

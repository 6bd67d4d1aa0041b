"""The lectures' tiny example inputs, so notebooks and exercises never retype them.

Every call of ``example(name)`` returns fresh tensors: editing one in a notebook cannot
change what the next cell (or the grader) sees.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Example", "EXAMPLES", "example"]


@dataclass(frozen=True)
class Example:
    """An example input: its sentence, one label and one embedding row per token."""

    sentence: str
    tokens: tuple[str, ...]
    embeddings: torch.Tensor  # (num_tokens, d_in)

    def batch(self, copies: int = 1) -> torch.Tensor:
        """The embeddings stacked ``copies`` times: (copies, num_tokens, d_in)."""
        return torch.stack([self.embeddings] * copies, dim=0)


_RAW: dict[str, tuple[str, list[str], list[list[float]]]] = {
    # Lecture 01/02: causal attention and the wrapper.
    "dream": (
        "Dream big and work for it",
        ["Dream", "big", "and", "work", "for", "it"],
        [
            [0.72, 0.45, 0.31],
            [0.75, 0.20, 0.55],
            [0.30, 0.80, 0.40],
            [0.85, 0.35, 0.60],
            [0.55, 0.15, 0.75],
            [0.25, 0.20, 0.85],
        ],
    ),
    # The classic 3-d example of the attention chapter people learn from.
    "journey": (
        "Your journey starts with one step",
        ["Your", "journey", "starts", "with", "one", "step"],
        [
            [0.43, 0.15, 0.89],
            [0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64],
            [0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10],
            [0.05, 0.80, 0.55],
        ],
    ),
    # Lecture 03 and the dry run: 3 rows of 6 (the "journey" numbers, two tokens a row).
    # Each row is one token; the listing's comments call them "Row 1" to "Row 3", but on a
    # heatmap's axes "row 2" reads as a row of the weight matrix, so they are labelled tokens.
    "rows": (
        "The dry run's three rows",
        ["token 1", "token 2", "token 3"],
        [
            [0.43, 0.15, 0.89, 0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64, 0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10, 0.05, 0.80, 0.55],
        ],
    ),
    # Lecture 04: the stepwise reshape walk-through.
    "kid": (
        "The Kid Smiles",
        ["The", "Kid", "Smiles"],
        [
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        ],
    ),
}

EXAMPLES: dict[str, str] = {name: sentence for name, (sentence, _, _) in _RAW.items()}
"""Example name -> the sentence it stands for."""


def example(name: str) -> Example:
    """The example called ``name`` (one of ``EXAMPLES``), with fresh tensors."""
    if name not in _RAW:
        raise ValueError(f"unknown example {name!r}; choose one of {sorted(_RAW)}.")
    sentence, tokens, rows = _RAW[name]
    return Example(sentence=sentence, tokens=tuple(tokens), embeddings=torch.tensor(rows))

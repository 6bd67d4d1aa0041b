"""Character tokens for the Shakespeare model: one token id per character of the corpus.

Bad input gets a ``ValueError`` a learner can act on (the unknown characters and the accepted
set; an empty prompt), never a ``KeyError``. A prompt longer than the model's context is cut
from the left, and ``Prompt.note`` says so, for a command or a notebook to print.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["CharTokenizer", "Prompt"]


@dataclass(frozen=True)
class Prompt:
    """Token ids that fit the context, and how many characters were cut from the left."""

    ids: list[int]
    num_cut: int
    cut_text: str

    @property
    def note(self) -> str:
        """A sentence saying what was cut, or "" when nothing was."""
        if not self.num_cut:
            return ""
        shown = self.cut_text if len(self.cut_text) <= 30 else self.cut_text[:27] + "..."
        return (
            f"The prompt is longer than the model's context of {len(self.ids)} characters: "
            f"its first {self.num_cut} characters ({shown!r}) were cut."
        )


class CharTokenizer:
    """Maps each character of ``charset`` to its index there, and back."""

    def __init__(self, charset: str):
        if len(set(charset)) != len(charset) or len(charset) < 2:
            raise ValueError("charset must hold at least 2 characters, each once.")
        self.charset = charset
        self._ids = {ch: i for i, ch in enumerate(charset)}

    @property
    def vocab_size(self) -> int:
        return len(self.charset)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; ValueError for an empty text or a character not in the set."""
        if not text:
            raise ValueError("the text is empty: give the model at least one character.")
        unknown = sorted(set(text) - self._ids.keys())
        if unknown:
            raise ValueError(
                f"the model does not know the character(s) {', '.join(map(repr, unknown))}; "
                f"it reads only these {self.vocab_size}: {self.charset!r}."
            )
        return [self._ids[ch] for ch in text]

    def encode_tensor(self, text: str) -> torch.Tensor:
        """``encode`` as a (num_tokens,) long tensor."""
        return torch.tensor(self.encode(text), dtype=torch.long)

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        """The characters of token ids (a list or a 1-d tensor)."""
        values = ids.tolist() if isinstance(ids, torch.Tensor) else ids
        if any(not 0 <= i < self.vocab_size for i in values):
            raise ValueError(f"token ids must be in 0..{self.vocab_size - 1}.")
        return "".join(self.charset[i] for i in values)

    def encode_prompt(self, text: str, context_length: int) -> Prompt:
        """Encode ``text`` keeping its last ``context_length`` characters (see ``Prompt.note``)."""
        ids = self.encode(text)
        num_cut = max(0, len(ids) - context_length)
        return Prompt(ids[num_cut:], num_cut, text[:num_cut])

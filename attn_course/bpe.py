"""Byte-pair encoding (Sennrich et al. 2016), from scratch, on characters.

Start from single characters and repeat: find the pair of neighbouring tokens that occurs most
often in the training text, and merge it into one new token everywhere. A few hundred merges
turn frequent words (" the", " and", " my") into single tokens; rarer words stay split into
pieces (300 merges on the plays' first million characters leave "ROMEO" as five tokens), and
any text made of the known characters can still be written.

As in GPT-2, the text is first cut into chunks (``pretokenize``): a word with the space before
it, a run of punctuation, a run of white space. Merges never cross a chunk boundary, so a
token never glues the end of one word to the next. Ties between equally frequent pairs go to
the pair that sorts first, so learning is deterministic.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

__all__ = ["pretokenize", "merge_step", "learn_merges", "BPETokenizer"]

Pair = tuple[str, str]

CHUNK = re.compile(r" ?[A-Za-z]+| ?[^A-Za-z\s]+|\s+")


def pretokenize(text: str) -> list[str]:
    """Cut ``text`` into chunks that merges never cross; ``"".join(chunks) == text``."""
    return CHUNK.findall(text)


def merge_step(tokens: list[str], pair: Pair) -> list[str]:
    """Replace every occurrence of ``pair`` in ``tokens``, left to right, by the merged token.

    ``merge_step(["a", "a", "a"], ("a", "a"))`` is ``["aa", "a"]``: occurrences do not overlap.
    """
    merged, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == pair:
            merged.append(tokens[i] + tokens[i + 1])
            i += 2
        else:
            merged.append(tokens[i])
            i += 1
    return merged


def learn_merges(text: str, num_merges: int) -> list[Pair]:
    """The first ``num_merges`` merges BPE learns on ``text`` (fewer if no pair is left).

    Every distinct chunk is kept once with its count, and the pair counts are updated only in
    the chunks a merge touches, so a merge costs far less than a pass over the text.
    """
    if num_merges < 0:
        raise ValueError(f"num_merges={num_merges} must be 0 or more.")
    chunk_counts = Counter(pretokenize(text))
    words = [list(chunk) for chunk in chunk_counts]
    counts = list(chunk_counts.values())
    pair_counts: Counter[Pair] = Counter()
    containing: defaultdict[Pair, set[int]] = defaultdict(set)  # pair -> words that hold it
    for i, word in enumerate(words):
        for pair in zip(word, word[1:], strict=False):
            pair_counts[pair] += counts[i]
            containing[pair].add(i)
    merges: list[Pair] = []
    while len(merges) < num_merges and pair_counts:
        best = min(pair_counts, key=lambda pair: (-pair_counts[pair], pair))
        merges.append(best)
        for i in containing.pop(best):
            for pair in zip(words[i], words[i][1:], strict=False):
                pair_counts[pair] -= counts[i]
            words[i] = merge_step(words[i], best)
            for pair in zip(words[i], words[i][1:], strict=False):
                pair_counts[pair] += counts[i]
                containing[pair].add(i)
        pair_counts = +pair_counts  # drop the pairs whose count fell to 0 (best among them)
    return merges


class BPETokenizer:
    """Characters of the training text plus learned merges; text <-> token ids.

    Ids ``0 .. len(alphabet) - 1`` are the sorted characters, then one id per merge, in the
    order the merges were learned. ``decode(encode(text)) == text`` for any text made of the
    alphabet's characters.
    """

    def __init__(self, alphabet: str, merges: list[Pair]):
        self.merges = merges
        self.rank = {pair: rank for rank, pair in enumerate(merges)}
        self.alphabet = "".join(sorted(set(alphabet)))
        self.vocab = list(self.alphabet) + [left + right for left, right in merges]
        self.ids = {token: i for i, token in enumerate(self.vocab)}
        self.chunk_cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, text: str, num_merges: int) -> BPETokenizer:
        """Learn ``num_merges`` merges on ``text``; its characters are the alphabet."""
        return cls("".join(set(text)), learn_merges(text, num_merges))

    def tokenize(self, text: str) -> list[str]:
        """``text`` as token strings: in each chunk, merges are applied in learned order."""
        unknown = sorted(set(text) - set(self.alphabet))
        if unknown:
            raise ValueError(
                f"{unknown[0]!r} is not in the tokenizer's alphabet; it knows these "
                f"characters: {self.alphabet!r}."
            )
        return [token for chunk in pretokenize(text) for token in self.tokenize_chunk(chunk)]

    def tokenize_chunk(self, chunk: str) -> list[str]:
        """One chunk's tokens: merge the pair learned earliest until none is left."""
        if chunk not in self.chunk_cache:
            tokens = list(chunk)
            while len(tokens) > 1:
                pairs = zip(tokens, tokens[1:], strict=False)
                pair = min(pairs, key=lambda pair: self.rank.get(pair, len(self.merges)))
                if pair not in self.rank:
                    break
                tokens = merge_step(tokens, pair)
            self.chunk_cache[chunk] = tokens
        return self.chunk_cache[chunk]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return [self.ids[token] for token in self.tokenize(text)]

    def decode(self, ids: list[int]) -> str:
        """The text of token ids."""
        return "".join(self.vocab[i] for i in ids)

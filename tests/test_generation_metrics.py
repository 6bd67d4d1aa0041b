"""Generation metrics on texts whose scores are counted by hand."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course.blocks import BlockConfig
from attn_course.generation import GPTConfig, GPTModel
from attn_course.generation_metrics import (
    compare_strategies,
    distinct_n,
    format_scores,
    generated_loss,
    real_word_fraction,
    words,
)


def test_words_are_lower_case_letters_with_inner_apostrophes():
    assert words("ROMEO: O'er the moon, 'tis night--go!") == [
        "romeo",
        "o'er",
        "the",
        "moon",
        "tis",
        "night",
        "go",
    ]


def test_real_word_fraction():
    known = {"the", "moon", "is", "bright"}
    assert real_word_fraction("The moon is brigt.", known) == pytest.approx(3 / 4)
    assert real_word_fraction("?!", known) == 0.0


def test_distinct_n_counts_repeats():
    assert distinct_n("a b a b a", 1) == pytest.approx(2 / 5)
    assert distinct_n("a b a b a", 2) == pytest.approx(2 / 4)  # (a b) and (b a), twice each
    assert distinct_n("a b c", 3) == 1.0
    assert distinct_n("a", 2) == 0.0


def test_generated_loss_is_the_mean_negative_log_probability():
    logits = torch.log(torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]]))  # (1, 2, 3)
    tokens = torch.tensor([[0, 2]])
    assert generated_loss(tokens, logits) == pytest.approx(-(math.log(0.5) + math.log(0.8)) / 2)


class Letters:
    """A tokenizer for a..t: id i is the i-th letter."""

    def encode(self, text: str) -> list[int]:
        return [ord(c) - ord("a") for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(ord("a") + i) for i in ids)


def test_compare_strategies_scores_each_strategy_on_the_same_prompts():
    torch.manual_seed(0)
    cfg = BlockConfig(d_model=16, context_length=32, num_heads=2, dropout=0.0, num_layers=1)
    model = GPTModel(GPTConfig.from_block(cfg, 20)).eval()
    strategies = {"greedy": {"temperature": 0.0}, "hot": {"temperature": 5.0}}
    rows = compare_strategies(model, Letters(), ["abc", "ba"], set(), (0, 1), 40, strategies)
    assert [row.name for row in rows] == ["greedy", "hot"]
    assert len(rows[0].sample) == 40
    assert rows[0].loss < rows[1].loss  # the most likely token every time has the least loss
    assert rows[0].real_words == 0.0 and rows[1].distinct_1 == 1.0  # one word, one distinct
    table = format_scores(rows).splitlines()
    assert table[0].split() == ["strategy", "real", "words", "distinct-1", "distinct-2", "loss"]
    assert table[1].startswith("greedy") and "0%" in table[1]

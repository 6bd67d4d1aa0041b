"""Generation metrics on texts whose scores are counted by hand."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course.blocks import BlockConfig
from attn_course.generation import GPTConfig, GPTModel, generate
from attn_course.generation_metrics import (
    distinct_n,
    fisher_exact,
    format_scores,
    generated_loss,
    loops,
    mean_and_std,
    real_word_fraction,
    score_texts,
    summarize_texts,
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


def test_real_words_can_leave_out_a_last_word_cut_at_the_length_limit():
    known = {"the", "silver", "moon", "o'er"}
    assert real_word_fraction("the silve", known) == pytest.approx(1 / 2)  # the default counts it
    assert real_word_fraction("the silve", known, drop_unfinished=True) == 1.0
    assert real_word_fraction("the silver moo", known, drop_unfinished=True) == 1.0
    assert real_word_fraction("the moo o'", known, drop_unfinished=True) == pytest.approx(1 / 2)
    # a text that ends after its last word keeps it, misspelt or not: only the end is dropped
    assert real_word_fraction("the silve.", known, drop_unfinished=True) == pytest.approx(1 / 2)
    assert real_word_fraction("silve the", known, drop_unfinished=True) == 0.0  # "silve" stays
    assert real_word_fraction("the silve '", known, drop_unfinished=True) == pytest.approx(1 / 2)
    assert real_word_fraction("silve", known, drop_unfinished=True) == 0.0  # no word left


def test_distinct_n_counts_repeats():
    assert distinct_n("a b a b a", 1) == pytest.approx(2 / 5)
    assert distinct_n("a b a b a", 2) == pytest.approx(2 / 4)  # (a b) and (b a), twice each
    assert distinct_n("a b c", 3) == 1.0
    assert distinct_n("a", 2) == 0.0


def test_a_text_loops_when_more_than_half_of_its_word_pairs_are_repeats():
    assert loops("a b a b a b")  # pairs ab ba ab ba ab: 2 distinct of 5
    assert not loops("a b a b a")  # 2 distinct of 4: exactly half, not more
    assert not loops("a b c a b")  # ab bc ca ab: 3 distinct of 4
    assert loops("a")  # no pair at all


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


class Words:
    """A tokenizer for a..t where t is a space: the text has words, so word pairs can repeat."""

    def encode(self, text: str) -> list[int]:
        return [19 if c == " " else ord(c) - ord("a") for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(" " if i == 19 else chr(ord("a") + i) for i in ids)


def test_summarize_texts_scores_each_strategy_on_the_same_prompts():
    torch.manual_seed(0)
    cfg = BlockConfig(d_model=16, context_length=32, num_heads=2, dropout=0.0, num_layers=1)
    model = GPTModel(GPTConfig.from_block(cfg, 20)).eval()
    strategies = {"greedy": {"temperature": 0.0}, "hot": {"temperature": 5.0}}
    rows = summarize_texts(
        score_texts(model, Letters(), ["abc", "ba"], set(), (0, 1), 40, strategies)
    )
    assert [row.name for row in rows] == ["greedy", "hot"]
    assert len(rows[0].sample) == 40
    assert rows[0].loss < rows[1].loss  # the most likely token every time has the least loss
    assert rows[0].real_words == 0.0 and rows[1].distinct_1 == 1.0  # one word, one distinct
    table = format_scores(rows).splitlines()
    assert table[0].split() == ["strategy", "real", "words", "distinct-1", "distinct-2", "loss"]
    assert table[1].startswith("greedy") and "0%" in table[1]


def test_mean_and_std_is_the_sample_standard_deviation():
    mean, std = mean_and_std([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0 and std == pytest.approx(math.sqrt((4 + 1 + 0 + 9) / 3))
    assert mean_and_std([0.7]) == (0.7, 0.0)


def test_fisher_exact_two_sided_p_values():
    # Fisher's tea-tasting table: 3 of 4 against 1 of 4, p = 34/70
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)
    # 5 of 16 against 0 of 16: the observed split and its mirror, 2 * C(16, 5) / C(32, 5)
    assert fisher_exact(5, 16, 0, 16) == pytest.approx(2 * math.comb(16, 5) / math.comb(32, 5))
    # loop counts of 32 texts each (values of an independent review): 6 vs 1, 4 vs 1, 6 vs 4
    assert [round(fisher_exact(a, 32, b, 32), 2) for a, b in [(6, 1), (4, 1), (6, 4)]] == [
        0.10,
        0.35,
        0.73,
    ]
    assert fisher_exact(4, 16, 4, 16) == 1.0 and fisher_exact(0, 8, 0, 8) == 1.0
    assert fisher_exact(1, 4, 3, 4) == fisher_exact(3, 4, 1, 4)  # which group is a: no matter
    assert fisher_exact(10, 10, 0, 10) < 1e-4  # all against none
    with pytest.raises(ValueError, match="5 of 4"):
        fisher_exact(5, 4, 1, 4)


def test_spread_loops_and_seeds_side_by_side():
    torch.manual_seed(0)
    cfg = BlockConfig(d_model=16, context_length=32, num_heads=2, dropout=0.0, num_layers=1)
    model = GPTModel(GPTConfig.from_block(cfg, 20)).eval()
    tokenizer = Words()
    strategies = {"greedy": {"temperature": 0.0}, "T = 1.5": {"temperature": 1.5}}
    seeds, prompts = (4, 9, 2), ["ab", "c"]
    rows = summarize_texts(score_texts(model, tokenizer, prompts, set(), seeds, 30, strategies))
    greedy, sampled = rows
    assert greedy.num_texts == 2 and sampled.num_texts == 6  # greedy once per prompt
    # the texts one run per seed writes, scored here by hand
    texts, losses = [], []
    for prompt in prompts:
        idx = torch.tensor([tokenizer.encode(prompt)])
        for seed in seeds:
            tokens, logits = generate(
                model, idx, 30, temperature=1.5, generator=torch.Generator().manual_seed(seed)
            )
            new = tokens[:, idx.shape[1] :]
            texts.append(tokenizer.decode(new[0].tolist()))
            losses.append(generated_loss(new, logits))
    assert sampled.sample == texts[0]
    distinct_2s = [distinct_n(t, 2) for t in texts]
    assert (sampled.distinct_2, sampled.distinct_2_std) == pytest.approx(mean_and_std(distinct_2s))
    assert (sampled.loss, sampled.loss_std) == pytest.approx(mean_and_std(losses))
    assert sampled.loops == sum(loops(t) for t in texts)
    table = format_scores(rows, spread=True).splitlines()
    assert table[0].split()[:2] == ["strategy", "loops"]
    assert table[1].split()[:2] == ["greedy", f"{greedy.loops}/2"]
    assert f"{sampled.distinct_2:.2f} ± {sampled.distinct_2_std:.2f}" in table[2]


def test_score_texts_scores_each_text_in_prompt_then_seed_order():
    torch.manual_seed(0)
    cfg = BlockConfig(d_model=16, context_length=32, num_heads=2, dropout=0.0, num_layers=1)
    model = GPTModel(GPTConfig.from_block(cfg, 20)).eval()
    tokenizer, known = Words(), {"a", "bc"}
    strategies = {"greedy": {"temperature": 0.0}, "T = 1.5": {"temperature": 1.5}}
    seeds, prompts = (4, 9, 2), ["ab", "c"]
    scored = score_texts(model, tokenizer, prompts, known, seeds, 30, strategies)
    assert [len(scored["greedy"]), len(scored["T = 1.5"])] == [2, 6]  # greedy once per prompt
    for i, (prompt, seed) in enumerate((p, s) for p in prompts for s in seeds):
        alone = score_texts(model, tokenizer, [prompt], known, (seed,), 30, strategies)
        got, want = scored["T = 1.5"][i], alone["T = 1.5"][0]  # batched, and one seed alone
        assert got.text == want.text and got.loss == pytest.approx(want.loss, abs=1e-5)
        assert got.real_words == real_word_fraction(got.text, known)
        assert got.distinct_1 == distinct_n(got.text, 1)
        assert got.distinct_2 == distinct_n(got.text, 2)
    cut = score_texts(model, tokenizer, prompts, known, seeds, 30, strategies, drop_unfinished=True)
    for got, kept in zip(cut["T = 1.5"], scored["T = 1.5"], strict=True):  # the same texts
        assert got.text == kept.text and got.distinct_2 == kept.distinct_2
        assert got.real_words == real_word_fraction(got.text, known, drop_unfinished=True)
    row = summarize_texts(scored)[1]
    assert (row.loss, row.loss_std) == pytest.approx(
        mean_and_std([t.loss for t in scored["T = 1.5"]])
    )

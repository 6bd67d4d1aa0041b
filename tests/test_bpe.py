"""Byte-pair encoding: merges worked out by hand, round trips, clear errors."""

from __future__ import annotations

import random

import pytest

from attn_course.bpe import BPETokenizer, learn_merges, merge_step, pretokenize


def test_merge_step_merges_left_to_right_without_overlap():
    assert merge_step(["a", "a", "a"], ("a", "a")) == ["aa", "a"]
    assert merge_step(["a", "b", "c", "a", "b"], ("a", "b")) == ["ab", "c", "ab"]
    assert merge_step(["a", "b"], ("b", "a")) == ["a", "b"]
    assert merge_step([], ("a", "b")) == []


def test_pretokenize_cuts_words_with_their_space_and_loses_nothing():
    text = "ROMEO:\nBut soft!  what light,\tthrough yonder?"
    chunks = pretokenize(text)
    assert chunks == ["ROMEO", ":", "\n", "But", " soft", "!", "  ", "what", " light", ",", "\t",
                      "through", " yonder", "?"]  # fmt: skip
    assert "".join(chunks) == text


def test_a_space_joins_the_punctuation_run_after_it_never_the_one_before():
    """Lecture 11: a space merges only with the word, or the run of punctuation, right after it."""
    assert pretokenize("word, -- and 'tis") == ["word", ",", " --", " and", " '", "tis"]
    merges = learn_merges("a -- b -- c --", 10)
    assert (" ", "-") in merges and not any(second == " " for _, second in merges)


def test_merges_learned_on_a_text_worked_by_hand():
    # Chunks "ab", " ab", " ab", " abc": (a, b) occurs 4 times, then (" ", ab) 3 times,
    # then (" ab", c) once.
    assert learn_merges("ab ab ab abc", 3) == [("a", "b"), (" ", "ab"), (" ab", "c")]
    assert learn_merges("ab ab ab abc", 10) == [("a", "b"), (" ", "ab"), (" ab", "c")]  # no more
    assert learn_merges("ab ab ab abc", 0) == []


def test_merges_never_cross_a_chunk_and_ties_go_to_the_first_pair_in_sort_order():
    # Every pair occurs once; (" ", "c") sorts before (a, b) and (c, d). "b c" is never a pair.
    assert learn_merges("ab cd", 1) == [(" ", "c")]
    assert ("b", " ") not in learn_merges("ab cd", 5)


def test_a_frequent_word_becomes_one_token_and_sequences_get_shorter():
    text = "the cat and the hat and the bat " * 20
    tokenizer = BPETokenizer.train(text, 30)
    assert tokenizer.tokenize(" the hat") == [" the", " hat"]
    assert len(tokenizer.encode(text)) < len(text) / 3


def test_round_trip_on_random_text_of_the_alphabet():
    training = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind\n" * 5
    tokenizer = BPETokenizer.train(training, 40)
    rng = random.Random(0)
    for _ in range(50):
        text = "".join(rng.choice(tokenizer.alphabet) for _ in range(rng.randint(0, 60)))
        assert tokenizer.decode(tokenizer.encode(text)) == text
    ids = tokenizer.encode(training)
    assert tokenizer.decode(ids) == training
    assert max(ids) < len(tokenizer.vocab) == len(tokenizer.alphabet) + 40


def test_an_unknown_character_is_named_with_the_alphabet():
    tokenizer = BPETokenizer.train("abc abc", 2)
    with pytest.raises(ValueError, match=r"'z' is not in the tokenizer's alphabet.*' abc'"):
        tokenizer.encode("a z")
    with pytest.raises(ValueError, match="num_merges=-1"):
        learn_merges("abc", -1)

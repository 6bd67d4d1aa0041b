"""attn_course.data: the lectures' example inputs, as printed in the seeds."""

from __future__ import annotations

import pytest
import torch

from attn_course.data import EXAMPLES, example

# name -> (sentence, tokens, embeddings) as the lecture listings type them.
EXPECTED = {
    "dream": (
        "Dream big and work for it",
        ("Dream", "big", "and", "work", "for", "it"),
        [
            [0.72, 0.45, 0.31],
            [0.75, 0.20, 0.55],
            [0.30, 0.80, 0.40],
            [0.85, 0.35, 0.60],
            [0.55, 0.15, 0.75],
            [0.25, 0.20, 0.85],
        ],
    ),
    "journey": (
        "Your journey starts with one step",
        ("Your", "journey", "starts", "with", "one", "step"),
        [
            [0.43, 0.15, 0.89],
            [0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64],
            [0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10],
            [0.05, 0.80, 0.55],
        ],
    ),
    "rows": (
        "The dry run's three rows",
        ("row 1", "row 2", "row 3"),
        [
            [0.43, 0.15, 0.89, 0.55, 0.87, 0.66],
            [0.57, 0.85, 0.64, 0.22, 0.58, 0.33],
            [0.77, 0.25, 0.10, 0.05, 0.80, 0.55],
        ],
    ),
    "kid": (
        "The Kid Smiles",
        ("The", "Kid", "Smiles"),
        [
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [6.0, 5.0, 4.0, 3.0, 2.0, 1.0],
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
        ],
    ),
}


def test_the_four_examples_exist():
    assert set(EXAMPLES) == set(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_example_sentence_tokens_and_embeddings(name):
    sentence, tokens, rows = EXPECTED[name]
    ex = example(name)
    assert ex.sentence == EXAMPLES[name] == sentence
    assert ex.tokens == tokens
    assert ex.embeddings.dtype == torch.float32
    assert ex.embeddings.shape == (len(tokens), len(rows[0]))
    assert torch.equal(ex.embeddings, torch.tensor(rows))


def test_rows_are_the_journey_numbers_two_tokens_per_row():
    assert torch.equal(example("rows").embeddings, example("journey").embeddings.reshape(3, 6))


@pytest.mark.parametrize("copies", [1, 2, 5])
def test_batch_stacks_copies(copies):
    ex = example("dream")
    batch = ex.batch(copies)
    assert batch.shape == (copies, 6, 3)
    assert all(torch.equal(item, ex.embeddings) for item in batch)
    batch[0, 0, 0] = 99.0
    assert ex.embeddings[0, 0] == 0.72  # the batch is a copy


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_call_returns_fresh_tensors(name):
    first = example(name)
    first.embeddings.mul_(0).add_(42)
    second = example(name)
    assert torch.equal(second.embeddings, torch.tensor(EXPECTED[name][2]))
    assert second.embeddings.data_ptr() != first.embeddings.data_ptr()


def test_unknown_example_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown example 'dreams'.*'dream'"):
        example("dreams")

"""attn_course.data: the lectures' example inputs are the numbers of the seed listings."""

from __future__ import annotations

import ast
import re

import pytest
import torch

from attn_course.data import EXAMPLES, example

# The input listings of the course's seed notebooks, verbatim (the lecture texts the course was
# written from): the examples must be their numbers, their tokens the listings' comments.
DREAM_LISTING = """
    [[0.72, 0.45, 0.31], # Dream    (x^1)
     [0.75, 0.20, 0.55], # big      (x^2)
     [0.30, 0.80, 0.40], # and      (x^3)
     [0.85, 0.35, 0.60], # work     (x^4)
     [0.55, 0.15, 0.75], # for      (x^5)
     [0.25, 0.20, 0.85]] # it       (x^6)
"""
ROWS_LISTING = """
    [[0.43, 0.15, 0.89, 0.55, 0.87, 0.66], # Row 1
     [0.57, 0.85, 0.64, 0.22, 0.58, 0.33], # Row 2
     [0.77, 0.25, 0.10, 0.05, 0.80, 0.55]] # Row 3
"""
KID_LISTING = """
    [[
    [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], # The
    [6.0, 5.0, 4.0, 3.0, 2.0, 1.0], # Kid
    [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]  # Smiles
]]
"""


def numbers(listing: str) -> torch.Tensor:
    """The listing's tensor without its comments, one row per token."""
    rows = torch.tensor(ast.literal_eval(re.sub(r"#.*", "", listing).strip()))
    return rows.reshape(-1, rows.shape[-1])


def labels(listing: str) -> tuple[str, ...]:
    """The listing's comments, one per row, without their (x^i) notes."""
    return tuple(re.sub(r"\(x\^\d\)", "", c).strip() for c in re.findall(r"# (.*)", listing))


# name -> (sentence, tokens, embeddings), derived from the listings.
EXPECTED = {
    "dream": ("Dream big and work for it", labels(DREAM_LISTING), numbers(DREAM_LISTING)),
    # "the journey numbers, two tokens a row": the rows are the journey tokens in pairs
    "journey": (
        "Your journey starts with one step",
        ("Your", "journey", "starts", "with", "one", "step"),
        numbers(ROWS_LISTING).reshape(6, 3),
    ),
    "rows": (
        "The dry run's three rows",
        # the listing's "Row k" is token k: a heatmap's key axis must not read "row 2"
        tuple(label.replace("Row ", "token ") for label in labels(ROWS_LISTING)),
        numbers(ROWS_LISTING),
    ),
    "kid": (" ".join(labels(KID_LISTING)), labels(KID_LISTING), numbers(KID_LISTING)),
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
    assert ex.embeddings.shape == rows.shape == (len(tokens), rows.shape[1])
    assert torch.equal(ex.embeddings, rows)


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
    assert torch.equal(second.embeddings, EXPECTED[name][2])
    assert second.embeddings.data_ptr() != first.embeddings.data_ptr()


def test_unknown_example_names_the_choices():
    with pytest.raises(ValueError, match=r"unknown example 'dreams'.*'dream'"):
        example("dreams")

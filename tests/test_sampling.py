"""Sampling strategies on small logits whose distributions are worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course.blocks import BlockConfig
from attn_course.generation import GPTConfig, GPTModel, generate
from attn_course.sampling import (
    apply_temperature,
    integer_shares,
    sample_next,
    sampling_probabilities,
    top_k_filter,
    top_p_filter,
)


def logits_of(*probs: float) -> torch.Tensor:
    """A (1, len(probs)) row of logits whose softmax is ``probs``."""
    return torch.tensor([probs]).log()


def assert_probs(got: torch.Tensor, *want: float) -> None:
    torch.testing.assert_close(got, torch.tensor([want], dtype=torch.float32), atol=1e-6, rtol=0)


def test_temperature_divides_the_logits_before_the_softmax():
    logits = logits_of(1 / 7, 2 / 7, 4 / 7)  # softmax gives weights 1 : 2 : 4
    assert_probs(sampling_probabilities(logits, 1.0), 1 / 7, 2 / 7, 4 / 7)
    assert_probs(sampling_probabilities(logits, 0.5), 1 / 21, 4 / 21, 16 / 21)  # squared
    root2 = math.sqrt(2)
    assert_probs(sampling_probabilities(logits, 2.0), *(w / (3 + root2) for w in (1, root2, 2)))
    torch.testing.assert_close(
        apply_temperature(torch.tensor([2.0, -4.0]), 0.5), torch.tensor([4.0, -8.0])
    )


def test_temperature_zero_is_greedy_and_takes_the_first_of_equal_maxima():
    assert_probs(sampling_probabilities(torch.tensor([[0.0, 3.0, 1.0]]), 0.0), 0, 1, 0)
    assert_probs(sampling_probabilities(torch.tensor([[2.0, 1.0, 2.0]]), 0.0), 1, 0, 0)
    draw = sample_next(torch.tensor([[0.0, 3.0, 1.0], [5.0, 5.0, 1.0]]), temperature=0.0)
    assert draw.tolist() == [[1], [0]]


def test_top_k_keeps_the_k_largest_and_every_tie_at_the_kth():
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0]])
    kept = top_k_filter(logits, 2)
    assert torch.isinf(kept).tolist() == [[True, False, False, True]]
    e2, e3 = math.exp(2), math.exp(3)
    assert_probs(sampling_probabilities(logits, 1.0, top_k=2), 0, e3 / (e2 + e3), e2 / (e2 + e3), 0)
    # The 2nd place is shared by ids 1 and 2: both stay, whichever comes first.
    tied = torch.tensor([[2.0, 1.0, 1.0, 0.0]])
    assert torch.isinf(top_k_filter(tied, 2)).tolist() == [[False, False, False, True]]
    assert torch.isinf(top_k_filter(tied.flip(-1), 2)).tolist() == [[True, False, False, False]]
    assert not torch.isinf(top_k_filter(logits, 10)).any()  # k beyond the vocabulary: all


def test_top_p_keeps_the_smallest_set_that_covers_p():
    logits = logits_of(0.2, 0.5, 0.3)
    assert_probs(sampling_probabilities(logits, 1.0, top_p=0.45), 0, 1, 0)  # 0.5 covers it
    assert_probs(sampling_probabilities(logits, 1.0, top_p=0.5), 0, 1, 0)  # exactly covered
    assert_probs(sampling_probabilities(logits, 1.0, top_p=0.6), 0, 0.625, 0.375)
    assert_probs(sampling_probabilities(logits, 1.0, top_p=0.79), 0, 0.625, 0.375)
    assert_probs(sampling_probabilities(logits, 1.0, top_p=0.81), 0.2, 0.5, 0.3)
    assert_probs(sampling_probabilities(logits, 1.0, top_p=1.0), 0.2, 0.5, 0.3)


def test_top_p_keeps_or_drops_equal_probabilities_together():
    logits = logits_of(0.3, 0.4, 0.3)
    # 0.4 alone does not cover 0.5; the two 0.3 tokens are equally likely: both join.
    assert not torch.isinf(top_p_filter(logits, 0.5)).any()
    assert torch.isinf(top_p_filter(logits, 0.35)).tolist() == [[True, False, True]]


def test_top_p_is_applied_to_the_tempered_distribution():
    logits = logits_of(0.2, 0.5, 0.3)
    # At T = 0.5 the weights are 0.04 : 0.25 : 0.09, so 0.25 / 0.38 = 0.658 alone covers 0.6.
    assert_probs(sampling_probabilities(logits, 0.5, top_p=0.6), 0, 1, 0)


def test_top_k_then_top_p():
    logits = logits_of(0.1, 0.2, 0.3, 0.4)
    # top-k 3 leaves 0.2 : 0.3 : 0.4 = 2/9, 3/9, 4/9; top-p 0.5 then needs 4/9 and 3/9.
    assert_probs(sampling_probabilities(logits, 1.0, top_k=3, top_p=0.5), 0, 0, 3 / 7, 4 / 7)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"temperature": -0.5}, "temperature=-0.5 must be 0 or more"),
        ({"temperature": float("nan")}, "temperature=nan must be 0 or more"),
        ({"top_k": 0}, "top_k=0 must be at least 1"),
        ({"top_p": 0.0}, r"top_p=0.0 must be in \(0, 1\]"),
        ({"top_p": 1.5}, r"top_p=1.5 must be in \(0, 1\]"),
        ({"top_p": -0.1}, r"top_p=-0.1 must be in \(0, 1\]"),
    ],
)
def test_bad_settings_raise_a_value_error_that_names_them(settings, message):
    logits = torch.zeros(1, 5)
    with pytest.raises(ValueError, match=message):
        sample_next(logits, **{"temperature": 1.0, **settings})
    with pytest.raises(ValueError, match=message):
        generate(tiny_model(), torch.zeros(1, 2, dtype=torch.long), 3, **settings)


def test_draws_follow_the_distribution():
    logits = logits_of(0.25, 0.5, 0.125, 0.125).expand(40_000, 4)
    draws = sample_next(logits, generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(draws.flatten(), minlength=4) / 40_000
    torch.testing.assert_close(freq, torch.tensor([0.25, 0.5, 0.125, 0.125]), atol=0.01, rtol=0)
    limited = sample_next(logits, top_k=2, generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(limited.flatten(), minlength=4) / 40_000
    torch.testing.assert_close(freq, torch.tensor([1 / 3, 2 / 3, 0, 0]), atol=0.01, rtol=0)


def test_a_probability_that_rounds_to_zero_is_never_drawn():
    logits = logits_of(0.9999996, 0.0000004).expand(100_000, 2)  # 0.4 of the smallest share
    assert sample_next(logits, generator=torch.Generator().manual_seed(0)).sum() == 0
    coarse = logits_of(0.996, 0.004).expand(100_000, 2)
    assert sample_next(coarse, decimals=2, generator=torch.Generator().manual_seed(0)).sum() == 0
    assert sample_next(coarse, decimals=4, generator=torch.Generator().manual_seed(0)).sum() > 0


def test_integer_shares_count_only_the_tokens_sample_next_can_draw():
    probs = torch.tensor([[0.6, 0.3999992, 0.0000006, 0.0000002], [0.0000004, 0.9999996, 0, 0]])
    shares = integer_shares(probs)
    assert shares.tolist() == [[600_000, 399_999, 1, 0], [0, 1_000_000, 0, 0]]
    # p > 0 counts 4 and 2 tokens; only 3 and 1 own integers, and only those are ever drawn
    assert (probs > 0).sum(dim=-1).tolist() == [4, 2]
    assert (shares > 0).sum(dim=-1).tolist() == [3, 1]
    # drawing with 2 decimals: 0.006 owns 1 integer of 100 and is drawn, 0.004 owns none
    coarse = torch.tensor([[0.6, 0.394, 0.006, 0.004]])
    assert integer_shares(coarse, decimals=2).tolist() == [[60, 39, 1, 0]]
    draws = sample_next(coarse.log().expand(20_000, 4), decimals=2,
                        generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert draws.unique().tolist() == [0, 1, 2]
    # the most likely token keeps a share of 1 when every probability rounds to 0
    assert integer_shares(torch.full((1, 4), 0.25), decimals=0).tolist() == [[1, 0, 0, 0]]
    assert integer_shares(torch.tensor([0.1, 0.7, 0.2]), decimals=1).tolist() == [1, 7, 2]


def test_last_bit_changes_of_the_logits_rarely_change_a_draw():
    logits = torch.randn(20_000, 65, generator=torch.Generator().manual_seed(1)) * 3
    noise = torch.randn(logits.shape, generator=torch.Generator().manual_seed(9))
    nudged = logits * (1 + 1e-6 * noise)  # float32 rounding differences, a few ulps
    draws = sample_next(logits, 0.8, generator=torch.Generator().manual_seed(2))
    again = sample_next(nudged, 0.8, generator=torch.Generator().manual_seed(2))
    assert (draws != again).sum() <= 1  # about 20,000 x 1e-6 flips are expected


def tiny_model(context_length: int = 16) -> GPTModel:
    torch.manual_seed(0)
    cfg = BlockConfig(
        d_model=32, context_length=context_length, num_heads=4, dropout=0.0, num_layers=2
    )
    return GPTModel(GPTConfig.from_block(cfg, 20)).eval()


@pytest.mark.parametrize(
    "settings", [{}, {"temperature": 1.0}, {"temperature": 0.8, "top_k": 5, "top_p": 0.9}]
)
def test_sampled_generation_is_the_same_with_and_without_cache_past_the_context(settings):
    model = tiny_model(context_length=16)
    prompt = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(3))
    runs = [
        generate(
            model, prompt, 40, use_cache, generator=torch.Generator().manual_seed(4), **settings
        )
        for use_cache in (True, False)
    ]
    assert runs[0][0].shape == (2, 45)
    assert torch.equal(runs[0][0], runs[1][0])
    torch.testing.assert_close(runs[0][1], runs[1][1], rtol=1e-4, atol=1e-5)


def test_seeds_repeat_and_differ():
    model = tiny_model()
    prompt = torch.zeros(1, 3, dtype=torch.long)

    def run(seed: int) -> torch.Tensor:
        return generate(
            model, prompt, 30, temperature=1.0, generator=torch.Generator().manual_seed(seed)
        )[0]

    assert torch.equal(run(5), run(5))
    assert not torch.equal(run(5), run(6))


def test_a_prompt_longer_than_the_context_is_cut_from_the_left():
    model = tiny_model(context_length=16)
    prompt = torch.randint(0, 20, (1, 25), generator=torch.Generator().manual_seed(7))
    tokens, logits = generate(model, prompt, 1)
    torch.testing.assert_close(logits[:, 0], model(prompt[:, -16:])[:, -1])
    assert torch.equal(tokens[:, :25], prompt)


def test_one_generator_per_row_draws_what_each_row_would_draw_alone():
    model = tiny_model(context_length=16)
    prompt = torch.randint(0, 20, (1, 5), generator=torch.Generator().manual_seed(8))
    seeds = [3, 11, 3, 40]  # seed 3 twice: the same text in two rows
    batch, _ = generate(
        model,
        prompt.expand(4, -1),
        30,
        temperature=1.0,
        generator=[torch.Generator().manual_seed(s) for s in seeds],
    )
    alone = [
        generate(model, prompt, 30, temperature=1.0, generator=torch.Generator().manual_seed(s))[0]
        for s in seeds
    ]
    assert torch.equal(batch, torch.cat(alone))
    assert torch.equal(batch[0], batch[2]) and not torch.equal(batch[0], batch[1])
    # one generator for the batch draws other numbers: row 1 is not seed 11's text
    shared, _ = generate(
        model, prompt.expand(4, -1), 30, temperature=1.0, generator=torch.Generator().manual_seed(3)
    )
    assert not torch.equal(shared[1], batch[1])


def test_a_list_of_generators_must_have_one_per_row():
    with pytest.raises(ValueError, match="2 generators for 3 rows"):
        sample_next(torch.zeros(3, 5), generator=[torch.Generator(), torch.Generator()])

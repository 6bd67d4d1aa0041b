"""Task generators: every scored target is predictable, and the induction repeat moves."""

from __future__ import annotations

import pytest
import torch

from attn_course.tasks import TASKS, ambiguous, induction_batch, kv_lookup_batch, latest_copy_rule


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_previous_token_targets():
    batch = TASKS["previous-token"].batch(8, seed=1)
    t = batch.tokens
    assert torch.equal(batch.targets[:, 1:], t[:, :-1])
    assert not batch.scored[:, 0].any() and batch.scored[:, 1:].all()


@pytest.mark.parametrize("name", ["induction", "induction-fixed", "kv-lookup"])
def test_every_scored_target_follows_the_only_earlier_copy(name):
    """At a scored position the current token occurred exactly once before, and the
    target is the token that followed it there: content lookup solves it, always."""
    batch = TASKS[name].batch(64, seed=3)
    for tokens, targets, scored in zip(
        batch.tokens.tolist(), batch.targets, batch.scored, strict=True
    ):
        positions = scored.nonzero().flatten().tolist()
        assert positions
        for t in positions:
            earlier = [j for j in range(t) if tokens[j] == tokens[t]]
            assert len(earlier) == 1, (tokens, t)
            assert targets[t] == tokens[earlier[0] + 1]


def test_induction_repeat_varies_in_length_and_start():
    batch = TASKS["induction"].batch(256, seed=0)
    first = batch.scored.float().argmax(dim=1)  # first scored position = start of the repeat
    counts = batch.scored.sum(dim=1)  # length - 1
    assert len(set(first.tolist())) > 10 and set(counts.tolist()) == set(range(2, 10))


def test_fixed_offset_scores_the_same_positions_everywhere():
    batch = TASKS["induction-fixed"].batch(32, seed=0)
    assert (batch.scored == batch.scored[0]).all()


def test_induction_filler_never_repeats_a_segment_token():
    batch = induction_batch(64, gen(), min_len=5, max_len=5)
    for tokens, scored in zip(batch.tokens.tolist(), batch.scored, strict=True):
        start = scored.nonzero()[0].item()  # first token of the repeat
        segment = tokens[start - 5 : start]
        assert tokens[start : start + 5] == segment and len(set(segment)) == 5
        rest = tokens[: start - 5] + tokens[start + 5 :]
        assert not set(rest) & set(segment)


def test_kv_lookup_keys_and_values_are_separate_halves():
    batch = kv_lookup_batch(16, gen(), num_tokens=16, vocab_size=20)
    assert batch.tokens.shape == (16, 16)
    keys, values = batch.tokens[:, 0:8:2], batch.tokens[:, 1:8:2]
    assert (keys < 10).all() and (values >= 10).all()
    assert all(len(set(row)) == 4 for row in keys.tolist())


def test_same_seed_same_batch():
    for task in TASKS.values():
        a, b, c = task.batch(4, seed=7), task.batch(4, seed=7), task.batch(4, seed=8)
        assert torch.equal(a.tokens, b.tokens) and not torch.equal(a.tokens, c.tokens)


@pytest.mark.parametrize(
    "kwargs", [dict(min_len=0), dict(min_len=5, max_len=4), dict(max_len=17), dict(vocab_size=8)]
)
def test_induction_rejects_impossible_sizes(kwargs):
    with pytest.raises(ValueError, match="min_len"):
        induction_batch(2, gen(), **kwargs)


def test_kv_lookup_rejects_impossible_sizes():
    with pytest.raises(ValueError, match="multiple of 4"):
        kv_lookup_batch(2, gen(), num_tokens=30)


def test_ambiguous_positions_only_with_colliding_filler():
    assert not ambiguous(TASKS["induction"].batch(500, seed=0)).any()
    batch = TASKS["induction-colliding"].batch(500, seed=0)
    flagged = ambiguous(batch)
    assert not (flagged & ~batch.scored).any()
    share = flagged.sum() / batch.scored.sum()
    assert 0.05 < share < 0.5
    for b, t in flagged.nonzero().tolist()[:50]:  # one follower differs from the target
        tokens = batch.tokens[b].tolist()
        followers = {tokens[j + 1] for j in range(t) if tokens[j] == tokens[t]}
        assert followers - {batch.targets[b, t].item()}


@pytest.mark.parametrize("name", ["induction", "induction-fixed", "induction-colliding"])
def test_latest_copy_rule_solves_every_induction_variant(name):
    batch = TASKS[name].batch(2000, seed=2024)
    right = latest_copy_rule(batch.tokens) == batch.targets
    assert right[batch.scored].all()


def test_latest_copy_rule_follows_the_latest_copy():
    tokens = torch.tensor([[5, 1, 5, 2, 5, 7]])
    # 5 at 2 -> after the 5 at 0 comes 1; 5 at 4 -> after the 5 at 2 comes 2 (not 1)
    assert latest_copy_rule(tokens).tolist() == [[5, 1, 1, 2, 2, 7]]


def test_induction_scores_every_repeat_position_but_the_last():
    """08's prose: scored are the repeat's positions whose next token is also in the repeat, so
    every position of the repeat but its last; the reverse (all but its first) is refused."""
    batch = induction_batch(64, gen(5), min_len=5, max_len=5)
    for tokens, scored in zip(batch.tokens.tolist(), batch.scored, strict=True):
        starts = [  # where a copy of the 5 distinct tokens before begins: the repeat
            t for t in range(5, len(tokens) - 4)
            if tokens[t : t + 5] == tokens[t - 5 : t] and len(set(tokens[t : t + 5])) == 5
        ]  # fmt: skip
        assert len(starts) == 1, tokens
        assert scored.nonzero().flatten().tolist() == list(range(starts[0], starts[0] + 4))


def test_induction_repeat_can_end_the_sequence_and_its_last_token_is_then_unscored():
    """08's prose: the repeat's last position is unscored because its next token is filler, or
    because it is the sequence's last position: every induction-fixed repeat ends there, and so
    do some held-out induction repeats (the segment may start at num_tokens - 2L)."""
    fixed = TASKS["induction-fixed"].batch(64, seed=2024)
    assert (fixed.tokens[:, 22:] == fixed.tokens[:, 12:22]).all()  # the repeat is 22 to 31
    assert fixed.scored[:, 22:31].all() and not fixed.scored[:, 31].any()
    held_out = TASKS["induction"].batch(2000, seed=2024)
    ends_last = held_out.scored[:, 30]  # the repeat's last token at 31, the sequence's end
    assert 0 < ends_last.sum() < 2000 and not held_out.scored[:, 31].any()

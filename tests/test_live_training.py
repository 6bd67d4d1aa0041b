"""Lecture 11's live run: the stored run shows learning.

That a fresh run agrees with it is proved where the learner sees it: notebook 11 trains the
first 100 of its 500 steps live and prints "at step 100 its held-out loss is within 0.15 nats
of the stored run's: True", which nbval checks on every `make test` (and
`tests/test_prose_claims.py` holds the prose to it).
"""

from __future__ import annotations

import collections
import math
import re

import pytest
import torch

from attn_course import lm
from attn_course.corpus import load_corpus
from attn_course.live_training import (
    SAMPLE_CHARS,
    SAMPLE_EVERY,
    stored_run,
    train_live,
    trained_share,
)
from attn_course.lm import (
    LM_CONFIGS,
    _eval_loss,
    _token_data,
    eval_windows,
    tokenizer,
    train_lm,
    window_losses,
    window_starts,
)


def test_the_stored_run_is_a_full_run_of_the_small_config():
    run, cfg = stored_run(), LM_CONFIGS["small"]
    assert [step for step, _, _ in run.curve] == list(range(0, cfg.steps + 1, cfg.eval_every))
    assert list(run.samples) == list(range(0, cfg.steps + 1, SAMPLE_EVERY))
    assert all(len(text) == SAMPLE_CHARS for text in run.samples.values())


def test_the_stored_run_learns():
    run = stored_run()
    first, last = run.curve[0], run.curve[-1]
    assert first[0] == 0 and abs(first[2] - math.log(75)) < 0.3  # untrained: about uniform
    assert last[2] < first[2] - 0.5  # the held-out loss falls
    # ... below what character frequencies alone give (a fresh run agrees within 0.15)
    text = load_corpus().train_text
    unigram_entropy = -sum(c / len(text) * math.log(c / len(text))
                           for c in collections.Counter(text).values())  # fmt: skip
    assert last[2] + 0.15 < 0.7 * math.log(75) < unigram_entropy
    # the notebook's live run stops at step 100: already there the same holds
    assert {step: held_out for step, _, held_out in run.curve}[100] + 0.15 < 0.7 * math.log(75)
    assert abs(last[1] - last[2]) < 0.1  # train and held-out stay together (the prose says so)
    # the samples learn the play's layout: speaker lines (NAME:) appear by the last sample
    assert re.search(r"\n[A-Z ]+:\n", list(run.samples.values())[-1])


@pytest.fixture(scope="module")
def fifty_steps():
    """The live run of 50 steps, and ``train_lm``'s same 50 steps (the model the live run had
    at step 50): read by the tests below, never changed."""
    return train_live(50, progress=None), train_lm(LM_CONFIGS["small"], stop=50)


@pytest.mark.slow  # trains 50 steps
def test_the_train_loss_is_the_model_at_its_step_on_fixed_training_windows(fifty_steps):
    """Review r11z: train and held out score the same model at the same step. The train column
    is not the lagging mean of the batch losses since the last evaluation (3.39 at step 50 in
    the run stored before, against 2.73 for the model at step 50)."""
    cfg = LM_CONFIGS["small"]
    run, trained = fifty_steps
    windows = eval_windows(cfg, "train")
    assert run.curve[1][0] == 50
    assert run.curve[1][1] == pytest.approx(_eval_loss(trained.model, windows), abs=1e-6)
    assert run.curve[1][2] == trained.curve[1][2]  # held out: the same model, same windows
    assert trained.curve[1][1] - run.curve[1][1] > 0.3  # the batch mean lags far behind
    # the fixed training windows come from the training plays, not the held-out ones
    text = tokenizer().decode(windows[0].tolist())
    corpus = load_corpus()
    assert text in corpus.train_text and text not in corpus.held_out_text


def test_the_stored_run_has_train_below_held_out_from_step_100_as_the_prose_says():
    """Cell 9: the untrained model scores the training windows above the held-out ones;
    from step 100 on train runs 0.02 to 0.03 below held out (reversed: the claim fails)."""
    curve = stored_run().curve
    assert curve[0][1] > curve[0][2]
    later = [train - held_out for step, train, held_out in curve if step >= 100]
    assert all(-0.035 < gap < -0.015 for gap in later)


def test_the_stored_run_keeps_both_standard_errors_at_every_evaluation():
    """Review r11zb: cell 7 prints the stored run's standard errors, not the live run's. Cell 9:
    the step-0 gap is 2.4 of its standard errors, every gap from step 50 on within one
    (reversed, the step-0 gap within one and a later one beyond it: the test fails)."""
    run = stored_run()
    assert len(run.train_se) == len(run.held_out_se) == len(run.curve)
    held_out_se = dict(zip([step for step, _, _ in run.curve], run.held_out_se, strict=True))
    assert 0.025 < held_out_se[100] < 0.035 and 0.035 < held_out_se[500] < 0.045
    ratio = [
        (train - held_out) / math.hypot(train_se, held_out_se)
        for (_, train, held_out), train_se, held_out_se
        in zip(run.curve, run.train_se, run.held_out_se, strict=True)
    ]  # fmt: skip
    assert ratio[0] > 2
    assert all(abs(r) < 1 for r in ratio[1:])


@pytest.mark.slow  # trains 50 steps
def test_a_live_run_records_its_standard_errors_on_one_clock(fifty_steps):
    run, trained = fifty_steps
    cfg = LM_CONFIGS["small"]
    losses = window_losses(trained.model, eval_windows(cfg))
    assert run.held_out_se[-1] == pytest.approx(
        (losses.std() / len(losses) ** 0.5).item(), abs=1e-6
    )
    assert len(run.train_se) == 2 and run.train_se[1] > 0
    assert run.seconds > trained.seconds * 0.5  # the progress clock: training and evaluations


@pytest.mark.slow  # trains 50 steps
def test_trained_share_counts_what_train_lm_s_batches_predicted(monkeypatch):
    """The replay matches the batches ``train_lm`` really drew; the share is of the fixed
    training windows' scored characters that a batch before the step predicted (reversed, the
    share of the batches' characters in the fixed windows, it would be about 0.0005)."""
    cfg = LM_CONFIGS["small"]
    data = _token_data()[0]
    drawn = []

    def recording(data_len, num, length, gen):
        starts = window_starts(data_len, num, length, gen)
        if data_len == len(data):
            drawn.append(starts)
        return starts

    monkeypatch.setattr(lm, "window_starts", recording)
    train_lm(cfg, stop=50)
    monkeypatch.undo()
    assert len(drawn) == 50  # one batch per step (eval_windows(cfg) is held out)
    fixed = eval_windows(cfg, "train")
    predicted = torch.zeros(len(data), dtype=torch.bool)
    for starts in drawn:
        for s in starts.tolist():
            predicted[s + 1 : s + cfg.context_length + 1] = True
    gen = torch.Generator().manual_seed(lm.EVAL_SEED)
    starts = window_starts(len(data), cfg.eval_windows, cfg.context_length, gen)
    assert all(
        torch.equal(data[s : s + cfg.context_length + 1], w)
        for s, w in zip(starts.tolist(), fixed, strict=True)
    )
    expected = torch.stack([predicted[s + 1 : s + cfg.context_length + 1] for s in starts.tolist()])
    shares = trained_share([0, 50, cfg.steps])
    assert torch.equal(shares[50], expected.float().mean(1))
    assert shares[0].sum() == 0  # before the first batch, nothing
    # cell 9: by step 500, 0.34 of them, 13 windows never; the expectation is 0.21
    last = shares[cfg.steps]
    assert 0.335 < last.mean() < 0.345 and (last == 0).sum() == 13
    assert 1 - math.exp(-cfg.steps * cfg.batch_size * cfg.context_length / len(data)) < 0.21


def test_a_live_run_of_other_length_than_the_evaluations_allow_is_refused():
    cfg = LM_CONFIGS["small"]
    for steps in (0, 75, cfg.steps + cfg.eval_every):
        with pytest.raises(ValueError, match=f"multiple of {cfg.eval_every}"):
            train_live(steps, progress=None)


def test_the_expected_count_of_never_predicted_windows_is_the_replayed_runs():
    """Cell 7 expects 32 exp(-steps x batch x 127 / N), about 20, of the fixed windows never
    predicted: a batch window predicts some character of a 64-character window when it starts
    within 63 characters either side. Replaying the run's batches over every window start gives
    the same share (reversed, 64 starts a window, it would be 0.79: 25 windows)."""
    cfg = LM_CONFIGS["small"]
    data_len, length = len(_token_data()[0]), cfg.context_length
    gen = torch.Generator().manual_seed(cfg.seed)
    predicted = torch.zeros(data_len, dtype=torch.int32)
    offsets = torch.arange(1, length + 1)
    for _ in range(cfg.steps):
        predicted[window_starts(data_len, cfg.batch_size, length, gen)[:, None] + offsets] = 1
    hits = torch.cat([torch.zeros(1, dtype=torch.int64), predicted.cumsum(0)])
    never = ((hits[length + 1 :] - hits[1:-length]) == 0).float().mean().item()
    reach = cfg.steps * cfg.batch_size * (2 * length - 1)
    assert never == pytest.approx(math.exp(-reach / data_len), abs=0.01)
    assert round(cfg.eval_windows * math.exp(-reach / data_len)) == 20
    assert abs(never - math.exp(-cfg.steps * cfg.batch_size * length / data_len)) > 0.1


@pytest.mark.slow  # trains 50 steps
def test_a_live_run_keeps_the_last_steps_per_window_train_losses(fifty_steps):
    run, trained = fifty_steps
    losses = window_losses(trained.model, eval_windows(LM_CONFIGS["small"], "train"))
    assert run.final_train_losses == pytest.approx(losses.tolist(), abs=1e-6)


def test_the_stored_split_of_step_500_train_losses_is_the_replays():
    """Review r11zd, cell 9: at step 500 the 19 fixed training windows a batch had predicted
    score 2.10, the 13 never predicted 2.06, a difference within one standard error (one draw).
    Reversed (the never-predicted windows taken as the predicted ones), the counts and means
    swap and the test fails."""
    run, cfg = stored_run(), LM_CONFIGS["small"]
    final = torch.tensor(run.final_train_losses)
    assert len(final) == cfg.eval_windows
    assert final.mean().item() == pytest.approx(run.curve[-1][1], abs=2e-4)  # the curve's mean
    hit = trained_share([cfg.steps])[cfg.steps] > 0
    assert (hit.sum().item(), (~hit).sum().item()) == (19, 13)
    assert round(final[hit].mean().item(), 2) == 2.10
    assert round(final[~hit].mean().item(), 2) == 2.06
    split_se = math.hypot(*(final[m].std().item() / m.sum().item() ** 0.5 for m in (hit, ~hit)))
    assert 0 < final[hit].mean() - final[~hit].mean() < split_se

"""Lecture 11's live run: the stored run shows learning.

That a fresh run agrees with it is proved where the learner sees it: notebook 11 trains live and
prints "your run ends within 0.15 nats of the stored run: True", which nbval checks on every
`make test` (and `tests/test_prose_claims.py` holds the prose to it).
"""

from __future__ import annotations

import collections
import math
import re

from attn_course.corpus import load_corpus
from attn_course.live_training import SAMPLE_CHARS, SAMPLE_EVERY, stored_run
from attn_course.lm import LM_CONFIGS


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
    # ... below what character frequencies alone give (a fresh run ends within 0.15 of it)
    text = load_corpus().train_text
    unigram_entropy = -sum(c / len(text) * math.log(c / len(text))
                           for c in collections.Counter(text).values())  # fmt: skip
    assert last[2] + 0.15 < 0.7 * math.log(75) < unigram_entropy
    assert abs(last[1] - last[2]) < 0.1  # train and held-out stay together (the prose says so)
    # the samples learn the play's layout: speaker lines (NAME:) appear by the last sample
    assert re.search(r"\n[A-Z ]+:\n", list(run.samples.values())[-1])

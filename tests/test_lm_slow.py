"""SLOW: the train command trains the Shakespeare model briefly from scratch and saves it.

That training learns more than character frequencies is proved by notebook 11's live run
under nbval (a fresh run's first 100 steps end within 0.15 nats of the stored run's) together
with tests/test_live_training.py (the stored run is below 0.7 ln 75, under the unigram entropy,
at step 100 and at its end).
"""

from __future__ import annotations

import pytest
import torch

from attn_course.__main__ import main
from attn_course.lm import LM_CONFIGS, load_lm

pytestmark = pytest.mark.slow  # trains from scratch


def test_train_command_saves_a_loadable_model(tmp_path, capsys):
    path = tmp_path / "lm.pt"
    argv = ["train", "shakespeare", "--config", "small", "--steps", "50", "--threads", "1"]
    assert main([*argv, "--save", str(path)]) == 0
    out = capsys.readouterr().out
    assert "50/50" in out and "nats/char" in out and f"saved {path}" in out
    model = load_lm(path)
    assert model.cfg.d_model == LM_CONFIGS["small"].d_model
    assert torch.load(path, weights_only=True)["config"]["vocab_size"] == 75

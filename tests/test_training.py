"""Training, fast: seeded runs repeat exactly on one machine; the progress bar; the command."""

from __future__ import annotations

import io

import pytest
import torch

from attn_course.__main__ import main
from attn_course.tasks import TASKS
from attn_course.training import TrainConfig, train


def test_same_seed_same_model_other_seed_other_model():
    task = TASKS["previous-token"]
    a, b = (train(task, TrainConfig(steps=5, seed=1)) for _ in range(2))
    c = train(task, TrainConfig(steps=5, seed=2))
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name]), name
    assert not torch.equal(a.out_head.weight, c.out_head.weight)


def test_progress_bar_reaches_the_last_step():
    stream = io.StringIO()
    train(TASKS["kv-lookup"], TrainConfig(steps=30), progress=stream)
    lines = stream.getvalue().split("\r")
    assert lines[-1].startswith("[" + "#" * 30 + "] 30/30 loss ") and lines[-1].endswith("s\n")
    assert "] 25/30 " in stream.getvalue()


def test_unknown_task_is_refused(capsys):
    with pytest.raises(SystemExit):
        main(["train", "sorting"])
    assert "invalid choice" in capsys.readouterr().err

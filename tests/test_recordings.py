"""The stored training recording (attn_course/recordings/training.json) comes from the code."""

from __future__ import annotations

import pytest

from attn_course.recordings import RUNS, load_recording, record_run
from attn_course.training import TRAIN_CONFIGS


def test_the_stored_recording_has_every_run_at_every_step():
    runs = load_recording()["runs"]
    assert list(runs) == [run.name for run in RUNS]
    for run in RUNS:
        curve = runs[run.name]
        assert curve["step"] == list(range(0, run.steps + 1, run.every))
        for values in curve.values():
            assert not isinstance(values, list) or len(values) == len(curve["step"])


def test_the_recorded_induction_run_is_the_shipped_training():
    assert RUNS[0].steps == TRAIN_CONFIGS["induction"].steps


@pytest.mark.slow  # trains
@pytest.mark.parametrize("run", [RUNS[0], RUNS[1]], ids=lambda run: run.name)
def test_rerunning_the_first_steps_reproduces_the_stored_curve(run):
    """Seeded training: the first two records agree across CPUs up to float rounding."""
    stored = load_recording()["runs"][run.name]
    fresh = record_run(run, steps=run.every)
    assert fresh["step"] == stored["step"][:2]
    for name, values in fresh.items():
        assert values == pytest.approx(stored[name][:2], abs=0.01), name

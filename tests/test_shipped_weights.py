"""The trained weights shipped with the package: small, safe to load, and they behave."""

from __future__ import annotations

from importlib import resources

import pytest
import torch

from attn_course.head_scores import head_scores, offset_weight_by_row
from attn_course.lm import plain_recording
from attn_course.model import ablated
from attn_course.tasks import TASKS
from attn_course.training import evaluate, pretrained

WEIGHTS = resources.files("attn_course") / "weights"


def test_one_small_file_per_task_and_the_language_model():
    files = {p.name: p for p in WEIGHTS.iterdir() if p.name.endswith(".pt")}
    language_models = {"shakespeare.pt", plain_recording()["weights"]["file"]}
    assert set(files) == {f"{name}.pt" for name in TASKS} | language_models
    for name in language_models:
        assert files.pop(name).stat().st_size <= 5 * 1000 * 1000
    assert sum(p.stat().st_size for p in files.values()) <= 2 * 1024 * 1024


def test_files_hold_only_tensors_and_plain_values():
    for name in TASKS:
        with resources.as_file(WEIGHTS / f"{name}.pt") as path:
            saved = torch.load(path, weights_only=True)  # refuses pickled code
        assert set(saved) == {"config", "state_dict"}
        assert all(isinstance(v, torch.Tensor) for v in saved["state_dict"].values())


@pytest.mark.slow  # evaluates trained models on held-out batches
@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_model_solves_its_task(name):
    assert evaluate(pretrained(name), TASKS[name]) >= 0.99


@pytest.mark.slow  # evaluates trained models on held-out batches
def test_colliding_filler_costs_accuracy():
    clean = evaluate(pretrained("induction"), TASKS["induction"])
    assert evaluate(pretrained("induction-colliding"), TASKS["induction-colliding"]) < clean


@pytest.mark.slow  # evaluates trained models on held-out batches
def test_fixed_offset_model_took_the_positional_shortcut():
    assert evaluate(pretrained("induction-fixed"), TASKS["induction"]) < 0.5


@pytest.mark.slow  # evaluates trained models on held-out batches
def test_induction_model_has_its_circuit():
    """A previous-token head in layer 0, induction heads in layer 1, and ablating the
    previous-token head breaks the task."""
    model, task = pretrained("induction"), TASKS["induction"]
    batch = task.batch(256, seed=5)
    model(batch.tokens)
    scores = head_scores(model.attention_weights(), batch.tokens)
    prev_head = scores["previous-token"][0].argmax().item()
    assert scores["previous-token"][0, prev_head] > 0.7
    assert scores["induction"][1].max() > 0.7
    with ablated(model, [(0, prev_head)]):
        assert evaluate(model, task) < 0.6


def test_unknown_task():
    with pytest.raises(ValueError, match="unknown task"):
        pretrained("sorting")


@pytest.mark.slow  # runs a trained model on held-out batches
def test_fixed_offset_shortcut_is_tied_to_query_positions_22_to_30():
    """Trained with the repeat at positions 22-31, the fixed model's layer-1 heads look 9
    back from QUERY rows 22-30 (the keys 13-21), also on varied data, and not elsewhere."""
    model, batch = pretrained("induction-fixed"), TASKS["induction"].batch(500, seed=1)
    model(batch.tokens)
    back9 = offset_weight_by_row(model.attention_weights()[1], 9)  # (num_heads, num_tokens)
    assert (back9[:, 22:31].mean(dim=1) > 0.85).all()
    assert (back9[:, 9:22] < 0.25).all()  # includes the key rows 13-21 of the reversed claim
    assert (back9[:, 31] < 0.1).all()

"""The shipped Shakespeare model: safe to load, small, and it has learned the held-out plays."""

from __future__ import annotations

import hashlib
import math
import re
from importlib import resources

import pytest
import torch
from support import ROOT

from attn_course.__main__ import main
from attn_course.blocks import count_parameters
from attn_course.corpus import load_corpus
from attn_course.lm import (
    LM_CONFIGS,
    evaluate_text,
    held_out_loss,
    held_out_passages,
    pretrained_lm,
    repeat_test,
    shipped_recording,
)

WEIGHTS = resources.files("attn_course") / "weights" / "shakespeare.pt"


def test_the_shipped_file_is_the_one_the_run_record_describes():
    """recordings/shakespeare_run.json records the run that made the weights and their sha256."""
    record = shipped_recording()
    with resources.as_file(WEIGHTS) as path:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert record["weights"]["sha256"] == digest, "retrained? record the new run and its sha256"
    assert record["config"]["repeat_share"] == LM_CONFIGS["default"].repeat_share


def test_file_holds_only_tensors_and_plain_values():
    with resources.as_file(WEIGHTS) as path:
        saved = torch.load(path, weights_only=True)  # refuses pickled code
    assert set(saved) == {"config", "state_dict"}
    assert saved["config"]["vocab_size"] == len(load_corpus().charset)
    assert all(v.dtype == torch.bfloat16 for v in saved["state_dict"].values())


@pytest.mark.slow  # runs the model over 30,000 characters (a few seconds)
def test_held_out_loss_on_a_sample_of_the_held_out_plays():
    held_out = load_corpus().held_out_text
    sample = held_out[100_000:130_000]  # from the middle of the 3 held-out plays
    loss = evaluate_text(pretrained_lm(), sample)
    assert loss <= 1.65  # chance (uniform over 75 characters) is ln 75 = 4.32
    assert loss < 0.4 * math.log(75)


def test_it_learns_in_context_on_a_repeated_held_out_passage():
    """Olsson et al.'s test: every passage costs less the second time, and a head puts most of
    its weight on the character after the earlier occurrence (an induction head)."""
    model = pretrained_lm()
    tests = [repeat_test(model, p) for p in held_out_passages(8, 64, seed=5)]
    assert all(t.second < 0.5 * t.first for t in tests)
    induction = torch.stack([t.induction for t in tests]).mean(dim=0)  # (num_layers, num_heads)
    assert induction.max() > 0.4
    assert (induction > 0.4).sum() <= 2  # one or two induction heads, not every head


def test_evaluate_command(tmp_path, capsys):
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("KING:\nGood morrow, my lord; what news from France?\n")
    bad.write_text("Café au lait\n")
    assert main(["evaluate", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{good}: ") and "nats per character" in out
    loss = float(out.split(": ")[1].split()[0])
    assert 0.5 < loss < 2.5
    assert main(["evaluate", str(bad)]) == 1
    assert "does not know the character(s) 'é'" in capsys.readouterr().err


def readme_figure(pattern: str) -> float:
    """The number ``pattern`` (one group) finds in the README's language-model paragraph."""
    found = re.search(pattern, (ROOT / "README.md").read_text())
    assert found, "the README's language-model paragraph changed"
    return float(found.group(1))


def test_readme_parameter_count_is_the_shipped_models():
    params = readme_figure(r"context, ([\d.]+) M parameters\)")
    assert round(count_parameters(pretrained_lm()) / 1e6, 2) == params


@pytest.mark.slow
@pytest.mark.rerun  # the whole held-out text: about 25 CPU-seconds; CI's other Pythons run it
def test_readme_held_out_loss_is_the_shipped_models():
    loss = readme_figure(r"The shipped weights reach ([\d.]+) nats per\s+character")
    assert round(held_out_loss(pretrained_lm()), 2) == loss

"""Lecture 11's live run: the small Shakespeare model trained in the notebook, with samples.

``train_live`` trains ``lm.LM_CONFIGS["small"]`` (about half a minute on one core), or the
first ``steps`` of its run, and, at every evaluation, prints the losses of the model at that
step on fixed training and held-out windows and (every ``SAMPLE_EVERY`` steps) a short
sample, so the learner watches the loss fall and the samples turn from noise into words.
Its exact numbers depend on the CPU's last bits, so the notebook compares nothing of it: the
numbers nbval compares come from the stored run ``data/live_run.json``, the whole run,
written by ``python -m attn_course.live_training`` with the same code.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import TextIO

import torch

from .generation import GPTModel, generate
from .lm import (
    EVAL_SEED,
    LM_CONFIGS,
    _eval_loss,
    _token_data,
    eval_windows,
    tokenizer,
    train_lm,
    window_losses,
    window_starts,
)

__all__ = [
    "LiveRun",
    "train_live",
    "trained_share",
    "stored_run",
    "SAMPLE_PROMPT",
    "SAMPLE_TEMPERATURE",
    "SAMPLE_SEED",
    "SAMPLE_EVERY",
]

CONFIG = "small"
SAMPLE_PROMPT = "ROMEO:\n"
SAMPLE_CHARS = 100
SAMPLE_TEMPERATURE = 0.8
SAMPLE_SEED = 0  # one draw per checkpoint, always from this seed
SAMPLE_EVERY = 100  # steps between two samples (a multiple of the config's eval_every)
STORED = "live_run.json"


@dataclass
class LiveRun:
    """A run's curve, (step, train loss, held-out loss) per evaluation from step 0 (the
    untrained model), and samples by step. Both losses are the model's at that step, each on
    its own fixed draw of ``cfg.eval_windows`` windows (``lm.eval_windows``, split "train"
    and "held_out"): the train loss does not lag as ``lm.TrainResult``'s batch mean does."""

    curve: list[tuple[int, float, float]] = field(default_factory=list)
    samples: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0  # from before the first evaluation to the end, the progress clock
    cpu_seconds: float = 0.0  # stored runs: the process's CPU time (wall time shows the load)
    # the standard errors of the train and held-out losses at each point of the curve, each a
    # mean over the config's fixed windows: the std of the per-window losses / sqrt(windows)
    train_se: list[float] = field(default_factory=list)
    held_out_se: list[float] = field(default_factory=list)
    # the loss of each fixed training window (``eval_windows(cfg, "train")``) at the last step
    final_train_losses: list[float] = field(default_factory=list)


@torch.no_grad()
def sample_text(model: GPTModel, seed: int = SAMPLE_SEED) -> str:
    """``SAMPLE_CHARS`` characters after ``SAMPLE_PROMPT`` at ``SAMPLE_TEMPERATURE`` (portable
    draws)."""
    tok = tokenizer()
    prompt = torch.tensor([tok.encode(SAMPLE_PROMPT)])
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    tokens, _ = generate(
        model, prompt, SAMPLE_CHARS, temperature=SAMPLE_TEMPERATURE, generator=generator
    )
    model.train(was_training)
    return tok.decode(tokens[0, prompt.shape[1] :].tolist())


def train_live(steps: int | None = None, progress: TextIO | None = sys.stdout) -> LiveRun:
    """Train the small model from scratch; print a sample every ``SAMPLE_EVERY`` steps.

    ``steps`` trains only the first ``steps`` of the config's run (its learning-rate schedule
    unchanged, so the curve retraces the stored run's first points); None trains all of them.
    """
    cfg = LM_CONFIGS[CONFIG]
    if steps is not None and (not 0 < steps <= cfg.steps or steps % cfg.eval_every):
        raise ValueError(
            f"steps={steps}: choose a multiple of {cfg.eval_every} from {cfg.eval_every} to "
            f"{cfg.steps} (the run evaluates every {cfg.eval_every} steps and has {cfg.steps})."
        )
    run, last = LiveRun(), cfg.steps if steps is None else steps
    train_windows, held_out_windows = eval_windows(cfg, "train"), eval_windows(cfg)
    train_losses: dict[int, float] = {}
    se: dict[int, tuple[float, float]] = {}
    start = time.perf_counter()

    def on_eval(step: int, model: GPTModel) -> None:
        # the model as it is at this step, on the fixed training windows (no lag)
        train_losses[step] = _eval_loss(model, train_windows)
        se[step] = (_standard_error(model, train_windows), _standard_error(model, held_out_windows))
        if step == last:
            run.final_train_losses = window_losses(model, train_windows).tolist()
        if progress is not None:
            print(
                f"step {step:>3}/{last}: train {train_losses[step]:.2f} held-out "
                f"{_eval_loss(model, held_out_windows):.2f} nats/char "
                f"({time.perf_counter() - start:.0f} s)",
                file=progress,
            )
        if step % SAMPLE_EVERY == 0:
            run.samples[step] = sample_text(model)
            if progress is not None:
                print(f"\n--- step {step}: {run.samples[step]!r}", file=progress)

    result = train_lm(cfg, on_eval=on_eval, stop=steps)
    run.curve = [(step, train_losses[step], held_out) for step, _, held_out in result.curve]
    run.train_se = [se[step][0] for step, _, _ in run.curve]
    run.held_out_se = [se[step][1] for step, _, _ in run.curve]
    run.seconds = time.perf_counter() - start
    return run


def _standard_error(model: GPTModel, windows: torch.Tensor) -> float:
    losses = window_losses(model, windows)
    return (losses.std() / len(losses) ** 0.5).item()


def trained_share(steps: list[int]) -> dict[int, torch.Tensor]:
    """For each step of ``steps``: the share of each fixed training window's scored characters
    (``eval_windows(cfg, "train")``, its last ``context_length`` tokens) that a training batch
    before that step predicted, (eval_windows,). Exact, without training: it replays the
    run's seeded draws of window starts (``lm.window_starts``, as ``train_lm`` draws them)."""
    cfg = LM_CONFIGS[CONFIG]
    assert cfg.repeat_share == 0  # a repeat window would draw more from the generator
    data_len, length = len(_token_data()[0]), cfg.context_length
    fixed = window_starts(
        data_len, cfg.eval_windows, length, torch.Generator().manual_seed(EVAL_SEED)
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    predicted = torch.zeros(data_len, dtype=torch.bool)  # a batch predicted this token
    offsets = torch.arange(1, length + 1)  # a window predicts its tokens 1 to length
    shares = {}
    for step in range(max(steps) + 1):
        if step in steps:
            shares[step] = predicted[fixed[:, None] + offsets].float().mean(1)
        batch = window_starts(data_len, cfg.batch_size, length, gen)
        predicted[batch[:, None] + offsets] = True
    return shares


def stored_run() -> LiveRun:
    """The run stored in the package (its curve and samples; ``seconds`` as measured then)."""
    saved = json.loads((resources.files("attn_course") / "data" / STORED).read_text())
    return LiveRun(
        curve=[(int(s), float(a), float(b)) for s, a, b in saved["curve"]],
        samples={int(step): text for step, text in saved["samples"].items()},
        seconds=float(saved["seconds"]),
        cpu_seconds=float(saved.get("cpu_seconds", 0.0)),
        train_se=saved["train_se"],
        held_out_se=saved["held_out_se"],
        final_train_losses=saved["final_train_losses"],
    )


def main() -> None:
    """Train once and store the run next to the corpus."""
    torch.set_num_threads(1)
    start, cpu_start = time.perf_counter(), time.process_time()
    run = train_live()
    path = Path(__file__).parent / "data" / STORED
    saved = asdict(run)
    saved["curve"] = [
        [step, round(train, 4), round(held_out, 4)] for step, train, held_out in run.curve
    ]
    saved["train_se"] = [round(se, 4) for se in run.train_se]
    saved["held_out_se"] = [round(se, 4) for se in run.held_out_se]
    saved["final_train_losses"] = [round(loss, 4) for loss in run.final_train_losses]
    saved["seconds"] = round(time.perf_counter() - start, 1)
    saved["cpu_seconds"] = round(time.process_time() - cpu_start, 1)
    saved["command"] = "python -m attn_course.live_training"
    saved["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    saved["load_average"] = " ".join(f"{load:.2f}" for load in os.getloadavg())
    saved["torch"] = torch.__version__
    path.write_text(json.dumps(saved, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Numbers recorded while training (lecture 08), stored so the notebook plots them at once.

``python -m attn_course.recordings`` re-runs the course's seeded training and rewrites
``attn_course/recordings/training.json``:

* ``induction``: the course's induction run (``TRAIN_CONFIGS``), every ``EVERY`` steps:
  the best previous-token score of layer 0, the best induction score of layer 1 (both on
  the notebook's 500 sequences, seed 1) and the held-out accuracy: the phase change.
* ``previous-token, no positions``: the previous-token task with ``positions="none"``,
  1,000 steps: a causal model finds the order without position vectors.
* ``induction-colliding``: the colliding task trained 3 times as long as the shipped model
  (800 steps), recorded every 800 steps.

Training is seeded but not bit-identical across CPUs (see ``training.py``); the file
records the machine's torch version and thread count beside the numbers.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import torch

from .head_scores import induction_score, previous_token_score
from .model import TinyTransformer
from .tasks import TASKS
from .training import TRAIN_CONFIGS, TrainConfig, evaluate, model_config, train

__all__ = ["EVERY", "SCORE_BATCH_SEED", "Run", "RUNS", "record_run", "record", "load_recording"]

EVERY = 25  # steps between two records
SCORE_BATCH_SEED = 1  # the notebook's 500 held-out sequences for head scores
FILE = "training.json"


@dataclass(frozen=True)
class Run:
    """One recorded training: the task, its length, how often to record, model overrides."""

    name: str
    task: str
    steps: int
    every: int
    head_scores: bool = False
    positions: str = "learned"


COLLIDING_STEPS = TRAIN_CONFIGS["induction-colliding"].steps
RUNS = (
    Run("induction", "induction", TRAIN_CONFIGS["induction"].steps, EVERY, head_scores=True),
    Run("previous-token, no positions", "previous-token", 1000, 100, positions="none"),
    Run("induction-colliding", "induction-colliding", 3 * COLLIDING_STEPS, COLLIDING_STEPS),
)


def record_run(run: Run, steps: int | None = None) -> dict[str, list]:
    """Train ``run`` (its first ``steps`` only, if given) and return its recorded curves."""
    task = TASKS[run.task]
    tokens = task.batch(500, SCORE_BATCH_SEED).tokens
    curve: dict[str, list] = {"step": [], "accuracy": []}
    if run.head_scores:
        curve |= {"previous-token": [], "induction": []}

    @torch.no_grad()
    def on_step(step: int, model: TinyTransformer) -> None:
        if step % run.every:
            return
        curve["step"].append(step)
        curve["accuracy"].append(round(evaluate(model, task), 4))
        if run.head_scores:
            model(tokens)
            weights = model.attention_weights()  # (num_layers, b, num_heads, n, n)
            best_previous = previous_token_score(weights[0]).max().item()
            best_induction = induction_score(weights[1], tokens).max().item()
            curve["previous-token"].append(round(best_previous, 4))
            curve["induction"].append(round(best_induction, 4))

    model_cfg = model_config(task, positions=run.positions)
    train(task, TrainConfig(steps=steps or run.steps), model_cfg, on_step=on_step)
    return curve


def record(threads: int = 1) -> dict:
    """Run every training of ``RUNS`` and return what ``load_recording`` returns."""
    torch.set_num_threads(threads)
    runs = {}
    for run in RUNS:
        start = time.perf_counter()
        runs[run.name] = {"task": run.task, "positions": run.positions, **record_run(run)}
        print(f"{run.name}: {run.steps} steps in {time.perf_counter() - start:.0f} s, "
              f"final accuracy {runs[run.name]['accuracy'][-1]:.2%}")  # fmt: skip
    return {
        "command": "python -m attn_course.recordings",
        "torch": torch.__version__,
        "threads": threads,
        "runs": runs,
    }


def load_recording() -> dict:
    """The stored recording: {"runs": {name: {"step": [...], "accuracy": [...], ...}}, ...}."""
    with resources.as_file(resources.files("attn_course") / "recordings" / FILE) as path:
        return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attn_course.recordings", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="where to write (default: the package's file)")
    args = parser.parse_args(argv)
    data = record(args.threads)
    out = args.out or Path(__file__).parent / "recordings" / FILE
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

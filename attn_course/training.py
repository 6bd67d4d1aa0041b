"""Train, evaluate, save and load the tiny transformer; ``python -m attn_course train TASK``.

Training is seeded: the same seed gives the same data, initial weights and updates, so the
same run on the same machine gives the same model. It is not bit-identical across CPUs
(kernels round differently), which is why the course ships trained weights and its tests
check behaviour (accuracy, head scores), never bytes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TextIO

import torch
import torch.nn.functional as F

from .model import ModelConfig, TinyTransformer
from .tasks import TASKS, Batch, Task

__all__ = [
    "TrainConfig",
    "TRAIN_CONFIGS",
    "HELD_OUT_SEED",
    "model_config",
    "next_token_loss",
    "train_step",
    "train",
    "accuracy",
    "evaluate",
    "save_model",
    "load_model",
    "pretrained",
]

HELD_OUT_SEED = 2024  # evaluation batches; training draws from its own seeded stream


@dataclass(frozen=True)
class TrainConfig:
    """Optimiser settings: AdamW at a constant learning rate on fresh batches each step."""

    steps: int = 1000
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    seed: int = 0


TRAIN_CONFIGS: dict[str, TrainConfig] = {
    "previous-token": TrainConfig(steps=200),
    "induction": TrainConfig(steps=800),
    "induction-fixed": TrainConfig(steps=300),
    "induction-colliding": TrainConfig(steps=800),
    "kv-lookup": TrainConfig(steps=400),
}


def model_config(task: Task, **overrides) -> ModelConfig:
    """The course's model for ``task``: 2 attention-only layers, 4 heads, width 64."""
    return ModelConfig(vocab_size=task.vocab_size, context_length=task.num_tokens, **overrides)


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy, in nats, of predicting each next token from the logits before it.

    Args:
        logits: (b, num_tokens, vocab_size), the model's output for ``tokens``.
        tokens: (b, num_tokens) token ids, num_tokens >= 2. Position t's logits are scored
            against ``tokens[:, t + 1]``, so the targets are ``tokens[:, 1:]``: every position
            from 1 on, whatever its id (id 0 is an ordinary token: no padding, no
            ignore_index). The last position's logits have no next token and are dropped.

    Returns:
        A 0-dim tensor: the mean over the b * (num_tokens - 1) predictions.
    """
    if logits.ndim != 3 or tokens.shape != logits.shape[:2] or tokens.shape[1] < 2:
        raise ValueError(
            f"expected logits (b, num_tokens, vocab_size) for tokens (b, num_tokens) with "
            f"num_tokens >= 2, got {tuple(logits.shape)} and {tuple(tokens.shape)}."
        )
    predictions = logits[:, :-1]  # (b, num_tokens - 1, vocab_size): positions 0 .. T-2
    targets = tokens[:, 1:]  # (b, num_tokens - 1): the token after each of them
    return F.cross_entropy(predictions.flatten(0, 1), targets.flatten())


def train_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    max_norm: float = 1.0,
) -> float:
    """One update on next-token prediction; returns the loss (nats) before the update.

    ``tokens``: (b, num_tokens). Zero the gradients (``backward`` adds to them), forward,
    loss, backward, then clip: when the global norm of all the gradients together exceeds
    ``max_norm``, rescale them all by one factor to that norm (direction kept; under Adam this
    mainly keeps one outsized batch out of its running averages). Then step.
    """
    optimizer.zero_grad(set_to_none=True)
    loss = next_token_loss(model(tokens), tokens)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return loss.item()


def _loss(model: TinyTransformer, batch: Batch) -> torch.Tensor:
    logits = model(batch.tokens)  # (b, num_tokens, vocab_size)
    return F.cross_entropy(logits[batch.scored], batch.targets[batch.scored])


@torch.no_grad()
def accuracy(model: TinyTransformer, batch: Batch) -> float:
    """Fraction of scored positions whose most likely token is the target."""
    predictions = model(batch.tokens).argmax(dim=-1)  # (b, num_tokens)
    return (predictions == batch.targets)[batch.scored].float().mean().item()


def evaluate(model: TinyTransformer, task: Task, num_sequences: int = 2000) -> float:
    """Held-out accuracy on ``num_sequences`` sequences drawn with ``HELD_OUT_SEED``."""
    was_training = model.training
    model.eval()
    acc = accuracy(model, task.batch(num_sequences, HELD_OUT_SEED))
    model.train(was_training)
    return acc


def _progress(stream: TextIO, step: int, steps: int, loss: float, start: float) -> None:
    width = 30
    done = width * step // steps
    bar = "#" * done + "." * (width - done)
    end = "\n" if step == steps else ""
    print(
        f"\r[{bar}] {step}/{steps} loss {loss:.4f} {time.perf_counter() - start:.1f}s",
        end=end,
        file=stream,
        flush=True,
    )


def train(
    task: Task,
    cfg: TrainConfig | None = None,
    model_cfg: ModelConfig | None = None,
    progress: TextIO | None = None,
    on_step: Callable[[int, TinyTransformer], None] | None = None,
) -> TinyTransformer:
    """Train a fresh ``TinyTransformer`` on ``task``; ``progress`` is a stream for a text bar.

    ``on_step(step, model)``, if given, is called with step 0 before the first update and
    after every update (e.g. to record scores during training, ``recordings.py``).
    """
    cfg = cfg or TRAIN_CONFIGS.get(task.name, TrainConfig())
    torch.manual_seed(cfg.seed)
    model = TinyTransformer(model_cfg or model_config(task))
    data = torch.Generator().manual_seed(cfg.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    start = time.perf_counter()
    model.train()
    if on_step is not None:
        on_step(0, model)
    for step in range(1, cfg.steps + 1):
        loss = _loss(model, task.make_batch(cfg.batch_size, data))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if on_step is not None:
            on_step(step, model)
        if progress is not None and (step % 25 == 0 or step == cfg.steps):
            _progress(progress, step, cfg.steps, loss.item(), start)
    model.eval()
    return model


def save_model(model: TinyTransformer, path: str | Path) -> None:
    """Write the config and weights (tensors and plain types only: loadable with weights_only)."""
    state = {k: v for k, v in model.state_dict().items() if not k.endswith(".mask")}
    torch.save({"config": model.cfg.to_dict(), "state_dict": state}, path)


def load_model(path: str | Path) -> TinyTransformer:
    """Load a model saved by ``save_model``; ``weights_only=True`` runs no pickled code."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    with torch.random.fork_rng(devices=[]):  # the initial weights are overwritten: leave the
        model = TinyTransformer(ModelConfig(**saved["config"]))  # caller's RNG where it was
    missing, unexpected = model.load_state_dict(saved["state_dict"], strict=False)
    if unexpected or any(not k.endswith(".mask") for k in missing):
        raise ValueError(f"{path}: weights do not fit the model ({missing=}, {unexpected=}).")
    return model.eval()


def pretrained(task_name: str) -> TinyTransformer:
    """The course's shipped model for ``task_name`` (trained by ``python -m attn_course train``)."""
    if task_name not in TASKS:
        raise ValueError(f"unknown task {task_name!r}; choose one of {sorted(TASKS)}.")
    with resources.as_file(resources.files("attn_course") / "weights" / f"{task_name}.pt") as p:
        return load_model(p)


def main(argv: list[str]) -> int:
    if argv[:1] == ["shakespeare"]:  # the language model has its own options
        from .lm import train_main

        return train_main(argv)
    parser = argparse.ArgumentParser(
        prog="python -m attn_course train",
        description="Train the tiny transformer on a synthetic task and report its held-out "
        "accuracy. (`train shakespeare --help`: the character-level language model.)",
    )
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--steps", type=int, help="training steps (default: the task's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--save", type=Path, help="write the trained weights to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    task = TASKS[args.task]
    cfg = TRAIN_CONFIGS[task.name]
    cfg = TrainConfig(
        steps=args.steps or cfg.steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        seed=args.seed,
    )
    print(f"training {task.name} ({task.description}): {cfg}")
    start = time.perf_counter()
    model = train(task, cfg, progress=sys.stdout)
    seconds = time.perf_counter() - start
    print(f"trained in {seconds:.1f} s; held-out accuracy {evaluate(model, task):.2%}")
    if args.save:
        save_model(model, args.save)
        print(f"saved {args.save}")
    return 0

"""The course's character-level Shakespeare model: train, checkpoint, evaluate, load, GQA.

``python -m attn_course train shakespeare`` trains ``generation.GPTModel`` on the corpus
(``corpus.load_corpus``) with AdamW, a linear warm-up and a cosine decay of the learning rate,
on windows of the training plays of which a share repeats a passage (``repeat_share``: the
model's induction heads grow on them, ``repeat_test`` measures them); at step 0 and every
``eval_every`` steps it prints the train loss and the held-out loss in nats per character
(``TrainResult`` says which steps each averages). It is seeded, and resumable:
``--checkpoint FILE`` saves the model, the optimiser and the data stream's state every
``eval_every`` steps, and ``--resume`` continues from it. ``pretrained_lm()`` is the shipped
model, ``evaluate_text`` its loss on any text, ``repeat_summary`` its repeat test, and
``pool_kv_heads`` turns it into a grouped-query model by averaging key/value heads
(``permute_heads`` first, to choose which heads share one).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TextIO

import torch
import torch.nn.functional as F

from .corpus import load_corpus
from .generation import GPTConfig, GPTModel, generate
from .generation_metrics import words
from .gqa import kv_cache_bytes, validate_kv_groups
from .text_heads import repeat_targets, target_score
from .tokenizer import CharTokenizer

__all__ = [
    "LMTrainConfig",
    "LM_CONFIGS",
    "TrainResult",
    "tokenizer",
    "train_lm",
    "evaluate_text",
    "held_out_loss",
    "unigram_loss",
    "RepeatTest",
    "repeat_test",
    "held_out_passages",
    "RepeatSummary",
    "repeat_summary",
    "SHIPPED_RECORDING",
    "shipped_recording",
    "PLAIN_RECORDING",
    "plain_recording",
    "write_plain_recording",
    "copy_counts",
    "copy_rate",
    "save_lm",
    "load_lm",
    "pretrained_lm",
    "plain_lm",
    "sample",
    "training_words",
    "pool_kv_heads",
    "permute_heads",
    "gqa_table",
    "print_gqa_table",
    "UPTRAIN",
    "eval_windows",
    "window_losses",
]

EVAL_SEED = 2024  # the held-out windows the progress line reports


@dataclass(frozen=True)
class LMTrainConfig:
    """Model sizes and optimiser settings for one training run."""

    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 4
    context_length: int = 128
    steps: int = 2600
    batch_size: int = 32
    lr: float = 4e-3
    min_lr: float = 4e-4
    warmup: int = 100
    weight_decay: float = 0.1
    seed: int = 0
    eval_every: int = 200
    eval_windows: int = 64
    # the share of training windows that repeat a passage (see ``_windows``): copying from
    # earlier in the window almost never pays in 128 characters of Shakespeare, so a model
    # trained on plain windows grows no induction heads (lecture 11, section 5)
    repeat_share: float = 0.25
    # bfloat16 matmuls in training (torch.autocast): 3x faster on CPUs with AVX512-BF16 (this
    # machine), slower where bfloat16 is emulated; the weights stay float32
    autocast: bool = True

    def model_config(self, vocab_size: int) -> GPTConfig:
        return GPTConfig(
            d_model=self.d_model,
            context_length=self.context_length,
            num_heads=self.num_heads,
            dropout=0.0,
            num_layers=self.num_layers,
            vocab_size=vocab_size,
        )

    def learning_rate(self, step: int) -> float:
        """Linear warm-up to ``lr`` over ``warmup`` steps, then cosine decay to ``min_lr``."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, self.steps - self.warmup)
        return self.min_lr + 0.5 * (self.lr - self.min_lr) * (1 + math.cos(math.pi * progress))


LM_CONFIGS: dict[str, LMTrainConfig] = {
    # the shipped model (8 CPU-minutes on one core here: recordings/shakespeare_run.json)
    "default": LMTrainConfig(),
    # trains live in a notebook in under a minute (21 CPU-s here): the loss falls from 4.3 to
    # about 2.1 nats/char and the samples turn from noise into words
    "small": LMTrainConfig(
        d_model=64, num_heads=4, num_layers=2, context_length=64, steps=500, batch_size=32,
        lr=5e-3, min_lr=5e-4, warmup=50, eval_every=50, eval_windows=32, autocast=False,
        repeat_share=0.0,
    ),
}  # fmt: skip


@dataclass
class TrainResult:
    """The trained model and its curve: (step, train loss, held-out loss) every eval.

    The train loss of a point is the mean over the steps since the previous point of each
    step's batch loss, taken before that step's update; the held-out loss is measured at the
    point's step, after its update. The first point, step 0, is the untrained model: its
    loss on the first batch and on the held-out windows (a resumed run has it from its start).
    """

    model: GPTModel
    curve: list[tuple[int, float, float]] = field(default_factory=list)
    seconds: float = 0.0


def tokenizer() -> CharTokenizer:
    """The character tokenizer of the shipped corpus (its stated character set)."""
    return CharTokenizer(load_corpus().charset)


@cache
def _token_data() -> tuple[torch.Tensor, torch.Tensor]:
    corpus, tok = load_corpus(), tokenizer()
    return tok.encode_tensor(corpus.train_text), tok.encode_tensor(corpus.held_out_text)


MIN_REPEAT = 8  # the shortest passage a repeat window shows twice


def window_starts(data_len: int, num: int, length: int, gen: torch.Generator) -> torch.Tensor:
    """Where ``_windows`` starts its ``num`` windows of ``length + 1`` tokens: (num,)."""
    return torch.randint(0, data_len - length - 1, (num,), generator=gen)


def _windows(
    data: torch.Tensor, num: int, length: int, gen: torch.Generator, repeat_share: float = 0.0
) -> torch.Tensor:
    """``num`` random windows of ``length + 1`` tokens: (num, length + 1).

    With ``repeat_share`` > 0, that share of the windows (on average) is instead a passage of
    ``MIN_REPEAT`` to ``length // 2`` characters repeated until the window is full, the way
    a refrain recurs: there, copying from the earlier occurrence predicts the next character.
    """
    starts = window_starts(len(data), num, length, gen)
    windows = torch.stack([data[s : s + length + 1] for s in starts.tolist()])
    if repeat_share > 0:
        repeat = torch.rand(num, generator=gen) < repeat_share
        periods = torch.randint(MIN_REPEAT, length // 2 + 1, (num,), generator=gen)
        for i in repeat.nonzero().flatten().tolist():
            s, p = int(starts[i]), int(periods[i])
            windows[i] = data[s : s + p].repeat(length // p + 2)[: length + 1]
    return windows


def _loss(model: GPTModel, windows: torch.Tensor) -> torch.Tensor:
    """Mean next-character cross-entropy (nats) over windows (b, num_tokens + 1)."""
    logits = model(windows[:, :-1])  # (b, num_tokens, vocab_size)
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())


def eval_windows(cfg: LMTrainConfig, split: str = "held_out") -> torch.Tensor:
    """The held-out windows ``train_lm`` scores: ``cfg.eval_windows`` windows of
    ``cfg.context_length`` predicted characters, one fixed draw (``EVAL_SEED``); with
    ``split="train"``, as many windows drawn the same way from the training text."""
    if split not in ("train", "held_out"):
        raise ValueError(f"split={split!r}: choose 'train' or 'held_out'.")
    data = _token_data()[0 if split == "train" else 1]
    gen = torch.Generator().manual_seed(EVAL_SEED)
    return _windows(data, cfg.eval_windows, cfg.context_length, gen)


@torch.no_grad()
def window_losses(
    model: GPTModel, windows: torch.Tensor, per_position: bool = False
) -> torch.Tensor:
    """Each window's mean next-character loss (nats), in eval mode: (num_windows,); with
    ``per_position``, the loss at each query position t (predicting character t + 1) instead:
    (num_windows, num_tokens - 1)."""
    was_training = model.training
    model.eval()
    logits = model(windows[:, :-1])
    losses = F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten(), reduction="none")
    model.train(was_training)
    losses = losses.view(len(windows), -1)
    return losses if per_position else losses.mean(1)


@torch.no_grad()
def _eval_loss(model: GPTModel, windows: torch.Tensor) -> float:
    was_training = model.training
    model.eval()
    loss = sum(_loss(model, w).item() for w in windows.split(16)) / len(windows.split(16))
    model.train(was_training)
    return loss


def _bar(
    stream: TextIO, step: int, steps: int, start: float, start_step: int, text: str, end="\n"
) -> None:
    """One progress line; ``end="\\r"`` redraws it in place (on a terminal, between evals)."""
    width = 24
    done = width * step // steps
    elapsed = time.perf_counter() - start
    eta = elapsed / max(1, step - start_step) * (steps - step)
    print(
        f"[{'#' * done}{'.' * (width - done)}] {step}/{steps} {text} "
        f"{elapsed:.0f}s elapsed, ETA {eta:.0f}s",
        end=end,
        file=stream,
        flush=True,
    )


def _checkpoint_state(model, optimizer, gen, cfg, step, curve) -> dict:
    return {
        "train_config": asdict(cfg),
        "model_config": model.cfg.to_dict(),
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "data_rng": gen.get_state(),
        "curve": [list(point) for point in curve],
    }


def train_lm(
    cfg: LMTrainConfig | str = "default",
    progress: TextIO | None = None,
    checkpoint: str | Path | None = None,
    resume: bool = False,
    device: str = "cpu",
    on_eval: Callable[[int, GPTModel], None] | None = None,
    init: GPTModel | None = None,
    stop: int | None = None,
) -> TrainResult:
    """Train a fresh ``GPTModel`` on the training plays (or continue from ``checkpoint``).

    Args:
        cfg: an ``LMTrainConfig`` or the name of one in ``LM_CONFIGS`` ("default", "small").
        progress: a stream for the progress lines (train and held-out loss, ETA), or None.
        checkpoint: a file written every ``eval_every`` steps and at the end.
        resume: continue from ``checkpoint`` (its settings win over ``cfg``).
        device: "cpu", "cuda" or "mps".
        on_eval: called as ``on_eval(step, model)`` after each evaluation (e.g. to sample).
        init: start from a copy of this model (its sizes win over ``cfg``'s), not a fresh one.
        stop: train only the first ``stop`` of the ``cfg.steps`` steps (None: all of them),
            with the learning-rate schedule of the whole run: the run's first ``stop`` steps
            exactly, so its curve is a prefix of the whole run's (evaluated at ``stop`` too).

    Returns:
        A ``TrainResult``: the model (eval mode, on the CPU), the curve, the seconds taken.
    """
    cfg = LM_CONFIGS[cfg] if isinstance(cfg, str) else cfg
    if stop is not None and not 1 <= stop <= cfg.steps:
        raise ValueError(f"stop={stop} must be between 1 and the run's {cfg.steps} steps.")
    dev = resolve_device(device)
    train_data, _ = _token_data()
    saved = None
    if resume:
        if checkpoint is None or not Path(checkpoint).exists():
            raise ValueError(f"--resume needs an existing checkpoint file, got {checkpoint}.")
        saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
        cfg = LMTrainConfig(**saved["train_config"])
    torch.manual_seed(cfg.seed)
    if saved is not None:
        model = GPTModel(GPTConfig(**saved["model_config"]))
    elif init is not None:
        model = copy.deepcopy(init)
    else:
        model = GPTModel(cfg.model_config(tokenizer().vocab_size))
    model = model.to(dev)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, betas=(0.9, 0.99), weight_decay=cfg.weight_decay
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    held_out_windows = eval_windows(cfg).to(dev)
    curve: list[tuple[int, float, float]] = []
    first = 0
    if saved is not None:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        gen.set_state(saved["data_rng"])
        curve = [(int(s), float(a), float(b)) for s, a, b in saved["curve"]]
        first = saved["step"]
        if progress is not None:
            print(f"resuming from {checkpoint} at step {first}/{cfg.steps}", file=progress)
    model.train()
    start, running = time.perf_counter(), []
    last = cfg.steps if stop is None else stop
    for step in range(first, last):
        for group in optimizer.param_groups:
            group["lr"] = cfg.learning_rate(step)
        windows = _windows(
            train_data, cfg.batch_size, cfg.context_length, gen, cfg.repeat_share
        ).to(dev)
        if step == 0:  # the untrained model: its loss on the first batch and held out
            point = (0, _eval_loss(model, windows), _eval_loss(model, held_out_windows))
            curve.append(point)
            if progress is not None:
                text = f"train {point[1]:.3f} held-out {point[2]:.3f} nats/char"
                _bar(progress, 0, last, start, first, text)
            if on_eval is not None:
                model.eval()
                on_eval(0, model)
                model.train()
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=cfg.autocast):
            loss = _loss(model, windows)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running.append(loss.item())
        done = step + 1
        if done % cfg.eval_every == 0 or done in (cfg.steps, last):
            point = (done, sum(running) / len(running), _eval_loss(model, held_out_windows))
            curve.append(point)
            running = []
            if checkpoint is not None:
                state = _checkpoint_state(model, optimizer, gen, cfg, done, curve)
                torch.save(state, checkpoint)
            if progress is not None:
                text = f"train {point[1]:.3f} held-out {point[2]:.3f} nats/char"
                _bar(progress, done, last, start, first, text)
            if on_eval is not None:
                model.eval()
                on_eval(done, model)
                model.train()
        elif progress is not None and progress.isatty() and done % 10 == 0:
            _bar(progress, done, last, start, first, f"train {loss.item():.3f}", "\r")
    model = model.cpu().eval()
    return TrainResult(model, curve, time.perf_counter() - start)


def resolve_device(device: str) -> torch.device:
    """``torch.device(device)``, or a ValueError saying the device is not present here."""
    if device == "cpu":
        return torch.device("cpu")
    if device == "cuda" and torch.cuda.is_available():
        return torch.device("cuda")
    if device == "mps" and torch.backends.mps.is_available():
        return torch.device("mps")
    if device not in ("cuda", "mps"):
        raise ValueError(f"device={device!r} must be 'cpu', 'cuda' or 'mps'.")
    raise ValueError(f"this machine has no {device} device that torch can use; use --device cpu.")


# ---- saving and loading -----------------------------------------------------------------------


def save_lm(model: GPTModel, path: str | Path, dtype: torch.dtype = torch.bfloat16) -> None:
    """Write the config and the weights in ``dtype`` (bfloat16 halves the file)."""
    state = {k: v.to(dtype) for k, v in model.state_dict().items() if not k.endswith(".mask")}
    torch.save({"config": model.cfg.to_dict(), "state_dict": state}, path)


def load_lm(path: str | Path) -> GPTModel:
    """A model saved by ``save_lm``, in float32; ``weights_only=True`` runs no pickled code."""
    saved = torch.load(path, map_location="cpu", weights_only=True)
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG where it was
        model = GPTModel(GPTConfig(**saved["config"]))
    state = {k: v.float() for k, v in saved["state_dict"].items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or any(not k.endswith(".mask") for k in missing):
        raise ValueError(f"{path}: weights do not fit the model ({missing=}, {unexpected=}).")
    return model.eval()


def pretrained_lm() -> GPTModel:
    """The course's shipped Shakespeare model (trained by ``train shakespeare``)."""
    return _shipped_lm("shakespeare.pt")


def plain_lm() -> GPTModel:
    """The shipped model trained on plain windows only (``--repeat-share 0``, otherwise as
    ``pretrained_lm``): lecture 11's control; ``plain_recording`` says how it was made."""
    return _shipped_lm(plain_recording()["weights"]["file"])


def _shipped_lm(name: str) -> GPTModel:
    with resources.as_file(resources.files("attn_course") / "weights" / name) as path:
        return load_lm(path)


# ---- measuring --------------------------------------------------------------------------------


@torch.no_grad()
def evaluate_text(model: GPTModel, text: str, batch_size: int = 64) -> float:
    """Mean loss in nats per character of ``text`` under ``model``.

    The text is cut into consecutive windows of ``context_length + 1`` characters that overlap
    by one; each character after the first is predicted from the characters before it in its
    window. The windows go through the model ``batch_size`` at a time (the last, shorter one
    alone). Characters outside the model's set raise the tokenizer's ValueError.
    """
    ids = tokenizer().encode_tensor(text)
    if len(ids) < 2:
        raise ValueError("the text needs at least 2 characters: one to read, one to predict.")
    n = model.cfg.context_length
    full = (len(ids) - 1) // n  # windows of n + 1 characters
    batches = [  # (<= batch_size, n + 1) each: views of ids, no copy
        ids[: full * n + 1].unfold(0, n + 1, n)[i : i + batch_size]
        for i in range(0, full, batch_size)
    ]
    if full * n < len(ids) - 1:
        batches.append(ids[full * n :][None])  # the last window, shorter
    total = 0.0
    for batch in batches:
        logits = model(batch[:, :-1])  # (windows, num_tokens, vocab_size)
        losses = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten(), reduction="sum")
        total += losses.item()
    return total / (len(ids) - 1)


def held_out_loss(model: GPTModel, num_chars: int | None = None) -> float:
    """``evaluate_text`` on the held-out plays (or their first ``num_chars`` characters)."""
    return evaluate_text(model, load_corpus().held_out_text[:num_chars])


def unigram_loss(text: str, reference: str) -> float:
    """Mean nats per character of ``text`` predicted without any context, each character by
    its frequency in ``reference`` (a character-unigram model): the baseline a model that
    reads its context has to beat. Scores ``text[1:]``, the characters ``evaluate_text``
    scores."""
    counts = Counter(reference)
    unseen = sorted(set(text[1:]) - counts.keys())
    if len(text) < 2 or unseen:
        raise ValueError(
            f"the text needs at least 2 characters, each of them (after the first) in the "
            f"reference; not in it: {unseen}."
        )
    total = len(reference)
    return -sum(math.log(counts[c] / total) for c in text[1:]) / (len(text) - 1)


@dataclass(frozen=True)
class RepeatTest:
    """A passage read twice in a row (Olsson et al.'s test of in-context learning).

    ``losses[t]`` is the loss of character t + 1 read after characters 0..t, so the first copy
    is ``losses[: period - 1]`` and the second copy, where copying could help, is
    ``losses[period:]``. ``induction`` is each head's mean weight on the character after the
    earlier occurrence (``text_heads.repeat_targets``): (num_layers, num_heads).
    """

    passage: str
    losses: torch.Tensor
    induction: torch.Tensor

    @property
    def first(self) -> float:
        return self.losses[: len(self.passage) - 1].mean().item()

    @property
    def second(self) -> float:
        return self.losses[len(self.passage) :].mean().item()


@torch.no_grad()
def repeat_test(model: GPTModel, passage: str) -> RepeatTest:
    """Run ``model`` on ``passage + passage`` and measure both copies and every head."""
    period = len(passage)
    if not 3 <= period <= model.cfg.context_length // 2:
        raise ValueError(
            f"the passage has {period} characters; twice it must fit the context of "
            f"{model.cfg.context_length}, and it needs at least 3."
        )
    ids = tokenizer().encode_tensor(passage + passage)[None]  # (1, 2 * period)
    losses = F.cross_entropy(model(ids)[0, :-1], ids[0, 1:], reduction="none")
    targets = repeat_targets(2 * period, period)
    induction = torch.stack([target_score(w, targets) for w in model.attention_weights()])
    return RepeatTest(passage, losses, induction)


def held_out_passages(num: int, length: int, seed: int = 0) -> list[str]:
    """``num`` passages of ``length`` characters from random places in the held-out plays."""
    text = load_corpus().held_out_text
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(text) - length, (num,), generator=gen).tolist()
    return [text[s : s + length] for s in starts]


@dataclass(frozen=True)
class RepeatSummary:
    """``repeat_test`` over several passages: the mean loss of each copy, how many passages
    cost less the second time, and each head's mean induction score (num_layers, num_heads)."""

    first: float
    second: float
    lower: int
    num: int
    length: int
    induction: torch.Tensor

    @property
    def best(self) -> tuple[int, int, float]:
        """(layer, head, score) of the head with the highest mean induction score."""
        layer, head = divmod(int(self.induction.argmax()), self.induction.shape[1])
        return layer, head, float(self.induction[layer, head])


def repeat_summary(model: GPTModel, num: int = 12, length: int = 64) -> RepeatSummary:
    """``repeat_test`` on ``held_out_passages(num, length)``, summarised (lecture 11, section
    5, and the recorded test of the model trained on plain windows, ``plain_recording``)."""
    tests = [repeat_test(model, passage) for passage in held_out_passages(num, length)]
    return RepeatSummary(
        first=sum(t.first for t in tests) / num,
        second=sum(t.second for t in tests) / num,
        lower=sum(t.second < t.first for t in tests),
        num=num,
        length=length,
        induction=torch.stack([t.induction for t in tests]).mean(dim=0),
    )


# The run that made the shipped weights: its command, machine, times, config, held-out curve
# and the weights' sha256 (benchmarks/bench_training.py prints it).
SHIPPED_RECORDING = "shakespeare_run.json"


def shipped_recording() -> dict:
    """The stored record ``recordings/shakespeare_run.json`` of the run that made the shipped
    weights (``pretrained_lm``): ``command``, ``machine``, ``wall_s``, ``cpu_s``, ``threads``,
    ``config``, ``curve`` (step, train loss, held-out loss) and ``weights`` with their sha256."""
    path = resources.files("attn_course") / "recordings" / SHIPPED_RECORDING
    return json.loads(path.read_text())


# How the model trained with ``--repeat-share 0`` (plain windows only) was made, with its
# repeat test as measured then; its weights ship (``plain_lm``), so that test can be re-run.
PLAIN_RECORDING = "shakespeare_plain.json"


def plain_recording() -> dict:
    """The stored record ``recordings/shakespeare_plain.json``: the training command, seed,
    torch version, date and time taken, and ``repeat_test`` with ``first``, ``second``,
    ``lower``, ``num``, ``best_head`` and ``best_induction``."""
    path = resources.files("attn_course") / "recordings" / PLAIN_RECORDING
    return json.loads(path.read_text())


def write_plain_recording(weights: str | Path, provenance: dict, path: Path | None = None) -> dict:
    """Measure ``repeat_summary`` of the model saved at ``weights`` and store it with
    ``provenance`` (the training command, seed, date, seconds taken) as ``PLAIN_RECORDING``."""
    summary = repeat_summary(load_lm(weights))
    layer, head, score = summary.best
    record = {
        **provenance,
        "torch": torch.__version__,
        "measured_by": "lm.repeat_summary(lm.load_lm(WEIGHTS)) (12 passages of 64 characters)",
        "repeat_test": {
            "num": summary.num,
            "length": summary.length,
            "first": round(summary.first, 4),
            "second": round(summary.second, 4),
            "lower": summary.lower,
            "best_head": [layer, head],
            "best_induction": round(score, 4),
            "induction": [[round(v, 4) for v in row] for row in summary.induction.tolist()],
        },
    }
    path = path or Path(__file__).parent / "recordings" / PLAIN_RECORDING
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def copy_counts(windows: Iterable[str], match: int) -> tuple[int, int, int]:
    """How often copying could help inside a window, and how often it would be right: counts.

    For each character t of each window (t >= ``match``, and t not the last), look for the
    ``match`` characters ending at t earlier in the window (the first occurrence that ends
    before t). Returns three counts: the characters with such an earlier occurrence
    (copyable), those whose NEXT character equals the character that FOLLOWED the earlier
    occurrence (where copying it, as an induction head does, is right), and all the
    characters looked at (t = ``match`` to len(window) - 2 of each window).
    """
    if match < 1:
        raise ValueError(f"match={match} must be at least 1 character.")
    copyable = right = total = 0
    for window in windows:
        for t in range(match, len(window) - 1):
            earlier = window.find(window[t - match + 1 : t + 1], 0, t)  # ends before t
            total += 1
            if earlier >= 0:
                copyable += 1
                right += window[earlier + match] == window[t + 1]
    return copyable, right, total


def copy_rate(windows: Iterable[str], match: int) -> tuple[float, float]:
    """``copy_counts``' copyable and right counts as shares of the characters looked at."""
    copyable, right, total = copy_counts(windows, match)
    if total == 0:
        raise ValueError(f"no window is longer than match + 1 = {match + 1} characters.")
    return copyable / total, right / total


@torch.no_grad()
def sample(
    model: GPTModel, prompt: str, num_chars: int, temperature: float = 0.8, seed: int = 0
) -> str:
    """``prompt`` and ``num_chars`` new characters drawn at ``temperature`` (``generate``
    with the KV cache and the sampling module's portable draws)."""
    tok = tokenizer()
    ids = torch.tensor([tok.encode(prompt)])
    generator = torch.Generator().manual_seed(seed)
    tokens, _ = generate(model, ids, num_chars, temperature=temperature, generator=generator)
    return tok.decode(tokens[0].tolist())


@cache
def training_words() -> frozenset[str]:
    """The words of the training plays (``generation_metrics.words``), for real-word counts."""
    return frozenset(words(load_corpus().train_text))


# ---- grouped-query attention by mean-pooling ----------------------------------------------


@torch.no_grad()
def pool_kv_heads(model: GPTModel, num_kv_groups: int) -> GPTModel:
    """A grouped-query copy of ``model``: each group's key and value heads averaged.

    Query heads ``g * group_size .. (g + 1) * group_size - 1`` share key/value head ``g``
    (as ``gqa.repeat_kv`` orders them), whose weights are the mean of those heads' weights
    (Ainslie et al. 2023 initialise GQA from a multi-head checkpoint this way).
    """
    cfg = model.cfg
    validate_kv_groups(cfg.num_heads, num_kv_groups)
    pooled = GPTModel(replace(cfg, num_kv_groups=num_kv_groups))
    head_dim, group_size = cfg.d_model // cfg.num_heads, cfg.num_heads // num_kv_groups
    state = {}
    for name, value in model.state_dict().items():
        if re.search(r"\.att\.W_(key|value)\.", name):
            # (num_heads * head_dim, ...) -> (num_kv_groups, group_size, head_dim, ...)
            heads = value.view(num_kv_groups, group_size, head_dim, *value.shape[1:])
            value = heads.mean(dim=1).flatten(0, 1)  # (num_kv_groups * head_dim, ...)
        state[name] = value
    pooled.load_state_dict(state)
    return pooled.eval()


def permute_heads(model: GPTModel, order: list[int]) -> GPTModel:
    """A copy of a multi-head ``model`` whose head ``i`` is ``model``'s head ``order[i]``.

    The query, key and value rows of each head and its columns of ``out_proj`` move together,
    so the copy computes the same function; ``pool_kv_heads`` of it then pools the heads
    ``order[g * group_size : (g + 1) * group_size]`` into key/value head ``g``.
    """
    cfg = model.cfg
    if cfg.num_kv_groups not in (None, cfg.num_heads):
        raise ValueError(
            "permute_heads takes a multi-head model, not a grouped one "
            f"(num_kv_groups={cfg.num_kv_groups})."
        )
    if sorted(order) != list(range(cfg.num_heads)):
        raise ValueError(f"order={order} is not a permutation of the {cfg.num_heads} heads.")
    head_dim = cfg.d_model // cfg.num_heads
    # the rows (of W_query, W_key, W_value) or columns (of out_proj) of head order[i], i = 0, 1, ...
    index = torch.cat([torch.arange(h * head_dim, (h + 1) * head_dim) for h in order])
    state = {}
    for name, value in model.state_dict().items():
        if re.search(r"\.att\.W_(query|key|value)\.", name):
            value = value[index]  # (num_heads * head_dim, ...): heads reordered
        elif re.search(r"\.att\.out_proj\.weight", name):
            value = value[:, index]  # (d_model, num_heads * head_dim): heads reordered
        state[name] = value
    permuted = GPTModel(cfg)
    permuted.load_state_dict(state)
    return permuted.eval()


# Ainslie et al. uptrain the pooled model for 5 % of the original steps; 130 = 5 % of 2,600.
UPTRAIN = LMTrainConfig(steps=130, lr=1e-3, min_lr=1e-4, warmup=10, eval_every=130)


def gqa_table(model: GPTModel, num_chars: int = 100_000, uptrain: bool = True) -> list[dict]:
    """For every valid number of key/value groups: the held-out loss (on the first
    ``num_chars`` held-out characters) right after pooling and, with ``uptrain``, after
    ``UPTRAIN.steps`` more training steps; and the KV-cache bytes per token (bfloat16)."""
    cfg = model.cfg
    head_dim = cfg.d_model // cfg.num_heads
    rows = []
    for groups in [g for g in range(cfg.num_heads, 0, -1) if cfg.num_heads % g == 0]:
        pooled = model if groups == cfg.num_heads else pool_kv_heads(model, groups)
        row = {
            "num_kv_groups": groups,
            "held_out_loss": held_out_loss(pooled, num_chars),
            "cache_bytes_per_token": kv_cache_bytes(cfg.num_layers, groups, head_dim),
        }
        if uptrain and groups != cfg.num_heads:
            uptrained = train_lm(UPTRAIN, init=pooled).model
            row["uptrained_loss"] = held_out_loss(uptrained, num_chars)
        rows.append(row)
    return rows


def print_gqa_table(rows: list[dict], stream: TextIO = sys.stdout) -> None:
    """The table of ``gqa_table``: loss against key/value groups, and the cache they need."""
    full = rows[0]["cache_bytes_per_token"]
    after = f"after {UPTRAIN.steps} steps"
    print(
        f"{'kv groups':>9} {'held-out loss':>14} {after:>16} {'cache B/token':>14} {'saved':>6}",
        file=stream,
    )
    for r in rows:
        saved = 1 - r["cache_bytes_per_token"] / full
        uptrained = f"{r['uptrained_loss']:.3f}" if "uptrained_loss" in r else "-"
        print(
            f"{r['num_kv_groups']:>9} {r['held_out_loss']:>14.3f} {uptrained:>16} "
            f"{r['cache_bytes_per_token']:>14} {saved:>6.0%}",
            file=stream,
        )


# ---- commands ---------------------------------------------------------------------------------


def train_main(argv: list[str]) -> int:
    """``python -m attn_course train shakespeare [--config NAME] ...``"""
    parser = argparse.ArgumentParser(
        prog="python -m attn_course train shakespeare",
        description="Train the course's GPTModel on Shakespeare's plays (character tokens) and "
        "report its held-out loss in nats per character.",
    )
    parser.add_argument("task", choices=["shakespeare"])
    parser.add_argument("--config", choices=sorted(LM_CONFIGS), default="default")
    parser.add_argument("--steps", type=int, help="training steps (default: the config's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeat-share",
        type=float,
        help="share of training windows that repeat a passage, 0 to 1 (default: the config's; "
        "0 trains on plain text only, and the model grows no induction heads)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--device", choices=["cpu", "cuda", "mps"], default="cpu")
    parser.add_argument("--checkpoint", type=Path, help="save progress here every eval")
    parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    parser.add_argument("--save", type=Path, help="write the trained weights to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = LM_CONFIGS[args.config]
    cfg = replace(cfg, steps=args.steps or cfg.steps, seed=args.seed)
    if args.repeat_share is not None:
        if not 0 <= args.repeat_share <= 1:
            parser.error(f"--repeat-share is a share from 0 to 1, got {args.repeat_share}.")
        cfg = replace(cfg, repeat_share=args.repeat_share)
    if args.resume and (args.checkpoint is None or not args.checkpoint.exists()):
        parser.error("--resume continues from --checkpoint FILE, an existing checkpoint file.")
    try:
        resolve_device(args.device)
    except ValueError as err:
        parser.error(str(err))
    print(f"training shakespeare ({args.config}): {cfg}")
    result = train_lm(cfg, sys.stdout, args.checkpoint, args.resume, args.device)
    print(
        f"trained in {result.seconds:.0f} s; held-out loss {result.curve[-1][2]:.3f} nats/char "
        f"({cfg.eval_windows} windows)"
    )
    if args.save:
        save_lm(result.model, args.save)
        print(f"saved {args.save}")
    return 0


def evaluate_main(argv: list[str]) -> int:
    """``python -m attn_course evaluate FILE``"""
    parser = argparse.ArgumentParser(
        prog="python -m attn_course evaluate",
        description="Print the shipped Shakespeare model's mean loss on a text file, in nats "
        "per character. Characters outside the model's set are an error (they are listed).",
    )
    parser.add_argument("file", type=Path)
    parser.add_argument("--weights", type=Path, help="a model saved by train --save")
    args = parser.parse_args(argv)
    model = load_lm(args.weights) if args.weights else pretrained_lm()
    try:
        loss = evaluate_text(model, args.file.read_text(encoding="utf-8"))
    except ValueError as err:
        print(f"{args.file}: {err}", file=sys.stderr)
        return 1
    print(f"{args.file}: {loss:.3f} nats per character ({loss / math.log(2):.3f} bits)")
    return 0


main = evaluate_main

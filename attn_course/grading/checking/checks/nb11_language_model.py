"""Checks of 11_language_model: sampling from logits, a BPE merge step, loss and perplexity,
finding the previous-character head of the trained model."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable
from functools import cache
from typing import cast

import torch

from ....blocks import TransformerBlock
from ....bpe import merge_step
from ....corpus import load_corpus
from ....generation import GPTModel
from ....head_scores import diagonal_score, first_token_score, previous_token_score
from ....lm import pretrained_lm, tokenizer
from ....sampling import sampling_probabilities, top_k_filter, top_p_filter
from ..expect import call_pure, expect_close, randn, rng, salted, seeded, shown
from ..hints import HINTS
from ..registry import CheckFailed, register

NOTEBOOK = "11_language_model"


def _kept_by_rank(logits: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """The logits with only the ``counts[row]`` largest of each row kept (others -inf)."""
    ranks = logits.argsort(dim=-1, descending=True).argsort(dim=-1)  # 0 = the largest
    return logits.masked_fill(ranks >= counts[..., None], -torch.inf)


def _sampling_with(
    mistake: str, logits: torch.Tensor, temperature: float, top_k: int | None, top_p: float | None
) -> torch.Tensor:
    """``sampling_probabilities`` (temperature > 0) with ``mistake`` built in."""
    late = mistake in ("sampling_temperature_after", "sampling_no_temperature")
    scaled = logits if late else logits / temperature
    if mistake == "top_p_before_top_k" and top_p is not None:
        scaled = top_p_filter(scaled, top_p)  # on the whole distribution, then top-k
        top_p = None
    if top_k is not None:
        kth = scaled.topk(top_k, dim=-1).values[..., -1:]
        if mistake == "top_k_ties_by_position":  # exactly k, ties broken by position
            keep = torch.zeros_like(scaled, dtype=torch.bool)
            keep.scatter_(-1, scaled.topk(top_k, dim=-1).indices, True)
        else:
            keep = scaled > kth if mistake == "top_k_ties_dropped" else scaled >= kth
        scaled = scaled.masked_fill(~keep, -torch.inf)
    if top_p is not None:
        kept = torch.isfinite(top_p_filter(scaled, top_p)).sum(dim=-1)  # (b,): tokens kept
        shift = {"top_p_one_too_few": -1, "top_p_one_too_many": 1}.get(mistake, 0)
        scaled = _kept_by_rank(scaled, kept + shift)
    probs = torch.softmax(scaled, dim=0 if mistake == "sampling_softmax_axis" else -1)
    return probs / temperature if mistake == "sampling_temperature_after" else probs


SAMPLING_MISTAKES = (
    "sampling_softmax_axis",
    "sampling_temperature_after",
    "sampling_no_temperature",
    "top_k_ties_by_position",
    "top_k_ties_dropped",
    "top_p_one_too_few",
    "top_p_one_too_many",
    "top_p_before_top_k",
)


def _nucleus_case(seed: int, p: float) -> torch.Tensor:
    """(3, 12) logits on which every row keeps at least 2 tokens under top-p ``p`` and no
    row's probability sums lie within 1e-3 of ``p`` (sums in another order stay on one side)."""
    for attempt in range(100):
        logits = 2 * randn(3, 12, seed=seed + attempt)
        probs = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True).values
        sums = probs.cumsum(dim=-1)
        kept = torch.isfinite(top_p_filter(logits, p)).sum(dim=-1)
        if (kept >= 2).all() and (kept <= 10).all() and ((sums - p).abs() > 1e-3).all():
            return logits
    raise RuntimeError("no logits found for the top-p case")  # never: seeds are fixed


def _top_k_then_p_case(seed: int, k: int, p: float, temperature: float) -> torch.Tensor:
    """(3, 12) salted logits on which, in EVERY row, top-p of the renormalised top-k
    distribution keeps at least two tokens fewer than top-p of the whole distribution cut to
    k: an answer that applies top-p before top-k fails whatever the secret, with its own hint
    (one token fewer would read as "one too many")."""
    rows = []
    for row in range(3):
        for attempt in range(1000):
            logits = 2 * randn(1, 12, seed=seed + 1000 * row + attempt)
            want = sampling_probabilities(logits, temperature, k, p)
            before = _sampling_with("top_p_before_top_k", logits, temperature, k, p)
            kept, kept_before = (int(torch.count_nonzero(x)) for x in (want, before))
            scaled = logits / temperature
            near = [
                bool(((probs.sort(dim=-1, descending=True).values.cumsum(-1) - p).abs() <= 1e-3)
                     .any())
                for probs in (torch.softmax(scaled, -1), torch.softmax(top_k_filter(scaled, k), -1))
            ]  # fmt: skip
            if kept + 2 <= kept_before and not any(near):
                rows.append(logits)
                break
        else:
            raise RuntimeError("no logits found for the top-k-then-top-p case")  # never
    return torch.cat(rows)


def _tied(seed: int, rows: int, vocab_size: int, rank: int) -> torch.Tensor:
    """Salted logits whose ``rank``-th largest (1 = the largest) ties in every row with a
    token at another place (further right, for rank 1: argmax must pick the first)."""
    logits = 2 * randn(rows, vocab_size, seed=seed)
    order = logits.argsort(dim=-1, descending=True)
    generator = torch.Generator().manual_seed(salted(seed))
    for row in range(rows):
        tie = order[row, rank - 1]  # the rank-th largest
        others = order[row, rank:] if rank > 1 else order[row][order[row] > tie]
        if others.numel() == 0:  # the largest is the last token: move it to the front
            logits[row] = logits[row].roll(-int(tie), dims=0)
            tie = torch.tensor(0)
            others = torch.arange(1, vocab_size)
        twin = others[torch.randint(others.numel(), (1,), generator=generator)]
        logits[row, twin] = logits[row, tie].item()
    return logits


def _greedy_split(logits: torch.Tensor) -> torch.Tensor:
    """Greedy as the limit of a tiny temperature: tied maxima share the probability."""
    top = logits == logits.amax(dim=-1, keepdim=True)
    return top.float() / top.sum(dim=-1, keepdim=True)


@register("sampling_probabilities", NOTEBOOK, time_limit=10.0)
def check_sampling_probabilities(func: Callable[..., object]) -> str:
    """``func(logits, temperature, top_k, top_p)`` -> the (b, vocab_size) distribution."""
    cases = [  # (logits, temperature, top_k, top_p): each case tests one property
        (3 * randn(4, 10, seed=1100), 0.7, None, None),
        (3 * randn(2, 9, seed=1101), 2.5, None, None),
        (_tied(1102, 2, 7, rank=3), 1.0, 3, None),  # the 3rd largest ties: both stay
        (_tied(1103, 2, 7, rank=2), 0.5, 2, None),
        (_nucleus_case(1110, 0.8), 1.0, None, 0.8),
        (_nucleus_case(1120, 0.5), 1.3, None, 0.5),
        (_top_k_then_p_case(1130, 6, 0.9, 0.8), 0.8, 6, 0.9),  # top-p of the top-k renormalised
        (3 * randn(3, 8, seed=1140), 0.0, None, None),  # greedy
        (_tied(1141, 3, 8, rank=1), 0.0, None, None),  # greedy: the first of tied maxima
    ]
    for logits, temperature, top_k, top_p in cases:
        want = sampling_probabilities(logits, temperature, top_k, top_p)
        mistakes = {"sampling_greedy_split": _greedy_split(logits)}
        if temperature > 0:
            mistakes = {m: _sampling_with(m, logits, temperature, top_k, top_p)
                        for m in SAMPLING_MISTAKES}  # fmt: skip
        what = (
            f"sampling_probabilities(logits of shape {tuple(logits.shape)}, "
            f"temperature={temperature}, top_k={top_k}, top_p={top_p})"
        )
        expect_close(
            call_pure(func, logits, temperature, top_k, top_p),
            want,
            what,
            mistakes,
            hints={"nan": HINTS["sampling_greedy"]} if temperature == 0 else None,
        )
    return "temperature, top-k (ties kept together), top-p and greedy match the package."


def _bpe_step(tokens: list[str], mistake: str = "") -> tuple[tuple[str, str], list[str]]:
    """The reference merge step, or one with ``mistake`` built in."""
    if mistake == "bpe_count_non_overlapping":  # "a a a" counts (a, a) once
        pairs = set(zip(tokens, tokens[1:], strict=False))
        counts = Counter({pair: len(tokens) - len(merge_step(tokens, pair)) for pair in pairs})
    else:
        counts = Counter(zip(tokens, tokens[1:], strict=False))
    if mistake == "bpe_least_frequent":
        pair = min(counts, key=lambda pair: (counts[pair], pair))
    elif mistake == "bpe_tie_last":
        pair = max(counts, key=lambda pair: (counts[pair], pair))
    else:
        pair = min(counts, key=lambda pair: (-counts[pair], pair))
    if mistake == "bpe_right_to_left":
        merged: list[str] = []
        i = len(tokens) - 1
        while i >= 0:
            if i > 0 and (tokens[i - 1], tokens[i]) == pair:
                merged, i = [tokens[i - 1] + tokens[i], *merged], i - 2
            else:
                merged, i = [tokens[i], *merged], i - 1
        return pair, merged
    if mistake == "bpe_overlapping_merge":  # after a merge, the scan goes on at i + 1
        merged, i = [], 0
        while i < len(tokens):
            if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == pair:
                merged.append(tokens[i] + tokens[i + 1])
            else:
                merged.append(tokens[i])
            i += 1
        return pair, merged
    if mistake == "bpe_first_only":
        i = next(i for i in range(len(tokens) - 1) if (tokens[i], tokens[i + 1]) == pair)
        return pair, tokens[:i] + [pair[0] + pair[1]] + tokens[i + 2 :]
    return pair, merge_step(tokens, pair)


BPE_MISTAKES = (
    "bpe_least_frequent",
    "bpe_tie_last",
    "bpe_right_to_left",
    "bpe_first_only",
    "bpe_overlapping_merge",
    "bpe_count_non_overlapping",
)

# Each text tests a property whatever the letters are: "aaab aaab" merges (a, a) left to
# right, "the cat and the hat" and "xyzzy zz y" tie, "aaaaa bc bc bc" counts (a, a) 4 times
# overlapping (2 without), more than (b, c)'s 3.
BPE_TEXTS = ("aaab aaab", "the cat and the hat", "abab bab", "xyzzy zz y", "aaaaa bc bc bc")


def _relabelled(text: str, seed: int) -> str:
    """``text`` with its letters renamed by a salted permutation of a..z (counts, ties and
    overlaps stay; which pair sorts first changes with the secret)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    order = rng(seed).permutation(len(letters))
    return text.translate(str.maketrans(letters, "".join(letters[i] for i in order)))


@register("bpe_merge_step", NOTEBOOK, time_limit=5.0)
def check_bpe_merge_step(func: Callable[..., object]) -> str:
    """``func(tokens)`` -> (the most frequent neighbouring pair, the tokens with it merged)."""
    texts = [_relabelled(text, seed=1150 + i) for i, text in enumerate(BPE_TEXTS)]
    generator = torch.Generator().manual_seed(salted(1150))
    alphabet = _relabelled("ab ", seed=1149)
    texts += ["".join(alphabet[i] for i in torch.randint(3, (30,), generator=generator))]
    for text in texts:
        tokens = list(text)
        if text == texts[-1]:  # a second step, on tokens that are already merged
            tokens = _bpe_step(tokens)[1]
        want = _bpe_step(tokens)
        got = call_pure(func, tokens)
        if not (isinstance(got, tuple | list) and len(got) == 2):
            raise CheckFailed(f"return a tuple (pair, new_tokens), got {type(got).__name__}.")
        got = (tuple(got[0]), list(got[1]))
        if got == want:
            continue
        what = f"one merge step on {tokens}: you returned {shown(got)}"
        for mistake in BPE_MISTAKES:
            if got == _bpe_step(tokens, mistake) != want:
                raise CheckFailed(f"{what}. {HINTS[mistake]}")
        raise CheckFailed(
            f"{what}, not the most frequent pair merged left to right. Count every pair of "
            "neighbouring tokens, take the most frequent (ties: the one that sorts first) and "
            "merge each of its occurrences, scanning left to right."
        )
    return "the most frequent pair (ties: the first in sorted order), merged left to right."


@register("per_token_loss", NOTEBOOK, time_limit=5.0)
def check_per_token_loss(func: Callable[..., object]) -> str:
    """``func(logits, targets)``: (num_tokens, vocab_size), (num_tokens,) -> (num_tokens,)."""
    for i, (num_tokens, vocab_size) in enumerate(((7, 5), (12, 65), (1, 3), (30, 9))):
        logits = 4 * randn(num_tokens, vocab_size, seed=1160 + i)
        targets = torch.randint(vocab_size, (num_tokens,),
                                generator=torch.Generator().manual_seed(1170 + i))  # fmt: skip
        rows = torch.arange(num_tokens)
        want = -torch.log_softmax(logits, dim=-1)[rows, targets]
        expect_close(
            call_pure(func, logits, targets),
            want,
            f"the loss of {num_tokens} tokens over a vocabulary of {vocab_size}",
            mistakes={
                "loss_no_log": -torch.softmax(logits, dim=-1)[rows, targets],
                "loss_bits": want / torch.log(torch.tensor(2.0)),
                "loss_softmax_axis": -torch.log_softmax(logits, dim=0)[rows, targets],
                "loss_sign": -want,
            },
        )
    return "each token's loss is -log(its probability) in nats."


@register("perplexity", NOTEBOOK, time_limit=5.0)
def check_perplexity(func: Callable[..., object]) -> str:
    """``func(losses)``: (num_tokens,) per-token losses in nats -> the perplexity, a number."""
    for i, num_tokens in enumerate((6, 40, 1)):
        losses = randn(num_tokens, seed=1180 + i).abs() * 2
        got = call_pure(func, losses)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if not isinstance(got, float | int):
            raise CheckFailed(f"return one number (a float), got {type(got).__name__}.")
        expect_close(
            torch.tensor(float(got)),
            losses.mean().exp(),
            f"the perplexity of {num_tokens} losses",
            mistakes={
                "perplexity_mean_of_exp": losses.exp().mean(),
                "perplexity_exp_sum": losses.sum().exp(),
                "perplexity_base_2": 2 ** losses.mean(),
                "perplexity_no_exp": losses.mean(),
            },
        )
    return "perplexity = exp(mean loss): the number of equally likely choices it is worth."


@cache
def _shipped() -> GPTModel:
    with seeded(1190):  # loading forks the global RNG: only under the lock (grading threads)
        return pretrained_lm()


def _renumbered(model: GPTModel, seed: int) -> GPTModel:
    """A copy of ``model`` computing the same function with its heads renumbered in every
    layer (a head's query/key/value rows and out_proj columns move together)."""
    model = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for block in model.trf_blocks:
            att = cast(TransformerBlock, block).att
            order = torch.randperm(att.num_heads, generator=generator)
            rows = (order[:, None] * att.head_dim + torch.arange(att.head_dim)).flatten()
            for linear in (att.W_query, att.W_key, att.W_value):
                linear.weight.copy_(linear.weight[rows])
                if linear.bias is not None:
                    linear.bias.copy_(linear.bias[rows])
            att.out_proj.weight.copy_(att.out_proj.weight[:, rows])
    return model


def _best(scores: torch.Tensor, lowest: bool = False) -> tuple[int, int]:
    flat = int(scores.argmin() if lowest else scores.argmax())
    return divmod(flat, scores.shape[1])


@register("find_previous_char_head", NOTEBOOK, time_limit=15.0)
def check_find_previous_char_head(func: Callable[..., object]) -> str:
    """``func(model, ids)`` -> (layer, head) of the highest previous-character score on ids.

    Three salted passages of the held-out text, each with the heads renumbered by a salted
    permutation, chosen so that the right answer and every classic mistake's answer differ.
    The model comes with the attention weights of its run on ``ids`` moved one head along,
    so an answer that does not run the model on ``ids`` reads a wrong head.
    """
    text = load_corpus().held_out_text
    length = _shipped().cfg.context_length
    for i in range(3):
        start = int(rng(1190 + i).integers(0, len(text) - length))
        passage = text[start : start + length]
        ids = torch.tensor([tokenizer().encode(passage)])  # (1, num_tokens)
        for attempt in range(100):
            model = _renumbered(_shipped(), seed=salted(1191 + 10 * i + attempt))
            with torch.no_grad():
                model(ids)
            weights = model.attention_weights()  # (num_layers, 1, num_heads, n, n)
            scores = {
                "previous": torch.stack([previous_token_score(w) for w in weights]),
                "diagonal": torch.stack([diagonal_score(w) for w in weights]),
                "first": torch.stack([first_token_score(w) for w in weights]),
            }
            want = _best(scores["previous"])
            mistakes = {
                "prev_char_stale": (want[0], (want[1] + 1) % weights.shape[2]),
                "prev_char_reversed": (want[1], want[0]),
                "prev_char_one_based": (want[0] + 1, want[1] + 1),
                "prev_char_diagonal": _best(scores["diagonal"]),
                "prev_char_lowest": _best(scores["previous"], lowest=True),
                "prev_char_first_token": _best(scores["first"]),
            }
            if len({want, *mistakes.values()}) == len(mistakes) + 1:
                break
        for block, w in zip(model.trf_blocks, weights, strict=True):
            cast(TransformerBlock, block).att.attn_weights = w.roll(1, dims=1)  # stale
        got = call_pure(func, model, ids)
        if not (isinstance(got, tuple | list) and len(got) == 2):
            raise CheckFailed(f"return a tuple (layer, head), got {shown(got)}.")
        got = (int(got[0]), int(got[1]))
        if got == want:
            continue
        what = (
            f"on the held-out passage {passage[:30]!r}... your {got} is not the head with the "
            "highest previous-character score"
        )
        for name, wrong in mistakes.items():
            if got == wrong:
                raise CheckFailed(f"{what}: {HINTS[name]}")
        raise CheckFailed(
            f"{what}. Run model(ids), stack every block's att.attn_weights, score each head by "
            "its mean weight on key t - 1 and return the (layer, head) of the highest score."
        )
    return "you find the previous-character head by its score, wherever it is numbered."

"""Checks of 08_trained_attention: a head score, sinusoidal positions, RoPE, finding and ablating
heads, the next-token loss and one training step."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import cast

import torch
import torch.nn.functional as F

from ....attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from ....head_scores import diagonal_score, head_scores, previous_token_score
from ....model import ModelConfig, TinyTransformer, ablated
from ....positions import apply_rope, rope_angles, rope_attention, sinusoidal_positions
from ....tasks import TASKS
from ....training import model_config, next_token_loss, pretrained, train_step
from ..expect import (
    call_explained,
    call_pure,
    close,
    expect_close,
    expect_function_gradients,
    invoke_many,
    randn,
    rng,
    salted,
    seeded,
    shown,
)
from ..hints import HINTS
from ..registry import CheckFailed, register

NOTEBOOK = "08_trained_attention"


def causal_weights(b: int, num_heads: int, num_tokens: int, seed: int) -> torch.Tensor:
    """Random causal attention weights: (b, num_heads, num_tokens, num_tokens), rows sum to 1."""
    scores = 2 * randn(b, num_heads, num_tokens, num_tokens, seed=seed)
    return torch.softmax(scores.masked_fill(causal_mask(num_tokens), -torch.inf), dim=-1)


@register("previous_token_score", NOTEBOOK, time_limit=5.0)
def check_previous_token_score(func: Callable[..., object]) -> str:
    """``func(attn_weights)`` -> (num_heads,): mean weight from query t to key t - 1."""
    for i, (b, num_heads, num_tokens) in enumerate([(3, 4, 8), (1, 2, 2), (5, 3, 17)]):
        w = causal_weights(b, num_heads, num_tokens, seed=800 + i)
        want = previous_token_score(w)
        all_rows = w.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0) / num_tokens
        expect_close(
            call_pure(func, w),
            want,
            f"the score of weights {tuple(w.shape)}",
            mistakes={
                "previous_diagonal": diagonal_score(w),
                "previous_diagonal_all_rows": w.diagonal(dim1=-2, dim2=-1).mean(dim=(0, 2)),
                "previous_next": torch.zeros_like(want),
                "previous_all_rows": all_rows,
            },  # fmt: skip
        )
        expect_function_gradients(
            func, (w,), previous_token_score, f"the score of weights {tuple(w.shape)}", seed=800 + i
        )
    return "your score matches head_scores.previous_token_score."


@register("sinusoidal_positions", NOTEBOOK, time_limit=5.0)
def check_sinusoidal_positions(func: Callable[..., object]) -> str:
    """``func(num_tokens, d_model)`` -> the (num_tokens, d_model) sin/cos table."""
    salted_size = (int(rng(820).integers(2, 80)), 2 * int(rng(821).integers(1, 40)))
    for num_tokens, d_model in ((6, 4), (50, 16), (1, 2), (33, 64), salted_size):
        want = sinusoidal_positions(num_tokens, d_model)
        positions = torch.arange(num_tokens, dtype=torch.float32)[:, None]
        i = torch.arange(d_model // 2, dtype=torch.float32)
        swapped = torch.empty_like(want)
        swapped[:, 0::2], swapped[:, 1::2] = want[:, 1::2], want[:, 0::2]
        slow = positions / 10000.0 ** (i / d_model)  # exponent i/d instead of 2i/d
        no_two = torch.stack([torch.sin(slow), torch.cos(slow)], dim=-1).view(num_tokens, -1)
        expect_close(
            call_pure(func, num_tokens, d_model),
            want,
            f"sinusoidal_positions({num_tokens}, {d_model})",
            mistakes={
                "sinusoid_swapped": swapped,
                "sinusoid_blocks": torch.cat([want[:, 0::2], want[:, 1::2]], dim=1),
                "sinusoid_no_two": no_two,
            },
        )
    return "your table matches the formula for every size."


def _rotate(x: torch.Tensor, angles: torch.Tensor, halves: bool = False) -> torch.Tensor:
    """x (..., num_tokens, head_dim) turned by ``angles`` (num_tokens, head_dim/2); ``halves``
    pairs dimension i with i + head_dim/2 (the other convention) instead of 2i with 2i + 1."""
    cos, sin = angles.cos(), angles.sin()
    if halves:
        x0, x1 = x.chunk(2, dim=-1)
        return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1).flatten(-2)


def _rope_mistakes(x: torch.Tensor, start: int, base: float) -> dict[str, torch.Tensor]:
    """apply_rope(x, start, base) with each classic mistake built in."""
    num_tokens, head_dim = x.shape[-2:]
    angles = rope_angles(num_tokens, head_dim, start, base)
    i = torch.arange(head_dim // 2, dtype=torch.float32)
    positions = torch.arange(start, start + num_tokens, dtype=torch.float32)[:, None]
    return {
        "rope_halves": _rotate(x, angles, halves=True),
        "rope_no_two": _rotate(x, positions / base ** (i / head_dim)),
        "rope_base_ignored": apply_rope(x, start),
        "rope_start_ignored": apply_rope(x, 0, base),
        "rope_off_by_one": apply_rope(x, start + 1, base),
        "rope_backwards": _rotate(x, -angles),
    }


@register("apply_rope", NOTEBOOK, time_limit=5.0)
def check_apply_rope(func: Callable[..., object]) -> str:
    """``func(x, start, base)`` rotates the interleaved pairs of x (..., num_tokens, head_dim)."""
    cases = [((2, 3, 6, 8), 0, 10000.0), ((1, 2, 5, 16), 7, 10000.0), ((4, 12), 3, 500.0),
             ((2, 1, 9, 64), 20, 10000.0)]  # fmt: skip
    for i, (shape, start, base) in enumerate(cases):
        x = randn(*shape, seed=830 + i)
        expect_close(
            call_pure(func, x, start, base),
            apply_rope(x, start, base),
            f"apply_rope(x of shape {shape}, start={start}, base={base:g})",
            mistakes=_rope_mistakes(x, start, base),
        )
    return "your rotation matches apply_rope for every shape, start and base."


def _causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    return scaled_dot_product_attention(q, k, v, mask)[0]


@register("rope_attention", NOTEBOOK, time_limit=5.0)
def check_rope_attention(func: Callable[..., object]) -> str:
    """``func(queries, keys, values)``: causal attention with RoPE on queries and keys only."""
    for i, shape in enumerate([(2, 3, 7, 8), (1, 1, 12, 16), (3, 2, 1, 4)]):
        q, k, v = (randn(*shape, seed=840 + 3 * i + j) for j in range(3))
        mask = causal_mask(shape[-2])
        plain = (apply_rope(q), apply_rope(k), v)
        expect_close(
            call_pure(func, q, k, v),
            rope_attention(q, k, v),
            f"the context vectors for queries, keys and values of shape {shape}",
            mistakes={
                "rope_values": rope_attention(q, k, apply_rope(v)),
                "rope_queries_only": _causal(apply_rope(q), k, v, mask),
                "rope_keys_only": _causal(q, apply_rope(k), v, mask),
                "rope_not_causal": _causal(*plain, None),
            },
        )
    return "RoPE turns the queries and keys, the values stay as they are."


def _induction_model(keep: tuple[int, ...], fresh_layer_0: bool = False) -> TinyTransformer:
    """The shipped induction model whose layer-1 heads outside ``keep`` get untrained query
    and key weights (with ``fresh_layer_0``, layer 0's heads too: no previous-token head)."""
    with seeded(808):  # loading forks the global RNG: only under the lock (grading threads)
        model = pretrained("induction")
        fresh = TinyTransformer(model_config(TASKS["induction"]))
    changed = {1: set(range(model.cfg.num_heads)) - set(keep)}
    if fresh_layer_0:
        changed[0] = set(range(model.cfg.num_heads))
    with torch.no_grad():
        for layer, heads in changed.items():
            att, new = (cast(MultiHeadAttention, m.layers[layer]) for m in (model, fresh))
            for head in heads:
                rows = slice(head * att.head_dim, (head + 1) * att.head_dim)
                for name in ("W_query", "W_key"):
                    getattr(att, name).weight[rows] = getattr(new, name).weight[rows]
    return model


def _heads_above(scores: torch.Tensor, threshold: float = 0.5) -> list[tuple[int, int]]:
    return [tuple(lh) for lh in (scores > threshold).nonzero().tolist()]


def _scores(model: TinyTransformer, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        model(tokens)
        return head_scores(model.attention_weights(), tokens)


@register("find_induction_heads", NOTEBOOK, time_limit=15.0)
def check_find_induction_heads(func: Callable[..., object]) -> str:
    """``func(model, tokens)`` -> sorted list of (layer, head) with induction score > 0.5.

    The model comes with the attention weights of an earlier run on OTHER tokens, so an
    answer that does not run the model on ``tokens`` reads stale weights. Some batches hold
    one sequence unlike the others (one token repeated), where the first sequence alone
    gives another answer than the batch, or where layer 0's heads score above 0.5 too; some
    models have no induction head at all.
    """
    tokens = TASKS["induction"].batch(64, seed=salted(808)).tokens
    odd = tokens.clone()
    odd[0] = 5  # one sequence of a single repeated token: every head "finds" its copies
    many = tokens.clone()
    many[:32] = torch.arange(32)[:, None]  # half the batch one token each: layer 0 scores high
    earlier = TASKS["induction"].batch(64, seed=salted(809)).tokens.flip(-1)
    cases = [((0, 1, 2, 3), False, tokens), ((2,), False, odd), ((1, 3), False, tokens)]
    cases += [((), False, odd), ((0, 1, 2, 3), True, tokens), ((1,), False, many)]
    for keep, fresh_layer_0, batch in cases:
        model = _induction_model(keep, fresh_layer_0)
        scores = _scores(copy.deepcopy(model), batch)
        stale = _heads_above(
            head_scores(_scores_weights(model, earlier), batch)["induction"]
        )  # what the weights of the earlier run give
        got = call_pure(func, model, batch)
        want = _heads_above(scores["induction"])
        if not isinstance(got, list | tuple):
            raise CheckFailed(f"expected a list of (layer, head) pairs, got {type(got).__name__}.")
        got = sorted(tuple(int(v) for v in pair) for pair in got)
        if got == want:
            continue
        changed = "layers 0 and 1" if fresh_layer_0 else "layer 1"
        what = (
            f"a model whose {changed} heads were partly retrained away"
            + (", tokens with one sequence unlike the others" if batch is odd else "")
            + (", tokens with half the sequences one repeated token" if batch is many else "")
            + f": you found {shown(got)}"
        )
        if got == stale and stale != want:
            raise CheckFailed(
                f"{what}, the heads of the model's EARLIER run. Run the model on the tokens "
                "first (model(tokens)): model.attention_weights() holds the weights of the "
                "last forward pass."
            )
        if got == _heads_above(scores["previous-token"]):
            raise CheckFailed(f"{what}, the heads with a high PREVIOUS-TOKEN score.")
        if got == [(layer + 1, head + 1) for layer, head in want]:
            raise CheckFailed(f"{what}: layers and heads are numbered from 0.")
        if got == sorted((head, layer) for layer, head in want):
            raise CheckFailed(f"{what}: return (layer, head) pairs, the layer first.")
        if got == _heads_above(_scores(copy.deepcopy(model), batch[:1])["induction"]):
            raise CheckFailed(
                f"{what}, the heads of the FIRST sequence alone: score the whole batch "
                "(head_scores averages over all its sequences)."
            )
        raise CheckFailed(
            f"{what}, not the heads with an induction score above 0.5. Run the model on the "
            "tokens, take head_scores(model.attention_weights(), "
            "tokens)['induction'] and keep every (layer, head) above 0.5."
        )
    return "you find exactly the heads with an induction score above 0.5."


def _scores_weights(model: TinyTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """Run ``model`` on ``tokens`` (it keeps the weights); return its attention weights."""
    with torch.no_grad():
        model(tokens)
    return model.attention_weights()


def _ablation_variant(model: TinyTransformer, layer: int, head: int, mistake: str) -> None:
    att = cast(MultiHeadAttention, model.layers[layer])
    with torch.no_grad():
        if mistake == "ablation_rows":
            att.out_proj.weight[head * att.head_dim : (head + 1) * att.head_dim] = 0.0
        elif mistake == "ablation_next_head":
            h = (head + 1) % att.num_heads
            att.out_proj.weight[:, h * att.head_dim : (h + 1) * att.head_dim] = 0.0
        elif mistake == "ablation_queries":
            att.W_query.weight[head * att.head_dim : (head + 1) * att.head_dim] = 0.0


@register("zero_head", NOTEBOOK, time_limit=10.0)
def check_zero_head(func: Callable[..., object]) -> str:
    """``func(model, layer, head)`` silences that head in place (its output becomes zero)."""
    cases = [  # (config, layer, head)
        (ModelConfig(vocab_size=11, context_length=9, d_model=16, num_heads=4), 1, 2),
        (ModelConfig(vocab_size=11, context_length=9, d_model=16, num_heads=4), 0, 0),
        (ModelConfig(vocab_size=7, context_length=12, d_model=24, num_heads=3, num_layers=3), 2, 1),
    ]
    for i, (cfg, layer, head) in enumerate(cases):
        generator = torch.Generator().manual_seed(salted(810 + i))
        tokens = torch.randint(cfg.vocab_size, (2, cfg.context_length), generator=generator)

        def build(cfg: ModelConfig = cfg, seed: int = salted(820 + i)) -> TinyTransformer:
            with seeded(seed):
                return TinyTransformer(cfg).eval()

        reference = build()
        with torch.no_grad(), ablated(reference, [(layer, head)]):
            want = reference(tokens)
        mistakes = {}
        for mistake in ("ablation_rows", "ablation_next_head", "ablation_queries"):
            variant = build()
            _ablation_variant(variant, layer, head, mistake)
            with torch.no_grad():
                mistakes[mistake] = variant(tokens)
        mine = build()
        call_explained(func, mine, layer, head)  # the module comes back changed
        with torch.no_grad():
            got = mine(tokens)
        expect_close(
            got,
            want,
            f"the logits with layer {layer}, head {head} zeroed",
            mistakes=mistakes,
        )
    return "the head is silent and every other head untouched."


def _tokens(b: int, num_tokens: int, vocab_size: int, seed: int) -> torch.Tensor:
    """Salted random token ids (b, num_tokens); token 0 occurs (it is a target like any other)."""
    generator = torch.Generator().manual_seed(salted(seed))
    tokens = torch.randint(vocab_size, (b, num_tokens), generator=generator)
    tokens[0, -1] = 0
    return tokens


def _loss_mistakes(logits: torch.Tensor, tokens: torch.Tensor) -> dict[str, torch.Tensor]:
    """next_token_loss(logits, tokens) with each classic mistake built in."""
    vocab_size = logits.shape[-1]
    pred, target = logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()
    want = F.cross_entropy(pred, target)
    mistakes = {
        "loss_no_shift": F.cross_entropy(logits.flatten(0, 1), tokens.flatten()),
        "loss_no_shift_trimmed": F.cross_entropy(pred, tokens[:, :-1].flatten()),
        "loss_shift_backwards": F.cross_entropy(
            logits[:, 1:].flatten(0, 1), tokens[:, :-1].flatten()
        ),
        "loss_sum": F.cross_entropy(pred, target, reduction="sum"),
        "loss_bits": want / math.log(2),
        "loss_log10": want / math.log(10),
        "loss_double_softmax": F.cross_entropy(torch.softmax(pred, dim=-1), target),
        "loss_ignores_zero": F.cross_entropy(pred, target, ignore_index=0),
    }
    if logits.shape[1] - 1 == vocab_size:  # (b, C, d) read as C = positions: shapes allow it
        mistakes["loss_class_dim"] = F.cross_entropy(logits[:, :-1], tokens[:, 1:])
    return mistakes


@register("next_token_loss", NOTEBOOK, time_limit=5.0)
def check_next_token_loss(func: Callable[..., object]) -> str:
    """``func(logits, tokens)`` -> the mean next-token cross-entropy in nats, a 0-dim tensor.

    Position t's logits are scored against ``tokens[:, t + 1]``; every token is a target (no
    ignore_index). Cases: random shapes, one sequence of 2 tokens (one prediction), as many
    positions as the vocabulary (positions read as classes would not raise), logits of
    hundreds (a naive exp overflows), and a longer batch.
    """
    cases = [(3, 9, 11, 3.0), (1, 2, 5, 3.0), (4, 8, 7, 3.0), (2, 6, 13, 400.0), (5, 17, 50, 2.0)]
    for i, (b, num_tokens, vocab_size, scale) in enumerate(cases):
        logits = scale * randn(b, num_tokens, vocab_size, seed=850 + i)
        tokens = _tokens(b, num_tokens, vocab_size, seed=860 + i)
        what = f"the loss of logits {(b, num_tokens, vocab_size)} for tokens {(b, num_tokens)}"
        if scale > 100:
            what += " (logits in the hundreds)"
        got = call_pure(func, logits, tokens)
        if isinstance(got, float | int):
            raise CheckFailed(
                f"{what}: return the loss as a tensor (training calls loss.backward() on "
                "it), not a Python number (.item())."
            )
        expect_close(
            got,
            next_token_loss(logits, tokens),
            what,
            mistakes=_loss_mistakes(logits, tokens),
            hints={"nan": HINTS["loss_overflow"]},
        )
        expect_function_gradients(func, (logits, tokens), next_token_loss, what, seed=870 + i)
    return "each position is scored against the next token, in nats, averaged."


def _step_with(
    mistake: str, model: TinyTransformer, optimizer, tokens: torch.Tensor, max_norm: float
) -> float:
    """``train_step`` with ``mistake`` built in ("" for none)."""
    if mistake != "step_no_zero_grad":
        optimizer.zero_grad(set_to_none=True)
    logits = model(tokens)
    if mistake == "step_no_shift":
        loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    else:
        reduction = "sum" if mistake == "step_loss_sum" else "mean"
        loss = F.cross_entropy(
            logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), reduction=reduction
        )
    if mistake == "step_loss_bits":
        loss = loss / math.log(2)
    (-loss if mistake == "step_ascent" else loss).backward()
    if mistake == "step_clip_value":
        torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
    elif mistake != "step_unclipped":
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if mistake != "step_no_update":
        optimizer.step()
    return loss.item()


STEP_MISTAKES = (
    "step_no_zero_grad",
    "step_unclipped",
    "step_clip_value",
    "step_no_update",
    "step_loss_sum",
    "step_loss_bits",
    "step_no_shift",
    "step_ascent",
)


def _flat_state(state: dict[str, torch.Tensor], names: list[str]) -> torch.Tensor:
    return torch.cat([state[name].detach().flatten().float() for name in names])


def _signature(losses: torch.Tensor, states: list[dict], names: list[str]) -> torch.Tensor:
    """The two losses and the parameters after each call, as one vector to compare."""
    return torch.cat([losses, *(_flat_state(s, names) for s in states)])


def _two_steps(step: Callable, model: TinyTransformer, make_optimizer, tokens, max_norm):
    """Two calls of ``step`` on one batch, from a copy of ``model``: (losses (2,), states)."""
    model = copy.deepcopy(model)
    optimizer = make_optimizer(model)
    losses, states = [], []
    with torch.enable_grad():  # also where check() runs in a notebook that turned them off
        for _ in range(2):
            losses.append(float(step(model, optimizer, tokens, max_norm)))
            states.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return torch.tensor(losses), states


def _step_model(vocab_size: int, num_tokens: int, num_heads: int, seed: int) -> TinyTransformer:
    cfg = ModelConfig(vocab_size, num_tokens, d_model=16, num_heads=num_heads)
    with seeded(salted(seed)):
        return TinyTransformer(cfg)


def _gradient_norm(model: TinyTransformer, tokens: torch.Tensor) -> tuple[float, float]:
    """The norm of the first step's gradient and its largest entry (in magnitude)."""
    model = copy.deepcopy(model)
    with torch.enable_grad():
        next_token_loss(model(tokens), tokens).backward()
    gradient = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return gradient.norm().item(), gradient.abs().max().item()


@register("train_step", NOTEBOOK, time_limit=15.0, imports_dynamo=True)  # optimizer.step()
def check_train_step(func: Callable[..., object]) -> str:
    """``func(model, optimizer, tokens, max_norm)``: one step of next-token training, returning
    the loss before the update as a float (a one-element tensor is accepted too).

    Called twice on one batch, on the same model and optimizer (one request: in official
    grading both live in the learner's kernel between the calls, so gradients a step leaves
    behind reach the next). Plain SGD makes the update -lr times the clipped gradient; one SGD
    case clips nothing (a large max_norm), the other clips hard (max_norm half the gradient's
    largest entry), and the third trains with AdamW, the lecture's optimiser, clipped to a
    quarter of the gradient's norm.
    """
    cases = [  # (vocab_size, num_tokens, b, num_heads, optimizer, clip)
        (13, 10, 4, 2, "SGD", "none"),
        (9, 7, 3, 4, "SGD", "half the largest entry"),
        (17, 12, 2, 2, "AdamW", "a quarter of the norm"),
    ]
    optimizers = {
        "SGD": lambda m: torch.optim.SGD(m.parameters(), lr=0.05),
        "AdamW": lambda m: torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1),
    }
    for i, (vocab_size, num_tokens, b, num_heads, opt_name, clip) in enumerate(cases):
        model = _step_model(vocab_size, num_tokens, num_heads, seed=880 + i)
        tokens = _tokens(b, num_tokens, vocab_size, seed=890 + i)
        norm, largest = _gradient_norm(model, tokens)
        max_norm = {"none": 1e6, "a quarter of the norm": norm / 4}.get(clip, largest / 2)
        make_optimizer = optimizers[opt_name]
        names = list(model.state_dict())
        want_losses, want_states = _two_steps(train_step, model, make_optimizer, tokens, max_norm)
        clipping = "that clips nothing" if clip == "none" else f"of {clip} of the gradient"
        what = (
            f"two calls of train_step on one batch of {(b, num_tokens)} tokens, a "
            f"TinyTransformer(vocab_size={vocab_size}), {opt_name} and a max_norm {clipping}"
        )
        learner_model = copy.deepcopy(model)
        optimizer = make_optimizer(learner_model)
        args = (learner_model, optimizer, tokens, max_norm)
        replies = list(invoke_many(func, args, [{}, {}]))
        got_losses = []
        for reply in replies:
            result = reply["result"]
            if isinstance(result, torch.Tensor) and result.numel() == 1:
                result = result.item()
            if not isinstance(result, float | int) or isinstance(result, bool):
                raise CheckFailed(
                    f"{what}: return the loss of this step as a float (loss.item()), got "
                    f"{type(result).__name__}."
                )
            got_losses.append(float(result))
            if not torch.equal(reply["after"][2], tokens):
                raise CheckFailed(f"{what}: your function changed the tokens in place.")
        got_states = [reply["after"][0]["__state__"] for reply in replies]

        got = _signature(torch.tensor(got_losses), got_states, names)
        want = _signature(want_losses, want_states, names)
        if close(got, want):
            if not got_losses[1] < got_losses[0]:  # never for the reference's step
                raise CheckFailed(f"{what}: the loss did not go down. {HINTS['step_ascent']}")
            continue
        mistakes = {}
        for mistake in STEP_MISTAKES:
            losses, states = _two_steps(
                lambda *a, m=mistake: _step_with(m, *a), model, make_optimizer, tokens, max_norm
            )
            mistakes[mistake] = _signature(losses, states, names)
        try:
            expect_close(got, want, what, mistakes=mistakes)
        except CheckFailed as failure:
            if "wrong values" not in str(failure):
                raise  # a mistake was recognised: its hint
            if not close(torch.tensor(got_losses), want_losses):
                part = (
                    "the losses it returns (the loss before each update) differ; is its loss "
                    "next_token_loss (exercise 6) of model(tokens)?"
                )
            elif not close(_flat_state(got_states[0], names), _flat_state(want_states[0], names)):
                part = "the parameters after the first call differ"
            else:
                part = "the first call is right, the parameters after the second differ"
            raise CheckFailed(str(failure).replace(what, f"{what}: {part}", 1)) from None
    return "each call zeroes, backpropagates, clips and steps once; the loss goes down."

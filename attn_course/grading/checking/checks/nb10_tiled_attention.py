"""Checks of 10_tiled_attention: an online-softmax step, one attention tile, tiled attention."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ....tiled import attention_tile, online_softmax_update, tiled_attention
from ..expect import (
    call_pure,
    call_pure_reply,
    expect_close,
    expect_function_gradients,
    memory_grown_past,
    randn,
    rng,
    shown,
)
from ..hints import HINTS
from ..registry import CheckFailed, register

NOTEBOOK = "10_tiled_attention"


def _softmax_step_with(mistake: str, m: float, s: float, block: np.ndarray) -> tuple:
    """``online_softmax_update`` with ``mistake`` built in."""
    m_new = max(m, float(np.max(block)))
    if mistake == "online_no_rescale":
        return m_new, s + float(np.sum(np.exp(block - m_new)))
    if mistake == "online_no_shift":  # exp of the raw scores (overflows past 709)
        with np.errstate(over="ignore"):
            return m_new, s + float(np.sum(np.exp(block)))
    if mistake == "online_rescale_inverted":
        with np.errstate(invalid="ignore", over="ignore"):  # 0 * exp(inf) at the first block
            return m_new, s * np.exp(m_new - m) + float(np.sum(np.exp(block - m_new)))
    return m_new, s * np.exp(m - m_new) + float(np.sum(np.exp(block - m)))  # "online_old_max"


SOFTMAX_MISTAKES = (
    "online_no_rescale",
    "online_no_shift",
    "online_rescale_inverted",
    "online_old_max",
)


@register("online_softmax_update", NOTEBOOK, time_limit=5.0)
def check_online_softmax_update(func: Callable[..., object]) -> str:
    """``func(m, s, block)`` -> the new (m, s), streamed over rows whose max grows late."""
    generator = rng(330)  # salted: each row keeps its shape (a max that grows late, scores
    shift = generator.uniform(-0.4, 0.4, size=9)  # past exp's overflow), its values change
    rows = [
        np.array([1.0, 3.0, 2.0, 5.0]) + shift[:4],
        generator.normal(scale=5, size=11),
        np.sort(generator.normal(size=9)),
        np.array([800.0, 1500.0, -300.0, 2000.0, 1999.0]) + shift[4:],  # exp overflows past 709
    ]
    for row in rows:
        for block_size in (1, 3):
            m, s = -np.inf, 0.0
            mistakes = dict.fromkeys(SOFTMAX_MISTAKES, (-np.inf, 0.0))
            for start in range(0, row.size, block_size):
                block = row[start : start + block_size]
                what = f"after streaming {np.round(row[: start + block.size], 3).tolist()}"
                got = call_pure(func, m, s, block.copy())
                mistakes = {
                    name: _softmax_step_with(name, *mistakes[name], block) for name in mistakes
                }
                m, s = online_softmax_update(m, s, block)
                if not (isinstance(got, tuple | list) and len(got) == 2):
                    raise CheckFailed(f"return the pair (m_new, s_new), got {shown(got)}.")
                if not np.isclose(float(got[0]), m, rtol=1e-9) and np.isclose(
                    float(got[1]), m, rtol=1e-9
                ):
                    raise CheckFailed(
                        f"{what}: you returned (s_new, m_new); return the pair in the order "
                        "(m_new, s_new)."
                    )
                if not np.isclose(float(got[0]), m, rtol=1e-9):
                    raise CheckFailed(
                        f"{what}: your m = {float(got[0]):.4f} is not the running max, "
                        "max(m, max(block))."
                    )
                if not np.isclose(float(got[1]), s, rtol=1e-9):
                    for name, (_, wrong_s) in mistakes.items():
                        if np.isclose(float(got[1]), wrong_s, rtol=1e-9):
                            raise CheckFailed(f"{what}: {HINTS[name]}")
                    if not np.isfinite(float(got[1])):
                        raise CheckFailed(
                            f"{what}: s = {float(got[1])}. {HINTS['online_overflow']}"
                        )
                    raise CheckFailed(
                        f"{what}: your s = {float(got[1]):.4f} is not the sum of exp(score - m) "
                        "over the scores so far. Check the rescale of the old sum by "
                        "exp(m - m_new) and the new terms exp(block - m_new)."
                    )
    return "the running max and sum equal the two-pass ones after every block."


def _tile_with(mistake: str, q, k, v, m, s, acc, mask=None) -> tuple:
    """``attention_tile`` with ``mistake`` built in."""
    scores = q @ k.transpose(-2, -1)  # (..., block_q, block_k)
    if mask is not None and mistake == "tile_mask_inverted":
        scores = scores.masked_fill(~mask, -torch.inf)
    elif mask is not None and mistake != "tile_mask_ignored":
        scores = scores.masked_fill(mask, -torch.inf)
    m_new = scores.amax(dim=-1, keepdim=True)  # the block's max: "tile_max_not_running"
    if mistake != "tile_max_not_running":
        m_new = torch.maximum(m, m_new)
    p = torch.exp(scores - m_new)
    rescale = torch.exp(m - m_new)
    s_new = (s if mistake == "tile_sum_not_rescaled" else s * rescale) + p.sum(dim=-1, keepdim=True)
    acc_new = (acc if mistake == "tile_acc_not_rescaled" else acc * rescale) + p @ v
    return m_new, s_new, acc_new


TILE_MISTAKES = (
    "tile_sum_not_rescaled",
    "tile_acc_not_rescaled",
    "tile_mask_ignored",
    "tile_mask_inverted",
    "tile_max_not_running",
)


@register("attention_tile", NOTEBOOK, time_limit=5.0)
def check_attention_tile(func: Callable[..., object]) -> str:
    """``func(queries, keys, values, m, s, acc, mask=None)`` -> the updated (m, s, acc).

    Each configuration folds two tiles: the first from the initial state (m = -inf, s = 0,
    acc = 0), the second with larger keys that raise the max. The last one has scores in
    the hundreds, where exp overflows float32 (above 88).
    """
    for i, (lead, block_q, block_k, head_dim, d_v, masked, size) in enumerate(
        [
            ((2, 3), 4, 5, 8, 6, False, 1.0),
            ((1,), 3, 3, 4, 4, True, 1.0),
            ((2,), 5, 2, 8, 3, False, 1.0),
            ((1, 2), 4, 4, 8, 4, True, 6.0),
        ]
    ):
        q = size * randn(*lead, block_q, head_dim, seed=340 + i)
        k0, k1 = (
            size * randn(*lead, block_k, head_dim, seed=350 + i),
            size * randn(*lead, block_k, head_dim, seed=360 + i) * 3,
        )
        v0, v1 = randn(*lead, block_k, d_v, seed=370 + i), randn(*lead, block_k, d_v, seed=380 + i)
        mask = torch.ones(block_q, block_k, dtype=torch.bool).triu(diagonal=1) if masked else None
        m = torch.full((*lead, block_q, 1), -torch.inf)
        start = (m, torch.zeros(m.shape), torch.zeros(*lead, block_q, d_v))
        state = attention_tile(q, k0, v0, *start, mask)
        for tile, (keys, values, before) in enumerate(((k0, v0, start), (k1, v1, state))):
            want = attention_tile(q, keys, values, *before, mask)
            got = call_pure(func, q, keys, values, *before, mask)
            if not (isinstance(got, tuple | list) and len(got) == 3):
                raise CheckFailed("return the triple (m_new, s_new, acc_new).")
            variants = {
                name: _tile_with(name, q, keys, values, *before, mask) for name in TILE_MISTAKES
            }
            what = (
                f"the {('first (from m = -inf)', 'second')[tile]} tile for queries "
                f"{tuple(q.shape)} and keys {tuple(keys.shape)}"
                + (" with a mask" if masked else "")
                + (
                    f", scores up to {float((q @ keys.transpose(-2, -1)).max()):.0f}"
                    if size > 1
                    else ""
                )
            )
            for index, name in enumerate(("m_new", "s_new", "acc_new")):
                expect_close(
                    got[index],
                    want[index],
                    f"{name} of {what}",
                    {mistake: variant[index] for mistake, variant in variants.items()},
                    {"nan": HINTS["tile_overflow"]},
                )
            args = (q, keys, values, *before, mask)  # gradients of q, k, v: m is no input to train
            expect_function_gradients(func, args, attention_tile, what, seed=340 + i, count=3)
    return "one tile updates the running max, sum and weighted sum of values correctly."


def _tiled_with(mistake: str, q, k, v, causal: bool, block_size: int) -> torch.Tensor:
    """Causal ``tiled_attention`` with ``mistake`` in the choice of key blocks or their mask."""
    num_queries, num_keys = q.shape[-2], k.shape[-2]
    offset = 0 if mistake == "tiled_top_left" else num_keys - num_queries
    q = q / k.shape[-1] ** 0.5
    context = torch.zeros(*q.shape[:-1], v.shape[-1])
    for q_start in range(0, num_queries, block_size):
        q_end = min(q_start + block_size, num_queries)
        m = torch.full((*q.shape[:-2], q_end - q_start, 1), -torch.inf)
        s, acc = torch.zeros(m.shape), torch.zeros(*m.shape[:-1], v.shape[-1])
        k_stop = offset + (q_start if mistake == "tiled_diagonal_skipped" else q_end)
        for k_start in range(0, k_stop, block_size):
            k_end = min(k_start + block_size, num_keys)
            rows = offset + torch.arange(q_start, q_end)[:, None]
            mask: torch.Tensor | None = torch.arange(k_start, k_end)[None, :] > rows
            if mistake == "tiled_diagonal_unmasked":
                mask = None
            kb, vb = k[..., k_start:k_end, :], v[..., k_start:k_end, :]
            m, s, acc = attention_tile(q[..., q_start:q_end, :], kb, vb, m, s, acc, mask)
        context[..., q_start:q_end, :] = acc / s
    return context


def _full_size(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int) -> int:
    """The fewest elements that give away a full (num_queries, num_keys) tensor: one head's
    matrix (scores or mask) where every right tensor is smaller, else all heads' scores."""
    nq, nk, heads = q.shape[-2], k.shape[-2], q[..., 0, 0].numel()
    right = max(q.numel(), k.numel(), v.numel(), heads * nq * v.shape[-1], heads * block_size**2)
    if nq * nk > right:
        return nq * nk
    return heads * nq * nk if heads * nq * nk > right else 2**62


# The tile function the exercise's tiled_attention calls, by its name in the notebook.
TILE = "attention_tile"


def _expect_visible_blocks_only(
    calls: dict[bool, object], nq: int, nk: int, block_size: int, what: str
) -> None:
    """Causal: the learner's ``attention_tile`` ran only for the key blocks that hold a key
    visible to the query block. ``calls[causal]``: how often it ran without and with the
    mask (the non-causal call visits every tile: a learner who calls it per head counts
    alike in both); None where tiled_attention calls no global function of that name (an
    answer with the tile written inline is not counted)."""
    full, causal = calls.get(False), calls.get(True)
    if not (isinstance(full, int) and isinstance(causal, int) and full > 0):
        return
    offset, blocks = nk - nq, -(-nk // block_size)
    visible = sum(
        -(-min(offset + min(q_start + block_size, nq), nk) // block_size)
        for q_start in range(0, nq, block_size)
    )
    everything = blocks * -(-nq // block_size)
    if causal * everything > full * visible:
        raise CheckFailed(
            f"{what}: right values, but attention_tile ran {causal} times against {full} "
            f"without the mask, where {visible} of the {everything} tiles hold a visible key: "
            "visit only the key blocks up to the query block's last position (keys "
            "0 .. offset + q_end - 1); a block past it is all hidden, a wasted tile."
        )


@register("tiled_attention", NOTEBOOK, time_limit=15.0, imports_dynamo=True)
def check_tiled_attention(func: Callable[..., object]) -> str:
    """``func(queries, keys, values, causal, block_size)`` without an (nq, nk) tensor."""
    shapes = [  # (lead dims, num_queries, num_keys, head_dim, d_v, block_size)
        ((2, 2), 16, 16, 8, 8, 4),
        ((1, 3), 21, 21, 8, 5, 8),
        ((2,), 7, 7, 4, 4, 16),
        ((1, 2), 10, 23, 8, 8, 4),
        ((1, 1), 33, 33, 4, 4, 33),
        ((1, 2), 40, 40, 4, 4, 8),  # one head's (40, 40) scores outgrow every right tensor
        ((1,), 48, 30, 4, 4, 8),  # more queries than keys: not causal (tiled.py refuses)
    ]
    for i, (lead, nq, nk, head_dim, d_v, block_size) in enumerate(shapes):
        q, k = randn(*lead, nq, head_dim, seed=390 + i), randn(*lead, nk, head_dim, seed=400 + i)
        v = randn(*lead, nk, d_v, seed=410 + i)
        tile_calls: dict[bool, object] = {}
        for causal in (False, True) if nq <= nk else (False,):  # causal needs nq <= nk
            want = tiled_attention(q, k, v, causal, block_size)
            reply = call_pure_reply(
                func, (q, k, v, causal, block_size), track_largest=True, count_calls=TILE
            )
            got, largest = reply["result"], reply["largest"]
            what = (
                f"tiled_attention(queries {tuple(q.shape)}, keys {tuple(k.shape)}, "
                f"causal={causal}, block_size={block_size})"
            )
            mistakes = {}
            if causal:
                names = ["tiled_diagonal_skipped", "tiled_diagonal_unmasked"]
                if nq != nk:
                    names.append("tiled_top_left")
                mistakes = {name: _tiled_with(name, q, k, v, causal, block_size) for name in names}
            expect_close(got, want, what, mistakes)
            args = (q, k, v, causal, block_size)
            expect_function_gradients(func, args, tiled_attention, what, seed=390 + i)
            tile_calls[causal] = reply.get("global_calls")
            if causal:
                _expect_visible_blocks_only(tile_calls, nq, nk, block_size, what)
            if largest >= _full_size(q, k, v, block_size):
                raise CheckFailed(
                    f"{what}: right values, but an operator built a tensor with "
                    f"{largest} elements, as large as a full (num_queries, num_keys) matrix "
                    "of scores or a full mask: work on one (block_size, block_size) tile at a "
                    "time, and mask inside the tile."
                )
    _check_memory(func)
    return "tiled attention equals full attention, causal or not, for any length and block size."


def _check_memory(func: Callable[..., object], n: int = 4096, block_size: int = 256) -> None:
    """On ``n`` tokens the (n, n) scores take 64 MiB: the kernel's memory, measured from
    outside it in official grading (``peak_memory``), must not grow by that much."""
    q, k, v = (randn(1, 1, n, 8, seed=seed) for seed in (420, 421, 422))
    what = f"tiled_attention(queries {tuple(q.shape)}, causal=False, block_size={block_size})"
    reply = call_pure_reply(func, (q, k, v, False, block_size), peak_memory=True)
    expect_close(reply["result"], tiled_attention(q, k, v, False, block_size), what)
    scores = n * n * q.element_size()
    grown = memory_grown_past(reply, 0.75 * scores)
    if grown is not None:
        raise CheckFailed(
            f"{what}: right values, but the kernel's memory grew by {grown / 2**20:.0f} MiB, "
            f"as much as all the ({n}, {n}) scores ({scores / 2**20:.0f} MiB): work on one "
            "(block_size, block_size) tile at a time."
        )

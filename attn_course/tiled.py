"""Attention that never builds the n x n matrix: online softmax and tiled attention.

The softmax of a row needs its maximum and the sum of exponentials. ``online_softmax``
streams over the row once, keeping a running max ``m`` and a running sum ``s`` of
``exp(x - m)``; when the max grows, the sum so far is rescaled by ``exp(m_old - m_new)``.
``tiled_attention`` does the same per query over blocks of keys (the FlashAttention idea):
each (query block, key block) tile updates a running max, sum and weighted sum of values.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = [
    "online_softmax_update",
    "online_softmax",
    "attention_tile",
    "tiled_attention",
    "peak_memory",
    "moves_no_data",
    "TrafficCounter",
    "layout_copies",
    "matrix_products",
]


def online_softmax_update(m: float, s: float, block: np.ndarray) -> tuple[float, float]:
    """Fold a block of scores into the running max ``m`` and sum ``s`` of exp(x - m)."""
    m_new = max(m, float(np.max(block)))
    s_new = s * np.exp(m - m_new) + float(np.sum(np.exp(block - m_new)))  # rescale, then add
    return m_new, s_new


def online_softmax(x: np.ndarray, block_size: int = 1) -> np.ndarray:
    """Softmax of the 1-D ``x``: one streaming pass for the max and sum, then normalise."""
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"x must be a non-empty 1-D array, got shape {x.shape}.")
    m, s = -np.inf, 0.0
    for start in range(0, x.size, block_size):
        m, s = online_softmax_update(m, s, x[start : start + block_size])
    return np.exp(x - m) / s


def attention_tile(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    m: torch.Tensor,
    s: torch.Tensor,
    acc: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold one key block into a query block's running statistics.

    Args:
        queries: (..., block_q, head_dim), already multiplied by 1/sqrt(head_dim).
        keys, values: (..., block_k, head_dim) and (..., block_k, d_v).
        m: (..., block_q, 1) running max of each query's scores (-inf before any key).
        s: (..., block_q, 1) running sum of exp(score - m).
        acc: (..., block_q, d_v) running sum of exp(score - m) * value.
        mask: optional boolean (block_q, block_k), True = hidden.

    Returns:
        The updated ``(m, s, acc)``; the block's context is ``acc / s`` after the last key block.
    """
    scores = queries @ keys.transpose(-2, -1)  # (..., block_q, block_k)
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (..., block_q, 1)
    p = torch.exp(scores - m_new)  # (..., block_q, block_k): unnormalised weights
    rescale = torch.exp(m - m_new)  # (..., block_q, 1): old statistics to the new max
    s = s * rescale + p.sum(dim=-1, keepdim=True)  # (..., block_q, 1)
    acc = acc * rescale + p @ values  # (..., block_q, d_v)
    return m_new, s, acc


def tiled_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    causal: bool = False,
    block_size: int = 64,
) -> torch.Tensor:
    """softmax(Q K^T / sqrt(head_dim)) V computed tile by tile; no (num_queries, num_keys) tensor.

    Args:
        queries: (..., num_queries, head_dim)
        keys: (..., num_keys, head_dim)
        values: (..., num_keys, d_v)
        causal: the queries are the LAST ``num_queries`` of the ``num_keys`` positions
            (bottom-right alignment, as with a KV cache): query ``i`` sees keys
            ``0 .. num_keys - num_queries + i``. With equal counts that is ``0 .. i``, as
            ``is_causal=True`` of ``F.scaled_dot_product_attention`` (which aligns top-left
            otherwise). Key blocks wholly in the future are skipped.
        block_size: queries and keys per tile.

    Returns:
        The context, (..., num_queries, d_v).
    """
    if block_size < 1:
        raise ValueError(f"block_size={block_size} must be at least 1.")
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    if causal and num_queries > num_keys:
        raise ValueError(
            f"causal=True with {num_queries} queries but only {num_keys} keys: the queries are "
            f"the last positions, so the first {num_queries - num_keys} would see no key at all. "
            "Pass at least as many keys as queries."
        )
    offset = num_keys - num_queries  # query i sits at position offset + i
    queries = queries / keys.shape[-1] ** 0.5  # scale once, not once per tile
    context = queries.new_empty(*queries.shape[:-1], values.shape[-1])  # (..., num_queries, d_v)
    device = queries.device  # causal masks are built there, beside the scores they hide
    for q_start in range(0, num_queries, block_size):
        q_end = min(q_start + block_size, num_queries)
        q_block = queries[..., q_start:q_end, :]  # (..., block_q, head_dim)
        m = q_block.new_full((*q_block.shape[:-1], 1), -torch.inf)  # (..., block_q, 1)
        s = q_block.new_zeros(m.shape)  # (..., block_q, 1)
        acc = q_block.new_zeros(*q_block.shape[:-1], values.shape[-1])  # (..., block_q, d_v)
        k_stop = offset + q_end if causal else num_keys  # later keys are all in the future
        for k_start in range(0, k_stop, block_size):
            k_end = min(k_start + block_size, num_keys)
            mask = None
            if causal and k_end > offset + q_start + 1:  # the tile reaches past some query
                rows = offset + torch.arange(q_start, q_end, device=device)[:, None]  # queries
                mask = torch.arange(k_start, k_end, device=device)[None, :] > rows  # (bq, bk)
            m, s, acc = attention_tile(
                q_block, keys[..., k_start:k_end, :], values[..., k_start:k_end, :], m, s, acc, mask
            )
        context[..., q_start:q_end, :] = acc / s
    return context


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null: the profiler's C++ side logs each start and stop."""
    sys.stderr.flush()
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_memory(fn: Callable[..., object], *args: object) -> int:
    """Measured peak bytes of tensor memory alive during ``fn(*args)``, beyond what was before.

    torch.profiler records every allocation and free (``profile_memory=True``), scratch
    buffers inside an operator included; replayed in time order, their running sum peaks here.
    """
    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(*args)
    records = sorted(
        (event.start_ns(), event.nbytes())
        for event in prof.profiler.kineto_results.events()
        if event.name() == "[memory]"
    )
    live = peak = 0
    for _, change in records:
        live += change
        peak = max(peak, live)
    return peak


def moves_no_data(func: torch._ops.OpOverload, args: tuple, kwargs: dict, out: object) -> bool:
    """True when the ATen operator ``func`` only made a view: its outputs alias its inputs.

    A view (``view``, ``transpose``, ``expand``, a slice) is declared as an alias in the
    operator's schema. ``aten._unsafe_view``, which ``matmul`` calls to reshape its product,
    is not declared so, yet returns a tensor on its input's memory: so any operator whose
    every output shares storage with an input, without writing into it, moves no data too.
    An in-place or ``out=`` operator (``copy_``, ``masked_fill_``) writes, and is not a view.
    """
    returns = func._schema.returns
    if any(r.alias_info is not None and r.alias_info.is_write for r in returns):
        return False  # writes into an existing tensor: data moves
    if returns and all(r.alias_info is not None for r in returns):
        return True  # declared views
    inputs = {
        t.untyped_storage().data_ptr()
        for t in tree_leaves((args, kwargs))
        if isinstance(t, torch.Tensor)
    }
    outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
    return bool(outputs) and all(t.untyped_storage().data_ptr() in inputs for t in outputs)


class TrafficCounter(TorchDispatchMode):
    """Bytes read and written by the ATen operators dispatched in the ``with`` block, by kind.

    Each operator that computes is counted as reading its input tensors and writing its
    outputs; one that only makes a view (``moves_no_data``) moves nothing. Three exceptions:
    a factory such as ``new_zeros`` or ``empty_like`` takes a tensor only for its dtype and
    device and reads nothing (``new_empty`` and ``empty_like`` write nothing either: their
    memory is left uninitialised); ``copy_``, ``fill_`` and ``zero_`` overwrite their first
    argument without reading it. An in-place operator that computes (``mul_``) reads and
    writes its tensor, once each. A tensor whose last
    two dims are ``(n, n)`` counts as "(n, n) tensors", one on the memory of ``q``, ``k`` or
    ``v`` as "reads of Q, K, V", every other one as "other".
    """

    aten = torch.ops.aten
    # Factories that take a tensor for its dtype and device only: they read nothing.
    NO_READ = {
        aten.new_empty, aten.new_empty_strided, aten.new_zeros, aten.new_ones, aten.new_full,
        aten.empty_like, aten.zeros_like, aten.ones_like, aten.full_like,
    }  # fmt: skip
    # Factories whose memory is left uninitialised: they write nothing either.
    NO_WRITE = {aten.new_empty, aten.new_empty_strided, aten.empty_like, aten.empty}
    # In-place operators that overwrite their first argument without reading it.
    OVERWRITE = {aten.copy_, aten.fill_, aten.zero_}

    def __init__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
        super().__init__()
        self.n = q.shape[-2]
        self.inputs = {t.untyped_storage().data_ptr() for t in (q, k, v)}
        self.bytes = {"(n, n) tensors": 0, "reads of Q, K, V": 0, "other": 0}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if moves_no_data(func, args, kwargs, out):
            return out  # a view: no data moves
        packet = func.overloadpacket
        if packet in self.NO_READ:
            reads = []
        elif packet in self.OVERWRITE:
            reads = tree_leaves((args[1:], kwargs))  # the source, not the destination
        else:
            reads = tree_leaves((args, kwargs))
        writes = [] if packet in self.NO_WRITE else tree_leaves(out)
        for t in reads + writes:
            if isinstance(t, torch.Tensor):
                if t.shape[-2:] == (self.n, self.n):
                    kind = "(n, n) tensors"
                elif t.untyped_storage().data_ptr() in self.inputs:
                    kind = "reads of Q, K, V"
                else:
                    kind = "other"
                self.bytes[kind] += t.numel() * t.element_size()
        return out


def layout_copies(fn: Callable[..., object], *args: object) -> list[tuple[str, tuple[int, ...]]]:
    """The tensors ``fn(*args)`` copies whole into fresh memory, in call order.

    torch.profiler records every ATen operator and the operators it calls. Each ``aten::clone``
    (a tensor copied into new, contiguous memory) is returned as (the outermost operator that
    called it, such as ``aten::matmul`` or ``aten::contiguous``; the shape it copied). Only
    ``aten::clone`` counts: an ``aten::copy_`` outside one writes into memory that already
    exists (such as ``addmm`` filling its output with the broadcast bias before adding the
    product) and is not listed; which of those appear depends on the PyTorch build.
    """
    copies = []
    for event in _profiled_events(fn, *args):
        if event.name == "aten::clone":
            outer = event
            while outer.cpu_parent is not None:
                outer = outer.cpu_parent
            copies.append((outer.name, tuple(event.input_shapes[0])))
    return copies


# The matrix-product operators, and where each one's two factors sit among its inputs.
_PRODUCTS = {"aten::mm": 0, "aten::bmm": 0, "aten::addmm": 1, "aten::baddbmm": 1}


def matrix_products(
    fn: Callable[..., object], *args: object
) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
    """The matrix products ``fn(*args)`` runs, in call order: (operator, shape 1, shape 2).

    An operator is ``aten::mm`` / ``aten::addmm`` (one matrix product; ``addmm`` adds a bias)
    or ``aten::bmm`` / ``aten::baddbmm`` (a batch of them, batch dimension first).
    """
    products = []
    for event in _profiled_events(fn, *args):
        if event.name in _PRODUCTS:
            first = _PRODUCTS[event.name]
            shapes = event.input_shapes[first : first + 2]
            products.append((event.name, tuple(shapes[0]), tuple(shapes[1])))
    return products


def _profiled_events(fn: Callable[..., object], *args: object) -> list:
    """The CPU operator events of ``fn(*args)`` with their input shapes, in start order."""
    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn(*args)
    return sorted(prof.events(), key=lambda e: e.time_range.start)

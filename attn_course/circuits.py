"""Read a trained TinyTransformer's heads from its weights (lecture 08, after Elhage et al. 2021).

A head does two separable things. Its **QK circuit** decides where it looks: query vector
``W_Q x_i`` against key vector ``W_K x_j``. Its **OV circuit** decides what it moves: the
vector ``W_O W_V x_j`` that it adds to the residual stream of the query. Multiplying these
matrices with the token embedding ``W_E`` and the read-out ``W_U`` gives token-to-token
tables that can be read without running the model. Biases and position embeddings are left
out: the tables show what the weights do with the token identities alone.

Matrix conventions: ``nn.Linear`` weights map column vectors, ``W_Q = att.W_query.weight[rows
of the head]`` is (head_dim, d_model), ``W_O = att.out_proj.weight[:, columns of the head]``
is (d_model, head_dim), ``W_E = tok_emb.weight.T`` is (d_model, vocab_size) and ``W_U =
out_head.weight`` is (vocab_size, d_model). Every table is returned as (row token, column
token), read "row token -> column token", and ``diagonal_top1`` measures the share of rows
whose largest entry is their own token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

import torch

from .attention import MultiHeadAttention
from .model import TinyTransformer

__all__ = [
    "head_matrices",
    "ov_circuit",
    "k_composition_qk_circuit",
    "diagonal_top1",
    "k_composition_scores",
    "mean_ablated",
]


def _attention(model: TinyTransformer, layer: int, head: int) -> MultiHeadAttention:
    if not 0 <= layer < len(model.layers):
        raise ValueError(f"layer={layer} is not in 0..{len(model.layers) - 1}.")
    att = cast(MultiHeadAttention, model.layers[layer])
    if not 0 <= head < att.num_heads:
        raise ValueError(f"head={head} is not in 0..{att.num_heads - 1}.")
    return att


def head_matrices(model: TinyTransformer, layer: int, head: int) -> dict[str, torch.Tensor]:
    """The head's W_Q, W_K, W_V (head_dim, d_model) and W_O (d_model, head_dim), detached."""
    att = _attention(model, layer, head)
    rows = slice(head * att.head_dim, (head + 1) * att.head_dim)
    return {
        "W_Q": att.W_query.weight[rows].detach(),
        "W_K": att.W_key.weight[rows].detach(),
        "W_V": att.W_value.weight[rows].detach(),
        "W_O": att.out_proj.weight[:, rows].detach(),
    }


def ov_circuit(model: TinyTransformer, layer: int, head: int) -> torch.Tensor:
    """(vocab, vocab) full OV circuit (W_U W_O W_V W_E)ᵀ: row = attended token, column = logit.

    Entry [s, t]: how much the head raises the logit of token t when it attends to token s
    (through the direct path to the read-out, ignoring the layers in between).
    """
    m = head_matrices(model, layer, head)
    W_E, W_U = model.tok_emb.weight.detach().T, model.out_head.weight.detach()
    return (W_U @ m["W_O"] @ m["W_V"] @ W_E).T  # (vocab, vocab)


def k_composition_qk_circuit(
    model: TinyTransformer, head: tuple[int, int], source: tuple[int, int]
) -> torch.Tensor:
    """(vocab, vocab) QK circuit of ``head`` whose keys read what ``source`` (earlier) wrote.

    Entry [q, p]: the score a query holding token q gives a key position whose ``source``
    head moved token p there: W_Eᵀ W_Qᵀ W_K (W_O W_V)_source W_E. For an induction head
    reading a previous-token head, p is the key's previous token, and the largest score of
    row q should sit at p = q: "attend where the previous token was me".
    """
    if source[0] >= head[0]:
        raise ValueError(f"the source head {source} must sit in an earlier layer than {head}.")
    m, s = head_matrices(model, *head), head_matrices(model, *source)
    W_E = model.tok_emb.weight.detach().T  # (d_model, vocab)
    queries = m["W_Q"] @ W_E  # (head_dim, vocab)
    keys = m["W_K"] @ s["W_O"] @ s["W_V"] @ W_E  # (head_dim, vocab)
    return queries.T @ keys  # (vocab, vocab)


def diagonal_top1(table: torch.Tensor) -> float:
    """Share of rows of a square (vocab, vocab) table whose largest entry is on the diagonal."""
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError(f"expected a square table, got shape {tuple(table.shape)}.")
    rows = torch.arange(table.shape[0])
    return (table.argmax(dim=1) == rows).float().mean().item()


def k_composition_scores(model: TinyTransformer, layer: int = 1) -> torch.Tensor:
    """(num_heads of ``layer``, num_heads of layer - 1) K-composition scores of Elhage et al.

    ||W_QKᵀ W_OV||_F / (||W_QK||_F ||W_OV||_F) with W_QK = W_Qᵀ W_K of the reading head and
    W_OV = W_O W_V of the writing head (both d_model x d_model): how much of what the writer
    writes lands in the subspace the reader's keys read. A weight-only measure, next to the
    course's intervention (recompute the keys without the writer).
    """
    if layer < 1:
        raise ValueError("K-composition needs a reading head in layer 1 or later.")
    num_heads = _attention(model, layer, 0).num_heads
    scores = torch.zeros(num_heads, _attention(model, layer - 1, 0).num_heads)
    for reader in range(num_heads):
        r = head_matrices(model, layer, reader)
        W_QK = r["W_Q"].T @ r["W_K"]  # (d_model, d_model)
        for writer in range(scores.shape[1]):
            w = head_matrices(model, layer - 1, writer)
            W_OV = w["W_O"] @ w["W_V"]  # (d_model, d_model)
            scores[reader, writer] = (W_QK.T @ W_OV).norm() / (W_QK.norm() * W_OV.norm())
    return scores


@contextmanager
def mean_ablated(
    model: TinyTransformer, heads: list[tuple[int, int]], tokens: torch.Tensor
) -> Iterator[TinyTransformer]:
    """Within the block, each listed head writes its mean output over ``tokens`` instead.

    ``tokens``: (b, num_tokens), a reference batch; the mean is over the batch, one per
    position, so what the head writes about positions alone is kept.
    Zero-ablation (``model.ablated``) writes zeros, a value the head never produces;
    mean-ablation keeps the average the rest of the model was trained with and removes only
    the information that varies from sequence to sequence.
    """
    atts = [(_attention(model, layer, head), head) for layer, head in heads]
    inputs: dict[MultiHeadAttention, torch.Tensor] = {}
    hooks = [
        att.out_proj.register_forward_pre_hook(
            lambda _, args, att=att: inputs.setdefault(att, args[0].detach())
        )
        for att, _ in atts
    ]
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for hook in hooks:
            hook.remove()

    def replace(att: MultiHeadAttention, head: int):
        cols = slice(head * att.head_dim, (head + 1) * att.head_dim)
        mean = inputs[att][..., cols].mean(dim=0)  # (num_tokens, head_dim)

        def hook(_: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor]:
            merged = args[0].clone()  # (b, num_tokens, d_model): the heads side by side
            merged[..., cols] = mean[: merged.shape[1]]
            return (merged,)

        return att.out_proj.register_forward_pre_hook(hook)

    hooks = [replace(att, head) for att, head in atts]
    try:
        yield model
    finally:
        for hook in hooks:
            hook.remove()

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

Beyond the tables: ``composition_scores`` (Q-, K- and V-composition of two layers' heads,
weights only) beside ``random_composition_scores`` (the baseline they need); and two
measurements on inputs: ``direct_logit_attribution`` (each head's direct share of the
target's logit) and ``patched`` (activation patching: a head's output from a clean run put
into a corrupted one). ``mean_ablated`` replaces a head's output by its mean.
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
    "q_composition_qk_circuit",
    "diagonal_top1",
    "COMPOSITIONS",
    "composition_score",
    "composition_scores",
    "random_composition_scores",
    "mean_ablated",
    "patched",
    "direct_logit_attribution",
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
    return _qk_circuit_through(model, head, source, "keys")


def q_composition_qk_circuit(
    model: TinyTransformer, head: tuple[int, int], source: tuple[int, int]
) -> torch.Tensor:
    """(vocab, vocab) QK circuit of ``head`` whose queries read what ``source`` wrote.

    The control for ``k_composition_qk_circuit``, the writer moved to the other side. Entry
    [p, k]: the score a query position where ``source`` moved token p gives a key holding token
    k: (W_Q (W_O W_V)_source W_E)ᵀ (W_K W_E).
    """
    return _qk_circuit_through(model, head, source, "queries")


def _qk_circuit_through(
    model: TinyTransformer, head: tuple[int, int], source: tuple[int, int], side: str
) -> torch.Tensor:
    """(vocab, vocab) QK circuit of ``head`` with ``source``'s output on one ``side``."""
    if source[0] >= head[0]:
        raise ValueError(f"the source head {source} must sit in an earlier layer than {head}.")
    m, s = head_matrices(model, *head), head_matrices(model, *source)
    W_E = model.tok_emb.weight.detach().T  # (d_model, vocab)
    written = s["W_O"] @ s["W_V"] @ W_E  # (d_model, vocab): what ``source`` moves
    queries = m["W_Q"] @ (written if side == "queries" else W_E)  # (head_dim, vocab)
    keys = m["W_K"] @ (written if side == "keys" else W_E)  # (head_dim, vocab)
    return queries.T @ keys  # (vocab, vocab)


def diagonal_top1(table: torch.Tensor) -> float:
    """Share of rows of a square (vocab, vocab) table whose largest entry is on the diagonal."""
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError(f"expected a square table, got shape {tuple(table.shape)}.")
    rows = torch.arange(table.shape[0])
    return (table.argmax(dim=1) == rows).float().mean().item()


COMPOSITIONS = ("Q", "K", "V")


def composition_score(
    reader: dict[str, torch.Tensor], writer: dict[str, torch.Tensor], kind: str
) -> float:
    """One composition score of Elhage et al. (2021): ``writer`` (earlier) into ``reader``.

    Column vectors: a head's score of query token x_q against key token x_k is
    x_qᵀ W_QK x_k with W_QK = W_Qᵀ W_K, and it writes W_OV x = W_O W_V x for each attended x
    (both d_model x d_model). The writer adds W_OV y to a residual stream; the reader reads it

    * in its queries (``kind="Q"``): (W_OV y)ᵀ W_QK x_k, so the product is W_QKᵀ W_OV;
    * in its keys (``kind="K"``): x_qᵀ W_QK (W_OV y), so the product is W_QK W_OV;
    * in its values (``kind="V"``): W_OV^reader (W_OV y), so the product is W_OV^r W_OV.

    The score is ||product||_F / (||reader matrix||_F ||W_OV||_F): between 0 (the writer's
    output lies where the reader does not read) and 1. ``reader`` and ``writer`` are
    ``head_matrices`` dicts.
    """
    if kind not in COMPOSITIONS:
        raise ValueError(f"kind={kind!r} must be one of {COMPOSITIONS}.")
    W_OV = writer["W_O"] @ writer["W_V"]  # (d_model, d_model)
    if kind == "V":
        read = reader["W_O"] @ reader["W_V"]  # (d_model, d_model)
        product = read @ W_OV
    else:
        read = reader["W_Q"].T @ reader["W_K"]  # (d_model, d_model): W_QK
        product = (read.T if kind == "Q" else read) @ W_OV
    return (product.norm() / (read.norm() * W_OV.norm())).item()


def composition_scores(model: TinyTransformer, layer: int = 1) -> dict[str, torch.Tensor]:
    """{"Q", "K", "V"}: (num_heads of ``layer``, num_heads of layer - 1) composition scores.

    Entry [reader, writer] is ``composition_score`` of the writer head of layer - 1 into the
    reader head of ``layer``. A weight-only screen: compare it with
    ``random_composition_scores`` and confirm it by an intervention.
    """
    if layer < 1:
        raise ValueError("composition needs a reading head in layer 1 or later.")
    readers = [head_matrices(model, layer, h) for h in range(_attention(model, layer, 0).num_heads)]
    writers = [
        head_matrices(model, layer - 1, h) for h in range(_attention(model, layer - 1, 0).num_heads)
    ]
    return {
        kind: torch.tensor([[composition_score(r, w, kind) for w in writers] for r in readers])
        for kind in COMPOSITIONS
    }


def random_composition_scores(
    d_model: int, head_dim: int, draws: int = 100, seed: int = 0
) -> dict[str, torch.Tensor]:
    """{"Q", "K", "V"}: (draws,) scores of random heads: the baseline a score must beat.

    Each draw fills a reader's and a writer's W_Q, W_K, W_V (head_dim, d_model) and W_O
    (d_model, head_dim) with independent standard normal entries (the scores do not depend on
    the scale). For these shapes the scores sit near 1/sqrt(d_model).
    """
    generator = torch.Generator().manual_seed(seed)

    def head() -> dict[str, torch.Tensor]:
        shapes = {"W_Q": (head_dim, d_model), "W_K": (head_dim, d_model)}
        shapes |= {"W_V": (head_dim, d_model), "W_O": (d_model, head_dim)}
        return {name: torch.randn(shape, generator=generator) for name, shape in shapes.items()}

    pairs = [(head(), head()) for _ in range(draws)]
    return {
        kind: torch.tensor([composition_score(r, w, kind) for r, w in pairs])
        for kind in COMPOSITIONS
    }


def _head_inputs(
    model: TinyTransformer, atts: list[MultiHeadAttention], tokens: torch.Tensor
) -> dict[MultiHeadAttention, torch.Tensor]:
    """What each listed layer's ``out_proj`` receives on ``tokens``: (b, num_tokens, d_model)."""
    inputs: dict[MultiHeadAttention, torch.Tensor] = {}
    hooks = [
        att.out_proj.register_forward_pre_hook(
            lambda _, args, att=att: inputs.setdefault(att, args[0].detach())
        )
        for att in atts
    ]
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for hook in hooks:
            hook.remove()
    return inputs


@contextmanager
def _heads_replaced(
    replacements: list[tuple[MultiHeadAttention, int, torch.Tensor]],
) -> Iterator[None]:
    """Within the block, head ``head`` of ``att`` passes ``value`` (…, num_tokens, head_dim)."""

    def replace(att: MultiHeadAttention, head: int, value: torch.Tensor):
        cols = slice(head * att.head_dim, (head + 1) * att.head_dim)

        def hook(_: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor]:
            merged = args[0].clone()  # (b, num_tokens, d_model): the heads side by side
            merged[..., cols] = value[..., : merged.shape[1], :]
            return (merged,)

        return att.out_proj.register_forward_pre_hook(hook)

    hooks = [replace(att, head, value) for att, head, value in replacements]
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()


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
    inputs = _head_inputs(model, [att for att, _ in atts], tokens)
    means = []
    for att, head in atts:
        cols = slice(head * att.head_dim, (head + 1) * att.head_dim)
        means.append((att, head, inputs[att][..., cols].mean(dim=0)))  # (num_tokens, head_dim)
    with _heads_replaced(means):
        yield model


@contextmanager
def patched(
    model: TinyTransformer, heads: list[tuple[int, int]], source: torch.Tensor
) -> Iterator[TinyTransformer]:
    """Activation patching: within the block, each listed head writes its output on ``source``.

    ``source``: (b, num_tokens) tokens, usually the clean input; run the model inside the block
    on the corrupted input of the same shape. Every other head computes as usual from what it
    receives, so a patched head's effect reaches the read-out through all later layers.
    """
    atts = [(_attention(model, layer, head), head) for layer, head in heads]
    inputs = _head_inputs(model, [att for att, _ in atts], source)
    clean = []
    for att, head in atts:
        cols = slice(head * att.head_dim, (head + 1) * att.head_dim)
        clean.append((att, head, inputs[att][..., cols]))  # (b, num_tokens, head_dim)
    with _heads_replaced(clean):
        yield model


@torch.no_grad()
def direct_logit_attribution(
    model: TinyTransformer, tokens: torch.Tensor, targets: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Split each position's logit of its target into what each part of the stream adds.

    With no normalisation before the read-out, the logits are W_U times a sum (token
    embedding, position vector, every head's W_O-columns output, the biases of ``out_proj``)
    plus the read-out's bias, so the target's logit is a sum too. Logits are centred first
    (each minus the mean over the vocabulary: what raises every logit alike changes no
    probability). Returns ``"heads"``: (num_layers, num_heads, b, num_tokens), each head's
    direct contribution through W_U (not through later heads), and ``"rest"``:
    (b, num_tokens), the embeddings and biases; together they sum to the centred logit.
    """
    atts = [cast(MultiHeadAttention, att) for att in model.layers]
    inputs = _head_inputs(model, atts, tokens)
    W_U = model.out_head.weight - model.out_head.weight.mean(dim=0)  # (vocab, d_model), centred
    directions = W_U[targets]  # (b, num_tokens, d_model): the target's read-out row
    heads = torch.zeros(len(atts), atts[0].num_heads, *tokens.shape)
    rest = model.tok_emb(tokens) + model.positions(tokens.shape[1])  # (b, num_tokens, d_model)
    for layer, att in enumerate(atts):
        for head in range(att.num_heads):
            cols = slice(head * att.head_dim, (head + 1) * att.head_dim)
            out = inputs[att][..., cols] @ att.out_proj.weight[:, cols].T  # (b, T, d_model)
            heads[layer, head] = (out * directions).sum(-1)
        if att.out_proj.bias is not None:
            rest = rest + att.out_proj.bias
    bias = model.out_head.bias - model.out_head.bias.mean()  # (vocab,)
    return {"heads": heads, "rest": (rest * directions).sum(-1) + bias[targets]}

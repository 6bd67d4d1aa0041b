"""QK/OV circuits, composition scores and mean-ablation (attn_course.circuits)."""

from __future__ import annotations

import pytest
import torch

from attn_course.circuits import (
    diagonal_top1,
    head_matrices,
    k_composition_qk_circuit,
    k_composition_scores,
    mean_ablated,
    ov_circuit,
)
from attn_course.model import ModelConfig, TinyTransformer, ablated
from attn_course.training import pretrained


@pytest.fixture(scope="module")
def induction_model():
    return pretrained("induction")


def small_model(seed: int = 0, vocab_size: int = 9) -> TinyTransformer:
    torch.manual_seed(seed)
    cfg = ModelConfig(vocab_size=vocab_size, context_length=8, d_model=8, num_heads=2)
    return TinyTransformer(cfg).eval()


@torch.no_grad()
def test_ov_circuit_is_what_the_head_adds_to_the_logits_of_an_attended_token():
    model = small_model()
    att = model.layers[1]
    for s in range(9):
        v = att.W_value(model.tok_emb.weight[s]).clone()  # (d_model,): every head's value
        v[: att.head_dim] = 0.0  # keep head 1 only
        logits = model.out_head.weight @ (att.out_proj.weight @ v)
        torch.testing.assert_close(ov_circuit(model, 1, 1)[s], logits)


@torch.no_grad()
def test_k_composition_qk_circuit_is_the_score_of_a_key_holding_the_writers_output():
    model = small_model(1)
    reader, writer = model.layers[1], model.layers[0]
    table = k_composition_qk_circuit(model, (1, 0), (0, 1))
    for q in range(9):
        for p in range(9):
            v = writer.W_value(model.tok_emb.weight[p]).clone()
            v[: writer.head_dim] = 0.0  # writer head 1 only
            key_stream = writer.out_proj.weight @ v
            query = reader.W_query(model.tok_emb.weight[q])[: reader.head_dim]  # head 0
            key = reader.W_key(key_stream)[: reader.head_dim]
            assert table[q, p].item() == pytest.approx((query @ key).item(), abs=1e-5)


def test_k_composition_needs_an_earlier_source():
    with pytest.raises(ValueError, match="earlier layer"):
        k_composition_qk_circuit(small_model(), (1, 0), (1, 1))


def test_shipped_induction_heads_copy_and_match_previous_tokens(induction_model):
    for head in range(4):
        assert diagonal_top1(ov_circuit(induction_model, 1, head)) == 1.0
        assert diagonal_top1(k_composition_qk_circuit(induction_model, (1, head), (0, 3))) == 1.0
    untrained = small_model(vocab_size=32)  # not trained: about chance, 1/32 per row
    assert diagonal_top1(ov_circuit(untrained, 1, 0)) < 0.3


def test_diagonal_top1_counts_rows_won_by_their_own_token():
    table = torch.eye(4) + torch.tensor([[0, 0, 0, 0], [2.0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    assert diagonal_top1(table) == 0.75
    with pytest.raises(ValueError, match="square"):
        diagonal_top1(torch.zeros(2, 3))


def set_head(model: TinyTransformer, layer: int, head: int, **matrices: torch.Tensor) -> None:
    att = model.layers[layer]
    rows = slice(head * att.head_dim, (head + 1) * att.head_dim)
    with torch.no_grad():
        for name, value in matrices.items():
            if name == "W_O":
                att.out_proj.weight[:, rows] = value
            else:
                getattr(att, name).weight[rows] = value


def test_k_composition_score_of_known_subspaces():
    model = small_model()  # d_model 8, head_dim 4
    first, last = torch.eye(8)[:4], torch.eye(8)[4:]  # (head_dim, d_model) projections
    set_head(model, 1, 0, W_query=first, W_key=first)  # reads dims 0-3
    set_head(model, 0, 0, W_value=first, W_O=first.T)  # writes dims 0-3: the same subspace
    set_head(model, 0, 1, W_value=last, W_O=last.T)  # writes dims 4-7: unseen by the reader
    scores = k_composition_scores(model)
    # ||P P|| / (||P|| ||P||) = 2 / (2 * 2) for a rank-4 projection P
    assert scores[0, 0].item() == pytest.approx(0.5)
    assert scores[0, 1].item() == pytest.approx(0.0, abs=1e-7)
    assert head_matrices(model, 0, 1)["W_O"].shape == (8, 4)


@torch.no_grad()
def test_mean_ablation_keeps_the_mean_and_removes_the_rest():
    model = small_model()
    tokens = torch.randint(9, (6, 8), generator=torch.Generator().manual_seed(0))
    intact = model(tokens)
    with mean_ablated(model, [(0, 1)], tokens[:1]):  # the mean of one sequence is itself
        torch.testing.assert_close(model(tokens[:1]), intact[:1])
        other = model(tokens[1:])
    assert not torch.allclose(other, intact[1:])
    with ablated(model, [(0, 1)]):
        assert not torch.allclose(model(tokens[1:]), other)  # zero is not the mean
    torch.testing.assert_close(model(tokens), intact)  # restored on exit

"""The tiny transformer: shapes, causality, ablation, positions, saving and loading."""

from __future__ import annotations

import math

import pytest
import torch

from attn_course.blocks import MultiHeadSelfAttention
from attn_course.model import ModelConfig, TinyTransformer, ablated
from attn_course.positions import sinusoidal_positions
from attn_course.training import load_model, save_model

CFG = ModelConfig(vocab_size=11, context_length=9, d_model=16, num_heads=4, num_layers=2)


def model(**overrides) -> TinyTransformer:
    torch.manual_seed(0)
    cfg = ModelConfig(**{**CFG.to_dict(), **overrides})
    return TinyTransformer(cfg).eval()


def tokens(b: int = 3, n: int = 9, seed: int = 1) -> torch.Tensor:
    return torch.randint(CFG.vocab_size, (b, n), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "none"])
def test_shapes_and_attention_weights(positions):
    m = model(positions=positions)
    logits = m(tokens(n=7))
    assert logits.shape == (3, 7, 11)
    w = m.attention_weights()
    assert w.shape == (2, 3, 4, 7, 7)
    assert torch.allclose(w.sum(dim=-1), torch.ones(2, 3, 4, 7))
    assert (w.triu(diagonal=1) == 0).all()


def test_causal_future_tokens_do_not_change_the_past():
    m = model()
    a = tokens()
    b = a.clone()
    b[:, 5:] = (b[:, 5:] + 1) % CFG.vocab_size
    assert torch.allclose(m(a)[:, :5], m(b)[:, :5], atol=1e-6)
    assert not torch.allclose(m(a)[:, 5:], m(b)[:, 5:])


def test_ablating_a_head_equals_zeroing_its_values_and_is_undone():
    m = model()
    x = tokens()
    before = m(x)
    weight = m.layers[1].out_proj.weight.clone()
    with ablated(m, [(1, 2)]):
        ablated_logits = m(x)
    assert torch.equal(m.layers[1].out_proj.weight, weight)
    assert torch.allclose(m(x), before)
    with torch.no_grad():  # an independent route: head 2 of layer 1 gets zero value vectors
        m.layers[1].W_value.weight[8:12] = 0.0
    assert torch.allclose(m(x), ablated_logits, atol=1e-6)
    assert not torch.allclose(ablated_logits, before, atol=1e-3)


def test_ablated_rejects_a_missing_head():
    with pytest.raises(ValueError, match="head=4"), ablated(model(), [(0, 4)]):
        pass


def test_bad_inputs_and_configs():
    m = model()
    with pytest.raises(ValueError, match="context_length=9"):
        m(tokens(n=10))
    with pytest.raises(ValueError, match="dtype long"):
        m(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="run the model"):
        model().attention_weights()
    with pytest.raises(ValueError, match="positions"):
        ModelConfig(vocab_size=5, context_length=4, positions="rotary?")


def test_save_and_load_round_trip(tmp_path):
    m = model(positions="sinusoidal")
    save_model(m, tmp_path / "m.pt")
    loaded = load_model(tmp_path / "m.pt")
    assert loaded.cfg == m.cfg
    assert torch.allclose(loaded(tokens()), m(tokens()))


def test_sinusoidal_table_matches_the_formula():
    table = sinusoidal_positions(50, 8)
    for pos in (0, 1, 7, 49):
        for i in range(4):
            angle = pos / 10000 ** (2 * i / 8)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)


@pytest.mark.parametrize("args", [(0, 8), (4, 7), (4, 0)])
def test_sinusoidal_rejects_bad_sizes(args):
    with pytest.raises(ValueError):
        sinusoidal_positions(*args)


def test_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(0)
    att = MultiHeadSelfAttention(d_model=8, num_heads=2, dropout=0.0)
    x = torch.randn(1, 6, 8)
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    out, _ = att(x)
    out_perm, _ = att(x[:, perm])
    assert torch.allclose(out_perm, out[:, perm], atol=1e-6)
    pe = sinusoidal_positions(6, 8)
    out, _ = att(x + pe)
    out_perm, _ = att(x[:, perm] + pe)
    assert not torch.allclose(out_perm, out[:, perm], atol=1e-3)


def test_loading_leaves_the_global_rng_alone(tmp_path):
    save_model(model(), tmp_path / "m.pt")
    state = torch.random.get_rng_state()
    load_model(tmp_path / "m.pt")
    assert torch.equal(torch.random.get_rng_state(), state)

"""Path patching: the patched path, and only it, reads the other run's input."""

from __future__ import annotations

import pytest
import torch

from attn_course.attention import MultiHeadAttention
from attn_course.generation import GPTConfig, GPTModel
from attn_course.patching import path_patched, recorded_input


def weights_from(att: MultiHeadAttention, x_queries: torch.Tensor, x_keys: torch.Tensor):
    """Causal attention weights with queries from one stream and keys from another."""
    b, n, _ = x_queries.shape
    queries = att.W_query(x_queries).view(b, n, att.num_heads, att.head_dim).transpose(1, 2)
    keys = att.W_key(x_keys).view(b, n, att.num_heads, att.head_dim).transpose(1, 2)
    scores = (queries @ keys.transpose(2, 3)).masked_fill(att.mask[:n, :n], -torch.inf)
    return torch.softmax(scores / att.head_dim**0.5, dim=-1)  # (b, num_heads, n, n)


@pytest.mark.parametrize("path", ["queries", "keys"])
def test_only_the_patched_path_reads_the_source(path):
    torch.manual_seed(0)
    att = MultiHeadAttention(6, 6, 8, 0.0, 2).eval()
    x, source = torch.randn(2, 5, 6), torch.randn(2, 5, 6)
    with torch.no_grad(), path_patched(att, path, source):
        out = att(x)
        patched = att.attn_weights
    x_q, x_k = (source, x) if path == "queries" else (x, source)
    with torch.no_grad():
        expected = weights_from(att, x_q, x_k)
        reversed_ = weights_from(att, x_k, x_q)  # the other path patched instead
        # values still read x: the output is the patched weights applied to x's values
        values = att.W_value(x).view(2, 5, 2, 3).transpose(1, 2)
        context = (expected @ values).transpose(1, 2).reshape(2, 5, 6)
    assert torch.allclose(patched, expected, atol=1e-6)
    assert not torch.allclose(patched, reversed_, atol=1e-3)
    assert torch.allclose(out, att.out_proj(context), atol=1e-6)
    with torch.no_grad():  # the hook is gone after the block
        att(x)
    assert torch.allclose(att.attn_weights, weights_from(att, x, x), atol=1e-6)


def test_recorded_input_is_what_a_blocks_attention_reads():
    torch.manual_seed(0)
    model = GPTModel(GPTConfig(d_model=8, context_length=6, num_heads=2, dropout=0.0,
                               num_layers=2, vocab_size=5)).eval()  # fmt: skip
    tokens = torch.tensor([[1, 2, 3, 4]])
    block = model.trf_blocks[1]
    source = recorded_input(model, block.att, tokens)
    with torch.no_grad():
        x = model.tok_emb(tokens) + model.pos_emb(torch.arange(4))
        expected = block.norm1(model.trf_blocks[0](x))
    assert torch.allclose(source, expected, atol=1e-6)
    # patching a path with the layer's own input changes nothing
    with torch.no_grad():
        plain = model(tokens)
        with path_patched(block.att, "keys", source):
            same = model(tokens)
    assert torch.allclose(plain, same, atol=1e-6)


def test_bad_path_or_shape_is_a_clear_error():
    att = MultiHeadAttention(6, 6, 8, 0.0, 2)
    with pytest.raises(ValueError, match="path"), path_patched(att, "values", torch.zeros(1)):
        pass
    with (
        pytest.raises(ValueError, match="same tokens"),
        path_patched(att, "keys", torch.zeros(1, 3, 6)),
    ):
        att(torch.zeros(1, 4, 6))

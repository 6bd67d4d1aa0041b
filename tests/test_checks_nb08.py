"""Checks of notebook 08: the reference answers pass, deliberately wrong versions fail with a
hint that names the mistake. (test_checks.py runs the reference answers with all the others.)"""

from __future__ import annotations

import pytest
import torch

from attn_course.attention import causal_mask, scaled_dot_product_attention
from attn_course.grading import checks  # noqa: F401  (registers the checks)
from attn_course.grading.registry import CHECKS, CheckFailed
from attn_course.head_scores import head_scores, previous_token_score
from attn_course.positions import apply_rope, rope_attention, sinusoidal_positions


def find_induction_heads(model, tokens, threshold=0.5):
    model(tokens)
    scores = head_scores(model.attention_weights(), tokens)["induction"]
    return [(layer, head) for layer, head in (scores > threshold).nonzero().tolist()]


def zero_head(model, layer, head):
    att = model.layers[layer]
    with torch.no_grad():
        att.out_proj.weight[:, head * att.head_dim : (head + 1) * att.head_dim] = 0.0


NB08_REFERENCE = {
    "previous_token_score": previous_token_score,
    "sinusoidal_positions": sinusoidal_positions,
    "apply_rope": apply_rope,
    "rope_attention": rope_attention,
    "find_induction_heads": find_induction_heads,
    "zero_head": zero_head,
}


def head_cols(model, layer, head):
    att = model.layers[layer]
    return att, slice(head * att.head_dim, (head + 1) * att.head_dim)


def zero_rows(model, layer, head):
    att, cols = head_cols(model, layer, head)
    att.out_proj.weight.data[cols] = 0.0


def zero_next_head(model, layer, head):
    att, _ = head_cols(model, layer, head)
    zero_head(model, layer, (head + 1) % att.num_heads)


def zero_head_with_grad(model, layer, head):
    att, cols = head_cols(model, layer, head)
    att.out_proj.weight[:, cols] = 0.0  # outside torch.no_grad(): a leaf that requires grad


def zero_queries(model, layer, head):
    att, cols = head_cols(model, layer, head)
    att.W_query.weight.data[cols] = 0.0


def zero_keys(model, layer, head):
    att, cols = head_cols(model, layer, head)
    att.W_key.weight.data[cols] = 0.0


def zero_by_hook(model, layer, head):
    """Right outputs in the notebook, but a hook is not part of the model's state."""
    att, cols = head_cols(model, layer, head)

    def silence(module, inputs):
        x = inputs[0].clone()
        x[..., cols] = 0.0
        return (x,)

    att.out_proj.register_forward_pre_hook(silence)


def zero_by_identity(model, layer, head):
    """Replaces out_proj: the model no longer has the lecture's parameters."""
    model.layers[layer].out_proj = torch.nn.Identity()


def sinusoidal_swapped(num_tokens, d_model):
    table = sinusoidal_positions(num_tokens, d_model)
    return torch.stack([table[:, 1::2], table[:, 0::2]], dim=-1).reshape(num_tokens, d_model)


def sinusoidal_blocks(num_tokens, d_model):
    table = sinusoidal_positions(num_tokens, d_model)
    return torch.cat([table[:, 0::2], table[:, 1::2]], dim=1)


def sinusoidal_no_two(num_tokens, d_model):
    pos = torch.arange(num_tokens, dtype=torch.float32)[:, None]
    angles = pos / 10000.0 ** (torch.arange(d_model // 2) / d_model)
    return torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(num_tokens, d_model)


def rope_turned(x, angles):
    x0, x1 = x[..., 0::2], x[..., 1::2]
    pairs = [x0 * angles.cos() - x1 * angles.sin(), x0 * angles.sin() + x1 * angles.cos()]
    return torch.stack(pairs, dim=-1).flatten(-2)


def rope_positions(x, start):
    return torch.arange(start, start + x.shape[-2], dtype=torch.float32)[:, None]


def rope_frequencies(x, base, two=2):
    return base ** (-two * torch.arange(x.shape[-1] // 2, dtype=torch.float32) / x.shape[-1])


def rope_halves(x, start=0, base=10000.0):
    """Pairs dimension i with i + head_dim/2 (GPT-NeoX layout), not 2i with 2i + 1."""
    angles = rope_positions(x, start) * rope_frequencies(x, base)
    x0, x1 = x.chunk(2, dim=-1)
    return torch.cat(
        [x0 * angles.cos() - x1 * angles.sin(), x0 * angles.sin() + x1 * angles.cos()], -1
    )


def rope_base_1000(x, start=0, base=10000.0):
    return rope_turned(x, rope_positions(x, start) * rope_frequencies(x, 1000.0))


def rope_exponent_without_2(x, start=0, base=10000.0):
    return rope_turned(x, rope_positions(x, start) * rope_frequencies(x, base, two=1))


def rope_from_position_0(x, start=0, base=10000.0):
    return rope_turned(x, rope_positions(x, 0) * rope_frequencies(x, base))


def rope_from_position_1(x, start=0, base=10000.0):
    return rope_turned(x, rope_positions(x, start + 1) * rope_frequencies(x, base))


def rope_backwards(x, start=0, base=10000.0):
    return rope_turned(x, -rope_positions(x, start) * rope_frequencies(x, base))


def rope_rotating_values(queries, keys, values):
    mask = causal_mask(queries.shape[-2])
    rotated = (apply_rope(queries), apply_rope(keys), apply_rope(values))
    return scaled_dot_product_attention(*rotated, mask)[0]


def rope_queries_only(queries, keys, values):
    return scaled_dot_product_attention(
        apply_rope(queries), keys, values, causal_mask(keys.shape[-2])
    )[0]


def rope_without_mask(queries, keys, values):
    return scaled_dot_product_attention(apply_rope(queries), apply_rope(keys), values)[0]


def previous_diagonal(w):
    return w.diagonal(dim1=-2, dim2=-1)[:, :, 1:].mean(dim=(0, 2))


def previous_next(w):
    return w.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=(0, 2))


def previous_all_rows(w):
    return w.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1).mean(dim=0) / w.shape[-1]


def previous_per_sequence(w):
    return w.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1)  # (b, num_heads): no batch mean


def find_previous_token_heads(model, tokens):
    model(tokens)
    scores = head_scores(model.attention_weights(), tokens)["previous-token"]
    return (scores > 0.5).nonzero().tolist()


def find_one_based(model, tokens):
    return [(layer + 1, head + 1) for layer, head in find_induction_heads(model, tokens)]


def find_all_of_layer_1(model, tokens):
    return [(1, head) for head in range(model.cfg.num_heads)]


def find_without_running(model, tokens):
    scores = head_scores(model.attention_weights(), tokens)["induction"]  # stale weights
    return (scores > 0.5).nonzero().tolist()


def find_in_first_sequence(model, tokens):
    return find_induction_heads(model, tokens[:1])


def find_head_first(model, tokens):
    return [(head, layer) for layer, head in find_induction_heads(model, tokens)]


def find_in_layer_1_only(model, tokens):
    return [(1, head) for layer, head in find_induction_heads(model, tokens) if layer == 1]


def find_hard_coded(model, tokens):
    return [(1, 0), (1, 1), (1, 2), (1, 3)]


WRONG_08 = [  # (check id, wrong object, words the hint must contain)
    ("previous_token_score", previous_diagonal, ("itself",)),
    ("previous_token_score", previous_next, ("future",)),
    ("previous_token_score", previous_all_rows, ("row 0",)),
    ("previous_token_score", previous_per_sequence, ("shape",)),
    ("sinusoidal_positions", sinusoidal_swapped, ("swapped",)),
    ("sinusoidal_positions", sinusoidal_blocks, ("interleave",)),
    ("sinusoidal_positions", sinusoidal_no_two, ("2i",)),
    ("apply_rope", rope_halves, ("2i + 1", "rotate_half")),
    ("apply_rope", rope_base_1000, ("base",)),
    ("apply_rope", rope_exponent_without_2, ("-2i / head_dim",)),
    ("apply_rope", rope_from_position_0, ("start + k",)),
    ("apply_rope", rope_from_position_1, ("off by one",)),
    ("apply_rope", rope_backwards, ("wrong way",)),
    ("rope_attention", rope_rotating_values, ("values too",)),
    ("rope_attention", rope_queries_only, ("keys too",)),
    ("rope_attention", rope_without_mask, ("causal",)),
    ("find_induction_heads", find_previous_token_heads, ("previous-token",)),
    ("find_induction_heads", find_one_based, ("from 0",)),
    ("find_induction_heads", find_all_of_layer_1, ("0.5",)),
    ("find_induction_heads", find_without_running, ("earlier run", "model(tokens)")),
    ("find_induction_heads", find_in_first_sequence, ("first sequence", "whole batch")),
    ("find_induction_heads", find_head_first, ("layer first",)),
    ("find_induction_heads", find_in_layer_1_only, ("0.5",)),
    ("find_induction_heads", find_hard_coded, ("0.5",)),
    ("zero_head", zero_rows, ("rows",)),
    ("zero_head", zero_next_head, ("next head",)),
    ("zero_head", zero_queries, ("queries",)),
    ("zero_head", zero_keys, ("its keys",)),
    ("zero_head", zero_by_hook, ("forward hook",)),
    ("zero_head", zero_by_identity, ("nn.Identity", "do not replace")),
    ("zero_head", zero_head_with_grad, ("no_grad",)),
]


@pytest.mark.parametrize("check_id, obj, words", WRONG_08, ids=[w[1].__name__ for w in WRONG_08])
def test_wrong_version_fails_with_its_hint(check_id, obj, words):
    with pytest.raises(CheckFailed) as failure:
        CHECKS[check_id].func(obj)
    for word in words:
        assert word.lower() in str(failure.value).lower(), str(failure.value)

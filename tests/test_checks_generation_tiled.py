"""The checks of notebooks 09 and 10 catch the classic mistakes, each with a fitting hint.

Every wrong version below is what a learner could write: the reference with ONE mistake.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_checks import verdict

from attn_course import attention, gqa, tiled
from attn_course.attention import merge_heads, scaled_dot_product_attention, split_heads


def mask_window_plus_one(num_tokens, window):
    return attention.sliding_window_mask(num_tokens, window + 1)


def mask_not_causal(num_tokens, window):
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril(diagonal=-window)


def mask_inverted(num_tokens, window):
    return ~attention.sliding_window_mask(num_tokens, window)


def repeat_tiled(x, group_size):
    return x.repeat(1, group_size, 1, 1)


def bytes_without_values(num_layers, num_kv_groups, head_dim, num_tokens, batch_size, nbytes):
    return num_layers * num_kv_groups * head_dim * num_tokens * batch_size * nbytes


def bytes_one_layer(num_layers, num_kv_groups, head_dim, num_tokens, batch_size, nbytes):
    return 2 * num_kv_groups * head_dim * num_tokens * batch_size * nbytes


def bytes_in_numbers(num_layers, num_kv_groups, head_dim, num_tokens, batch_size, nbytes):
    return 2 * num_layers * num_kv_groups * head_dim * num_tokens * batch_size


def attend_cached_with(mistake):
    """A learner's attend_cached with ``mistake``."""

    def attend(att, x, cache, layer):
        num_new = x.shape[1]
        start = cache.num_cached(layer)
        num_kv_groups = getattr(att, "num_kv_groups", att.num_heads)
        queries = split_heads(att.W_query(x), att.num_heads)
        keys = split_heads(att.W_key(x), num_kv_groups)
        values = split_heads(att.W_value(x), num_kv_groups)
        group_size = att.num_heads // num_kv_groups
        if mistake == "cache_repeated":  # stores num_heads heads: GQA saves nothing
            keys, values = gqa.repeat_kv(keys, group_size), gqa.repeat_kv(values, group_size)
            group_size = 1
        if mistake == "new_keys_only":
            cache.update(layer, keys, values)
            mask = att.mask[start : start + num_new, start : start + num_new]
        else:
            keys, values = cache.update(0 if mistake == "layer_0" else layer, keys, values)
            rows = slice(0, num_new) if mistake == "stale_offset" else slice(start, start + num_new)
            mask = att.mask[rows, : start + num_new]
        keys, values = gqa.repeat_kv(keys, group_size), gqa.repeat_kv(values, group_size)
        context, _ = scaled_dot_product_attention(queries, keys, values, mask)
        return att.out_proj(merge_heads(context))

    return attend


def softmax_update_no_rescale(m, s, block):
    m_new = max(m, float(np.max(block)))
    return m_new, s + float(np.sum(np.exp(block - m_new)))


def softmax_update_old_max(m, s, block):
    m_new = max(m, float(np.max(block)))
    return m_new, s * np.exp(m - m_new) + float(np.sum(np.exp(block - m)))


def tile_with(mistake):
    """A learner's attention_tile with ``mistake``."""

    def tile(queries, keys, values, m, s, acc, mask=None):
        scores = queries @ keys.transpose(-2, -1)
        if mask is not None and mistake != "mask_ignored":
            scores = scores.masked_fill(mask, -torch.inf)
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        p = torch.exp(scores - m_new)
        rescale = torch.exp(m - m_new)
        if mistake == "in_place":
            acc *= rescale
            return m_new, s * rescale + p.sum(dim=-1, keepdim=True), acc + p @ values
        s_new = (s if mistake == "sum_not_rescaled" else s * rescale) + p.sum(-1, keepdim=True)
        acc_new = (acc if mistake == "acc_not_rescaled" else acc * rescale) + p @ values
        return m_new, s_new, acc_new

    return tile


def tiled_with(mistake):
    """A learner's tiled_attention with ``mistake``."""

    def attend(queries, keys, values, causal=False, block_size=64):
        num_queries, num_keys = queries.shape[-2], keys.shape[-2]
        offset = 0 if mistake == "top_left" else num_keys - num_queries
        if mistake == "full_matrix":
            mask = torch.ones(num_queries, num_keys, dtype=torch.bool).triu(1 + offset)
            mask = mask if causal else None
            return scaled_dot_product_attention(queries, keys, values, mask)[0]
        queries = queries / keys.shape[-1] ** 0.5
        context = torch.zeros(*queries.shape[:-1], values.shape[-1])
        q_starts = range(0, num_queries, block_size)
        if mistake == "tail_dropped":  # only whole blocks
            q_starts = range(0, num_queries - block_size + 1, block_size)
        for q_start in q_starts:
            q_end = min(q_start + block_size, num_queries)
            q_block = queries[..., q_start:q_end, :]
            m = torch.full((*q_block.shape[:-1], 1), -torch.inf)
            s, acc = torch.zeros(m.shape), torch.zeros(*q_block.shape[:-1], values.shape[-1])
            k_stop = num_keys
            if causal:
                k_stop = offset + (q_start if mistake == "diagonal_skipped" else q_end)
            for k_start in range(0, k_stop, block_size):
                k_end = min(k_start + block_size, num_keys)
                mask = None
                if causal and mistake != "diagonal_unmasked":
                    rows = offset + torch.arange(q_start, q_end)[:, None]
                    mask = torch.arange(k_start, k_end)[None, :] > rows
                kb, vb = keys[..., k_start:k_end, :], values[..., k_start:k_end, :]
                m, s, acc = tiled.attention_tile(q_block, kb, vb, m, s, acc, mask)
            context[..., q_start:q_end, :] = acc / s
        return context

    return attend


WRONG = [  # (check id, wrong object, words its hint must contain)
    ("sliding_window_mask", mask_window_plus_one, ("off by one", "window")),
    ("sliding_window_mask", mask_not_causal, ("future",)),
    ("sliding_window_mask", mask_inverted, ("inverted",)),
    ("sliding_window_mask", lambda n, w: attention.causal_mask(n), ("wrong values",)),
    ("repeat_kv", repeat_tiled, ("repeat_interleave", "h // group_size")),
    ("kv_cache_bytes", bytes_without_values, ("keys and values",)),
    ("kv_cache_bytes", bytes_one_layer, ("num_layers",)),
    ("kv_cache_bytes", bytes_in_numbers, ("bytes_per_element",)),
    ("attend_cached", attend_cached_with("stale_offset"), ("stale position offset",)),
    ("attend_cached", attend_cached_with("new_keys_only"), ("all the keys",)),
    ("attend_cached", attend_cached_with("layer_0"), ("wrong layer",)),
    ("attend_cached", attend_cached_with("cache_repeated"), ("before repeat_kv",)),
    ("online_softmax_update", softmax_update_no_rescale, ("rescale the running sum",)),
    ("online_softmax_update", softmax_update_old_max, ("new max",)),
    ("attention_tile", tile_with("acc_not_rescaled"), ("rescale acc",)),
    ("attention_tile", tile_with("sum_not_rescaled"), ("rescale the running sum",)),
    ("attention_tile", tile_with("mask_ignored"), ("mask is not applied",)),
    ("attention_tile", tile_with("in_place"), ("in place",)),
    ("tiled_attention", tiled_with("diagonal_skipped"), ("causal block skipped wrongly",)),
    ("tiled_attention", tiled_with("diagonal_unmasked"), ("not masked",)),
    ("tiled_attention", tiled_with("tail_dropped"), ("wrong values",)),
    ("tiled_attention", tiled_with("top_left"), ("LAST positions",)),
    ("tiled_attention", tiled_with("full_matrix"), ("one (block_size, block_size) tile",)),
]


@pytest.mark.parametrize(
    ("check_id", "wrong", "words"),
    WRONG,
    ids=[f"{c}-{getattr(w, '__qualname__', w)}-{i}" for i, (c, w, _) in enumerate(WRONG)],
)
def test_wrong_version_fails_with_fitting_hint(check_id, wrong, words):
    hint = verdict(check_id, wrong)
    assert hint != "passed"
    for word in words:
        assert word.lower() in hint.lower(), hint

"""Checks of 09_generation_kv_cache: sliding window, repeat_kv, cache size, a cached step."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ....attention import (
    MultiHeadAttention,
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    sliding_window_mask,
    split_heads,
)
from ....generation import KVCache, attend_cached
from ....gqa import GroupedQueryAttention, kv_cache_bytes, repeat_kv
from ..expect import (
    call_pure,
    close,
    expect_answer,
    expect_close,
    expect_function_gradients,
    randn,
    rng,
    seeded,
)
from ..registry import CheckFailed, register

NOTEBOOK = "09_generation_kv_cache"


@register("sliding_window_mask", NOTEBOOK, time_limit=5.0)
def check_sliding_window_mask(func: Callable[..., object]) -> str:
    """``func(num_tokens, window)`` -> bool (num_tokens, num_tokens), True = hidden."""
    sizes = rng(290).integers(8, 40)  # one salted size, with a window inside it
    for num_tokens, window in (
        (6, 3), (9, 4), (5, 1), (4, 10), (1, 1), (7, 2),
        (int(sizes), int(rng(291).integers(2, sizes))),
    ):  # fmt: skip
        want = sliding_window_mask(num_tokens, window)
        mistakes = {
            "window_one_too_many": sliding_window_mask(num_tokens, window + 1),
            "window_not_causal": want & ~causal_mask(num_tokens),
            "window_inverted": ~want,
        }
        if window > 1:
            mistakes["window_one_too_few"] = sliding_window_mask(num_tokens, window - 1)
        expect_close(
            call_pure(func, num_tokens, window),
            want,
            f"sliding_window_mask({num_tokens}, {window})",
            mistakes,
        )
    return "each query sees itself and the window - 1 tokens before it, never the future."


@register("repeat_kv", NOTEBOOK, time_limit=5.0)
def check_repeat_kv(func: Callable[..., object]) -> str:
    """``func(x, group_size)``: (b, kv_heads, n, head_dim) -> (b, kv_heads * group_size, ...)."""
    for i, (shape, group_size) in enumerate(
        [((2, 3, 5, 4), 2), ((1, 1, 3, 2), 4), ((1, 2, 1, 3), 1), ((2, 4, 3, 2), 3)]
    ):
        x = randn(*shape, seed=300 + i)
        expect_close(
            call_pure(func, x, group_size),
            repeat_kv(x, group_size),
            f"repeat_kv(x of shape {shape}, group_size={group_size})",
            {"repeat_kv_tiled": x.repeat(1, group_size, 1, 1)},
        )
        expect_function_gradients(
            func, (x, group_size), repeat_kv, f"repeat_kv(x of shape {shape})", seed=300 + i
        )
    return "every key/value head is repeated for the query heads of its group."


@register("kv_cache_bytes", NOTEBOOK, time_limit=5.0)
def check_kv_cache_bytes(func: Callable[..., object]) -> str:
    """``func(num_layers, num_kv_groups, head_dim, num_tokens, batch_size, bytes_per_element)``."""
    # The first set tells the mistakes apart: bytes 4, batch 5, layers 12 and the factor 2.
    own = tuple(int(n) for n in rng(295).integers((1, 1, 8, 1, 1, 1), (48, 16, 256, 4096, 16, 8)))
    for args in ((12, 4, 64, 100, 5, 4), (32, 8, 128, 1000, 3, 2), (1, 1, 1, 1, 1, 1), own):
        want = kv_cache_bytes(*args)
        num_layers, _, _, _, batch_size, bytes_per_element = args
        hints = {
            want // bytes_per_element: "multiply by bytes_per_element: the result is in bytes, "
            "not in numbers.",
            want // batch_size: "every sequence of the batch has its own cache: multiply by "
            "batch_size.",
            want // num_layers: "every layer has its own keys and values: multiply by num_layers.",
            want // 2: "the cache holds keys AND values: one of each per kv head, layer and "
            "token, a factor 2.",
        }
        expect_answer(
            call_pure(func, *args), want, f"kv_cache_bytes{args}", hints if want > 1 else {}
        )
    return "2 (key and value) x layers x kv heads x head_dim x tokens x batch x bytes."


@torch.no_grad()
def _cached_step_with(
    mistake: str,
    att: MultiHeadAttention | GroupedQueryAttention,
    x: torch.Tensor,
    cache: KVCache,
    layer: int,
) -> torch.Tensor:
    """The output of one cached step with ``mistake`` built in (``cache`` is not changed)."""
    start, num_new = cache.num_cached(layer), x.shape[1]
    num_kv_groups = getattr(att, "num_kv_groups", att.num_heads)
    queries = split_heads(att.W_query(x), att.num_heads)  # (b, num_heads, num_new, head_dim)
    keys = split_heads(att.W_key(x), num_kv_groups)  # (b, num_kv_groups, num_new, head_dim)
    values = split_heads(att.W_value(x), num_kv_groups)  # (b, num_kv_groups, num_new, head_dim)
    mask: torch.Tensor | None
    if mistake == "cache_new_keys_only":
        mask = att.mask[start : start + num_new, start : start + num_new]
    else:
        cached_keys, cached_values = cache.keys[layer], cache.values[layer]
        if cached_keys is not None and cached_values is not None:
            keys = torch.cat([cached_keys, keys], dim=2)  # (b, kv, start + num_new, hd)
            values = torch.cat([cached_values, values], dim=2)
        stale = mistake == "cache_stale_offset"
        rows = slice(0, num_new) if stale else slice(start, start + num_new)
        mask = None if mistake == "cache_no_mask" else att.mask[rows, : start + num_new]
    group_size = att.num_heads // num_kv_groups
    if mistake == "repeat_kv_tiled":  # x.repeat: the whole set of heads, tiled
        keys, values = keys.repeat(1, group_size, 1, 1), values.repeat(1, group_size, 1, 1)
        group_size = 1
    context_vec, _ = scaled_dot_product_attention(
        queries, repeat_kv(keys, group_size), repeat_kv(values, group_size), mask
    )
    return att.out_proj(merge_heads(context_vec))  # (b, num_new, d_out)


@register("attend_cached", NOTEBOOK, time_limit=10.0)
def check_attend_cached(func: Callable[..., object]) -> str:
    """``func(att, x, cache, layer)``: the new tokens' attention over cached + new tokens."""
    layer = 1  # the cache has 2 layers: the learner must use the one asked for
    for config, make in (
        (
            "MultiHeadAttention(16, 16, 12, 0.0, num_heads=4)",
            lambda: MultiHeadAttention(16, 16, 12, 0.0, 4),
        ),
        (
            "GroupedQueryAttention(16, 16, 12, 0.0, num_heads=4, num_kv_groups=2)",
            lambda: GroupedQueryAttention(16, 16, 12, 0.0, 4, 2),
        ),
    ):
        with seeded(310):
            att = make().eval()
        mine, ref = KVCache(2), KVCache(2)
        for step, num_new in enumerate((5, 1, 3, 1)):
            x = randn(2, num_new, 16, seed=320 + step)
            what = (
                f"for {config}, step {step + 1} ({ref.num_cached(layer)} cached tokens, "
                f"{num_new} new)"
            )
            mistakes = {
                name: _cached_step_with(name, att, x, ref, layer)
                for name in (
                    "cache_stale_offset",
                    "cache_no_mask",
                    "cache_new_keys_only",
                    "repeat_kv_tiled",
                )
            }
            with torch.no_grad():
                want = attend_cached(att, x, ref, layer)
            got = call_pure(func, att, x, mine, layer)  # fills ``mine``, wherever func runs
            expect_close(got, want, f"the output {what}", mistakes)
            _expect_cache(mine, ref, layer, what)
    return "one cached step gives the module's outputs and extends the cache of its layer."


def _expect_cache(mine: object, ref: KVCache, layer: int, what: str) -> None:
    """The learner's cache holds the reference's keys and values, in the right layer."""
    if not isinstance(mine, KVCache) or mine.keys[1 - layer] is not None:
        raise CheckFailed(
            f"{what}: the keys went into the wrong layer: use cache.update(layer, ...)."
        )
    got, want, want_values = mine.keys[layer], ref.keys[layer], ref.values[layer]
    assert want is not None and want_values is not None  # the reference step filled them
    if got is None:
        raise CheckFailed(f"{what}: the cache is empty: call cache.update(layer, keys, values).")
    if got.shape != want.shape:
        hint = (
            " Store the key/value heads BEFORE repeat_kv: holding only num_kv_groups heads is "
            "what GQA saves."
            if got.shape[1] != want.shape[1]
            else ""
        )
        raise CheckFailed(
            f"{what}: the cached keys have shape {tuple(got.shape)}, expected "
            f"{tuple(want.shape)}.{hint}"
        )
    if not (close(got, want) and close(mine.values[layer], want_values)):
        raise CheckFailed(
            f"{what}: the cached keys or values are wrong: append the new keys (W_key) and "
            "values (W_value), split into heads, before attending."
        )

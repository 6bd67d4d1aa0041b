"""Grouped-query attention (GQA) and what it saves: the key/value cache of published models.

Multi-head attention gives every query head its own key and value head. GQA lets a group of
``num_heads // num_kv_groups`` query heads share one key/value head: ``num_kv_groups ==
num_heads`` is multi-head attention, ``num_kv_groups == 1`` is multi-query attention (MQA).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads
from .validation import validate_input

__all__ = [
    "validate_kv_groups",
    "repeat_kv",
    "GroupedQueryAttention",
    "attention_parameters",
    "kv_cache_bytes",
    "PublishedConfig",
    "PUBLISHED_CONFIGS",
]


def validate_kv_groups(num_heads: int, num_kv_groups: int) -> None:
    """``num_heads`` query heads must split evenly into ``num_kv_groups`` groups."""
    if num_kv_groups < 1 or num_heads % num_kv_groups != 0:
        choices = ", ".join(str(g) for g in range(1, num_heads + 1) if num_heads % g == 0)
        raise ValueError(
            f"num_heads={num_heads} is not divisible by num_kv_groups={num_kv_groups}: every "
            f"key/value head serves the same number of query heads. Choose num_kv_groups in "
            f"{{{choices}}}."
        )


def repeat_kv(x: torch.Tensor, group_size: int) -> torch.Tensor:
    """(b, num_kv_groups, num_tokens, head_dim) -> (b, num_kv_groups * group_size, ...).

    Each key/value head is repeated for the ``group_size`` query heads of its group, next to
    each other: query head ``h`` reads key/value head ``h // group_size``.
    """
    return x.repeat_interleave(group_size, dim=1)  # (b, num_heads, num_tokens, head_dim)


class GroupedQueryAttention(MultiHeadAttention):
    """Causal multi-head attention whose query heads share ``num_kv_groups`` key/value heads.

    A ``MultiHeadAttention`` whose ``W_key`` and ``W_value`` map ``d_in`` to only
    ``num_kv_groups * head_dim``: the same constructor plus ``num_kv_groups``, the same
    submodule names, and the same ``state_dict`` when ``num_kv_groups == num_heads`` (then both
    compute the same thing).
    """

    mask: torch.Tensor  # a buffer, registered in __init__

    def __init__(
        self,
        d_in: int,
        d_out: int,
        context_length: int,
        dropout: float,
        num_heads: int,
        num_kv_groups: int,
        qkv_bias: bool = False,
    ):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        validate_kv_groups(num_heads, num_kv_groups)
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups
        kv_width = num_kv_groups * self.head_dim  # one key and one value head per group
        self.W_key = nn.Linear(d_in, kv_width, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, kv_width, bias=qkv_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        validate_input(x, self.d_in, self.context_length)
        num_tokens = x.shape[1]
        # (b, num_heads, num_tokens, head_dim)
        queries = split_heads(self.W_query(x), self.num_heads)
        # (b, num_kv_groups, num_tokens, head_dim): one key/value head per group
        keys = split_heads(self.W_key(x), self.num_kv_groups)
        values = split_heads(self.W_value(x), self.num_kv_groups)
        keys = repeat_kv(keys, self.group_size)  # (b, num_heads, num_tokens, head_dim)
        values = repeat_kv(values, self.group_size)  # (b, num_heads, num_tokens, head_dim)
        context_vec, attn_weights = scaled_dot_product_attention(
            queries, keys, values, self.mask[:num_tokens, :num_tokens], self.dropout
        )  # (b, num_heads, num_tokens, head_dim), (b, num_heads, num_tokens, num_tokens)
        self.attn_weights = attn_weights.detach()
        return self.out_proj(merge_heads(context_vec))  # (b, num_tokens, d_out)


def attention_parameters(d_model: int, num_heads: int, num_kv_groups: int, bias: bool) -> int:
    """Parameters of ``GroupedQueryAttention(d_model, d_model, ..., qkv_bias=bias)``.

    W_query and out_proj are (d_model x d_model), W_key and W_value (d_model x kv width);
    out_proj always has a bias, the other three only with ``qkv_bias``.
    """
    kv_width = num_kv_groups * (d_model // num_heads)
    weights = 2 * d_model * d_model + 2 * d_model * kv_width  # query + out_proj, key + value
    return weights + d_model + (d_model + 2 * kv_width if bias else 0)


def kv_cache_bytes(
    num_layers: int,
    num_kv_groups: int,
    head_dim: int,
    num_tokens: int = 1,
    batch_size: int = 1,
    bytes_per_element: int = 2,
) -> int:
    """Bytes of the key/value cache: a key AND a value vector per kv head, layer and token."""
    return 2 * num_layers * num_kv_groups * head_dim * num_tokens * batch_size * bytes_per_element


@dataclass(frozen=True)
class PublishedConfig:
    """The attention sizes of a published model (from its paper or released config file)."""

    name: str
    num_layers: int
    d_model: int
    num_heads: int
    num_kv_groups: int
    context_length: int
    qkv_bias: bool = False
    sliding_window: int | None = None

    @property
    def head_dim(self) -> int:
        return self.d_model // self.num_heads


# Sizes from the models' config.json files on the Hugging Face Hub.
PUBLISHED_CONFIGS: tuple[PublishedConfig, ...] = (
    PublishedConfig("GPT-2 small", 12, 768, 12, 12, 1024, qkv_bias=True),
    PublishedConfig("Llama-2-7B", 32, 4096, 32, 32, 4096),
    PublishedConfig("Llama-3-8B", 32, 4096, 32, 8, 8192),
    PublishedConfig("Mistral-7B-v0.1", 32, 4096, 32, 8, 32768, sliding_window=4096),
    PublishedConfig("Falcon-7B (MQA)", 32, 4544, 71, 1, 2048),
)

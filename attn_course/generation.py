"""Autoregressive generation with the course's causal blocks, with and without a KV cache.

``GPTModel`` is a GPT-2 style stack (token + position embeddings, ``TransformerBlock``s, a
final norm, an output head) with the submodule names of LLMs-from-scratch, so a trained
model's ``state_dict`` loads into it. Its sizes are one ``GPTConfig``: a ``BlockConfig`` plus
``vocab_size`` and ``num_kv_groups``. ``generate`` appends tokens chosen greedily or sampled
(``attn_course.sampling``) and can reuse the keys and values of earlier tokens from a
``KVCache``; ``beam_search`` keeps the most likely few continuations instead of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from torch import nn

from .attention import MultiHeadAttention, merge_heads, scaled_dot_product_attention, split_heads
from .blocks import BlockConfig, LayerNorm, TransformerBlock
from .gqa import GroupedQueryAttention, repeat_kv, validate_kv_groups
from .sampling import sample_next, validate_sampling

__all__ = [
    "GPTConfig",
    "GPTModel",
    "KVCache",
    "attend_cached",
    "generate",
    "positions_processed",
    "beam_search",
]


@dataclass(frozen=True)
class GPTConfig(BlockConfig):
    """A whole ``GPTModel``: its blocks' sizes, ``vocab_size``, and optionally ``num_kv_groups``
    (None: multi-head attention; otherwise every block's attention is grouped-query)."""

    vocab_size: int = 50257
    num_kv_groups: int | None = None

    def __post_init__(self) -> None:
        if self.vocab_size < 2 or self.num_layers < 1:
            raise ValueError(
                f"a GPTModel needs vocab_size >= 2 and num_layers >= 1, got "
                f"vocab_size={self.vocab_size} and num_layers={self.num_layers}."
            )
        if self.num_kv_groups is not None:
            validate_kv_groups(self.num_heads, self.num_kv_groups)

    @classmethod
    def from_block(
        cls, block: BlockConfig, vocab_size: int, num_kv_groups: int | None = None
    ) -> GPTConfig:
        """A model of ``block``'s sizes reading ``vocab_size`` tokens."""
        return cls(**asdict(block), vocab_size=vocab_size, num_kv_groups=num_kv_groups)

    def to_dict(self) -> dict:
        return asdict(self)


class KVCache:
    """The keys and values every layer has computed so far, one tensor pair per layer.

    ``keys[layer]`` and ``values[layer]`` are (b, num_kv_groups, num_cached, head_dim), or
    None before the first token.
    """

    def __init__(self, num_layers: int):
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers

    def num_cached(self, layer: int) -> int:
        """How many tokens ``layer`` holds: the position of the next new token."""
        keys = self.keys[layer]
        return 0 if keys is None else keys.shape[2]

    def update(
        self, layer: int, keys: torch.Tensor, values: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new tokens' keys and values; return all of them (cached + new)."""
        cached_keys, cached_values = self.keys[layer], self.values[layer]
        if cached_keys is not None and cached_values is not None:
            # -> (b, num_kv_groups, num_cached + num_new, head_dim)
            keys = torch.cat([cached_keys, keys], dim=2)
            values = torch.cat([cached_values, values], dim=2)
        self.keys[layer], self.values[layer] = keys, values
        return keys, values

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep the batch rows ``rows`` (b_new,) of every layer, in that order: in beam search,
        new row ``i`` continues the sequence of old row ``rows[i]``, so it needs its keys."""
        for layer, (keys, values) in enumerate(zip(self.keys, self.values, strict=True)):
            if keys is not None and values is not None:
                self.keys[layer] = keys[rows]  # (b_new, num_kv_groups, num_cached, head_dim)
                self.values[layer] = values[rows]  # (b_new, num_kv_groups, num_cached, head_dim)

    def nbytes(self) -> int:
        """Bytes of memory the cached tensors occupy (their storage, as allocated)."""
        stored = [t for t in self.keys + self.values if t is not None]
        return sum(t.untyped_storage().nbytes() for t in stored)


def attend_cached(
    att: MultiHeadAttention | GroupedQueryAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    """Causal attention of the NEW tokens ``x`` (b, num_new, d_in) over cached + new tokens.

    ``att`` is a ``MultiHeadAttention`` or ``GroupedQueryAttention``: its weights are used,
    its forward is not. The new keys and values are appended to ``cache``.
    """
    num_new = x.shape[1]
    start = cache.num_cached(layer)  # position of the first new token
    if start + num_new > att.context_length:
        raise ValueError(
            f"{start} cached + {num_new} new tokens exceed context_length={att.context_length}."
        )
    num_kv_groups = getattr(att, "num_kv_groups", att.num_heads)
    queries = split_heads(att.W_query(x), att.num_heads)  # (b, num_heads, num_new, head_dim)
    keys = split_heads(att.W_key(x), num_kv_groups)  # (b, num_kv_groups, num_new, head_dim)
    values = split_heads(att.W_value(x), num_kv_groups)  # (b, num_kv_groups, num_new, head_dim)
    keys, values = cache.update(layer, keys, values)  # (b, num_kv_groups, start+num_new, head_dim)
    group_size = att.num_heads // num_kv_groups
    keys = repeat_kv(keys, group_size)  # (b, num_heads, start + num_new, head_dim)
    values = repeat_kv(values, group_size)  # (b, num_heads, start + num_new, head_dim)
    # The new queries are rows start .. start + num_new - 1 of the causal mask.
    mask = att.mask[start : start + num_new, : start + num_new]
    context_vec, _ = scaled_dot_product_attention(queries, keys, values, mask)
    return att.out_proj(merge_heads(context_vec))  # (b, num_new, d_out)


class GPTModel(nn.Module):
    """Token and position embeddings, ``cfg.num_layers`` pre-LN ``TransformerBlock``s, a head.

    ``GPTModel(GPTConfig(...))``; from a ``BlockConfig``, ``GPTConfig.from_block(block,
    vocab_size)``. With ``cfg.num_kv_groups`` every block's attention is a
    ``GroupedQueryAttention`` of the same size. ``forward(idx, cache)`` with a ``KVCache``
    reads only the NEW tokens ``idx``: their positions continue after the cached ones.
    """

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise TypeError(
                f"GPTModel takes a GPTConfig (a block's sizes, vocab_size, num_kv_groups), got "
                f"{type(cfg).__name__}; from a BlockConfig: "
                "GPTConfig.from_block(block, vocab_size)."
            )
        self.cfg: GPTConfig = cfg
        num_kv_groups = cfg.num_kv_groups
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.context_length, cfg.d_model)
        self.drop_emb = nn.Dropout(cfg.dropout)
        self.trf_blocks = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.num_layers)])
        if num_kv_groups is not None:
            for block in self.trf_blocks:
                block.att = GroupedQueryAttention(
                    cfg.d_model,
                    cfg.d_model,
                    cfg.context_length,
                    cfg.dropout,
                    cfg.num_heads,
                    num_kv_groups,
                    cfg.qkv_bias,
                )
        self.final_norm = LayerNorm(cfg.d_model)
        self.out_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None) -> torch.Tensor:
        """Token ids (b, num_new) -> logits (b, num_new, vocab_size)."""
        num_new = idx.shape[1]
        start = 0 if cache is None else cache.num_cached(0)
        if start + num_new > self.cfg.context_length:
            raise ValueError(
                f"{start + num_new} tokens exceed context_length={self.cfg.context_length}."
            )
        positions = torch.arange(start, start + num_new, device=idx.device)  # after the cached
        x = self.drop_emb(self.tok_emb(idx) + self.pos_emb(positions))  # (b, num_new, d_model)
        for layer, block in enumerate(self.trf_blocks):
            assert isinstance(block, TransformerBlock)  # (nn.ModuleList yields Modules)
            if cache is None:
                x = block(x)
            else:  # TransformerBlock.forward with the attention reading the cache
                attended = attend_cached(block.att, block.norm1(x), cache, layer)
                x = x + block.drop_shortcut(attended)  # (b, num_new, d_model)
                x = x + block.drop_shortcut(block.ff(block.norm2(x)))  # (b, num_new, d_model)
        return self.out_head(self.final_norm(x))  # (b, num_new, vocab_size)

    def attention_weights(self) -> torch.Tensor:
        """(num_layers, b, num_heads, num_tokens, num_tokens) weights of the last forward pass
        without a cache (as ``TinyTransformer.attention_weights``)."""
        weights = []
        for block in self.trf_blocks:
            assert isinstance(block, TransformerBlock)  # (nn.ModuleList yields Modules)
            if not isinstance(block.att.attn_weights, torch.Tensor):
                raise ValueError("run the model on some tokens first: model(tokens).")
            weights.append(block.att.attn_weights)
        return torch.stack(weights)


@torch.no_grad()
def generate(
    model: GPTModel,
    idx: torch.Tensor,
    max_new_tokens: int,
    use_cache: bool = True,
    temperature: float = 0.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | Sequence[torch.Generator] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Append ``max_new_tokens`` tokens, each chosen by ``sample_next`` from the model's logits.

    The model reads at most ``context_length`` tokens (its position embeddings end there): a
    longer prompt is cut from the left, and when the window is full it restarts on its last
    ``context_length // 2`` tokens (with a fresh cache), the same way with and without cache.

    Args:
        model: a ``GPTModel`` (put it in eval mode first).
        idx: the prompt's token ids, (b, num_tokens).
        max_new_tokens: how many tokens to append.
        use_cache: keep the keys and values in a ``KVCache`` and feed only the newest token;
            without it the whole window goes through the model at every step.
        temperature, top_k, top_p: the sampling settings of ``sample_next``; the default
            ``temperature=0`` is greedy: the most likely token every time.
        generator: the random numbers of the draws: a seeded ``torch.Generator``, or a list
            of b, one per row (row i then writes the text a batch of one row would write with
            ``generator[i]``, up to float32 rounding of the logits).

    Returns:
        ``(tokens, logits)``: (b, num_tokens + max_new_tokens) ids and the (b,
        max_new_tokens, vocab_size) logits each new token was chosen from.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be at least 1.")
    validate_sampling(temperature, top_k, top_p)
    context = model.cfg.context_length
    start = max(0, idx.shape[1] - context)  # the model reads the tokens from start on
    cache = KVCache(len(model.trf_blocks)) if use_cache else None
    new_input, steps = idx[:, start:], []
    for _ in range(max_new_tokens):
        logits = model(new_input, cache) if use_cache else model(idx[:, start:])
        logits = logits[:, -1]  # (b, vocab_size): the prediction after the last token
        next_token = sample_next(logits, temperature, top_k, top_p, generator)  # (b, 1)
        idx = torch.cat([idx, next_token], dim=1)  # (b, num_tokens + 1)
        new_input = next_token
        if idx.shape[1] - start > context:  # the window is full: restart on its last half
            start = idx.shape[1] - context // 2
            cache = KVCache(len(model.trf_blocks)) if use_cache else None
            new_input = idx[:, start:]
        steps.append(logits)
    return idx, torch.stack(steps, dim=1)


def positions_processed(
    num_prompt: int, max_new_tokens: int, context_length: int, use_cache: bool = True
) -> int:
    """How many token positions ``generate`` feeds through the model, summed over its steps.

    The window rule is ``generate``'s: a prompt longer than ``context_length`` is cut from the
    left, and when the window is full it restarts on its last ``context_length // 2`` tokens.
    Without a cache every step feeds the whole window; with one, the first step (and the first
    after each restart) feeds the window and every other step only the newest token. A
    ``context_length`` of at least ``num_prompt + max_new_tokens`` never restarts: unlimited
    context.
    """
    if num_prompt < 1 or max_new_tokens < 1 or context_length < 2:
        raise ValueError(
            f"num_prompt={num_prompt} and max_new_tokens={max_new_tokens} must be at least 1 "
            f"and context_length={context_length} at least 2."
        )
    length = num_prompt  # tokens so far
    start = max(0, length - context_length)  # the window is tokens start .. length - 1
    fed = length - start  # what the next cached step feeds: the window, then one token
    total = 0
    for _ in range(max_new_tokens):
        total += fed if use_cache else length - start
        length, fed = length + 1, 1  # the new token is appended
        if length - start > context_length:  # the window is full: restart on its last half
            start = length - context_length // 2
            fed = length - start  # a fresh cache: the whole new window goes in
    return total


@torch.no_grad()
def beam_search(
    model: GPTModel,
    idx: torch.Tensor,
    max_new_tokens: int,
    num_beams: int,
    use_cache: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the ``num_beams`` most likely continuations at every step; return them, best first.

    A sequence's score is its log-probability: the sum, over its new tokens, of log p(token |
    the tokens before it). Each step extends every kept sequence by every token and keeps the
    ``num_beams`` best-scoring of these candidates; ``num_beams=1`` is greedy decoding. The
    model reads its window as in ``generate``, restarting on its last half when it is full.

    Args:
        model: a ``GPTModel`` in eval mode; with ``use_cache=False``, any module with
            ``cfg.context_length`` that maps ids (b, num_tokens) to logits (b, num_tokens,
            vocab_size).
        idx: the prompt's token ids, (1, num_tokens).
        max_new_tokens: how many tokens to append.
        num_beams: how many sequences to keep (the beam width).
        use_cache: one ``KVCache`` row per kept sequence, reordered after every step so that
            each row holds the keys and values of the sequence it now continues.

    Returns:
        ``(tokens, scores)``: the kept sequences (num_beams, num_tokens + max_new_tokens), best
        first, and their log-probabilities (num_beams,), in float64 (fewer rows while there
        are fewer than ``num_beams`` candidates).
    """
    if idx.shape[0] != 1:
        raise ValueError(f"beam_search takes one prompt, shape (1, num_tokens), got {idx.shape}.")
    if max_new_tokens < 1 or num_beams < 1:
        raise ValueError(
            f"max_new_tokens={max_new_tokens} and num_beams={num_beams} must be at least 1."
        )
    context = model.cfg.context_length
    start = max(0, idx.shape[1] - context)  # the model reads the tokens from start on
    cache = KVCache(len(model.trf_blocks)) if use_cache else None
    new_input = idx[:, start:]
    scores = torch.zeros(1, dtype=torch.float64)  # (beams,): one beam, the prompt, to begin
    for _ in range(max_new_tokens):
        logits = model(new_input, cache) if use_cache else model(idx[:, start:])
        log_probs = torch.log_softmax(logits[:, -1].double(), dim=-1)  # (beams, vocab_size)
        vocab_size = log_probs.shape[-1]
        candidates = (scores[:, None] + log_probs).flatten()  # (beams * vocab_size,)
        scores, best = candidates.topk(min(num_beams, candidates.numel()))  # best first
        beam, token = best // vocab_size, best % vocab_size  # which sequence, which token
        idx = torch.cat([idx[beam], token[:, None]], dim=1)  # (beams, num_tokens + 1)
        new_input = token[:, None]  # (beams, 1)
        if cache is not None:
            cache.reorder(beam)  # row i now continues sequence beam[i]
        if idx.shape[1] - start > context:  # the window is full: restart on its last half
            start = idx.shape[1] - context // 2
            cache = KVCache(len(model.trf_blocks)) if use_cache else None
            new_input = idx[:, start:]
    return idx, scores

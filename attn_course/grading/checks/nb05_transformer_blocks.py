"""Checks of 05_transformer_blocks: padding mask, feed-forward, layer norm, encoder, GPT block."""

from __future__ import annotations

import torch

from ...attention import merge_heads, padding_mask, scaled_dot_product_attention, split_heads
from ...blocks import (
    GELU,
    GPT2_CONFIGS,
    BlockConfig,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    TransformerBlock,
    count_parameters,
)
from ...foundations import MultiHeadCrossAttention
from ..expect import (
    attention_mistakes,
    build_pair,
    call_pure,
    expect_answer,
    expect_close,
    randn,
    seeded,
)
from ..registry import CheckFailed, register

NOTEBOOK = "05_transformer_blocks"


@register("padding_mask", NOTEBOOK, time_limit=5.0)
def check_padding_mask(func: object) -> str:
    """``func(lengths, num_tokens)`` -> bool (b, 1, 1, num_tokens), True at padded keys."""
    for lengths, num_tokens in (([3, 1, 5], 5), ([1], 1), ([2, 2], 4), ([4, 6], 6)):
        want = padding_mask(lengths, num_tokens)
        got = call_pure(func, list(lengths), num_tokens)
        what = f"padding_mask({lengths}, {num_tokens})"
        if isinstance(got, torch.Tensor) and got.shape == (len(lengths), num_tokens):
            raise CheckFailed(
                f"{what} has shape {tuple(got.shape)}: return (b, 1, 1, num_tokens) so it "
                "broadcasts over heads and query positions, e.g. mask[:, None, None, :]."
            )
        positions = torch.arange(num_tokens)
        lengths_t = torch.tensor(lengths)[:, None, None, None]
        expect_close(
            got,
            want,
            what,
            {
                "inverted": ~want,
                "one_less": positions > lengths_t,
                "one_more": positions >= lengths_t - 1,
            },
            {
                "inverted": "mask inverted: True must mark the PADDED positions (hidden).",
                "one_less": "off by one: position `length` is the first padded one (positions "
                "count from 0), so hide positions >= length.",
                "one_more": "off by one: the last real token (position length - 1) is hidden too.",
            },
        )
    return "hides exactly the padded keys and broadcasts over heads and queries."


@register("feed_forward", NOTEBOOK, time_limit=5.0)
def check_feed_forward(cls: object) -> str:
    """``cls(d_model, d_ff, dropout)``: Linear -> ReLU -> dropout -> Linear, as FeedForward."""
    for i, (d_model, d_ff, shape) in enumerate([(4, 16, (2, 5)), (6, 8, (1, 1)), (3, 12, (3, 4))]):
        mine, ref = build_pair(cls, FeedForward, (d_model, d_ff, 0.0), seed=140 + i)
        x = randn(*shape, d_model, seed=150 + i)
        with torch.no_grad():
            hidden = ref.linear1(x)
            mistakes = {
                "no_activation": ref.linear2(hidden),
                "activation_last": torch.relu(ref.linear2(hidden)),
                "gelu": ref.linear2(GELU()(hidden)),
            }
            want = ref(x)
        expect_close(
            call_pure(mine, x),
            want,
            f"FeedForward({d_model}, {d_ff}, 0.0) on input {tuple(x.shape)}",
            mistakes,
            {
                "no_activation": "missing the activation: without it the two linears collapse "
                "into one. Apply ReLU between linear1 and linear2.",
                "activation_last": "the ReLU belongs between linear1 and linear2, not after "
                "linear2.",
                "gelu": "this feed-forward uses ReLU (the original transformer), not GELU.",
            },
        )
    return "same outputs as the lecture's FeedForward."


def _normalise(x: torch.Tensor, dim: int = -1, unbiased: bool = False, eps_in_sqrt: bool = True):
    """(x - mean) / sqrt(var + eps) along ``dim``, with the variants of the common mistakes."""
    centred = x - x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    return centred / (torch.sqrt(var + 1e-5) if eps_in_sqrt else var.sqrt() + 1e-5)


@register("layer_norm", NOTEBOOK, time_limit=5.0)
def check_layer_norm(cls: object) -> str:
    """``cls(d_model)`` with parameters ``scale`` and ``shift``, as the lecture's LayerNorm."""
    for i, shape in enumerate([(2, 3, 5), (1, 1, 4), (4, 6)]):
        mine, ref = build_pair(cls, LayerNorm, (shape[-1],), seed=160 + i)
        with torch.no_grad():  # random scale and shift, so forgetting them shows
            for module in (mine, ref):
                module.scale.copy_(randn(shape[-1], seed=170 + i) + 1.0)
                module.shift.copy_(randn(shape[-1], seed=180 + i))
        x = 3.0 * randn(*shape, seed=190 + i) + 2.0
        affine = ref.scale, ref.shift
        mistakes = {
            "unbiased": _normalise(x, unbiased=True) * affine[0] + affine[1],
            "eps_outside": _normalise(x, eps_in_sqrt=False) * affine[0] + affine[1],
            "dim": _normalise(x, dim=0) * affine[0] + affine[1],
            "no_affine": _normalise(x),
        }
        with torch.no_grad():
            expect_close(
                call_pure(mine, x),
                ref(x),
                f"LayerNorm({shape[-1]}) on input {shape}",
                {name: m.detach() for name, m in mistakes.items()},
                {
                    "unbiased": "use the biased variance: x.var(dim=-1, keepdim=True, "
                    "unbiased=False), like nn.LayerNorm.",
                    "eps_outside": "eps goes inside the square root: sqrt(var + eps).",
                    "dim": "normalise each token vector: mean and variance over the last dim "
                    "(dim=-1, keepdim=True).",
                    "no_affine": "missing the learned scale and shift: "
                    "return scale * norm + shift.",
                },
            )
    return "same outputs as the lecture's LayerNorm, learned scale and shift included."


def _encoder_mistakes(ref: EncoderLayer, x: torch.Tensor, mask: torch.Tensor | None):
    """Mistake name -> output of the reference encoder layer with that mistake."""
    attn = ref.self_attention(x, mask=mask)[0]
    ffn, norm1, norm2 = ref.feed_forward, ref.norm1, ref.norm2
    no_res = norm1(attn)
    no_norm = x + attn
    pre = x + ref.self_attention(norm1(x), mask=mask)[0]
    mistakes = {
        "no_residual": norm2(ffn(no_res)),
        "no_norm": no_norm + ffn(no_norm),
        "neither": ffn(attn),
        "pre_ln": pre + ffn(norm2(pre)),
    }
    if mask is not None:
        mistakes["mask_ignored"] = ref(x)
    return mistakes


@register("encoder_layer", NOTEBOOK, time_limit=5.0)
def check_encoder_layer(cls: object) -> str:
    """``cls(d_model, n_heads, d_ff, dropout)`` with ``forward(x, mask=None)``, post-LN."""
    configs = [  # d_model, n_heads, d_ff, b, num_tokens, lengths (None: no mask)
        (8, 2, 16, 2, 5, [5, 3]),
        (6, 3, 12, 1, 4, None),
        (4, 1, 8, 3, 1, None),
        (6, 2, 8, 2, 6, [2, 6]),
    ]
    for i, (d_model, n_heads, d_ff, b, num_tokens, lengths) in enumerate(configs):
        args = (d_model, n_heads, d_ff, 0.0)
        mine, ref = build_pair(cls, EncoderLayer, args, seed=200 + i)
        x = randn(b, num_tokens, d_model, seed=210 + i)
        mask = None if lengths is None else padding_mask(lengths, num_tokens)
        with torch.no_grad():
            want, mistakes = ref(x, mask), _encoder_mistakes(ref, x, mask)
        got = call_pure(mine, x) if mask is None else call_pure(mine, x, mask)
        expect_close(
            got,
            want,
            f"EncoderLayer{args} on input {tuple(x.shape)}"
            + ("" if mask is None else f", lengths {lengths}"),
            mistakes,
            {
                "no_residual": "encoder layer without residual: add the sublayer's input back "
                "before each norm: norm1(x + attn_out), norm2(x + ffn_out).",
                "no_norm": "encoder layer without norm: apply norm1 and norm2 to the residual "
                "sums (post-LN).",
                "neither": "neither the residual connections nor the norms are applied: "
                "x = norm1(x + attn_out), then norm2(x + ffn_out).",
                "pre_ln": "this is pre-LN (GPT-2 style); this encoder layer is post-LN: the norm "
                "comes AFTER adding the residual.",
                "mask_ignored": "the padding mask is not used: pass mask to the self-attention.",
            },
        )
    return "same outputs as the lecture's post-LN EncoderLayer, with and without padding."


@register("transformer_block", NOTEBOOK, time_limit=5.0)
def check_transformer_block(cls: object) -> str:
    """``cls(cfg: BlockConfig)``, the GPT-2 style pre-LN block."""
    configs = [
        (BlockConfig(emb_dim=8, context_length=6, n_heads=2, drop_rate=0.0), (2, 6)),
        (BlockConfig(emb_dim=6, context_length=4, n_heads=3, drop_rate=0.0, qkv_bias=True), (1, 4)),
        (BlockConfig(emb_dim=4, context_length=5, n_heads=1, drop_rate=0.0), (3, 1)),
    ]
    for i, (cfg, (b, num_tokens)) in enumerate(configs):
        mine, ref = build_pair(cls, TransformerBlock, (cfg,), seed=220 + i)
        x = randn(b, num_tokens, cfg.emb_dim, seed=230 + i)
        with torch.no_grad():
            post = ref.norm1(x + ref.att(x))
            no_res = ref.att(ref.norm1(x))
            mistakes = {
                "post_ln": ref.norm2(post + ref.ff(post)),
                "no_residual": ref.ff(ref.norm2(no_res)),
            }
            want = ref(x)
        expect_close(
            call_pure(mine, x),
            want,
            f"TransformerBlock({cfg}) on input {tuple(x.shape)}",
            mistakes,
            {
                "post_ln": "this is post-LN; GPT-2's block is pre-LN: x = x + att(norm1(x)), "
                "then x = x + ff(norm2(x)).",
                "no_residual": "missing the shortcut connections: add x back after the attention "
                "and after the feed-forward.",
            },
        )
    return "same outputs as the lecture's pre-LN TransformerBlock."


@register("gpt2_block_parameters", NOTEBOOK, time_limit=10.0)
def check_gpt2_block_parameters(answer: object) -> str:
    """Trainable parameters of one TransformerBlock of GPT-2 small."""
    with torch.device("meta"):  # shapes only: nothing is allocated or drawn from the RNG
        block = TransformerBlock(GPT2_CONFIGS["small"][0])
    want = count_parameters(block)
    norms = count_parameters(block.norm1) + count_parameters(block.norm2)
    return expect_answer(
        answer,
        want,
        "parameters of one GPT-2 small block",
        {
            want - norms: "Don't forget the two LayerNorms (scale and shift, emb_dim each).",
            want - 3 * block.att.d_out: "GPT-2's query, key and value projections have biases "
            "(qkv_bias=True): d_out each.",
            want + block.att.mask.numel(): "The causal mask is a buffer, not a parameter.",
            want - count_parameters(block.att.out_proj): "Count the attention's out_proj too.",
        },
    )


def _cross_mistakes(
    ref: MultiHeadCrossAttention,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None,
) -> dict[str, torch.Tensor]:
    """Mistake name -> output of the reference cross-attention with that mistake."""
    h = ref.n_heads
    queries = split_heads(ref.W_query(query), h)  # (b, n_heads, num_queries, head_dim)
    keys = split_heads(ref.W_key(key), h)  # (b, n_heads, num_keys, head_dim)
    values = split_heads(ref.W_value(value), h)  # (b, n_heads, num_keys, head_dim)
    mistakes = {
        name: ref.out_proj(merge_heads(context))
        for name, (context, _) in attention_mistakes(queries, keys, values, mask).items()
    }
    context, _ = scaled_dot_product_attention(queries, keys, values, mask)
    mistakes["no_out_proj"] = merge_heads(context)
    mistakes["keys_for_values"] = ref(query, key, key, mask)[0]
    mistakes["self_attention"] = ref(query, query, query)[0]  # keys, values from the query
    if mask is not None:
        mistakes["mask_ignored"] = ref(query, key, value)[0]
    return mistakes


_CROSS_HINTS = {
    "keys_for_values": "the values are projected from the key input: use W_value(value).",
    "self_attention": "keys and values come from the query input: in cross-attention they are "
    "projected from the `key` and `value` arguments (the encoder's memory).",
    "mask_ignored": "the padding mask is not used: pass mask to the attention.",
    "no_out_proj": "missing the output projection: return out_proj(merged heads).",
}


def check_cross_attention_class(cls: object) -> None:
    """``cls(d_model, n_heads, dropout)``, ``forward(query, key, value, mask=None)`` ->
    (output, weights), as ``foundations.MultiHeadCrossAttention``: in eval and train mode,
    with and without a (b, 1, 1, num_keys) padding mask, and its gradients."""
    configs = [  # d_model, n_heads, b, num_queries, num_keys, lengths (None: no mask)
        (8, 2, 2, 3, 5, [5, 2]),
        (6, 3, 3, 4, 4, [1, 4, 3]),
        (4, 1, 1, 1, 6, None),
        (6, 2, 2, 5, 3, None),
    ]
    for i, (d_model, n_heads, b, t_q, t_k, lengths) in enumerate(configs):
        args = (d_model, n_heads, 0.0)
        mine, ref = build_pair(cls, MultiHeadCrossAttention, args, seed=300 + i)
        query = randn(b, t_q, d_model, seed=310 + i)
        key, value = randn(b, t_k, d_model, seed=320 + i), randn(b, t_k, d_model, seed=330 + i)
        mask = None if lengths is None else padding_mask(lengths, t_k)
        what = (
            f"{cls.__name__}{args} with query {tuple(query.shape)}, key and value "
            f"{tuple(key.shape)}" + ("" if mask is None else f", source lengths {lengths}")
        )
        with torch.no_grad():
            want, want_weights = ref(query, key, value, mask)
            mistakes = _cross_mistakes(ref, query, key, value, mask)
        result = call_pure(mine, query, key, value, mask=mask)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise CheckFailed(f"{what}: return the pair (output, attn_weights), in this order.")
        got, got_weights = result
        if isinstance(got_weights, torch.Tensor) and got_weights.ndim == 5:
            raise CheckFailed(
                f"{what}: the weights are 5-D {tuple(got_weights.shape)}. The mask got an extra "
                "dim: a (b, 1, 1, num_keys) padding mask already broadcasts over heads and "
                "queries; unsqueeze(1) makes it (b, 1, 1, 1, num_keys), which pairs every "
                "sequence's scores with every sequence's mask."
            )
        expect_close(got, want, f"output for {what}", mistakes, _CROSS_HINTS)
        expect_close(got_weights, want_weights, f"weights (b, n_heads, T_q, T_k) for {what}")

    # Training mode: dropout on the weights, drawn from the same RNG state as the reference.
    mine, ref = build_pair(cls, MultiHeadCrossAttention, (8, 2, 0.5), seed=340)
    query, memory = randn(2, 3, 8, seed=341), randn(2, 5, 8, seed=342)
    mask = padding_mask([5, 3], 5)
    with seeded(343):
        want = ref.train()(query, memory, memory, mask)[0]
    with seeded(343):
        got = mine.train()(query, memory, memory, mask=mask)[0]
    expect_close(
        got.detach(),
        want.detach(),
        "output in training mode (dropout 0.5, same random state)",
        hints={},
    )
    probe = randn(*want.shape, seed=344)
    (want * probe).sum().backward()
    (got * probe).sum().backward()
    ref_params = dict(ref.named_parameters())
    for name, param in mine.named_parameters():
        if param.grad is None:
            raise CheckFailed(f"parameter {name} gets no gradient: is it used in forward?")
        expect_close(param.grad, ref_params[name].grad, f"gradient of {name}")


@register("cross_attention", NOTEBOOK, time_limit=10.0)
def check_cross_attention(cls: object) -> str:
    """The lecture's ``MultiHeadCrossAttention``."""
    check_cross_attention_class(cls)
    return "queries from one sequence, keys and values from the other, masked and trained alike."

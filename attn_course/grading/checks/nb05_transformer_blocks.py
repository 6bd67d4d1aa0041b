"""Checks of 05_transformer_blocks: padding mask, feed-forward, layer norm, encoder, GPT block."""

from __future__ import annotations

import torch

from ...attention import padding_mask
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
from ..expect import build_pair, call_pure, expect_answer, expect_close, randn
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

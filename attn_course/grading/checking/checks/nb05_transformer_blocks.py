"""Checks of 05_transformer_blocks: padding mask, feed-forward, layer norm, encoder, GPT block."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ....attention import padding_mask
from ....blocks import (
    GELU,
    GPT2_CONFIGS,
    BlockConfig,
    FeedForward,
    LayerNorm,
    TransformerBlock,
    count_parameters,
)
from ..expect import (
    call_pure,
    expect_answer,
    expect_close,
    expect_like_reference,
    randn,
    rng,
    seeded,
)
from ..hints import HINTS
from ..registry import CheckFailed, register
from ..shared_checks import DROPOUT, check_cross_attention_class, check_encoder_class

NOTEBOOK = "05_transformer_blocks"


@register("padding_mask", NOTEBOOK, time_limit=5.0)
def check_padding_mask(func: Callable[..., object]) -> str:
    """``func(lengths, num_tokens)`` -> bool (b, 1, 1, num_tokens), True at padded keys."""
    size = int(rng(30).integers(5, 30))  # a batch of this run's own
    own = [int(n) for n in rng(31).integers(1, size + 1, size=4)] + [size]
    for lengths, num_tokens in (([3, 1, 5], 5), ([1], 1), ([2, 2], 4), ([4, 6], 6), (own, size)):
        want = padding_mask(lengths, num_tokens)
        got = call_pure(func, list(lengths), num_tokens)
        what = f"padding_mask({lengths}, {num_tokens})"
        if (
            isinstance(got, torch.Tensor)
            and got.shape != want.shape
            and got.numel() == want.numel()
            and got.shape[:1] == want.shape[:1]
        ):
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
                "padding_inverted": ~want,
                "padding_one_less": positions > lengths_t,
                "padding_one_more": positions >= lengths_t - 1,
            },
        )
    return "hides exactly the padded keys and broadcasts over heads and queries."


def _feed_forward_mistakes(ref: FeedForward, x: torch.Tensor) -> dict[str, torch.Tensor]:
    hidden = ref.linear1(x)
    return {
        "no_activation": ref.linear2(hidden),
        "activation_last": torch.relu(ref.linear2(hidden)),
        "gelu": ref.linear2(GELU()(hidden)),
    }


@register("feed_forward", NOTEBOOK, time_limit=5.0)
def check_feed_forward(cls: type) -> str:
    """``cls(d_model, d_ff, dropout)``: Linear -> ReLU -> dropout -> Linear, as FeedForward."""
    for i, (d_model, d_ff, shape) in enumerate([(4, 16, (2, 5)), (6, 8, (1, 1)), (3, 12, (3, 4))]):
        expect_like_reference(
            cls,
            FeedForward,
            (d_model, d_ff, DROPOUT),
            [(randn(*shape, d_model, seed=150 + i),), (randn(2, 7, d_model, seed=155 + i),)],
            seed=140 + i,
            mistakes_of=_feed_forward_mistakes,
            dropout_hint=HINTS["dropout_feed_forward"],
            dropout=i < 2,
        )
    return "same outputs as the lecture's FeedForward, dropout in its place."


def _normalise(
    x: torch.Tensor, dim: int = -1, unbiased: bool = False, eps: str = "inside", value=1e-5
):
    """(x - mean) / sqrt(var + eps) along ``dim``, with the variants of the common mistakes."""
    centred = x - x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
    if eps == "outside":
        return centred / (var.sqrt() + value)
    return centred / (var.sqrt() if eps == "none" else torch.sqrt(var + value))


def _layer_norm_inputs(i: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Ordinary rows, plus (in the last row) a row of equal values and one of tiny spread."""
    x = 3.0 * randn(*shape, seed=190 + i) + 2.0
    rows = x.view(-1, shape[-1])  # (rows, d_model)
    if rows.shape[0] >= 2:
        rows[-1] = 0.7  # zero spread: variance 0, only eps keeps it finite
        rows[-2] = 1e-3 * randn(shape[-1], seed=195 + i)  # variance ~1e-6, below eps
    return x


def _layer_norm_mistakes(ref: LayerNorm, x: torch.Tensor) -> dict[str, torch.Tensor]:
    scale, shift, eps = ref.scale, ref.shift, ref.eps
    mistakes = {
        "unbiased": _normalise(x, unbiased=True, value=eps) * scale + shift,
        "eps_outside": _normalise(x, eps="outside", value=eps) * scale + shift,
        "std_eps_outside": _normalise(x, unbiased=True, eps="outside", value=eps) * scale + shift,
        "no_eps": _normalise(x, eps="none") * scale + shift,
        "norm_dim": _normalise(x, dim=0, value=eps) * scale + shift,
        "no_affine": _normalise(x, value=eps),
    }
    if eps != 1e-5:
        mistakes["eps_ignored"] = _normalise(x) * scale + shift
    return mistakes


@register("layer_norm", NOTEBOOK, time_limit=5.0)
def check_layer_norm(cls: type) -> str:
    """``cls(d_model, eps=1e-5)`` with parameters ``scale`` and ``shift``, as the lecture's."""
    for i, (shape, args) in enumerate(
        [((2, 3, 5), (5,)), ((1, 1, 4), (4,)), ((4, 6), (6,)), ((3, 2, 4), (4, 0.01))]
    ):
        x = _layer_norm_inputs(i, shape)

        def what(call: tuple, args: tuple = args) -> str:
            return (
                f"{cls.__name__}{args} on input {tuple(call[0].shape)} (its last rows: one "
                "tiny spread, one all equal)"
            )

        expect_like_reference(
            cls,
            LayerNorm,
            args,
            [(x,), (_layer_norm_inputs(i + 10, (2, *shape[1:])),)],
            seed=160 + i,
            mistakes_of=_layer_norm_mistakes,
            hints={"nan": HINTS["nan_layer_norm"]},
            what=what,
            dropout=i < 2,
        )
    return (
        "same outputs and gradients as the lecture's LayerNorm: eps (also a non-default one), "
        "initial and learned scale and shift."
    )


@register("encoder_layer", NOTEBOOK, time_limit=10.0)
def check_encoder_layer(cls: type) -> str:
    """``cls(d_model, num_heads, d_ff, dropout)`` with ``forward(x, mask=None)``, post-LN."""
    check_encoder_class(cls)
    return "same outputs as the lecture's post-LN EncoderLayer, with and without padding."


def _block_mistakes(ref: TransformerBlock, x: torch.Tensor) -> dict[str, torch.Tensor]:
    att, ff, norm1, norm2 = ref.att, ref.ff, ref.norm1, ref.norm2
    post = norm1(x + att(x))
    after_att = x + att(norm1(x))
    swapped = x + att(norm2(x))
    return {
        "post_ln": norm2(post + ff(post)),
        "block_no_residual": ff(norm2(att(norm1(x)))),
        "block_norm1_twice": after_att + ff(norm1(after_att)),
        "block_norms_swapped": swapped + ff(norm1(swapped)),
    }


@register("transformer_block", NOTEBOOK, time_limit=10.0)
def check_transformer_block(cls: type) -> str:
    """``cls(cfg: BlockConfig)``, the GPT-2 style pre-LN block."""
    configs = [
        (BlockConfig(d_model=8, context_length=6, num_heads=2, dropout=DROPOUT), (2, 4)),
        (
            BlockConfig(d_model=6, context_length=4, num_heads=3, dropout=DROPOUT, qkv_bias=True),
            (1, 4),
        ),
        (BlockConfig(d_model=4, context_length=5, num_heads=1, dropout=DROPOUT), (3, 1)),
    ]
    for i, (cfg, (b, num_tokens)) in enumerate(configs):
        lengths = sorted({num_tokens, cfg.context_length})
        expect_like_reference(
            cls,
            TransformerBlock,
            (cfg,),
            [(randn(b, n, cfg.d_model, seed=230 + 10 * i + n),) for n in lengths],
            seed=220 + i,
            mistakes_of=_block_mistakes,
            dropout_hint=HINTS["dropout_block"],
            dropout=i < 2,
        )
    return "same outputs as the lecture's pre-LN TransformerBlock, dropout in its place."


@register("gpt2_block_parameters", NOTEBOOK, time_limit=10.0)
def check_gpt2_block_parameters(answer: object) -> str:
    """Trainable parameters of one TransformerBlock of GPT-2 small."""
    # A real block (28 MB, 0.3 s): the meta device would first import ~2 s of torch modules.
    with seeded(0):
        block = TransformerBlock(GPT2_CONFIGS["small"])
    want = count_parameters(block)
    norms = count_parameters(block.norm1) + count_parameters(block.norm2)
    return expect_answer(
        answer,
        want,
        "parameters of one GPT-2 small block",
        {
            want - norms: "Don't forget the two LayerNorms (scale and shift, d_model each).",
            want - 3 * block.att.d_out: "GPT-2's query, key and value projections have biases "
            "(qkv_bias=True): d_out each.",
            want + block.att.mask.numel(): "The causal mask is a buffer, not a parameter.",
            want - count_parameters(block.att.out_proj): "Count the attention's out_proj too.",
        },
    )


@register("cross_attention", NOTEBOOK, time_limit=10.0)
def check_cross_attention(cls: type) -> str:
    """The lecture's ``MultiHeadCrossAttention``."""
    check_cross_attention_class(cls)
    return "queries from one sequence, keys and values from the other, masked and trained alike."

"""What several notebooks' checks share: module checks and their mistake lists.

Check modules import from here (downward), never from each other. Each ``check_*_class``
runs ``expect.expect_module`` on a few configurations: eval outputs against the package's
class with the mistakes diagnosed, determinism in eval, dropout placement in train mode
under the reference's RNG state, two calls of different lengths on one instance, and a
backward pass with gradients compared. Modules are built with dropout > 0 so that its
placement shows.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ...attention import (
    CausalAttention,
    MultiHeadAttention,
    causal_mask,
    merge_heads,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)
from ...blocks import EncoderLayer, MultiHeadCrossAttention
from .expect import (
    attention_mistakes,
    build_pair,
    call_pure,
    expect_close,
    expect_like_reference,
    expect_module,
    randn,
)
from .hints import HINTS
from .registry import CheckFailed

__all__ = [
    "DROPOUT",
    "MHA_CONFIGS",
    "causal_mistakes",
    "mha_mistakes",
    "sdpa_mistakes",
    "encoder_mistakes",
    "check_causal_class",
    "check_mha_class",
    "check_encoder_class",
    "cross_mistakes",
    "check_cross_attention_class",
]

DROPOUT = 0.25  # modules under test get a real dropout, so its placement shows in train mode
MHA_CONFIGS = [  # d_in, d_out, context_length, num_heads, qkv_bias, b, num_tokens
    (5, 8, 10, 4, False, 1, 7),  # first: d_in, d_out and head_dim all differ
    (3, 6, 6, 2, False, 2, 4),
    (6, 6, 3, 3, True, 2, 2),
    (4, 6, 5, 1, False, 3, 3),
    (3, 4, 4, 2, True, 1, 1),
]


def causal_mistakes(module: CausalAttention, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mistake name -> the output of ``module`` (lecture class) on ``x`` with that mistake."""
    queries, keys, values = module.W_query(x), module.W_key(x), module.W_value(x)
    mask = causal_mask(x.shape[1])
    mistakes = attention_mistakes(queries, keys, values, mask)
    d_in, d_out = x.shape[-1], keys.shape[-1]
    if d_in != d_out:  # sqrt(d_in) instead of sqrt(keys.shape[-1])
        rescaled = queries * (d_out / d_in) ** 0.5
        mistakes["scale_d_in"] = scaled_dot_product_attention(rescaled, keys, values, mask)
    return {name: context for name, (context, _) in mistakes.items()}


def mha_mistakes(module: MultiHeadAttention, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mistake name -> the output of ``module`` (lecture class) on ``x`` with that mistake."""
    b, num_tokens, _ = x.shape
    num_heads, d_out = module.num_heads, module.d_out
    mask = causal_mask(num_tokens)
    q, k, v = module.W_query(x), module.W_key(x), module.W_value(x)  # (b, num_tokens, d_out)
    # (b, num_heads, num_tokens, head_dim) each
    qh, kh, vh = (split_heads(t, num_heads) for t in (q, k, v))
    context = scaled_dot_product_attention(qh, kh, vh, mask)[0]
    mq, mk, mv = (t.reshape(b, num_heads, num_tokens, -1) for t in (q, k, v))  # tokens mixed
    d_in = x.shape[-1]

    def scaled_by(width: int) -> torch.Tensor:  # the scores divided by sqrt(width)
        rescaled = qh * (module.head_dim / width) ** 0.5
        return module.out_proj(merge_heads(scaled_dot_product_attention(rescaled, kh, vh, mask)[0]))

    mistakes = {  # the multi-head mistakes first: they are the more specific diagnosis
        "split_reshape": module.out_proj(
            merge_heads(scaled_dot_product_attention(mq, mk, mv, mask)[0])
        ),
        "merge_no_transpose": module.out_proj(context.reshape(b, num_tokens, d_out)),
        # sqrt(d_in) and sqrt(d_out) look alike where d_in == d_out: one hint names both
        ("scale_width" if d_in == d_out else "scale_d_out"): scaled_by(d_out),
        "no_out_proj": merge_heads(context),
    }
    if d_in not in (d_out, module.head_dim):
        mistakes["scale_d_in"] = scaled_by(d_in)
    for name, (c, _) in attention_mistakes(qh, kh, vh, mask).items():
        mistakes[name] = module.out_proj(merge_heads(c))
    return mistakes


def sdpa_mistakes(module: MultiHeadAttention, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """``mha_mistakes`` plus the course's mask passed as F.sdpa's attn_mask (True = allowed)."""
    projections = (module.W_query, module.W_key, module.W_value)
    qh, kh, vh = (split_heads(m(x), module.num_heads) for m in projections)
    inverted = F.scaled_dot_product_attention(qh, kh, vh, attn_mask=causal_mask(x.shape[1]))
    return {"sdpa_attn_mask": module.out_proj(merge_heads(inverted)), **mha_mistakes(module, x)}


def _two_lengths(b: int, num_tokens: int, longest: int, d_in: int, seed: int) -> list[tuple]:
    """A call with ``num_tokens`` tokens, then one with ``longest``: same instance, no state."""
    lengths = [num_tokens] if num_tokens == longest else [num_tokens, longest]
    return [(randn(b, n, d_in, seed=seed + n),) for n in lengths]


def check_causal_class(cls: type) -> None:
    """Compare ``cls`` with the package's CausalAttention on several configurations."""
    configs = [  # d_in, d_out, context_length, qkv_bias, b, num_tokens
        (3, 2, 6, False, 2, 4),
        (5, 4, 8, True, 1, 8),
        (4, 3, 10, False, 3, 7),
        (2, 5, 4, True, 1, 1),
    ]
    for i, (d_in, d_out, ctx, bias, b, num_tokens) in enumerate(configs):
        expect_like_reference(
            cls,
            CausalAttention,
            (d_in, d_out, ctx, DROPOUT, bias),
            _two_lengths(b, num_tokens, ctx, d_in, seed=50 + 10 * i),
            seed=40 + i,
            mistakes_of=causal_mistakes,
            dropout_hint=HINTS["dropout_attention"],
            dropout=i < 2,
        )


def check_mha_class(
    cls: type,
    hints: dict[str, str] | None = None,
    mistakes_of: Callable[..., dict[str, torch.Tensor]] = mha_mistakes,
    dropout_hint: str = HINTS["dropout_attention"],
) -> None:
    """Compare ``cls`` with MultiHeadAttention on MHA_CONFIGS; ``mistakes_of(ref, x)`` diagnoses."""
    for i, (d_in, d_out, ctx, num_heads, bias, b, num_tokens) in enumerate(MHA_CONFIGS):
        expect_like_reference(
            cls,
            MultiHeadAttention,
            (d_in, d_out, ctx, DROPOUT, num_heads, bias),
            _two_lengths(b, num_tokens, ctx, d_in, seed=90 + 10 * i),
            seed=80 + i,
            mistakes_of=mistakes_of,
            hints=hints,
            dropout_hint=dropout_hint,
            dropout=i < 2,
        )


def encoder_mistakes(
    ref: EncoderLayer, x: torch.Tensor, mask: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Mistake name -> output of the reference encoder layer with that mistake."""
    attn = ref.att(x, mask=mask)[0]
    ffn, norm1, norm2 = ref.feed_forward, ref.norm1, ref.norm2
    no_res = norm1(attn)
    no_norm = x + attn
    pre = x + ref.att(norm1(x), mask=mask)[0]
    post = norm1(x + attn)
    mistakes = {
        "no_residual": norm2(ffn(no_res)),
        "no_norm": no_norm + ffn(no_norm),
        "neither": ffn(attn),
        "pre_ln": pre + ffn(norm2(pre)),
        "norm1_twice": norm1(post + ffn(post)),
        "norms_swapped": norm1(norm2(x + attn) + ffn(norm2(x + attn))),
    }
    if mask is not None:
        mistakes["mask_ignored"] = ref(x)
    return mistakes


def check_encoder_class(cls: type) -> None:
    """``cls(d_model, num_heads, d_ff, dropout)`` with ``forward(x, mask=None)``, post-LN."""
    configs = [  # d_model, num_heads, d_ff, b, num_tokens, lengths (None: no mask)
        (8, 2, 16, 2, 5, [5, 3]),
        (6, 3, 12, 1, 4, None),
        (4, 1, 8, 3, 1, None),
        (6, 2, 8, 2, 6, [2, 6]),
    ]
    for i, (d_model, num_heads, d_ff, b, num_tokens, lengths) in enumerate(configs):
        args = (d_model, num_heads, d_ff, DROPOUT)
        calls = _two_lengths(b, max(1, num_tokens - 2), num_tokens, d_model, 210)
        if lengths is not None:
            calls = [
                (x, padding_mask([min(n, x.shape[1]) for n in lengths], x.shape[1]))
                for (x,) in calls
            ]

        def what(call: tuple, args: tuple = args, lengths: list | None = lengths) -> str:
            masked = (
                ""
                if lengths is None
                else f", lengths {[min(n, call[0].shape[1]) for n in lengths]}"
            )
            return f"{cls.__name__}{args} on input {tuple(call[0].shape)}{masked}"

        expect_like_reference(
            cls,
            EncoderLayer,
            args,
            calls,
            seed=200 + i,
            mistakes_of=encoder_mistakes,
            dropout_hint=HINTS["dropout_encoder"],
            what=what,
            dropout=i < 2,
        )


def cross_mistakes(
    ref: MultiHeadCrossAttention,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Mistake name -> output of the reference cross-attention with that mistake."""
    h = ref.num_heads
    queries = split_heads(ref.W_query(query), h)  # (b, num_heads, num_queries, head_dim)
    keys = split_heads(ref.W_key(key), h)  # (b, num_heads, num_keys, head_dim)
    values = split_heads(ref.W_value(value), h)  # (b, num_heads, num_keys, head_dim)
    mistakes = {
        name: ref.out_proj(merge_heads(context))
        for name, (context, _) in attention_mistakes(queries, keys, values, mask).items()
    }
    context, _ = scaled_dot_product_attention(queries, keys, values, mask)
    mistakes["no_out_proj"] = merge_heads(context)
    mistakes["keys_for_values"] = ref(query, key, key, mask)[0]
    mistakes["self_attention"] = ref(query, query, query)[0]  # keys, values from the query
    if mask is not None:
        mistakes["cross_mask_ignored"] = ref(query, key, value)[0]
    return mistakes


def check_cross_attention_class(cls: type) -> None:
    """``cls(d_model, num_heads, dropout)``, ``forward(query, key, value, mask=None)`` ->
    (output, weights), as ``blocks.MultiHeadCrossAttention``: outputs and weights with
    and without a (b, 1, 1, num_keys) padding mask, then ``expect_module`` (two source
    lengths, eval determinism, dropout in train mode, gradients)."""
    configs = [  # d_model, num_heads, b, num_queries, num_keys, lengths (None: no mask)
        (8, 2, 2, 3, 5, [5, 2]),
        (6, 3, 3, 4, 4, [1, 4, 3]),
        (4, 1, 1, 1, 6, None),
        (6, 2, 2, 5, 3, None),
    ]
    for i, (d_model, num_heads, b, t_q, t_k, lengths) in enumerate(configs):
        args = (d_model, num_heads, DROPOUT)
        mine, ref = build_pair(cls, MultiHeadCrossAttention, args, seed=300 + i)
        calls = []
        for n_k in (t_k, t_k + 2):  # the same instance, a longer source the second time
            query = randn(b, t_q, d_model, seed=310 + i)
            key = randn(b, n_k, d_model, seed=320 + i + n_k)
            value = randn(b, n_k, d_model, seed=330 + i + n_k)
            mask = None if lengths is None else padding_mask(lengths, n_k)
            calls.append((query, key, value) if mask is None else (query, key, value, mask))

        def what(call: tuple, args: tuple = args, lengths: list | None = lengths) -> str:
            masked = "" if len(call) == 3 else f", source lengths {lengths}"
            return (
                f"{cls.__name__}{args} with query {tuple(call[0].shape)}, key and value "
                f"{tuple(call[1].shape)}{masked}"
            )

        result = call_pure(mine, *calls[0])
        if not (isinstance(result, tuple) and len(result) == 2):
            raise CheckFailed(
                f"{what(calls[0])}: return the pair (output, attn_weights), in this order."
            )
        got_weights = result[1]
        if isinstance(got_weights, torch.Tensor) and got_weights.ndim == 5:
            raise CheckFailed(
                f"{what(calls[0])}: the weights are 5-D {tuple(got_weights.shape)}. The mask got "
                "an extra dim: a (b, 1, 1, num_keys) padding mask already broadcasts over heads "
                "and queries; unsqueeze(1) makes it (b, 1, 1, 1, num_keys), which pairs every "
                "sequence's scores with every sequence's mask."
            )
        expect_module(
            mine,
            ref,
            calls,
            what,
            cross_mistakes,
            dropout_hint=HINTS["dropout_cross"],
            seed=300 + i,
            dropout=i < 2,
        )
        with torch.no_grad():
            want_weights = ref(*calls[0])[1]
        label = f"weights (b, num_heads, T_q, T_k) for {what(calls[0])}"
        expect_close(got_weights, want_weights, label)

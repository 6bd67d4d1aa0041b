"""The answer tables of the checks' tests (tests/test_checks.py), one style for every notebook.

``REFERENCE``: the right answer of every registered check: the package's
(``withheld.ANSWERS``), or written here, or worked out by hand in the comments.
``WRONG``: deliberately wrong answers, ``Wrong(name, check_id, obj, hint_words)``, each the
reference with ONE classic mistake built in (a subclass overriding only the broken part, or
the reference function with one step changed); the check must fail it with a hint
containing ``hint_words``. ``CORRECT``: right answers written differently from
the reference (einsum, torch.where, other tril/triu conventions, PyTorch's fused functions,
dropout by hand): they must keep passing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attn_course import (
    attention,
    blocks,
    gqa,
    numpy_attention,
    tiled,
)
from attn_course.attention import (
    causal_mask,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from attn_course.grading.checking.withheld import ANSWERS
from attn_course.head_scores import head_scores
from attn_course.positions import apply_rope, sinusoidal_positions
from attn_course.tiled import attention_tile


def sdpa(queries, keys, values, mask=None, mistake: str | None = None):
    """scaled_dot_product_attention (mask True = hidden) with ``mistake`` built in."""
    if mistake == "mutates":
        queries /= keys.shape[-1] ** 0.5  # in place: changes the caller's tensor
        scaled = queries @ keys.transpose(-2, -1)
    else:
        other = values if mistake == "keys_are_values" else keys
        scores = queries @ other.transpose(-2, -1)  # (..., num_queries, num_keys)
        scaled = scores if mistake == "no_scale" else scores / keys.shape[-1] ** 0.5
    if mask is not None:
        if mistake == "mask_lost":
            scaled.masked_fill(mask, -torch.inf)  # result discarded: nothing is masked
        elif mistake == "nan":
            scaled = scaled + mask.float() * -torch.inf  # 0 * -inf = NaN at the visible keys
        else:
            scaled = scaled.masked_fill(~mask if mistake == "mask_inverted" else mask, -torch.inf)
    attn_weights = torch.softmax(scaled, dim=-2 if mistake == "softmax_dim" else -1)
    return attn_weights @ values, attn_weights


class CausalAttentionWith(attention.CausalAttention):
    """CausalAttention whose forward makes ``mistake`` (set by the subclasses below)."""

    mistake: str | None = None

    def forward(self, x):
        num_tokens = x.shape[1]
        mask = self.mask[:num_tokens, :num_tokens]
        if self.mistake == "mask_diagonal":
            mask = torch.triu(torch.ones_like(mask), diagonal=0)
        if self.mistake == "mask_sliced_in_place":
            self.mask = self.mask[:num_tokens, :num_tokens]  # shrinks the buffer for good
            mask = self.mask
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1)  # (b, num_tokens, num_tokens)
        if self.mistake == "dropout_scores":
            scores = self.dropout(scores)
        scaled = scores / keys.shape[-1] ** 0.5
        if self.mistake in SDPA_MISTAKES:
            return sdpa(queries, keys, values, mask, self.mistake)[0]
        attn_weights = torch.softmax(scaled.masked_fill(mask, -torch.inf), dim=-1)
        if self.mistake == "renormalise_in_place":
            attn_weights /= attn_weights.sum(dim=-1, keepdim=True)  # breaks backward()
        if self.mistake == "functional_dropout":
            attn_weights = F.dropout(attn_weights, self.dropout.p, training=True)  # always on
        elif self.mistake not in ("no_dropout", "dropout_context", "dropout_scores"):
            attn_weights = self.dropout(attn_weights)
        context = attn_weights @ values  # (b, num_tokens, d_out)
        return self.dropout(context) if self.mistake == "dropout_context" else context


SDPA_MISTAKES = ("no_scale", "mask_lost", "mask_diagonal", "keys_are_values", "softmax_dim")


class MaskAsAttribute(attention.CausalAttention):
    """Keeps the causal mask as a plain attribute: not in state_dict, not moved by .to()."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        mask = self.mask
        del self.mask
        self.mask = mask


class CausalAttentionKeepsMask(attention.CausalAttention):
    """Slices the mask on the first call and keeps the slice in a new attribute."""

    def forward(self, x):
        if not hasattr(self, "first_mask"):
            self.first_mask = self.mask[: x.shape[1], : x.shape[1]]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        attn_weights = self.dropout(
            torch.softmax(scores.masked_fill(self.first_mask, -torch.inf), -1)
        )
        return attn_weights @ values


def causal_with(mistake: str) -> type:
    """A CausalAttention subclass with ``mistake``."""
    return type(f"CausalAttention_{mistake}", (CausalAttentionWith,), {"mistake": mistake})


def weightless_with(mistake: str):
    """numpy weightless attention (lecture 00, section 0) with ``mistake``."""

    def weightless_attention(X):
        scores = X @ X.T  # (num_tokens, num_tokens)
        if mistake == "scaled":
            scores = scores / np.sqrt(X.shape[-1])
        axis = 0 if mistake == "softmax_axis" else -1
        weights = scores if mistake == "no_softmax" else numpy_attention.softmax(scores, axis=axis)
        return (weights.T if mistake == "transposed" else weights) @ X, weights

    return weightless_attention


class CrossAttentionWith(blocks.MultiHeadCrossAttention):
    """MultiHeadCrossAttention whose forward makes ``mistake`` (set by the subclasses below)."""

    mistake: str | None = None

    def forward(self, query, key, value, mask=None):
        if self.mistake == "self_attention":
            key = value = query
        if self.mistake == "keys_for_values":
            value = key
        if self.mistake in ("mask_ignored", "self_attention"):
            mask = None
        if self.mistake == "mask_unsqueezed" and mask is not None:
            mask = mask.unsqueeze(1)  # seed 004: (b, 1, 1, S) -> (b, 1, 1, 1, S)
        h = self.num_heads
        heads = [
            split_heads(self.W_query(query), h),
            split_heads(self.W_key(key), h),
            split_heads(self.W_value(value), h),
        ]
        dropout = None if self.mistake == "no_dropout" else self.dropout
        if self.mistake in ("no_scale", "mask_unsqueezed"):  # plain broadcasting of the mask
            context, weights = sdpa(*heads, mask, self.mistake)
        else:
            context, weights = attention.scaled_dot_product_attention(*heads, mask, dropout)
        if self.mistake == "mask_unsqueezed":
            merged = context.transpose(1, 2).contiguous().view(query.shape[0], -1, self.d_model)
        else:
            merged = merge_heads(context)
        return merged if self.mistake == "no_out_proj" else self.out_proj(merged), weights


def cross_with(mistake: str) -> type:
    """A MultiHeadCrossAttention subclass with ``mistake``."""
    return type(f"CrossAttention_{mistake}", (CrossAttentionWith,), {"mistake": mistake})


class MultiHeadAttentionWith(attention.MultiHeadAttention):
    """MultiHeadAttention whose forward makes ``mistake`` (set by the subclasses below)."""

    mistake: str | None = None

    def forward(self, x):
        b, num_tokens, _ = x.shape
        projected = self.W_query(x), self.W_key(x), self.W_value(x)  # (b, num_tokens, d_out)
        if self.mistake == "split_reshape":
            heads = [t.reshape(b, self.num_heads, num_tokens, self.head_dim) for t in projected]
        else:
            heads = [split_heads(t, self.num_heads) for t in projected]
        if self.mistake == "scale_d_out":
            heads[0] = heads[0] * (self.head_dim / self.d_out) ** 0.5
        context = sdpa(*heads, self.mask[:num_tokens, :num_tokens])[0]
        if self.mistake == "merge_no_transpose":
            merged = context.reshape(b, num_tokens, self.d_out)
        else:
            merged = merge_heads(context)
        return merged if self.mistake == "no_out_proj" else self.out_proj(merged)


def mha_with(mistake: str) -> type:
    """A MultiHeadAttention subclass with ``mistake``."""
    return type(f"MultiHeadAttention_{mistake}", (MultiHeadAttentionWith,), {"mistake": mistake})


class OutProjWrongWidth(attention.MultiHeadAttention):
    """The weight-split seed's bug: out_proj = nn.Linear(d_out, d_in)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_in)


class SDPAInvertedMask(attention.MultiHeadAttentionSDPA):
    """Passes the course's causal mask (True = hidden) to F.sdpa, which reads True = allowed."""

    def forward(self, x):
        num_tokens = x.shape[1]
        heads = [
            split_heads(m(x), self.num_heads) for m in (self.W_query, self.W_key, self.W_value)
        ]
        context = F.scaled_dot_product_attention(
            *heads, attn_mask=self.mask[:num_tokens, :num_tokens]
        )
        return self.out_proj(merge_heads(context))


class EncoderNoResidual(blocks.EncoderLayer):
    """Norms applied, residuals forgotten."""

    def forward(self, x, mask=None):
        x = self.norm1(self.att(x, mask=mask)[0])
        return self.norm2(self.feed_forward(x))


class EncoderNoNorm(blocks.EncoderLayer):
    """Residuals added, norms forgotten."""

    def forward(self, x, mask=None):
        x = x + self.att(x, mask=mask)[0]
        return x + self.feed_forward(x)


class BlockPostLN(blocks.TransformerBlock):
    """GPT-2 block with the norms after the residual sums."""

    def forward(self, x):
        x = self.norm1(x + self.att(x))
        return self.norm2(x + self.ff(x))


class FeedForwardNoActivation(blocks.FeedForward):
    """Two linears without the ReLU between them."""

    def forward(self, x):
        return self.linear2(self.linear1(x))


class LayerNormUnbiased(blocks.LayerNorm):
    """Uses the unbiased variance (torch.var's default)."""

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        return (
            self.scale * centred / torch.sqrt(x.var(dim=-1, keepdim=True) + self.eps) + self.shift
        )


def copy_without_identity(wrapper, mha):
    """Copies the heads but leaves out_proj random."""
    out_proj = {k: v.clone() for k, v in mha.out_proj.state_dict().items()}
    attention.copy_wrapper_weights(wrapper, mha)
    mha.out_proj.load_state_dict(out_proj)


def numpy_softmax_unstable(x, axis=-1):
    """No max subtraction: exp overflows for large scores."""
    with np.errstate(over="ignore", invalid="ignore"):
        e_x = np.exp(x)
        return e_x / e_x.sum(axis=axis, keepdims=True)


def numpy_self_attention_no_scale(X, W_Q, W_K, W_V, causal=False):
    """The NumPy head without 1/sqrt(d_k) (scaling W_Q by sqrt(d_k) cancels the package's)."""
    return numpy_attention.self_attention(X, W_Q * np.sqrt(W_K.shape[1]), W_K, W_V, causal)


class MHAWithoutDropout(attention.MultiHeadAttention):
    """MultiHeadAttention that never applies its dropout."""

    def forward(self, x):
        b, num_tokens, _ = x.shape
        heads = [
            split_heads(m(x), self.num_heads) for m in (self.W_query, self.W_key, self.W_value)
        ]
        context = attention.scaled_dot_product_attention(
            *heads, self.mask[:num_tokens, :num_tokens]
        )[0]
        return self.out_proj(merge_heads(context))


class SDPADropoutInEval(attention.MultiHeadAttentionSDPA):
    """Passes dropout_p in eval mode too: eval outputs are random."""

    def forward(self, x):
        heads = [
            split_heads(m(x), self.num_heads) for m in (self.W_query, self.W_key, self.W_value)
        ]
        context = F.scaled_dot_product_attention(*heads, dropout_p=self.dropout.p, is_causal=True)
        return self.out_proj(merge_heads(context))


class FeedForwardDropoutLast(blocks.FeedForward):
    """Dropout after linear2 instead of between the linears."""

    def forward(self, x):
        return self.dropout(self.linear2(self.activation(self.linear1(x))))


class EncoderNoDropout(blocks.EncoderLayer):
    """Right residuals and norms, but no dropout on the sublayer outputs."""

    def forward(self, x, mask=None):
        x = self.norm1(x + self.att(x, mask=mask)[0])
        return self.norm2(x + self.feed_forward(x))


class EncoderNorm1Twice(blocks.EncoderLayer):
    """Uses norm1 for both Add & Norm steps."""

    def forward(self, x, mask=None):
        x = self.norm1(x + self.dropout(self.att(x, mask=mask)[0]))
        return self.norm1(x + self.dropout(self.feed_forward(x)))


class EncoderNormsSwapped(blocks.EncoderLayer):
    """norm2 after the attention, norm1 after the feed-forward."""

    def forward(self, x, mask=None):
        x = self.norm2(x + self.dropout(self.att(x, mask=mask)[0]))
        return self.norm1(x + self.dropout(self.feed_forward(x)))


class BlockNoDropShortcut(blocks.TransformerBlock):
    """Pre-LN block without the shortcut dropout."""

    def forward(self, x):
        x = x + self.att(self.norm1(x))
        return x + self.ff(self.norm2(x))


class BlockNorm1Twice(blocks.TransformerBlock):
    """Uses norm1 before the feed-forward too."""

    def forward(self, x):
        x = x + self.drop_shortcut(self.att(self.norm1(x)))
        return x + self.drop_shortcut(self.ff(self.norm1(x)))


class LayerNormStdPlusEps(blocks.LayerNorm):
    """eps added to the standard deviation instead of under the square root."""

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        std = x.var(dim=-1, keepdim=True, unbiased=False).sqrt()
        return self.scale * centred / (std + self.eps) + self.shift


class LayerNormNoEps(blocks.LayerNorm):
    """No eps at all: 0 / 0 = NaN for a row of equal values."""

    def forward(self, x):
        centred = x - x.mean(dim=-1, keepdim=True)
        return (
            self.scale * centred / x.var(dim=-1, keepdim=True, unbiased=False).sqrt() + self.shift
        )


def copy_outside_no_grad(wrapper, mha):
    """Right copies, but in place on parameters without torch.no_grad()."""
    for name in ("W_query", "W_key", "W_value"):
        target = getattr(mha, name)
        target.weight.copy_(torch.cat([getattr(h, name).weight for h in wrapper.heads]))
        if target.bias is not None:
            target.bias.copy_(torch.cat([getattr(h, name).bias for h in wrapper.heads]))
    mha.out_proj.weight.copy_(torch.eye(mha.d_out))
    mha.out_proj.bias.zero_()


def numpy_self_attention_softmax_axis0(X, W_Q, W_K, W_V, causal=False):
    """Normalises the columns (axis 0) instead of the rows."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if causal:
        scores = np.where(np.triu(np.ones(scores.shape, dtype=bool), k=1), -np.inf, scores)
    weights = numpy_attention.softmax(scores, axis=0)
    return weights @ V, weights


# ---- dropout by what it means: hand-written dropouts, rates, placement (issue 18) --------


def hand_dropout(w: torch.Tensor, p: float, training: bool, how: str = "rand") -> torch.Tensor:
    """Dropout written by hand as lecture 01 teaches it; ``how`` picks the (mis)take."""
    if not training or p == 0:
        return w
    if how == "bernoulli":
        return w * torch.bernoulli(torch.full_like(w, 1 - p)) / (1 - p)
    keep = torch.rand_like(w) >= p
    return w * keep if how == "unscaled" else w * keep / (1 - p)


class CausalHandDropout(attention.CausalAttention):
    """The lecture's CausalAttention with its dropout written by hand (``how``, ``rate``)."""

    how = "rand"
    rate: float | None = None  # a hard-coded rate instead of the argument

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5  # (b, n, n)
        attn_weights = torch.softmax(scores.masked_fill(self.mask[:n, :n], -torch.inf), dim=-1)
        p = self.dropout.p if self.rate is None else self.rate
        if self.how == "context":
            return hand_dropout(attn_weights @ values, p, self.training)
        return hand_dropout(attn_weights, p, self.training, self.how) @ values


def causal_hand(how: str = "rand", rate: float | None = None) -> type:
    return type(f"CausalAttention_{how}", (CausalHandDropout,), {"how": how, "rate": rate})


class MHAHandDropout(attention.MultiHeadAttention):
    """MultiHeadAttention with torch.bernoulli dropout on the weights."""

    def forward(self, x):
        b, n, _ = x.shape
        heads = [
            split_heads(m(x), self.num_heads) for m in (self.W_query, self.W_key, self.W_value)
        ]
        weights = sdpa(*heads, self.mask[:n, :n])[1]  # (b, num_heads, n, n)
        weights = hand_dropout(weights, self.dropout.p, self.training, "bernoulli")
        return self.out_proj(merge_heads(weights @ heads[2]))


class FeedForwardHandDropout(blocks.FeedForward):
    """Linear -> ReLU -> hand-written dropout -> Linear."""

    def forward(self, x):
        hidden = self.activation(self.linear1(x))
        return self.linear2(hand_dropout(hidden, self.dropout.p, self.training))


class FeedForwardDropoutRate(blocks.FeedForward):
    """Builds its dropout with a hard-coded rate instead of the argument."""

    def __init__(self, d_model, d_ff, dropout=0.1, activation="relu"):
        super().__init__(d_model, d_ff, dropout, activation)
        self.dropout = nn.Dropout(0.1)


class EncoderHandDropout(blocks.EncoderLayer):
    """The post-LN layer with the sublayer dropout written by hand."""

    def forward(self, x, mask=None):
        p = self.dropout.p
        x = self.norm1(x + hand_dropout(self.att(x, mask=mask)[0], p, self.training))
        return self.norm2(x + hand_dropout(self.feed_forward(x), p, self.training, "bernoulli"))


class EncoderQuietFeedForward(blocks.EncoderLayer):
    """Builds its feed-forward with dropout 0.0."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__(d_model, num_heads, d_ff, dropout)
        self.feed_forward = blocks.FeedForward(d_model, d_ff, 0.0)


class EncoderHalfDropout(blocks.EncoderLayer):
    """Hand-written sublayer dropout at a fixed rate 0.5."""

    def forward(self, x, mask=None):
        x = self.norm1(x + hand_dropout(self.att(x, mask=mask)[0], 0.5, self.training))
        return self.norm2(x + hand_dropout(self.feed_forward(x), 0.5, self.training))


class BlockHandDropout(blocks.TransformerBlock):
    """Pre-LN block with the shortcut dropout written by hand."""

    def forward(self, x):
        p = self.drop_shortcut.p
        x = x + hand_dropout(self.att(self.norm1(x)), p, self.training)
        return x + hand_dropout(self.ff(self.norm2(x)), p, self.training)


class BlockDropoutFeedForward(blocks.TransformerBlock):
    """Builds the GPT-2 feed-forward with the block's dropout (the lecture's has 0.0)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.ff = blocks.FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, activation="gelu")


# ---- parameters: names the learner got wrong, each its own hint ----------------------------


class OutProjNoBias(attention.MultiHeadAttention):
    """out_proj = nn.Linear(d_out, d_out, bias=False)."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out, bias=False)


class CausalAlwaysBias(attention.CausalAttention):
    """Ignores qkv_bias: the projections always have a bias."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        for name in ("W_query", "W_key", "W_value"):
            setattr(self, name, nn.Linear(d_in, d_out, bias=True))


class WrapperPlainList(attention.MultiHeadAttentionWrapper):
    """Keeps the heads in a plain Python list: their parameters are not registered."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        heads = list(self.heads)
        del self.heads
        self.heads = heads


class WrapperSharedHead(attention.MultiHeadAttentionWrapper):
    """[CausalAttention(...)] * num_heads: one head, num_heads times."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
        self.heads = nn.ModuleList([self.heads[0]] * num_heads)


class LayerNormBuffers(blocks.LayerNorm):
    """scale and shift registered as buffers: never trained."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        del self.scale, self.shift
        self.register_buffer("scale", torch.ones(d_model))
        self.register_buffer("shift", torch.zeros(d_model))


class EncoderSharedNorm(blocks.EncoderLayer):
    """norm2 = norm1: one LayerNorm used twice."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__(d_model, num_heads, d_ff, dropout)
        self.norm2 = self.norm1


class LayerNormRandomStart(blocks.LayerNorm):
    """scale starts random, not at ones."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.scale = nn.Parameter(torch.randn(d_model))


class LayerNormZeroScale(blocks.LayerNorm):
    """scale starts at zeros: a fresh layer outputs only the shift."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.scale = nn.Parameter(torch.zeros(d_model))


class LayerNormFixedEps(blocks.LayerNorm):
    """Ignores the eps argument: always 1e-5."""

    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model)


# ---- buffers used by forward, sizes from the arguments ------------------------------------


class CausalFreshMask(attention.CausalAttention):
    """Builds the mask on the CPU in every forward: wrong once the module moves to a GPU."""

    def forward(self, x):
        n = x.shape[1]
        fresh = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # CPU, always
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        return self.dropout(torch.softmax(scores.masked_fill(fresh, -torch.inf), -1)) @ values


class MHAFreshMask(attention.MultiHeadAttention):
    """Ignores its registered buffer: a CPU mask made in forward."""

    def forward(self, x):
        self.mask = attention.causal_mask(self.mask.shape[0])  # replaces the moved buffer
        return super().forward(x)


class CausalMaskFromDin(attention.CausalAttention):
    """Sizes the mask by d_in instead of context_length."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        self.register_buffer("mask", attention.causal_mask(d_in))


class CausalDevicePlaced(attention.CausalAttention):
    """Right: a fresh mask, but on x's device (no buffer use in forward)."""

    def forward(self, x):
        n = x.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(diagonal=1)
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        return self.dropout(torch.softmax(scores.masked_fill(mask, -torch.inf), -1)) @ values


class CausalScaledByDin(attention.CausalAttention):
    """Divides the scores by sqrt(d_in) instead of sqrt(d_out)."""

    def forward(self, x):
        n = x.shape[1]
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / x.shape[-1] ** 0.5
        scores = scores.masked_fill(self.mask[:n, :n], -torch.inf)
        return self.dropout(torch.softmax(scores, dim=-1)) @ values


class MHAScaledByDin(attention.MultiHeadAttention):
    """Divides each head's scores by sqrt(d_in)."""

    def forward(self, x):
        n = x.shape[1]
        heads = [
            split_heads(m(x), self.num_heads) for m in (self.W_query, self.W_key, self.W_value)
        ]
        scores = heads[0] @ heads[1].transpose(-2, -1) / x.shape[-1] ** 0.5
        weights = torch.softmax(scores.masked_fill(self.mask[:n, :n], -torch.inf), dim=-1)
        return self.out_proj(merge_heads(self.dropout(weights) @ heads[2]))


def sdpa_swapped(queries, keys, values, mask=None):
    context, weights = attention.scaled_dot_product_attention(queries, keys, values, mask)
    return weights, context


def numpy_self_attention_swapped(X, W_Q, W_K, W_V, causal=False):
    output, weights = numpy_attention.self_attention(X, W_Q, W_K, W_V, causal)
    return weights, output


def split_heads_no_transpose(x, num_heads):
    b, num_tokens, d_out = x.shape
    return x.view(b, num_tokens, num_heads, d_out // num_heads)


class CausalViewWithDin(attention.CausalAttention):
    """Views its output with d_in where d_out belongs, once inputs are wide (d_in >= 5): the
    first configurations pass, a later one raises."""

    def forward(self, x):
        b, n, d_in = x.shape
        out = super().forward(x)
        return out.reshape(b, n, -1) if d_in < 5 else out.view(b, n, d_in)


class EncoderMaskRequired(blocks.EncoderLayer):
    """Builds the mask's complement without checking for None."""

    def forward(self, x, mask=None):
        visible = ~mask  # TypeError when there is no mask
        return super().forward(x, mask=~visible)


class CausalMaskNotSliced(attention.CausalAttention):
    """Uses the whole context_length x context_length mask."""

    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        weights = torch.softmax(scores.masked_fill(self.mask, -torch.inf), dim=-1)
        return self.dropout(weights) @ values


class MHAViewWithContext(attention.MultiHeadAttention):
    """Views with context_length where num_tokens belongs."""

    def forward(self, x):
        b = x.shape[0]
        shape = (b, self.context_length, self.num_heads, self.head_dim)
        queries, keys, values = (
            m(x).view(shape).transpose(1, 2) for m in (self.W_query, self.W_key, self.W_value)
        )
        context = attention.scaled_dot_product_attention(
            queries, keys, values, self.mask, self.dropout
        )[0]
        return self.out_proj(merge_heads(context))


class CausalProjectsTwice(attention.CausalAttention):
    """Feeds the queries (width d_out) to W_key, which expects d_in."""

    def forward(self, x):
        n = x.shape[1]
        queries = self.W_query(x)
        keys, values = self.W_key(queries), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        weights = torch.softmax(scores.masked_fill(self.mask[:n, :n], -torch.inf), dim=-1)
        return self.dropout(weights) @ values


class CausalChecksItsInput(attention.CausalAttention):
    """Right: reads a value in forward (a finiteness check), which the meta device cannot."""

    def forward(self, x):
        if not bool(torch.isfinite(x).all()):
            raise ValueError("x holds inf or NaN")
        return super().forward(x)


class CausalMaskMovedToInput(attention.CausalAttention):
    """Right: builds the mask on the CPU, then moves it to the input's device."""

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n), diagonal=1).bool().to(x.device)
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5
        return self.dropout(torch.softmax(scores.masked_fill(mask, -torch.inf), -1)) @ values


class LayerNormAnnotated(blocks.LayerNorm):
    """The Annotated Transformer's form: x.std() (unbiased) and eps outside the root."""

    def forward(self, x):
        mean, std = x.mean(-1, keepdim=True), x.std(-1, keepdim=True)
        return self.scale * (x - mean) / (std + self.eps) + self.shift


def online_raw_exp(m, s, block):
    """No shift by the max at all."""
    with np.errstate(over="ignore"):
        return max(m, float(np.max(block))), s + float(np.sum(np.exp(block)))


def tile_new_max_only(queries, keys, values, m, s, acc, mask=None):
    """Takes the block's max as the new max, forgetting the running one."""
    scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    m_new = scores.amax(dim=-1, keepdim=True)
    p, rescale = torch.exp(scores - m_new), torch.exp(m - m_new)
    return m_new, s * rescale + p.sum(-1, keepdim=True), acc * rescale + p @ values


class CrossNoBias(blocks.MultiHeadCrossAttention):
    """Projections without bias: the lecture's cross-attention has them (nn.Linear's default)."""

    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__(d_model, num_heads, dropout)
        for name in ("W_query", "W_key", "W_value"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=False))


# ---- autograd: answers computed outside it ------------------------------------------------


def sdpa_no_grad(queries, keys, values, mask=None):
    """Right numbers, computed under torch.no_grad(): nothing can train through it."""
    with torch.no_grad():
        return attention.scaled_dot_product_attention(queries, keys, values, mask)


def sdpa_numpy(queries, keys, values, mask=None):
    """Right numbers, computed in NumPy and converted back."""
    q, k, v = (t.detach().numpy() for t in (queries, keys, values))
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(k.shape[-1])
    if mask is not None:
        scores = np.where(mask.numpy(), -np.inf, scores)
    weights = numpy_attention.softmax(scores, axis=-1)
    return torch.from_numpy(weights @ v).float(), torch.from_numpy(weights).float()


def split_heads_numpy(x, num_heads):
    b, num_tokens, d_out = x.shape
    heads = x.detach().numpy().reshape(b, num_tokens, num_heads, -1).transpose(0, 2, 1, 3)
    return torch.from_numpy(np.ascontiguousarray(heads))


def merge_heads_detached(x):
    return attention.merge_heads(x).detach()


# ---- inputs in the dangerous range ---------------------------------------------------------


def numpy_softmax_shift_min(x, axis=-1):
    """Shifts by the min: stable for small ranges only."""
    with np.errstate(over="ignore", invalid="ignore"):
        e_x = np.exp(x - x.min(axis=axis, keepdims=True))
        return e_x / e_x.sum(axis=axis, keepdims=True)


def numpy_softmax_shift_mean(x, axis=-1):
    """Shifts by the mean: a range of thousands still overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        e_x = np.exp(x - x.mean(axis=axis, keepdims=True))
        return e_x / e_x.sum(axis=axis, keepdims=True)


def numpy_softmax_clipped(x, axis=-1):
    """Right: clips the shifted scores (the max subtracted first)."""
    shifted = np.clip(x - x.max(axis=axis, keepdims=True), -700, 0)
    e_x = np.exp(shifted)
    return e_x / e_x.sum(axis=axis, keepdims=True)


_MASK_CACHE = attention.causal_mask(1024)


def causal_mask_sliced(num_tokens):
    """Slices one precomputed 1024 x 1024 mask: wrong beyond it, and results share memory."""
    return _MASK_CACHE[:num_tokens, :num_tokens]


_MASKS: dict[int, torch.Tensor] = {}


def causal_mask_memoised(num_tokens):
    """Right values for every size, but one tensor handed out to every caller."""
    return _MASKS.setdefault(num_tokens, attention.causal_mask(num_tokens))


def online_swapped(m, s, block):
    m_new, s_new = tiled.online_softmax_update(m, s, block)
    return s_new, m_new


def online_exp_first(m, s, block):
    """exp of the raw scores, divided by exp(m_new) later: overflows past 709."""
    m_new = max(m, float(np.max(block)))
    with np.errstate(over="ignore", invalid="ignore"):
        return m_new, (s * np.exp(m) + float(np.sum(np.exp(block)))) / np.exp(m_new)


def tile_exp_first(queries, keys, values, m, s, acc, mask=None):
    """exp of the raw scores: inf in float32 above 88."""
    scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
    p = torch.exp(scores) / torch.exp(m_new)
    rescale = torch.exp(m - m_new)
    return m_new, s * rescale + p.sum(-1, keepdim=True), acc * rescale + p @ values


def tile_first_tile_nan(queries, keys, values, m, s, acc, mask=None):
    """exp(m) / exp(m_new) for the rescale: -inf - -inf style NaN... from the first tile on
    the ratio is 0 / 0 where m_new underflows."""
    scores = queries @ keys.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(mask, -torch.inf)
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
    p = torch.exp(scores - m_new)
    rescale = torch.exp(m) / torch.exp(m_new)
    return m_new, s * rescale + p.sum(-1, keepdim=True), acc * rescale + p @ values


def tiled_per_head_matrix(queries, keys, values, causal=False, block_size=64):
    """Loops over heads, each with its full (num_queries, num_keys) scores."""
    flat_q = queries.reshape(-1, *queries.shape[-2:])
    flat_k, flat_v = keys.reshape(-1, *keys.shape[-2:]), values.reshape(-1, *values.shape[-2:])
    outputs = []
    for q, k, v in zip(flat_q, flat_k, flat_v, strict=True):
        mask = None
        if causal:
            offset = k.shape[0] - q.shape[0]  # bottom-right: the queries are the last positions
            mask = torch.arange(k.shape[0])[None, :] > torch.arange(q.shape[0])[:, None] + offset
        outputs.append(attention.scaled_dot_product_attention(q, k, v, mask)[0])
    return torch.stack(outputs).reshape(*queries.shape[:-1], values.shape[-1])


def tiled_full_mask(queries, keys, values, causal=False, block_size=64):
    """Tiles the scores but builds the whole (num_queries, num_keys) causal mask first."""
    num_queries, num_keys = queries.shape[-2], keys.shape[-2]
    offset = num_keys - num_queries  # bottom-right: the queries are the last positions
    full = torch.ones(num_queries, num_keys, dtype=torch.bool).triu(1 + offset)
    queries = queries / keys.shape[-1] ** 0.5
    context = torch.zeros(*queries.shape[:-1], values.shape[-1])
    for q_start in range(0, num_queries, block_size):
        q_end = min(q_start + block_size, num_queries)
        m = torch.full((*queries.shape[:-2], q_end - q_start, 1), -torch.inf)
        s, acc = torch.zeros(m.shape), torch.zeros(*m.shape[:-1], values.shape[-1])
        for k_start in range(0, min(q_end + offset, num_keys) if causal else num_keys, block_size):
            k_end = min(k_start + block_size, num_keys)
            mask = full[q_start:q_end, k_start:k_end] if causal else None
            m, s, acc = tiled.attention_tile(
                queries[..., q_start:q_end, :],
                keys[..., k_start:k_end, :],
                values[..., k_start:k_end, :],
                m,
                s,
                acc,
                mask,
            )
        context[..., q_start:q_end, :] = acc / s
    return context


# --- notebook 08: positions, head scores, induction heads, ablation ---------------------------


def find_induction_heads(model, tokens, threshold=0.5):
    model(tokens)
    scores = head_scores(model.attention_weights(), tokens)["induction"]
    return [(layer, head) for layer, head in (scores > threshold).nonzero().tolist()]


def zero_head(model, layer, head):
    att = model.layers[layer]
    with torch.no_grad():
        att.out_proj.weight[:, head * att.head_dim : (head + 1) * att.head_dim] = 0.0


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


def next_loss(logits, tokens, mistake=None):
    """A learner's next-token loss (logits (b, T, V), tokens (b, T)) with ``mistake``."""
    pred, target = logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()
    if mistake == "no shift":
        return F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    if mistake == "backwards":
        return F.cross_entropy(logits[:, 1:].flatten(0, 1), tokens[:, :-1].flatten())
    if mistake == "sum":
        return F.cross_entropy(pred, target, reduction="sum")
    if mistake == "bits":
        return -torch.log2(torch.softmax(pred, dim=-1).gather(1, target[:, None])).mean()
    if mistake == "naive":  # exp overflows for logits in the hundreds
        probs = pred.exp() / pred.exp().sum(dim=-1, keepdim=True)
        return -probs.gather(1, target[:, None]).log().mean()
    if mistake == "double softmax":
        return F.cross_entropy(torch.softmax(pred, dim=-1), target)
    if mistake == "ignore 0":
        return F.cross_entropy(pred, target, ignore_index=0)
    if mistake == "item":
        return F.cross_entropy(pred, target).item()
    if mistake == "no grad":
        with torch.no_grad():
            return F.cross_entropy(pred, target)
    return F.cross_entropy(pred, target)


def next_loss_log_softmax(logits, tokens):
    """Right, written another way: gather the targets' log-probabilities position by position."""
    log_probs = torch.log_softmax(logits, dim=-1)[:, :-1]  # (b, T - 1, V)
    return -log_probs.gather(-1, tokens[:, 1:, None]).squeeze(-1).mean()


def next_loss_logsumexp(logits, tokens):
    """Right, written another way: logsumexp minus the target's logit, one sequence at a time."""
    losses = []
    for seq_logits, seq_tokens in zip(logits, tokens, strict=True):
        rows = seq_logits[:-1]  # (T - 1, V)
        picked = rows[torch.arange(len(rows)), seq_tokens[1:]]
        losses.append(torch.logsumexp(rows, dim=-1) - picked)
    return torch.cat(losses).mean()


def step(model, optimizer, tokens, max_norm, mistake=None):
    """A learner's training step with ``mistake``."""
    if mistake not in ("no zero_grad", "zero_grad after backward", "zero_grad at the end"):
        optimizer.zero_grad()
    logits = model(tokens)
    loss = next_loss(logits, tokens, {"sum": "sum", "bits": "bits"}.get(mistake))
    if mistake == "no shift":
        loss = next_loss(logits, tokens, "no shift")
    (-loss if mistake == "ascent" else loss).backward()
    if mistake == "zero_grad after backward":
        optimizer.zero_grad()
    if mistake == "clip value":
        torch.nn.utils.clip_grad_value_(model.parameters(), max_norm)
    elif mistake not in ("clip after step", "no clip"):
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if mistake != "no step":
        optimizer.step()
    if mistake == "clip after step":
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    if mistake == "zero_grad at the end":
        optimizer.zero_grad()
    if mistake == "none":
        return None
    return loss if mistake == "tensor" else loss.item()


def step_clip_by_hand(model, optimizer, tokens, max_norm):
    """Right, written another way: zero_grad at the end, the norm clipped by hand."""
    loss = next_loss_log_softmax(model(tokens), tokens)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((g**2).sum() for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / norm)
    optimizer.step()
    model.zero_grad(set_to_none=False)
    return loss.item()


# --- notebooks 09 and 10: sliding window, GQA, KV cache, online softmax, tiles ----------------


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
        if mistake == "repeat_tiled":  # x.repeat tiles the groups: head h reads group h % groups
            keys, values = keys.repeat(1, group_size, 1, 1), values.repeat(1, group_size, 1, 1)
        else:
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
            scores = scores.masked_fill(~mask if mistake == "mask_inverted" else mask, -torch.inf)
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
            if causal and mistake != "visits_every_block":
                k_stop = offset + (q_start if mistake == "diagonal_skipped" else q_end)
            for k_start in range(0, k_stop, block_size):
                k_end = min(k_start + block_size, num_keys)
                mask = None
                if causal and mistake != "diagonal_unmasked":
                    rows = offset + torch.arange(q_start, q_end)[:, None]
                    mask = torch.arange(k_start, k_end)[None, :] > rows
                kb, vb = keys[..., k_start:k_end, :], values[..., k_start:k_end, :]
                m, s, acc = attention_tile(q_block, kb, vb, m, s, acc, mask)  # a global
            context[..., q_start:q_end, :] = acc / s
        return context

    return attend


@dataclass(frozen=True)
class Wrong:
    name: str
    check_id: str
    obj: object
    hint_words: tuple[str, ...]  # each must appear (case-insensitive) in the hint


def _sdpa_with(mistake: str):
    return partial(sdpa, mistake=mistake)


# --- notebook 11: sampling, BPE, loss, perplexity, written as a learner would -----------------


def sample_probs(logits, temperature=1.0, top_k=None, top_p=None, mistake=None):
    """A learner's sampling_probabilities (sort-based top-p) with ``mistake`` built in."""
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).float()
    if mistake != "temperature after softmax":
        logits = logits / temperature
    if top_k is not None:
        values, indices = logits.topk(top_k, dim=-1)
        if mistake == "top-k by position":
            logits = torch.full_like(logits, -torch.inf).scatter(-1, indices, values)
        elif mistake == "top-k strict":
            logits = logits.masked_fill(logits <= values[..., -1:], -torch.inf)  # drops the k-th
        else:
            logits = logits.masked_fill(logits < values[..., -1:], -torch.inf)
    if top_p is not None:
        probs, order = torch.softmax(logits, dim=-1).sort(dim=-1, descending=True)
        before = probs.cumsum(dim=-1) - probs  # mass of the more likely tokens
        if mistake == "top-p too few":
            drop = before + probs >= top_p  # drops the token that crosses p
        elif mistake == "top-p too many":
            drop = before - probs.roll(1, dims=-1) >= top_p  # one more past p
            drop[..., 0] = False
        else:
            drop = before >= top_p
        logits = logits.masked_fill(drop.scatter(-1, order, drop), -torch.inf)
    probs = torch.softmax(logits, dim=0 if mistake == "softmax axis" else -1)
    return probs / temperature if mistake == "temperature after softmax" else probs


def bpe_step(tokens, mistake=None):
    """A learner's merge step: count neighbouring pairs, merge the most frequent one."""
    counts = {}
    for pair in zip(tokens, tokens[1:], strict=False):
        counts[pair] = counts.get(pair, 0) + 1
    if mistake == "tie last":
        pair = max(counts, key=lambda p: (counts[p], p))
    else:
        pair = min(counts, key=lambda p: (-counts[p], p))
    merged, i = [], 0
    while i < len(tokens):
        if i + 1 < len(tokens) and (tokens[i], tokens[i + 1]) == pair:
            merged.append(tokens[i] + tokens[i + 1])
            i += 2 if mistake != "overlapping" else 1
        else:
            merged.append(tokens[i])
            i += 1
    return pair, merged


def token_loss(logits, targets, mistake=None):
    probs = torch.softmax(logits, dim=0 if mistake == "axis" else -1)
    picked = probs[torch.arange(len(targets)), targets]
    if mistake == "no log":
        return -picked
    return -torch.log2(picked) if mistake == "bits" else -torch.log(picked)


def previous_char_head(model, ids, mistake=None):
    """A learner's search for the previous-character head of a GPTModel."""
    model(ids)
    scores = torch.stack([
        block.att.attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))
        for block in model.trf_blocks
    ])  # (num_layers, num_heads)  # fmt: skip
    flat = int(scores.argmin() if mistake == "lowest" else scores.argmax())
    layer, head = divmod(flat, scores.shape[1])
    return (layer + 1, head + 1) if mistake == "one-based" else (layer, head)


# --- issue 29's learner probe: spec cases, stale weights, dropout after eval() -------------


def sample_probs_p_first(logits, temperature=1.0, top_k=None, top_p=None):
    """Top-p on the whole distribution, then top-k (the text says: top-k first)."""
    if temperature == 0:
        return sample_probs(logits, 0.0)
    logits = sample_probs(logits, temperature, None, top_p).log()  # -inf where top-p dropped
    return sample_probs(logits, 1.0, top_k, None)


def sample_probs_tiny_temperature(logits, temperature=1.0, top_k=None, top_p=None):
    """Greedy as a tiny temperature: tied maxima share the probability."""
    return sample_probs(logits, max(temperature, 1e-8), top_k, top_p)


def sample_probs_greedy_one_hot(logits, temperature=1.0, top_k=None, top_p=None):
    """Right: greedy by argmax (its first maximum) written with scatter."""
    if temperature == 0:
        first = logits.argmax(dim=-1, keepdim=True)
        return torch.zeros_like(logits).scatter(-1, first, 1.0)
    return sample_probs(logits, temperature, top_k, top_p)


def bpe_step_in_place(tokens):
    """Right pair and tokens, but merges inside the caller's list."""
    pair, merged = bpe_step(tokens)
    tokens[:] = merged
    return pair, tokens


def bpe_step_non_overlapping_counts(tokens):
    """Counts each pair as the merge would take it: (a, a) once in a a a."""
    pairs = set(zip(tokens, tokens[1:], strict=False))
    counts = {p: len(tokens) - len(bpe_merge(tokens, p)) for p in pairs}
    pair = min(counts, key=lambda p: (-counts[p], p))
    return pair, bpe_merge(tokens, pair)


def bpe_merge(tokens, pair):
    return importlib.import_module("attn_course.bpe").merge_step(tokens, pair)


def bpe_step_counter(tokens):
    """Right: collections.Counter and a copy merged with slices."""
    from collections import Counter

    counts = Counter(zip(tokens, tokens[1:], strict=False))
    pair = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
    out = list(tokens)
    i = 0
    while i < len(out) - 1:
        if (out[i], out[i + 1]) == pair:
            out[i : i + 2] = [out[i] + out[i + 1]]
        i += 1
    return pair, out


def previous_char_head_without_running(model, ids):
    """Reads the weights the model kept instead of running it on ids."""
    scores = torch.stack([
        block.att.attn_weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))
        for block in model.trf_blocks
    ])  # fmt: skip
    return divmod(int(scores.argmax()), scores.shape[1])


def previous_char_head_reversed(model, ids):
    layer, head = previous_char_head(model, ids)
    return head, layer


class CausalDropoutAfterEval(attention.CausalAttention):
    """eval() overridden: the dropout keeps dropping after model.eval()."""

    def eval(self):
        return self


def sinusoidal_float64(num_tokens, d_model):
    return sinusoidal_positions(num_tokens, d_model).double()


def sinusoidal_float32_by_hand(num_tokens, d_model):
    """Right: the formula with exp/log frequencies, float32."""
    positions = torch.arange(num_tokens).float()[:, None]
    frequencies = torch.exp(-torch.arange(0, d_model, 2).float() * (np.log(10000.0) / d_model))
    table = torch.zeros(num_tokens, d_model)
    table[:, 0::2] = torch.sin(positions * frequencies)
    table[:, 1::2] = torch.cos(positions * frequencies)
    return table


def previous_diagonal_offset_0(w):
    """diagonal(offset=0): the weight on the token itself, row 0 included."""
    return w.diagonal(offset=0, dim1=-2, dim2=-1).mean(dim=(0, 2))


WRONG: list[Wrong] = [
    Wrong("sdpa no scale", "scaled_dot_product_attention", _sdpa_with("no_scale"), ("sqrt",)),
    Wrong(
        "sdpa softmax dim",
        "scaled_dot_product_attention",
        _sdpa_with("softmax_dim"),
        ("wrong dim",),
    ),
    Wrong(
        "sdpa mask lost",
        "scaled_dot_product_attention",
        _sdpa_with("mask_lost"),
        ("in place", "masked_fill_"),
    ),
    Wrong(
        "sdpa mask inverted",
        "scaled_dot_product_attention",
        _sdpa_with("mask_inverted"),
        ("inverted",),
    ),
    Wrong(
        "sdpa keys are values",
        "scaled_dot_product_attention",
        _sdpa_with("keys_are_values"),
        ("values instead of the keys",),
    ),
    Wrong("sdpa NaN", "scaled_dot_product_attention", _sdpa_with("nan"), ("nan",)),
    Wrong(
        "sdpa mutates input",
        "scaled_dot_product_attention",
        _sdpa_with("mutates"),
        ("changed its input",),
    ),
    Wrong(
        "mask off by one",
        "causal_mask",
        lambda n: torch.ones(n, n, dtype=torch.bool).triu(),
        ("off by one", "diagonal"),
    ),
    Wrong("mask inverted", "causal_mask", lambda n: ~attention.causal_mask(n), ("inverted",)),
    Wrong(
        "mask float",
        "causal_mask",
        lambda n: attention.causal_mask(n).float(),
        ("dtype", "boolean"),
    ),
    Wrong(
        "mask hard-coded 6x6", "causal_mask", lambda n: attention.causal_mask(6), ("wrong shape",)
    ),
    Wrong("causal no scale", "causal_attention", causal_with("no_scale"), ("sqrt",)),
    Wrong("causal mask lost", "causal_attention", causal_with("mask_lost"), ("masked_fill_",)),
    Wrong(
        "causal diagonal hidden", "causal_attention", causal_with("mask_diagonal"), ("off by one",)
    ),
    Wrong(
        "causal keys are values",
        "causal_attention",
        causal_with("keys_are_values"),
        ("values instead of the keys",),
    ),
    Wrong("causal softmax dim", "causal_attention", causal_with("softmax_dim"), ("wrong dim",)),
    Wrong("bug zoo mask lost", "bug_mask_in_place", causal_with("mask_lost"), ("masked_fill_",)),
    Wrong(
        "bug zoo keys are values",
        "bug_keys_for_values",
        causal_with("keys_are_values"),
        ("values instead of the keys",),
    ),
    Wrong(
        "mha split reshape",
        "multi_head_attention",
        mha_with("split_reshape"),
        ("split", "transpose"),
    ),
    Wrong(
        "mha merge no transpose",
        "multi_head_attention",
        mha_with("merge_no_transpose"),
        ("merged without transposing",),
    ),
    Wrong(
        "mha scale d_out",
        "multi_head_attention",
        mha_with("scale_d_out"),
        ("sqrt(d_out)", "head_dim"),
    ),
    Wrong("mha no out_proj", "multi_head_attention", mha_with("no_out_proj"), ("out_proj",)),
    Wrong(
        "mha out_proj width", "bug_out_proj_width", OutProjWrongWidth, ("out_proj.weight", "shape")
    ),
    Wrong("bug zoo head scale", "bug_head_scale", mha_with("scale_d_out"), ("sqrt(d_out)",)),
    Wrong("sdpa class inverted mask", "sdpa_attention", SDPAInvertedMask, ("allowed",)),
    Wrong(
        "sdpa class without the fused kernel",
        "sdpa_attention",
        attention.MultiHeadAttention,  # the lecture's class: right outputs, its own softmax
        ("never calls F.scaled_dot_product_attention",),
    ),
    Wrong("encoder no residual", "encoder_layer", EncoderNoResidual, ("without residual",)),
    Wrong("encoder no norm", "encoder_layer", EncoderNoNorm, ("without norm",)),
    Wrong("bug zoo encoder", "bug_encoder_residual", EncoderNoResidual, ("residual",)),
    Wrong("block post-LN", "transformer_block", BlockPostLN, ("pre-ln",)),
    Wrong("feed-forward no activation", "feed_forward", FeedForwardNoActivation, ("activation",)),
    Wrong("layer norm unbiased", "layer_norm", LayerNormUnbiased, ("biased variance",)),
    Wrong(
        "split heads reshape",
        "split_heads",
        lambda x, h: x.reshape(x.shape[0], h, x.shape[1], -1),
        ("transpose",),
    ),
    Wrong(
        "split heads no transpose (shape)",
        "split_heads",
        lambda x, h: x.view(*x.shape[:2], h, -1),
        ("wrong shape",),
    ),
    Wrong(
        "merge heads no transpose",
        "merge_heads",
        lambda x: x.contiguous().view(x.shape[0], x.shape[2], -1),
        ("without transposing",),
    ),
    Wrong(
        "merge heads not contiguous",
        "merge_heads",
        lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1),
        ("contiguous",),
    ),
    Wrong(
        "padding mask inverted",
        "padding_mask",
        lambda lengths, n: ~attention.padding_mask(lengths, n),
        ("inverted",),
    ),
    Wrong(
        "padding mask flat",
        "padding_mask",
        lambda lengths, n: attention.padding_mask(lengths, n)[:, 0, 0],
        ("(b, 1, 1, num_tokens)",),
    ),
    Wrong("copy keeps out_proj", "copy_wrapper_weights", copy_without_identity, ("identity",)),
    Wrong("numpy softmax overflow", "numpy_softmax", numpy_softmax_unstable, ("max",)),
    Wrong("numpy head no scale", "numpy_self_attention", numpy_self_attention_no_scale, ("sqrt",)),
    Wrong("wrapper one head", "wrapper_output_shape", (2, 6, 2), ("one head",)),
    # The wrapper of the count (d_in 5, d_out 2, context 6, 4 heads): each count below makes
    # one mistake, most of them reading one factor of num_heads x 3 x d_in x d_out for another.
    # On the earlier sizes (d_in = num_heads = 3 projections, d_out 2) the four swaps of
    # heads, projections and d_in gave the right 54, and "one projection" the one-head hint.
    *(
        Wrong(f"wrapper count {name}", "wrapper_parameter_count", count, words)
        for name, count, words in [
            ("one head", 3 * 5 * 2, ("one head",)),
            ("one projection", 4 * 5 * 2, ("3 projections", "not one")),
            ("projections as heads", 3 * 3 * 5 * 2, ("num_heads = 4", "projections")),
            ("heads as projections", 4 * 4 * 5 * 2, ("3 projections", "not num_heads")),
            ("d_in as heads", 5 * 3 * 5 * 2, ("num_heads = 4", "not d_in")),
            ("d_out as heads", 2 * 3 * 5 * 2, ("num_heads = 4", "not d_out")),
            ("heads as d_in", 4 * 3 * 4 * 2, ("input width is d_in",)),
            ("heads as d_out", 4 * 3 * 5 * 4, ("output width is d_out",)),
            ("total width as d_out", 4 * 3 * 5 * 8, ("total width",)),
            ("with biases", 4 * 3 * (5 * 2 + 2), ("biases",)),
            ("with out_proj", 4 * 3 * 5 * 2 + 8 * 8 + 8, ("out_proj",)),
            ("with masks", 4 * 3 * 5 * 2 + 4 * 6 * 6, ("buffers",)),
        ]
    ),
    Wrong("mha count without out_proj", "mha_parameter_count", 108, ("out_proj",)),
    Wrong("weights count without heads", "attn_weights_numel", 2 * 1024 * 1024, ("head",)),
    Wrong("memory grows linearly", "attn_memory_ratio", 2, ("squared",)),
    Wrong("weights count visible only", "attn_weights_numel", 12_595_200, ("visible", "numel")),
    Wrong("weightless scaled", "weightless_attention", weightless_with("scaled"), ("no scaling",)),
    Wrong(
        "weightless softmax axis",
        "weightless_attention",
        weightless_with("softmax_axis"),
        ("axis=-1",),
    ),
    Wrong("weightless raw scores", "weightless_attention", weightless_with("no_softmax"), ("raw",)),
    Wrong(
        "weightless transposed",
        "weightless_attention",
        weightless_with("transposed"),
        ("weights @ X",),
    ),
    Wrong("cross self-attention", "cross_attention", cross_with("self_attention"), ("`key`",)),
    Wrong("cross keys for values", "cross_attention", cross_with("keys_for_values"), ("W_value",)),
    Wrong("cross mask ignored", "cross_attention", cross_with("mask_ignored"), ("mask",)),
    Wrong("cross no scale", "cross_attention", cross_with("no_scale"), ("sqrt",)),
    Wrong("cross no out_proj", "cross_attention", cross_with("no_out_proj"), ("out_proj",)),
    Wrong("cross no dropout", "cross_attention", cross_with("no_dropout"), ("training mode",)),
    Wrong(
        "bug zoo mask unsqueezed",
        "bug_padding_mask_unsqueeze",
        cross_with("mask_unsqueezed"),
        ("unsqueeze(1)",),
    ),
    # dropout: placement in train mode (same RNG state), determinism in eval
    Wrong("causal no dropout", "causal_attention", causal_with("no_dropout"), ("no dropout",)),
    Wrong(
        "causal dropout on context",
        "causal_attention",
        causal_with("dropout_context"),
        ("attention weights", "not to the context"),
    ),
    Wrong(
        "causal dropout on scores",
        "causal_attention",
        causal_with("dropout_scores"),
        ("after the softmax",),
    ),
    Wrong(
        "causal F.dropout always on",
        "causal_attention",
        causal_with("functional_dropout"),
        ("eval() mode", "F.dropout"),
    ),
    Wrong("mha no dropout", "multi_head_attention", MHAWithoutDropout, ("no dropout",)),
    Wrong("sdpa dropout_p in eval", "sdpa_attention", SDPADropoutInEval, ("eval",)),
    Wrong("feed-forward dropout last", "feed_forward", FeedForwardDropoutLast, ("after the relu",)),
    Wrong("encoder no dropout", "encoder_layer", EncoderNoDropout, ("before adding the residual",)),
    Wrong("block no drop_shortcut", "transformer_block", BlockNoDropShortcut, ("drop_shortcut",)),
    Wrong("bug zoo encoder no dropout", "bug_encoder_residual", EncoderNoDropout, ("dropout",)),
    # the two LayerNorms told apart
    Wrong("encoder norm1 twice", "encoder_layer", EncoderNorm1Twice, ("norm1 is used twice",)),
    Wrong("encoder norms swapped", "encoder_layer", EncoderNormsSwapped, ("swapped",)),
    Wrong("block norm1 twice", "transformer_block", BlockNorm1Twice, ("norm2",)),
    Wrong("bug zoo norm1 twice", "bug_encoder_residual", EncoderNorm1Twice, ("norm2",)),
    # eps with rows of tiny and zero spread; the NaN hint speaks of eps, not the softmax
    Wrong("layer norm std + eps", "layer_norm", LayerNormStdPlusEps, ("inside the square root",)),
    Wrong("layer norm without eps", "layer_norm", LayerNormNoEps, ("eps", "0 / 0")),
    # state kept between calls, buffers, backward
    Wrong(
        "copy outside no_grad",
        "copy_wrapper_weights",
        copy_outside_no_grad,
        ("torch.no_grad()",),
    ),
    Wrong(
        "mask sliced in place",
        "causal_attention",
        causal_with("mask_sliced_in_place"),
        ("second", "self.mask"),
    ),
    Wrong(
        "mask kept from the first call",
        "causal_attention",
        CausalAttentionKeepsMask,
        ("self.first_mask", "earlier call"),
    ),
    Wrong("mask as attribute", "causal_attention", MaskAsAttribute, ("register_buffer",)),
    Wrong(
        "renormalised in place",
        "causal_attention",
        causal_with("renormalise_in_place"),
        ("backward()", "in-place"),
    ),
    # hints in the exercise's language, naming the learner's class
    Wrong(
        "numpy softmax over axis 0",
        "numpy_self_attention",
        numpy_self_attention_softmax_axis0,
        ("axis=-1",),
    ),
    Wrong(
        "bug zoo names the learner's class",
        "bug_mask_in_place",
        causal_with("mask_lost"),
        ("CausalAttention_mask_lost",),
    ),
    Wrong("answer in a list", "causal_attention_parameters", [24], ("one whole number",)),
    Wrong("answer a long string", "causal_attention_parameters", "24 " * 5000, ("…",)),
    # dropout judged by what it means
    Wrong("dropout unscaled", "causal_attention", causal_hand("unscaled"), ("1/(1 - p)",)),
    Wrong("dropout on the context", "causal_attention", causal_hand("context"), ("output",)),
    Wrong("dropout rate 0.5 by hand", "causal_attention", causal_hand("rand", 0.5), ("50%",)),
    Wrong("dropout rate 0.1 by hand", "bug_keys_for_values", causal_hand("rand", 0.1), ("10%",)),
    Wrong("feed-forward nn.Dropout(0.1)", "feed_forward", FeedForwardDropoutRate, ("p=0.1",)),
    Wrong("encoder ffn built with 0.0", "encoder_layer", EncoderQuietFeedForward, ("p=0.0",)),
    Wrong("encoder dropout 0.5 by hand", "encoder_layer", EncoderHalfDropout, ("50%",)),
    Wrong("block ff with dropout", "transformer_block", BlockDropoutFeedForward, ("ff.dropout",)),
    # parameters: four mistakes, four hints
    Wrong("out_proj without bias", "multi_head_attention", OutProjNoBias, ("no bias",)),
    Wrong("qkv_bias ignored", "causal_attention", CausalAlwaysBias, ("bias=qkv_bias",)),
    Wrong("heads in a plain list", "multi_head_wrapper", WrapperPlainList, ("nn.ModuleList",)),
    Wrong("[head] * num_heads", "multi_head_wrapper", WrapperSharedHead, ("same module",)),
    Wrong("layer norm buffers", "layer_norm", LayerNormBuffers, ("buffers", "nn.Parameter")),
    Wrong("norm2 = norm1", "encoder_layer", EncoderSharedNorm, ("same module", "norm2")),
    # initial values and constructor arguments
    Wrong("layer norm random scale", "layer_norm", LayerNormRandomStart, ("torch.ones",)),
    Wrong("layer norm zero scale", "layer_norm", LayerNormZeroScale, ("torch.ones",)),
    Wrong("layer norm eps ignored", "layer_norm", LayerNormFixedEps, ("eps",)),
    # buffers used by forward, sizes from the arguments
    Wrong("mask made in forward", "causal_attention", CausalFreshMask, ("register_buffer",)),
    Wrong("buffer replaced in forward", "multi_head_attention", MHAFreshMask, ("register_buffer",)),
    Wrong("mask sized by d_in", "causal_attention", CausalMaskFromDin, ("context_length",)),
    Wrong("causal scaled by sqrt(d_in)", "causal_attention", CausalScaledByDin, ("sqrt(d_in)",)),
    Wrong("mha scaled by sqrt(d_in)", "multi_head_attention", MHAScaledByDin, ("sqrt(d_in)",)),
    Wrong("sdpa pair swapped", "scaled_dot_product_attention", sdpa_swapped, ("swapped",)),
    Wrong("numpy pair swapped", "numpy_self_attention", numpy_self_attention_swapped, ("swapped",)),
    Wrong("split heads view only", "split_heads", split_heads_no_transpose, ("transpose(1, 2)",)),
    Wrong("fails on a later size", "causal_attention", CausalViewWithDin, ("view or reshape",)),
    Wrong("encoder needs a mask", "encoder_layer", EncoderMaskRequired, ("mask or none",)),
    Wrong("mask not sliced", "causal_attention", CausalMaskNotSliced, ("self.mask[:num_tokens",)),
    Wrong("view with context_length", "multi_head_attention", MHAViewWithContext, ("x.shape",)),
    Wrong("W_key on the queries", "causal_attention", CausalProjectsTwice, ("in_features",)),
    Wrong(
        "mask diagonal=2",
        "causal_mask",
        lambda n: torch.ones(n, n, dtype=torch.bool).triu(diagonal=2),
        ("j = i + 1",),
    ),
    Wrong(
        "padding mask (b, 1, T)",
        "padding_mask",
        lambda lengths, n: attention.padding_mask(lengths, n)[:, 0],
        ("(b, 1, 1, num_tokens)",),
    ),
    Wrong("layer norm std + eps", "layer_norm", LayerNormAnnotated, ("x.std()",)),
    Wrong("online raw exp", "online_softmax_update", online_raw_exp, ("raw scores",)),
    Wrong("tile forgets the running max", "attention_tile", tile_new_max_only, ("running max",)),
    Wrong("cross-attention without biases", "cross_attention", CrossNoBias, ("bias=True",)),
    # autograd exercised
    Wrong("sdpa under no_grad", "scaled_dot_product_attention", sdpa_no_grad, ("no_grad",)),
    Wrong("sdpa in NumPy", "scaled_dot_product_attention", sdpa_numpy, ("numpy", "gradient")),
    Wrong("split heads in NumPy", "split_heads", split_heads_numpy, ("numpy",)),
    Wrong("merge heads detached", "merge_heads", merge_heads_detached, ("detach",)),
    # inputs in the dangerous range
    Wrong("numpy softmax shift by min", "numpy_softmax", numpy_softmax_shift_min, ("min",)),
    Wrong("numpy softmax shift by mean", "numpy_softmax", numpy_softmax_shift_mean, ("mean",)),
    Wrong("mask sliced from 1024", "causal_mask", causal_mask_sliced, ("one cached tensor",)),
    Wrong("mask memoised", "causal_mask", causal_mask_memoised, ("same memory",)),
    Wrong("online (s, m) swapped", "online_softmax_update", online_swapped, ("order",)),
    Wrong("online exp first", "online_softmax_update", online_exp_first, ("overflow",)),
    Wrong("tile exp first", "attention_tile", tile_exp_first, ("overflow", "88")),
    Wrong(
        "tile rescale exp(m) / exp(m_new)",
        "attention_tile",
        tile_first_tile_nan,
        ("exp(m - m_new)",),
    ),
    Wrong("tiled per-head matrix", "tiled_attention", tiled_per_head_matrix, ("full",)),
    Wrong("tiled full mask", "tiled_attention", tiled_full_mask, ("mask inside the tile",)),
    # notebook 11
    Wrong("sampling softmax axis", "sampling_probabilities",
          partial(sample_probs, mistake="softmax axis"), ("wrong axis",)),
    Wrong("temperature after softmax", "sampling_probabilities",
          partial(sample_probs, mistake="temperature after softmax"), ("after the softmax",)),
    Wrong("top-p one too few", "sampling_probabilities",
          partial(sample_probs, mistake="top-p too few"), ("one token too few",)),
    Wrong("top-p one too many", "sampling_probabilities",
          partial(sample_probs, mistake="top-p too many"), ("one token too many",)),
    Wrong("top-k ties by position", "sampling_probabilities",
          partial(sample_probs, mistake="top-k by position"), ("ties", "position")),
    Wrong("top-k ties dropped", "sampling_probabilities",
          partial(sample_probs, mistake="top-k strict"), ("tie",)),
    Wrong("bpe tie last", "bpe_merge_step", partial(bpe_step, mistake="tie last"), ("first",)),
    Wrong("bpe overlapping", "bpe_merge_step", partial(bpe_step, mistake="overlapping"),
          ("never overlap",)),
    Wrong("bpe mutates its input", "bpe_merge_step", bpe_step_in_place, ("in place",)),
    Wrong("bpe non-overlapping counts", "bpe_merge_step", bpe_step_non_overlapping_counts,
          ("overlapping ones too",)),
    Wrong("top-p before top-k", "sampling_probabilities", sample_probs_p_first,
          ("before top-k",)),
    Wrong("greedy as a tiny temperature", "sampling_probabilities",
          sample_probs_tiny_temperature, ("first of the tied",)),
    Wrong("previous-character head without running the model", "find_previous_char_head",
          previous_char_head_without_running, ("run model(ids)",)),
    Wrong("previous-character head (head, layer)", "find_previous_char_head",
          previous_char_head_reversed, ("the layer first",)),
    Wrong("causal dropout on after eval()", "causal_attention", CausalDropoutAfterEval,
          ("after model.eval()", "dropout is still on")),
    Wrong("sinusoidal float64", "sinusoidal_positions", sinusoidal_float64, ("float32",)),
    Wrong("previous diagonal offset 0", "previous_token_score", previous_diagonal_offset_0,
          ("itself",)),
    Wrong("attention tile mask inverted", "attention_tile", tile_with("mask_inverted"),
          ("inverted", "True means HIDDEN")),
    Wrong("attend cached x.repeat", "attend_cached", attend_cached_with("repeat_tiled"),
          ("repeat_interleave",)),
    Wrong("loss without log", "per_token_loss", partial(token_loss, mistake="no log"), ("-log",)),
    Wrong("loss in bits", "per_token_loss", partial(token_loss, mistake="bits"), ("nats",)),
    Wrong("loss axis", "per_token_loss", partial(token_loss, mistake="axis"), ("wrong axis",)),
    Wrong("perplexity mean of exp", "perplexity", lambda losses: losses.exp().mean().item(),
          ("MEAN loss",)),
    Wrong("perplexity base 2", "perplexity", lambda losses: 2 ** losses.mean().item(),
          ("nats",)),
    Wrong("previous-character head one-based", "find_previous_char_head",
          partial(previous_char_head, mistake="one-based"), ("from 0",)),
    Wrong("previous-character head lowest", "find_previous_char_head",
          partial(previous_char_head, mistake="lowest"), ("lowest",)),
    # notebook 08
    Wrong("previous diagonal", "previous_token_score", previous_diagonal, ("itself",)),
    Wrong("previous next", "previous_token_score", previous_next, ("future",)),
    Wrong("previous all rows", "previous_token_score", previous_all_rows, ("row 0",)),
    Wrong("previous per sequence", "previous_token_score", previous_per_sequence, ("shape",)),
    Wrong("sinusoidal swapped", "sinusoidal_positions", sinusoidal_swapped, ("swapped",)),
    Wrong("sinusoidal blocks", "sinusoidal_positions", sinusoidal_blocks, ("interleave",)),
    Wrong("sinusoidal no two", "sinusoidal_positions", sinusoidal_no_two, ("2i",)),
    Wrong("rope halves", "apply_rope", rope_halves, ("2i + 1", "rotate_half")),
    Wrong("rope base 1000", "apply_rope", rope_base_1000, ("base",)),
    Wrong("rope exponent without 2", "apply_rope", rope_exponent_without_2, ("-2i / head_dim",)),
    Wrong("rope from position 0", "apply_rope", rope_from_position_0, ("start + k",)),
    Wrong("rope from position 1", "apply_rope", rope_from_position_1, ("off by one",)),
    Wrong("rope backwards", "apply_rope", rope_backwards, ("wrong way",)),
    Wrong("rope rotating values", "rope_attention", rope_rotating_values, ("values too",)),
    Wrong("rope queries only", "rope_attention", rope_queries_only, ("keys too",)),
    Wrong("rope without mask", "rope_attention", rope_without_mask, ("causal",)),
    Wrong(
        "find previous token heads",
        "find_induction_heads",
        find_previous_token_heads,
        ("previous-token",),
    ),
    Wrong("find one based", "find_induction_heads", find_one_based, ("from 0",)),
    Wrong("find all of layer 1", "find_induction_heads", find_all_of_layer_1, ("0.5",)),
    Wrong(
        "find without running",
        "find_induction_heads",
        find_without_running,
        ("earlier run", "model(tokens)"),
    ),
    Wrong(
        "find in first sequence",
        "find_induction_heads",
        find_in_first_sequence,
        ("first sequence", "whole batch"),
    ),
    Wrong("find head first", "find_induction_heads", find_head_first, ("layer first",)),
    Wrong("find in layer 1 only", "find_induction_heads", find_in_layer_1_only, ("0.5",)),
    Wrong("find hard coded", "find_induction_heads", find_hard_coded, ("0.5",)),
    Wrong("zero rows", "zero_head", zero_rows, ("rows",)),
    Wrong("zero next head", "zero_head", zero_next_head, ("next head",)),
    Wrong("zero queries", "zero_head", zero_queries, ("queries",)),
    Wrong("zero keys", "zero_head", zero_keys, ("its keys",)),
    Wrong("zero by hook", "zero_head", zero_by_hook, ("forward hook",)),
    Wrong("zero by identity", "zero_head", zero_by_identity, ("nn.Identity", "do not replace")),
    Wrong("zero head with grad", "zero_head", zero_head_with_grad, ("no_grad",)),
    Wrong("next loss no shift", "next_token_loss", partial(next_loss, mistake="no shift"),
          ("token at t", "tokens[:, 1:]")),
    Wrong("next loss backwards", "next_token_loss", partial(next_loss, mistake="backwards"),
          ("wrong way",)),
    Wrong("next loss sum", "next_token_loss", partial(next_loss, mistake="sum"), ("sum", "mean")),
    Wrong("next loss bits", "next_token_loss", partial(next_loss, mistake="bits"),
          ("bits", "nats")),
    Wrong("next loss naive exp", "next_token_loss", partial(next_loss, mistake="naive"),
          ("overflows", "log_softmax")),
    Wrong("next loss double softmax", "next_token_loss",
          partial(next_loss, mistake="double softmax"), ("logits",)),
    Wrong("next loss ignores 0", "next_token_loss", partial(next_loss, mistake="ignore 0"),
          ("ignore_index",)),
    Wrong("next loss item", "next_token_loss", partial(next_loss, mistake="item"),
          (".item()",)),
    Wrong("next loss no grad", "next_token_loss", partial(next_loss, mistake="no grad"),
          ("no_grad",)),
    Wrong("step no zero_grad", "train_step", partial(step, mistake="no zero_grad"),
          ("zero_grad", "adds")),
    Wrong("step clip after step", "train_step", partial(step, mistake="clip after step"),
          ("between loss.backward() and", "after step()")),
    Wrong("step no clip", "train_step", partial(step, mistake="no clip"), ("clip_grad_norm_",)),
    Wrong("step clip value", "train_step", partial(step, mistake="clip value"), ("norm",)),
    Wrong("step no step", "train_step", partial(step, mistake="no step"),
          ("did not change", "optimizer.step()")),
    Wrong("step zero_grad after backward", "train_step",
          partial(step, mistake="zero_grad after backward"), ("between backward() and step()",)),
    Wrong("step loss sum", "train_step", partial(step, mistake="sum"), ("sum",)),
    Wrong("step loss bits", "train_step", partial(step, mistake="bits"), ("bits", "nats")),
    Wrong("step no shift", "train_step", partial(step, mistake="no shift"), ("tokens[:, 1:]",)),
    Wrong("step ascent", "train_step", partial(step, mistake="ascent"), ("went up",)),
    Wrong("step returns nothing", "train_step", partial(step, mistake="none"), ("float",)),
    # notebooks 09 and 10
    Wrong(
        "mask window plus one",
        "sliding_window_mask",
        mask_window_plus_one,
        ("off by one", "window"),
    ),
    Wrong("mask not causal", "sliding_window_mask", mask_not_causal, ("future",)),
    Wrong("mask inverted", "sliding_window_mask", mask_inverted, ("inverted",)),
    Wrong(
        "sliding window mask causal",
        "sliding_window_mask",
        lambda n, w: attention.causal_mask(n),
        ("wrong values",),
    ),
    Wrong("repeat tiled", "repeat_kv", repeat_tiled, ("repeat_interleave", "h // group_size")),
    Wrong("bytes without values", "kv_cache_bytes", bytes_without_values, ("keys and values",)),
    Wrong("bytes one layer", "kv_cache_bytes", bytes_one_layer, ("num_layers",)),
    Wrong("bytes in numbers", "kv_cache_bytes", bytes_in_numbers, ("bytes_per_element",)),
    Wrong(
        "attend cached stale offset",
        "attend_cached",
        attend_cached_with("stale_offset"),
        ("stale position offset",),
    ),
    Wrong(
        "attend cached new keys only",
        "attend_cached",
        attend_cached_with("new_keys_only"),
        ("all the keys",),
    ),
    Wrong(
        "attend cached layer 0",
        "attend_cached",
        attend_cached_with("layer_0"),
        ("wrong layer",),
    ),
    Wrong(
        "attend cached cache repeated",
        "attend_cached",
        attend_cached_with("cache_repeated"),
        ("before repeat_kv",),
    ),
    Wrong(
        "softmax update no rescale",
        "online_softmax_update",
        softmax_update_no_rescale,
        ("rescale the running sum",),
    ),
    Wrong("softmax update old max", "online_softmax_update", softmax_update_old_max, ("new max",)),
    Wrong(
        "attention tile acc not rescaled",
        "attention_tile",
        tile_with("acc_not_rescaled"),
        ("rescale acc",),
    ),
    Wrong(
        "attention tile sum not rescaled",
        "attention_tile",
        tile_with("sum_not_rescaled"),
        ("rescale the running sum",),
    ),
    Wrong(
        "attention tile mask ignored",
        "attention_tile",
        tile_with("mask_ignored"),
        ("mask is not applied",),
    ),
    Wrong("attention tile in place", "attention_tile", tile_with("in_place"), ("in place",)),
    Wrong(
        "tiled attention diagonal skipped",
        "tiled_attention",
        tiled_with("diagonal_skipped"),
        ("causal block skipped wrongly",),
    ),
    Wrong(
        "tiled attention diagonal unmasked",
        "tiled_attention",
        tiled_with("diagonal_unmasked"),
        ("not masked",),
    ),
    Wrong(
        "tiled attention tail dropped",
        "tiled_attention",
        tiled_with("tail_dropped"),
        ("wrong values",),
    ),
    Wrong(
        "tiled attention visits every key block",
        "tiled_attention",
        tiled_with("visits_every_block"),
        ("visit only the key blocks",),
    ),
    Wrong(
        "tiled attention top left",
        "tiled_attention",
        tiled_with("top_left"),
        ("LAST positions",),
    ),
    Wrong(
        "tiled attention full matrix",
        "tiled_attention",
        tiled_with("full_matrix"),
        ("one (block_size, block_size) tile",),
    ),
]  # fmt: skip

NOT_IN_NUMPY_HINTS = ("dim=-1", "masked_fill", "torch.")  # torch words


def _einsum_sdpa(queries, keys, values, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", queries, keys) / keys.shape[-1] ** 0.5
    if mask is not None:
        scores = torch.where(mask, torch.tensor(-torch.inf), scores)
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", weights, values), weights


class CausalEinsum(attention.CausalAttention):
    """einsum for both products, torch.where for the mask, a tril-built buffer."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
        ones = torch.ones(context_length, context_length, dtype=torch.bool)
        self.register_buffer("mask", ~torch.tril(ones))

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / k.shape[-1] ** 0.5
        scores = torch.where(self.mask[:n, :n], float("-inf"), scores)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        return torch.einsum("bqk,bkd->bqd", weights, v)


class MHAFused(attention.MultiHeadAttention):
    """multi_head_attention answered with F.scaled_dot_product_attention (dropout included)."""

    def forward(self, x):
        heads = [
            split_heads(m(x), self.num_heads) for m in (self.W_query, self.W_key, self.W_value)
        ]
        p = self.dropout.p if self.training else 0.0
        context = F.scaled_dot_product_attention(*heads, dropout_p=p, is_causal=True)
        return self.out_proj(merge_heads(context))


class LayerNormFunctional(blocks.LayerNorm):
    """F.layer_norm with the module's scale and shift."""

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.scale, self.shift, self.eps)


def weightless_einsum(X):
    """Weightless attention with einsum and a hand-written stable softmax."""
    scores = np.einsum("id,jd->ij", X, X)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return np.einsum("ij,jd->id", weights, X), weights


class CrossEinsum(blocks.MultiHeadCrossAttention):
    """Heads as an einsum index (never split_heads), the mask applied with torch.where."""

    def forward(self, query, key, value, mask=None):
        heads = (self.num_heads, self.d_model // self.num_heads)
        q = self.W_query(query).unflatten(-1, heads)  # (b, num_queries, num_heads, head_dim)
        k = self.W_key(key).unflatten(-1, heads)  # (b, num_keys, num_heads, head_dim)
        v = self.W_value(value).unflatten(-1, heads)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / heads[1] ** 0.5
        if mask is not None:
            scores = torch.where(mask, -torch.inf, scores)
        weights = self.dropout(torch.softmax(scores, dim=-1))
        context = torch.einsum("bhqk,bkhd->bqhd", weights, v).flatten(-2)
        return self.out_proj(context), weights


CORRECT: list[tuple[str, str, object]] = [
    ("next loss log_softmax gather", "next_token_loss", next_loss_log_softmax),
    ("next loss logsumexp per sequence", "next_token_loss", next_loss_logsumexp),
    ("step zero_grad at the end", "train_step", partial(step, mistake="zero_grad at the end")),
    ("step clip by hand", "train_step", step_clip_by_hand),
    ("step returns the loss tensor", "train_step", partial(step, mistake="tensor")),
    ("sdpa einsum + torch.where", "scaled_dot_product_attention", _einsum_sdpa),
    ("mask ~tril", "causal_mask", lambda n: ~torch.tril(torch.ones(n, n, dtype=torch.bool))),
    ("mask triu(1).bool()", "causal_mask", lambda n: torch.triu(torch.ones(n, n), 1).bool()),
    ("mask tril == 0", "causal_mask", lambda n: torch.tril(torch.ones(n, n)) == 0),
    ("mask arange", "causal_mask", lambda n: torch.arange(n)[None, :] > torch.arange(n)[:, None]),
    ("causal einsum", "causal_attention", CausalEinsum),
    ("bug zoo einsum", "bug_mask_in_place", CausalEinsum),
    ("mha fused", "multi_head_attention", MHAFused),
    ("sdpa_attention fused", "sdpa_attention", MHAFused),
    ("layer norm F.layer_norm", "layer_norm", LayerNormFunctional),
    ("causal dropout rand_like >= p", "causal_attention", causal_hand("rand")),
    ("causal dropout bernoulli", "causal_attention", causal_hand("bernoulli")),
    ("bug zoo dropout by hand", "bug_mask_in_place", causal_hand("rand")),
    ("mha dropout bernoulli", "multi_head_attention", MHAHandDropout),
    ("feed-forward dropout by hand", "feed_forward", FeedForwardHandDropout),
    ("encoder dropout by hand", "encoder_layer", EncoderHandDropout),
    ("block dropout by hand", "transformer_block", BlockHandDropout),
    ("causal mask on x.device", "causal_attention", CausalDevicePlaced),
    ("numpy softmax clipped", "numpy_softmax", numpy_softmax_clipped),
    ("causal forward reads a value", "causal_attention", CausalChecksItsInput),
    ("causal mask .to(x.device)", "causal_attention", CausalMaskMovedToInput),
    ("sampling sort-based top-p", "sampling_probabilities", sample_probs),
    ("sampling greedy by scatter", "sampling_probabilities", sample_probs_greedy_one_hot),
    ("bpe Counter and slices", "bpe_merge_step", bpe_step_counter),
    ("sinusoidal exp/log frequencies", "sinusoidal_positions", sinusoidal_float32_by_hand),
    (
        "previous-character head without no_grad",
        "find_previous_char_head",
        partial(previous_char_head, mistake=None),
    ),
    ("loss cross_entropy", "per_token_loss", partial(F.cross_entropy, reduction="none")),
    ("perplexity tensor", "perplexity", lambda losses: losses.mean().exp()),
    ("weightless einsum", "weightless_attention", weightless_einsum),
    ("cross einsum", "cross_attention", CrossEinsum),
    ("bug zoo cross einsum", "bug_padding_mask_unsqueeze", CrossEinsum),
]


def _package_object(name: str) -> object:
    module, attr = name.rsplit(".", 1)
    return getattr(importlib.import_module(f"attn_course.{module}"), attr)


# The correct answers: the package's (withheld.ANSWERS, which the sandbox withholds), and the
# others, written here or worked out by hand in the comments.
REFERENCE = {
    **{
        check_id: _package_object(name)
        for answers in ANSWERS.values()
        for check_id, name in answers.items()
        if name is not None
    },
    "numpy_weights_shape": (6, 6),  # 6 queries x 6 keys
    "causal_attention_parameters": 3 * (3 * 2 + 2),  # three (3 -> 2) linears with bias
    "wrapper_output_shape": (2, 6, 3 * 2),  # 3 heads of width 2
    "wrapper_parameter_count": 4 * 3 * (5 * 2),  # 4 heads x 3 bias-free (5 -> 2) linears
    "mha_parameter_count": 3 * 36 + 36 + 6,  # q, k, v without bias, out_proj with bias
    "split_shape": (1, 2, 3, 3),  # (b, num_heads, num_tokens, head_dim)
    # GPT-2 small block: attention 4 * 768^2 + 768 (out_proj bias), MLP 2 * 768 * 3072 +
    # 3072 + 768, two LayerNorms 4 * 768.
    "gpt2_block_parameters": 4 * 768**2 + 4 * 768 + 2 * 768 * 3072 + 3072 + 768 + 4 * 768,
    "attn_weights_numel": 2 * 12 * 1024 * 1024,  # b x heads x T x T
    "attn_memory_ratio": 4,  # T^2
    # notebook 08
    "find_induction_heads": find_induction_heads,
    "zero_head": zero_head,
    # notebook 11
    "bpe_merge_step": bpe_step,
    "per_token_loss": token_loss,
    "perplexity": lambda losses: losses.mean().exp().item(),
    "find_previous_char_head": previous_char_head,
}

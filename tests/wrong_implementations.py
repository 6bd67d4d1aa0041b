"""Deliberately wrong implementations of the exercises, to prove that the checks catch them.

Each is the package's reference with ONE classic mistake built in (a subclass overriding
only the broken part, or the reference function with one step changed). ``WRONG`` lists
them with the check that must fail and key words its hint must contain. ``CORRECT`` lists
right answers written differently from the reference (einsum, torch.where, other
tril/triu conventions, PyTorch's fused functions): they must keep passing.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from attn_course import attention, blocks, foundations, numpy_attention, sampling, tiled
from attn_course.attention import merge_heads, split_heads


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


class CrossAttentionWith(foundations.MultiHeadCrossAttention):
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


class CrossNoBias(foundations.MultiHeadCrossAttention):
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


NB11_REFERENCE = {  # the right answers of notebook 11, for tests/test_checks.py
    "sampling_probabilities": sampling.sampling_probabilities,
    "bpe_merge_step": bpe_step,
    "per_token_loss": token_loss,
    "perplexity": lambda losses: losses.mean().exp().item(),
    "find_previous_char_head": previous_char_head,
}

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
          ("expected",)),
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


CORRECT: list[tuple[str, str, object]] = [
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
    ("loss cross_entropy", "per_token_loss", partial(F.cross_entropy, reduction="none")),
    ("perplexity tensor", "perplexity", lambda losses: losses.mean().exp()),
]

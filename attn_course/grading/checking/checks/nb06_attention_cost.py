"""Checks of 06_attention_cost: the size of the weights and PyTorch's fused kernel."""

from __future__ import annotations

import torch

from ....attention import MultiHeadAttention
from ..expect import (
    build_pair,
    expect_answer,
    expect_close,
    invoke,
    memory_grown_past,
    randn,
)
from ..hints import HINTS
from ..registry import CheckFailed, register
from ..shared_checks import DROPOUT, MHA_CONFIGS, check_mha_class, sdpa_mistakes

NOTEBOOK = "06_attention_cost"
# GPT-2 small's attention on a batch of 2 full-length sequences.
D_MODEL, NUM_HEADS, BATCH = 768, 12, 2


def weights_numel(num_tokens: int) -> int:
    """Elements of the attention weights MultiHeadAttention keeps for (BATCH, num_tokens)."""
    with torch.device("meta"):  # shapes only: nothing is allocated or drawn from the RNG
        mha = MultiHeadAttention(D_MODEL, D_MODEL, num_tokens, 0.0, NUM_HEADS)
        mha(torch.empty(BATCH, num_tokens, D_MODEL))
    assert mha.attn_weights is not None  # the forward pass keeps them
    return mha.attn_weights.numel()


@register("attn_weights_numel", NOTEBOOK, time_limit=15.0, imports_dynamo=True)
def check_attn_weights_numel(answer: object) -> str:
    """Elements of the weights for a (2, 1024, 768) batch through 12 heads."""
    num_tokens = 1024
    want = weights_numel(num_tokens)
    head_dim = D_MODEL // NUM_HEADS
    return expect_answer(
        answer,
        want,
        "elements of the attention weights",
        {
            want // NUM_HEADS: "Every head has its own num_tokens x num_tokens weights.",
            want // BATCH: "Count both sequences of the batch.",
            want // num_tokens * head_dim: "The weights are num_tokens x num_tokens per head; "
            "head_dim is the width of the queries and keys.",
            BATCH * NUM_HEADS * num_tokens * (num_tokens + 1) // 2: "That counts only the "
            "visible entries (on and below the diagonal). The masked ones are stored too, as "
            "zeros after the softmax: count every entry, numel().",
        },
    )


@register("attn_memory_ratio", NOTEBOOK, time_limit=15.0)
def check_attn_memory_ratio(answer: object) -> str:
    """How many times more memory the weights take when num_tokens doubles (1024 -> 2048)."""
    want = weights_numel(2048) // weights_numel(1024)
    return expect_answer(
        answer,
        want,
        "growth of the weights when the context doubles",
        {2: "Each query attends to every key: the weights grow with num_tokens squared."},
    )


def fused_calls(cls: type) -> int:
    """How often one forward of ``cls`` (MHA_CONFIGS[0]) calls F.scaled_dot_product_attention.

    ``agent.call`` counts them with a TorchFunctionMode, so every call is seen however the
    learner reached the function (``F.``, ``torch.nn.functional.``, ``from ... import``).
    """
    d_in, d_out, ctx, num_heads, bias, b, num_tokens = MHA_CONFIGS[0]
    args = (d_in, d_out, ctx, DROPOUT, num_heads, bias)
    mine, _ = build_pair(cls, MultiHeadAttention, args, 80)
    return invoke(mine, (randn(b, num_tokens, d_in, seed=90),), no_grad=True)["sdpa_calls"]


@register("sdpa_attention", NOTEBOOK, time_limit=10.0)
def check_sdpa_attention(cls: type) -> str:
    """A MultiHeadAttention subclass whose forward calls F.scaled_dot_product_attention."""
    check_mha_class(
        cls,
        hints={"mask_lost": HINTS["sdpa_mask_lost"]},
        mistakes_of=sdpa_mistakes,
        dropout_hint=HINTS["dropout_sdpa"],
    )
    if not fused_calls(cls):
        raise CheckFailed(
            "your class gives the right outputs but never calls F.scaled_dot_product_attention: "
            "compute the context with the fused function, F.scaled_dot_product_attention("
            "queries, keys, values, is_causal=True), instead of the scores, mask and softmax."
        )
    _check_fused_memory(cls)
    return "the fused kernel gives the same outputs as the lecture's MultiHeadAttention."


def _check_fused_memory(cls: type, num_tokens: int = 4096, num_heads: int = 2) -> None:
    """The scores of 4096 tokens take 128 MiB (2 heads); the fused kernel never holds them,
    the scores-mask-softmax path holds them twice. In official grading the kernel's memory
    is measured from outside it (``peak_memory``): the call count above lives in the kernel."""
    d_model = 32
    args = (d_model, d_model, num_tokens, 0.0, num_heads, False)
    mine, ref = build_pair(cls, MultiHeadAttention, args, 91)
    x = randn(1, num_tokens, d_model, seed=92)
    reply = invoke(mine, (x,), no_grad=True, peak_memory=True)
    with torch.no_grad():
        expect_close(reply["result"], ref(x), f"{cls.__name__}{args} on {num_tokens} tokens")
    grown = memory_grown_past(reply, 1.5 * num_heads * num_tokens**2 * x.element_size())
    if grown is not None:
        raise CheckFailed(
            f"right outputs, but on {num_tokens} tokens the kernel's memory grew by "
            f"{grown / 2**20:.0f} MiB, as if the ({num_tokens}, {num_tokens}) scores of every "
            "head were built: let F.scaled_dot_product_attention compute the context, "
            "with is_causal=True, instead of the scores, mask and softmax."
        )

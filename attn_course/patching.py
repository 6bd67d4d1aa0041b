"""Path patching: an attention layer's queries or keys computed from another run's input.

A later head can read an earlier head's output through its **keys** (the positions it looks
at carry the information) or through its **queries** (the position that looks carries it).
To tell which, damage the earlier head (zero it, say), record the input the later attention
layer receives in the damaged run (``recorded_input``), and run the intact model again with
only one path of that layer reading the damaged input (``path_patched``): its keys, or its
queries. The values and every other layer read the intact stream. If the later head's
pattern survives with damaged keys but not with damaged queries, it reads the earlier head
through its queries, and the other way round; it may need both. Lecture 08 (section 7) and
lecture 11 (section 5) run this test. Works for any module with ``W_query`` and ``W_key``
linear layers that it calls on its input (``attention.MultiHeadAttention``, the attention of
``model.TinyTransformer`` and of ``generation.GPTModel``'s blocks).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["PATHS", "recorded_input", "path_patched"]

PATHS = ("queries", "keys")


@torch.no_grad()
def recorded_input(model: nn.Module, module: nn.Module, *args: Any) -> torch.Tensor:
    """Run ``model(*args)`` and return what ``module`` received as its first input, detached
    (for a block's attention in ``GPTModel``: the normalised stream, (b, num_tokens, d_model))."""
    seen: list[torch.Tensor] = []
    handle = module.register_forward_pre_hook(lambda _, inputs: seen.append(inputs[0].detach()))
    try:
        model(*args)
    finally:
        handle.remove()
    if not seen:
        raise ValueError("the module was not called in the model's forward pass.")
    return seen[0]


@contextmanager
def path_patched(att: nn.Module, path: str, source: torch.Tensor) -> Iterator[nn.Module]:
    """Within the ``with`` block, ``att`` computes its queries (``path="queries"``) or its
    keys (``path="keys"``) from ``source`` instead of from its input; the other path and the
    values still read the input.

    Args:
        att: an attention module that calls ``W_query(x)`` and ``W_key(x)`` on its input x.
        path: "queries" or "keys".
        source: the input to read instead, (b, num_tokens, d_in): the shape of att's input.
    """
    if path not in PATHS:
        raise ValueError(f"path={path!r} must be one of {PATHS}.")
    linear = att.W_query if path == "queries" else att.W_key
    assert isinstance(linear, nn.Linear)  # an attention module's projection

    def hook(module: nn.Linear, inputs: tuple[torch.Tensor, ...], output: torch.Tensor):
        if inputs[0].shape != source.shape:
            raise ValueError(
                f"the patched {path} read a source of shape {tuple(source.shape)}, but the "
                f"layer's input has shape {tuple(inputs[0].shape)}: record the source on the "
                "same tokens."
            )
        return F.linear(source, module.weight, module.bias)  # (b, num_tokens, d_out)

    handle = linear.register_forward_hook(hook)
    try:
        yield att
    finally:
        handle.remove()

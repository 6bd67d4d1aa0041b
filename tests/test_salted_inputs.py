"""Every check's inputs depend on the grade run's secret (``context.SALT``).

Each registered check runs against a recording stand-in for its reference answer under two
secrets: a function that records every argument the check passes it, or a subclass of the
reference class that records every input of its forward. The two recordings must differ, so
that answers harvested at home (a lookup table of inputs and outputs) are worth nothing in a
grade run. Checks whose answer is a value (a predicted shape or count) pass the learner
nothing and are named in ``VALUE_ANSWERS``.
"""

from __future__ import annotations

import functools
import hashlib
import inspect

import numpy as np
import pytest
import torch
from answers import REFERENCE
from torch import nn

from attn_course.grading.checking import checks  # noqa: F401  (registers the checks)
from attn_course.grading.checking.registry import CHECKS
from attn_course.grading.checking.verdicts import run_check
from attn_course.grading.kernel.context import SALT

# Checks whose answer is a value, not code: nothing is passed to the learner.
VALUE_ANSWERS = {
    "numpy_weights_shape",
    "causal_attention_parameters",
    "wrapper_output_shape",
    "wrapper_parameter_count",
    "mha_parameter_count",
    "split_shape",
    "gpt2_block_parameters",
    "attn_weights_numel",
    "attn_memory_ratio",
}

SECRETS = (0x5EED_0001, 0x7A11_E5ED)


def fingerprint(value: object, depth: int = 0) -> object:
    """A comparable summary of an input: tensors and arrays by their bytes, modules by
    their state, containers and plain objects by their parts."""
    if depth > 6:
        return "..."
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta":
            return ("meta", tuple(value.shape))
        data = value.detach().contiguous().cpu().numpy().tobytes()
        return ("tensor", tuple(value.shape), hashlib.sha256(data).hexdigest()[:16])
    if isinstance(value, np.ndarray):
        return ("array", value.shape, hashlib.sha256(value.tobytes()).hexdigest()[:16])
    if isinstance(value, nn.Module):
        return ("module", fingerprint(dict(value.state_dict()), depth + 1))
    if isinstance(value, dict):
        return tuple((k, fingerprint(v, depth + 1)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(fingerprint(v, depth + 1) for v in value)
    if isinstance(value, int | float | str | bool | type(None)):
        return value
    if isinstance(value, torch.optim.Optimizer):
        return "optimizer"
    if hasattr(value, "__dict__"):  # a KV cache, say
        return (type(value).__name__, fingerprint(dict(vars(value)), depth + 1))
    return type(value).__name__


def recorder(reference: object, calls: list) -> object:
    """A stand-in answering as ``reference`` does that appends each call's inputs to ``calls``."""
    if isinstance(reference, type) and issubclass(reference, nn.Module):

        def forward(self, *args, **kwargs):
            calls.append(fingerprint((args, kwargs)))
            return reference.forward(self, *args, **kwargs)

        return type(reference.__name__, (reference,), {"forward": forward})

    @functools.wraps(reference)
    def recording(*args, **kwargs):
        calls.append(fingerprint((args, kwargs)))
        return reference(*args, **kwargs)

    recording.__signature__ = inspect.signature(reference)  # type: ignore[attr-defined]
    return recording


def inputs_under(check_id: str, secret: int) -> list:
    """The inputs the check passes to its answer when the run's secret is ``secret``."""
    calls: list = []
    token = SALT.set(secret)
    try:
        result = run_check(CHECKS[check_id], recorder(REFERENCE[check_id], calls))
    finally:
        SALT.reset(token)
    assert result.status.value == "passed", result.message
    return calls


def test_value_answers_are_the_non_callable_ones():
    assert VALUE_ANSWERS == {c for c, answer in REFERENCE.items() if not callable(answer)}


@pytest.mark.parametrize("check_id", sorted(set(CHECKS) - VALUE_ANSWERS))
def test_a_check_draws_other_inputs_under_another_secret(check_id):
    first, second = (inputs_under(check_id, secret) for secret in SECRETS)
    assert first, "the check never called the answer"
    assert first != second, f"{check_id}: the same inputs under two secrets"

"""The wire format (``grading.kernel.wire``): every type that crosses comes back as itself.

Each value goes the way a reply goes (the agent encodes it, ``torch.save``, the grader reads
it with ``weights_only=True``, ``remote.check_reply`` accepts it, the grader decodes it) and
the way a request goes (the grader encodes, the agent decodes).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from support import serve_in_process
from torch import nn

from attn_course.grading.kernel import agent, wire
from attn_course.grading.kernel.remote import (
    SERVE,
    LearnerError,
    Remote,
    Session,
    _to_kernel,
    check_reply,
)

DATA = {
    "none": None,
    "bool": True,
    "int": 7,
    "float": 0.25,
    "str": "a string",
    "tensor": torch.arange(6.0).reshape(2, 3),
    "int tensor": torch.tensor([1, 2, 3]),
    "ndarray": np.arange(6.0).reshape(3, 2),
    "bool ndarray": np.array([True, False]),
    "numpy float64": np.float64(1.5),
    "numpy int32": np.int32(-4),
    "tuple": (1, "two", torch.ones(2)),
    "list": [1, [2, (3, 4)]],
    "dict": {"a": 1, "b": (np.float32(2.0), [torch.zeros(1)])},
    "size": torch.Size([2, 3, 4]),
    "dtype": torch.bfloat16,
    "ellipsis": Ellipsis,
}


def same(a: object, b: object) -> bool:
    if isinstance(a, torch.Tensor | np.ndarray | np.generic):
        return type(a) is type(b) and a.dtype == b.dtype and bool((a == b).all())
    if isinstance(a, tuple | list):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def through_torch_save(tree: object, weights_only: bool) -> object:
    buffer = io.BytesIO()
    torch.save(tree, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=weights_only)


@pytest.mark.parametrize("name", DATA)
def test_a_reply_brings_every_data_type_back_as_itself(name):
    reply = through_torch_save({"value": agent.encode(DATA[name])}, weights_only=True)
    check_reply(reply)
    assert same(DATA[name], Session(kernel=None).decode(reply["value"]))


@pytest.mark.parametrize("name", DATA)
def test_a_request_brings_every_data_type_back_as_itself(name):
    request = through_torch_save(_to_kernel(DATA[name]), weights_only=False)
    assert same(DATA[name], agent._decode(request))


def test_objects_that_are_not_data_cross_by_handle_and_come_back_as_themselves():
    module = nn.Linear(2, 2)
    reply = through_torch_save({"value": agent.encode([module, print])}, weights_only=True)
    check_reply(reply)
    proxy, function = Session(kernel=None).decode(reply["value"])
    assert isinstance(proxy, Remote) and isinstance(proxy, nn.Module)
    assert proxy.__name__ == "Linear" and function.__name__ == "print"
    # the proxy goes back as its handle, and the agent finds the very object it kept
    back = agent._decode(through_torch_save(_to_kernel((proxy, function)), weights_only=False))
    assert back[0] is module and back[1] is print


def test_the_grader_sends_a_module_whole():
    module = nn.Linear(3, 1)
    back = agent._decode(through_torch_save(_to_kernel({"m": module}), weights_only=False))
    assert isinstance(back["m"], nn.Linear)
    assert torch.equal(back["m"].weight, module.weight) and back["m"] is not module


def test_an_unknown_record_is_refused_on_both_sides():
    with pytest.raises(ValueError, match="not a wire record"):
        wire.decode({"__pickle__": 1}, handle=lambda record: None)
    with pytest.raises(LearnerError, match="malformed"):
        check_reply({"value": {"__pickle__": 1}})


def test_an_error_record_is_read_in_one_place():
    record = agent.describe_exception(NotImplementedError("your code here"))
    assert set(record) == set(wire.ERROR_FIELDS)
    error = LearnerError.from_record(record)
    assert error.ename == "NotImplementedError" and error.not_implemented


def test_the_operations_are_the_agents():
    assert set(wire.OPERATIONS) == set(agent._OPS) | {"call"}


class _Kernel:
    """A kernel stand-in that runs each request's code the way a kernel would: the agent
    reads the request from the message (``data``); what it publishes is the reply."""

    def __init__(self) -> None:
        self.codes: list[str] = []

    def request(self, code: str, timeout: float, silent: bool = True, data=None):
        self.codes.append(code)
        return serve_in_process(data)


def _shape(module: nn.Module, x: torch.Tensor) -> torch.Size:
    return module(x).shape


def test_a_large_request_travels_beside_a_few_bytes_of_code():
    """A request that carries a module whole (08's find_induction_heads sends a model with
    the attention weights of an earlier run: 3 MB) must not travel in the code of the
    execute request: IPython tokenizes every cell's code and ipykernel hashes it in pure
    Python, seconds per MB on a busy machine, six times per check: it ran out of time."""
    model = nn.Sequential(nn.Linear(512, 512), nn.Linear(512, 512))  # 2 MB of weights
    kernel = _Kernel()
    session = Session(kernel=kernel)  # type: ignore[arg-type]
    session.start_check(60)
    reply = session.call(_shape, (model, torch.ones(2, 512)), None)
    assert reply["result"] == torch.Size([2, 512])
    assert kernel.codes == [SERVE] and len(SERVE) < 100

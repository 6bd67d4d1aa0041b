"""The wire format between the grader and the agent in the learner's kernel, written once.

Requests (grader -> ``agent.serve``) and replies (agent -> grader) are ``torch.save`` trees.
Data crosses by value: None, bool, int, float, str, lists and plain tensors as themselves;
every other kind of data as a one-key record whose key is its tag:

=============  ==============================================  ===========================
tag            value                                           decodes to
=============  ==============================================  ===========================
``NDARRAY``    the array's data as a tensor                    ``np.ndarray``
``NPSCALAR``   a one-element tensor                            a NumPy scalar
``TUPLE``      the items, encoded                              ``tuple``
``DICT``       str keys -> encoded values                      ``dict``
``SIZE``       a list of ints                                  ``torch.Size``
``DTYPE``      its name, e.g. ``"torch.float32"``              ``torch.dtype``
``ELLIPSIS``   True                                            ``...``
``HANDLE``     an int, beside ``"info"`` (``INFO_FIELDS``)     the object it stands for
=============  ==============================================  ===========================

What is not data crosses as the sender decides (``encode``'s ``other``): the agent keeps the
object and sends a ``HANDLE`` record; the grader sends a proxy's handle, and anything else
(a module) pickled whole, which the agent reads with ``weights_only=False``. The grader reads
replies with ``weights_only=True`` and holds them to ``remote.check_reply``'s strict schema,
which is written from the same tags. A call that raised replies ``{"exception": record}``
with ``ERROR_FIELDS``. Adding a data type means one branch in ``encode``, one in ``decode``
and one in ``check_reply``; adding an operation means a name in ``OPERATIONS`` and its
function in ``agent``. ``PROTOCOL_VERSION`` changes with either.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

__all__ = [
    "PROTOCOL_VERSION",
    "OPERATIONS",
    "ERROR_FIELDS",
    "INFO_FIELDS",
    "encode",
    "decode",
]

PROTOCOL_VERSION = 1
# What a request's "op" may name: agent._OPS, plus "call" (one call, with options)
OPERATIONS = ("resolve", "getattr", "build", "call", "calls")

HANDLE = "__handle__"
NDARRAY = "__ndarray__"
NPSCALAR = "__npscalar__"
TUPLE = "__tuple__"
DICT = "__dict__"
SIZE = "__size__"
DTYPE = "__dtype__"
ELLIPSIS = "__ellipsis__"

ERROR_FIELDS = {"ename": str, "message": str, "not_implemented": bool}
INFO_FIELDS = {"kind": str, "name": str, "module_class": bool, "reference": bool}
MAX_DEPTH = 8  # deeper containers cross as ``other`` decides


def encode(value: object, other: Callable[[object], object], depth: int = 0) -> object:
    """``value`` as a ``torch.save`` tree: data by value (tagged where needed), the rest as
    ``other(value)`` returns it."""
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        return {NPSCALAR: torch.from_numpy(np.asarray(value).reshape(1).copy())}
    if value is None or isinstance(value, bool | int | float | str):
        return value  # (np.float64 is a float: handled above, it must stay a NumPy scalar)
    if value is Ellipsis:
        return {ELLIPSIS: True}
    if isinstance(value, torch.Tensor):
        return value.detach().as_subclass(torch.Tensor).clone()
    if isinstance(value, np.ndarray) and value.dtype != object:
        return {NDARRAY: torch.from_numpy(np.ascontiguousarray(value).copy())}
    if isinstance(value, torch.Size):
        return {SIZE: [int(n) for n in value]}
    if isinstance(value, torch.dtype):
        return {DTYPE: str(value)}
    if depth < MAX_DEPTH and isinstance(value, tuple | list):
        items = [encode(v, other, depth + 1) for v in value]
        return {TUPLE: items} if isinstance(value, tuple) else items
    if depth < MAX_DEPTH and isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {DICT: {k: encode(v, other, depth + 1) for k, v in value.items()}}
    return other(value)


def decode(value: object, handle: Callable[[dict], object]) -> object:
    """The objects an ``encode``-d tree stands for; ``handle`` turns a ``HANDLE`` record into
    the receiver's object (the agent's kept object, the grader's proxy)."""
    if isinstance(value, list):
        return [decode(v, handle) for v in value]
    if not isinstance(value, dict):
        return value
    if HANDLE in value:
        return handle(value)
    if NDARRAY in value:
        return value[NDARRAY].numpy()
    if NPSCALAR in value:
        return value[NPSCALAR].numpy()[0]
    if ELLIPSIS in value:
        return Ellipsis
    if SIZE in value:
        return torch.Size(value[SIZE])
    if DTYPE in value:
        return getattr(torch, value[DTYPE].removeprefix("torch."))
    if TUPLE in value:
        return tuple(decode(v, handle) for v in value[TUPLE])
    if DICT in value:
        return {k: decode(v, handle) for k, v in value[DICT].items()}
    raise ValueError(f"not a wire record: keys {sorted(map(str, value))[:5]}")

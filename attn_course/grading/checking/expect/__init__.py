"""The check library's helpers: what every check uses to judge a learner's answer.

A check compares the learner's object with the package's reference on seeded inputs and,
when the two disagree, names the mistake. Every helper takes the learner's object either as
itself (``check()`` in the notebook) or as a ``remote.Remote`` proxy (official grading: the
object stays in the learner's kernel, only data comes back), and reaches it through its
session (``local.session_of``): the same requests and replies either way. Official grading
also salts every seed (``context.SALT``), so the inputs cannot be known in advance.

Four modules, one job each:

- ``inputs``: seeded inputs (``randn``, ``rng``, ``seeded``, ``salted``);
- ``calling``: calling learner code (``invoke``, ``call_pure``, ``learner_error``);
- ``compare``: comparisons and mistake variants (``expect_close``, ``attention_mistakes``,
  gradients);
- ``modules``: the module suite (``build_pair``, ``expect_module``,
  ``expect_like_reference``).

Checks import the names below from ``expect`` itself.
"""

from .calling import (
    call_explained,
    call_pure,
    call_pure_reply,
    invoke,
    invoke_many,
    learner_error,
    memory_grown_past,
)
from .compare import (
    ATOL,
    RTOL,
    attention_mistakes,
    close,
    expect_answer,
    expect_close,
    expect_function_gradients,
    expect_pair,
    shown,
)
from .inputs import RNG_LOCK, randn, rng, salted, seeded
from .modules import (
    build_pair,
    expect_dropout,
    expect_like_reference,
    expect_module,
    expect_on_meta,
    module_info_of,
)

__all__ = [
    "RNG_LOCK",
    "seeded",
    "salted",
    "randn",
    "rng",
    "invoke",
    "invoke_many",
    "memory_grown_past",
    "call_pure",
    "call_pure_reply",
    "call_explained",
    "learner_error",
    "RTOL",
    "ATOL",
    "close",
    "expect_close",
    "expect_answer",
    "expect_pair",
    "shown",
    "expect_function_gradients",
    "attention_mistakes",
    "build_pair",
    "module_info_of",
    "expect_module",
    "expect_dropout",
    "expect_on_meta",
    "expect_like_reference",
]

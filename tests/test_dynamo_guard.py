"""No check spends its time limit importing torch's compiler stack.

The first use of the meta device or of a dispatch mode imports ``torch._dynamo``: about 1 s
on a quiet machine and over 15 s on a loaded one, where an honest answer then times out
(it happened to tiled_attention in CI). ``run_check`` imports it before the limit starts for
checks registered with ``imports_dynamo=True`` and for module answers. The test suite's nbval
kernels set ``DYNAMO_GUARD`` (conftest.py), so every solution notebook's check cells, run in a
fresh kernel, raise where a check imports it inside its limit. This test proves the guard bites,
in a fresh interpreter (nothing imported yet).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from attn_course.grading.kernel.local import DYNAMO_GUARD

pytestmark = pytest.mark.slow  # a fresh interpreter that imports torch

CHECK_THAT_IMPORTS_DYNAMO = """
from attn_course.grading.checking.registry import CheckSpec
from attn_course.grading.checking.verdicts import run_check


def check(obj):
    import torch._dynamo  # noqa: F401  (as the meta device's first use does)


result = run_check(CheckSpec("careless", "00_numpy_attention", check, 30.0), len)
print(result.status.value, result.message)
"""


@pytest.mark.parametrize("guard", ["1", ""])
def test_a_check_importing_dynamo_inside_its_limit_errors_under_the_guard(guard):
    env = {**os.environ, DYNAMO_GUARD: guard}
    result = subprocess.run(
        [sys.executable, "-c", CHECK_THAT_IMPORTS_DYNAMO],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    if guard:
        assert result.stdout.startswith("error"), result.stdout
        assert "'careless' imported torch._dynamo inside its time limit" in result.stdout
        assert "imports_dynamo=True" in result.stdout
    else:
        assert result.stdout.startswith("passed"), result.stdout

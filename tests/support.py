"""What test files share: the repository root, the grade command, crafted notebooks, verdicts,
the causality test of a module.

pyproject.toml puts tests/ and benchmarks/ on the import path (``pythonpath``), so test files
import these by name (``from support import ROOT``), as they import the answer tables
(``answers``) and benchmark helpers (``make_class``). Test files never import each other.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import torch
from nbformat.v4 import new_code_cell, new_notebook

from attn_course.grading.checking.registry import CHECKS, CheckFailed
from attn_course.grading.kernel import agent
from attn_course.grading.kernel.kernels import REPLY_MIME

ROOT = Path(__file__).resolve().parent.parent

# Debian's Chromium, which the browser tests drive; `make test` installs it (`make chromium`).
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1366, "height": 900}  # a common laptop screen

# The first cell of a crafted notebook, and a right answer to check("causal_mask", ...).
IMPORTS = "import torch\nfrom attn_course.grading import check"
# Correct by the course definition: True above the diagonal (the future) is hidden.
GOOD_MASK = "torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)"


def grade_command(
    *args: object, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run ``python -m attn_course grade ARGS`` from ``cwd``, this checkout importable and a
    test signing key in the environment (never the key in the tester's home folder), plus
    ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "attn_course", "grade", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "ATTN_GRADE_KEY": "a test key, 32 characters long",
            **(env or {}),
        },
        timeout=timeout,
    )


def grade_ok(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    """``grade_command`` that must exit 0 (every notebook graded, none refused)."""
    process = grade_command(*args, cwd=cwd)
    assert process.returncode == 0, process.stderr
    return process


def write_notebook(path: Path, sources: list[str]) -> Path:
    """A notebook with one code cell per source."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=[new_code_cell(s) for s in sources]), path)
    return path


def verdict(check_id: str, obj: object) -> str:
    """'passed' or the hint of the failure, from the check run in this process."""
    try:
        CHECKS[check_id].func(obj)
    except CheckFailed as failure:
        return str(failure)
    return "passed"


def assert_causal(module: torch.nn.Module, x: torch.Tensor, atol: float) -> None:
    """Changing the tokens of ``x`` (b, num_tokens, d) from position t on never changes
    ``module``'s outputs before t, and changes its output at t."""
    out = module(x)
    b, num_tokens, d = x.shape
    for t in range(num_tokens):
        changed = x.clone()
        changed[:, t:] = torch.randn(b, num_tokens - t, d) * 10
        new_out = module(changed)
        torch.testing.assert_close(new_out[:, :t], out[:, :t], atol=atol, rtol=atol)
        assert not torch.allclose(new_out[:, t], out[:, t])


def serve_in_process(data: str | None) -> tuple[dict, list]:
    """One grader request answered by ``agent.serve`` in this process, as a kernel answers it:
    the execute reply and the agent's replies it published (``Kernel.request``'s return)."""
    import pytest

    published: list[dict] = []
    display = pytest.MonkeyPatch()
    display.setattr("IPython.display.publish_display_data", published.append)
    try:
        agent.serve(data)
    finally:
        display.undo()
    return {"status": "ok"}, [d[REPLY_MIME] for d in published]


def saved_for_backward(fn, *inputs):
    """``fn(*inputs)`` and the bytes of the storages autograd saves for its backward pass,
    ``inputs`` left out: ``(output, bytes)``."""
    skip = {t.untyped_storage().data_ptr() for t in inputs}
    storages = {}

    def pack(t):
        if t.untyped_storage().data_ptr() not in skip:
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*inputs)
    return out, sum(storages.values())

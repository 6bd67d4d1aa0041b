"""Stored outputs are portable: they come out the same on another CPU and thread count.

A learner's CPU is not the one that executed the notebooks. Every lecture and solution
notebook is executed again by nbval (strict, the same sanitize rules as ``make test``) in a
kernel that runs PyTorch's generic kernels instead of the machine's vector ones
(``ATEN_CPU_CAPABILITY=default``, MKL held to SSE4.2) and with a different
``torch.set_num_threads``. An output that depends on the instruction set, or on how a
reduction is split between threads, fails here on the maintainer's machine instead of on a
learner's.

The kernel gets the other thread count from an IPython startup file: ``torch.set_num_threads``
is replaced by one that sets 2 threads when a notebook asks for 1 (and 1 otherwise).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from support import ROOT

# Re-executes every notebook under nbval. .ci/run runs it under the first Python only: the
# other Pythons' nbval pass already re-executes every notebook with another torch build.
pytestmark = [pytest.mark.slow, pytest.mark.portability]

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "solutions").glob("*.ipynb")
)
GENERIC_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}
OTHER_THREAD_COUNT = """\
import torch

_set_num_threads = torch.set_num_threads


def _other_thread_count(n: int) -> None:
    _set_num_threads(2 if n == 1 else 1)


torch.set_num_threads = _other_thread_count
"""


@pytest.fixture(scope="session")
def portable_env(tmp_path_factory) -> dict[str, str]:
    """The environment of a kernel on 'another machine': generic kernels, other thread count."""
    ipython_dir = tmp_path_factory.mktemp("ipython")
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-other-thread-count.py").write_text(OTHER_THREAD_COUNT)
    return {**os.environ, **GENERIC_KERNELS, "IPYTHONDIR": str(ipython_dir)}


def run_nbval(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Strict nbval over one notebook, in a kernel started with ``env``."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval"]
    command += ["--nbval-current-env", "--nbval-sanitize-with", "nbval-sanitize.cfg", str(path)]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stored_outputs_reproduce_on_generic_kernels_and_another_thread_count(path, portable_env):
    result = run_nbval(path, portable_env)
    assert result.returncode == 0, (
        f"{path.relative_to(ROOT)} prints something that depends on the CPU's instruction set "
        "or the thread count. Print float32 values with fewer significant digits, compare "
        "floats with a stated tolerance instead of torch.equal, then re-execute with "
        "`make notebooks`.\n" + result.stdout[-6000:]
    )


def test_the_portable_kernel_really_is_another_machine(tmp_path, portable_env):
    """The probe itself: the kernel reports generic kernels and the other thread count."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "import torch\n"
            "torch.set_num_threads(1)\n"
            "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())",
            execution_count=1,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="DEFAULT 2\n")],
        )
    ]
    path = tmp_path / "probe.ipynb"
    nbformat.write(notebook, path)
    result = run_nbval(path, portable_env)
    assert result.returncode == 0, result.stdout[-3000:]

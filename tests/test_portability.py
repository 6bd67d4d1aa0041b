"""nbval's kernels run as on another machine (conftest.py): the probe.

Every nbval run of this repository compares the stored outputs with those of a kernel on
PyTorch's generic kernels and another thread count (``--nbval-native`` turns that off). This
test proves the kernel nbval starts really is that other machine: a probe notebook whose
stored output is what such a kernel prints passes under nbval.
"""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest
from support import ROOT

pytestmark = pytest.mark.slow  # starts a pytest run with a kernel


def test_nbval_kernels_run_generic_kernels_and_the_other_thread_count(tmp_path):
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
    # The probe lies outside the repository, so its run loads ROOT/conftest.py as a plugin.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest"]
    command += ["--nbval", "--nbval-current-env", str(path)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]

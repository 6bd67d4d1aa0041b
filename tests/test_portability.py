"""nbval's kernels run as on another machine (conftest.py): the probes.

Every nbval run of this repository compares the stored outputs with those of a kernel on other
code paths (PyTorch's generic kernels, MKL's compatible path; ``--nbval-native`` turns that
off). The first slow test proves the kernel nbval starts really is that other machine; the
second that the pass can fail: a cell that prints digits float32 rounding decides, stored as
this machine's own kernels print them, fails under nbval, in the same run as the cell stored as
the other machine prints it, which passes. One nbval run (one pytest process, one kernel for
a notebook of three cells) serves both. The thread count is pinned by every notebook, and
changed only where a machine asks for it (``ATTN_COURSE_OTHER_THREADS=1``: ``make
portability``, CI's other Pythons).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import nbformat
import pytest
import torch
from support import ROOT

from conftest import OTHER_MACHINE, OTHER_THREAD_COUNT, OTHER_THREADS, code_paths

# The variables that choose PyTorch's and MKL's code paths: unset, a process runs natively.
CODE_PATH_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "MKL_ENABLE_INSTRUCTIONS")
# A float32 product whose last bits depend on the code path: the digest of its bytes.
FRAGILE = (
    "import hashlib, torch\n"
    "torch.set_num_threads(1)\n"
    "g = torch.Generator().manual_seed(0)\n"
    "a, b = torch.randn(64, 96, generator=g), torch.randn(96, 80, generator=g)\n"
    "x = torch.randn(3, 7, 96, generator=g)\n"
    "print(hashlib.sha256((a @ b).numpy().tobytes() + (x @ a.T).numpy().tobytes()).hexdigest())"
)


def run_nbval(*paths) -> subprocess.CompletedProcess:
    """nbval over notebooks outside the repository, with this repository's conftest."""
    command = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"]
    command += ["-p", "conftest", "--nbval", "--nbval-current-env", *map(str, paths)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def stored_notebook(path, *cells: tuple[str, str]) -> None:
    """A notebook of code cells, each ``(source, what it printed)``."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            source,
            execution_count=count,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)],
        )
        for count, (source, printed) in enumerate(cells, start=1)
    ]
    nbformat.write(notebook, path)


def printed_by(source: str, **variables: str) -> str:
    """What ``source`` prints in a fresh process on this machine's own code paths, plus
    ``variables``."""
    env = {k: v for k, v in os.environ.items() if k not in CODE_PATH_VARIABLES}
    result = subprocess.run(
        [sys.executable, "-c", source], env={**env, **variables}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


PROBE = (
    "import os, torch\n"
    "torch.set_num_threads(1)\n"
    "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(),"
    " os.environ.get('MKL_CBWR'))"
)


CELLS = ("probe", "mine", "others")  # the cells of the probe notebook, in order


@pytest.fixture(scope="module")  # starts a pytest run with one kernel
def nbval_run(tmp_path_factory) -> dict:
    """One nbval run (one pytest process, one kernel) over a notebook outside the repository
    (so the run loads ROOT/conftest.py as a plugin) of three cells: the probe, stored as the
    other machine should print it, and the fragile cell twice, stored as this machine's own
    kernels print it ("mine") and as the other machine prints it ("others"). nbval goes on
    after a cell whose output differs. Returns each cell's outcome, the run's output and the
    two printed digests."""
    notebook = tmp_path_factory.mktemp("portability") / "probe.ipynb"
    native = printed_by(FRAGILE)
    paths = code_paths(os.environ.get("ATTN_COURSE_OTHER_MACHINE") or OTHER_MACHINE)
    threads = 2 if paths.get(OTHER_THREADS) == "1" else 1
    other = printed_by(FRAGILE.replace("threads(1)", f"threads({threads})"), **paths)
    probe = (PROBE, "DEFAULT 1 COMPATIBLE\n")
    stored_notebook(notebook, probe, (FRAGILE, native), (FRAGILE, other))
    result = run_nbval(notebook)
    found = re.findall(r"^(PASSED|FAILED) \S+::Cell (\d+)(?: - .*)?$", result.stdout, re.MULTILINE)
    verdicts = {int(index): outcome for outcome, index in found}
    outcomes = {name: verdicts.get(index) for index, name in enumerate(CELLS)}
    return {"outcomes": outcomes, "output": result.stdout, "native": native, "other": other}


@pytest.mark.slow
def test_nbval_kernels_run_generic_kernels_and_the_notebooks_thread_count(nbval_run):
    env_override = os.environ.get("ATTN_COURSE_OTHER_MACHINE")
    if env_override:
        pytest.skip(f"ATTN_COURSE_OTHER_MACHINE={env_override!r} names another machine")
    assert nbval_run["outcomes"]["probe"] == "PASSED", nbval_run["output"][-3000:]


@pytest.mark.slow
def test_the_portable_pass_fails_a_cell_that_prints_rounding(nbval_run):
    if nbval_run["other"] == nbval_run["native"]:
        pytest.skip("this CPU's own code paths round as the other machine's: nothing to show")
    # the cell stored as this machine prints it fails; stored as the other machine prints it,
    # it passes: only the digits failed
    outcomes = {name: nbval_run["outcomes"][name] for name in ("mine", "others")}
    assert outcomes == {"mine": "FAILED", "others": "PASSED"}, nbval_run["output"][-3000:]
    assert "mismatch 'stdout'" in nbval_run["output"]


@pytest.mark.parametrize("folder", ["notebooks", "solutions", "exercises"])
def test_every_notebook_pins_one_torch_thread_first(folder):
    """A learner's kernel then splits every reduction as the stored run did, however many cores
    it has: the first code cell sets one thread, and no cell sets another count."""
    for path in sorted((ROOT / folder).glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        assert "torch.set_num_threads(1)" in code[0], path.name
        counts = {n for source in code for n in re.findall(r"set_num_threads\(([^)]*)\)", source)}
        assert counts == {"1"}, (path.name, counts)


@pytest.mark.parametrize(("asked", "threads"), [(None, 1), ("1", 2)])
def test_the_other_thread_count_only_where_the_machine_asks(monkeypatch, asked, threads):
    """The IPython startup file of nbval's kernels: a notebook's one thread becomes two only
    under ``ATTN_COURSE_OTHER_THREADS=1``."""
    monkeypatch.setattr(torch, "set_num_threads", torch.set_num_threads)  # undone after the test
    if asked is None:
        monkeypatch.delenv(OTHER_THREADS, raising=False)
    else:
        monkeypatch.setenv(OTHER_THREADS, asked)
    exec(OTHER_THREAD_COUNT, {})
    torch.set_num_threads(1)
    assert torch.get_num_threads() == threads

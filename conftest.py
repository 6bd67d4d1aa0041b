"""pytest's set-up for every run: a headless matplotlib, one torch thread, portable nbval.

Test files import helpers from ``tests/support.py``, never from here.

nbval runs every notebook as on another machine. Stored outputs come from executing the
notebooks on this machine (``python -m attn_course execute``); nbval compares them with the
outputs of a kernel whose two numeric libraries take other code paths than the machine's own:
PyTorch's generic kernels instead of its vector ones (``ATEN_CPU_CAPABILITY=default``) and
Intel MKL's compatible path (``MKL_CBWR=COMPATIBLE``: MKL's conditional numerical
reproducibility, honoured on Intel and AMD processors alike, where ``MKL_ENABLE_INSTRUCTIONS``
moves MKL on Intel only). So one nbval pass proves both that the outputs are current and that
they are portable: an output that depends on the instruction set or on the CPU's vendor fails
here instead of on a learner's CPU. ``ATTN_COURSE_OTHER_MACHINE`` names another machine instead
(``make portability`` runs nbval under each of several); ``--nbval-native`` runs the kernels as
this machine's own.

Every notebook pins one torch thread in its first cell (``tests/test_portability.py``), so a
learner's kernel splits reductions as the stored run did. A machine whose words include
``ATTN_COURSE_OTHER_THREADS=1`` also runs another thread count: an IPython startup file
replaces ``torch.set_num_threads`` by one that sets 2 threads when a notebook asks for 1 (and 1
otherwise), so an output that depends on how a reduction is split between threads fails.
``make portability`` and ``.ci/run``'s runs under the other Pythons run it; ``make test`` does
not (two threads cost its notebooks 1.6 times the CPU: 102 instead of 65 CPU-s for lecture 09).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import matplotlib
import pytest
import torch
from nbval.plugin import IPyNbCell

from attn_course.grading.kernel.local import DYNAMO_GUARD

matplotlib.use("Agg")  # before any test imports pyplot: no window, the same pixels everywhere
# One thread per test process: `make test` runs two processes on two cores, and on the small
# tensors of the tests a second thread mostly spins (three times the CPU time of one).
torch.set_num_threads(1)

# The other machine's code paths, as NAME=VALUE words; ATTN_COURSE_OTHER_MACHINE replaces them.
OTHER_MACHINE = "ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE"
# How an idle OpenMP thread waits, not how work is split: the numbers stay the same. `make test`
# keeps both cores busy, and a thread that spins at a barrier while its partner waits for a
# core costs both (a 2-thread training loop here: 31 s instead of 2.3 s on a loaded machine).
SLEEP_AT_BARRIERS = {"OMP_WAIT_POLICY": "PASSIVE"}
# A kernel's environment asks for the other thread count with this variable (set to 1).
OTHER_THREADS = "ATTN_COURSE_OTHER_THREADS"
OTHER_THREAD_COUNT = f"""\
import os

import torch

if os.environ.get({OTHER_THREADS!r}) == "1":
    _set_num_threads = torch.set_num_threads

    def _other_thread_count(n: int) -> None:
        _set_num_threads(2 if n == 1 else 1)

    torch.set_num_threads = _other_thread_count
"""
_ANOTHER_MACHINE = pytest.StashKey[dict[str, str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--nbval-native",
        action="store_true",
        help="run nbval's kernels as this machine's own (vector CPU kernels, the notebook's "
        "thread count) instead of as on another machine",
    )


def code_paths(words: str) -> dict[str, str]:
    """``"A=1 B=2"`` as ``{"A": "1", "B": "2"}``; a word without ``=`` is refused."""
    pairs = [word.partition("=") for word in words.split()]
    if bad := [name for name, eq, _ in pairs if not eq or not name]:
        raise pytest.UsageError(f"ATTN_COURSE_OTHER_MACHINE: {bad[0]!r} is not NAME=VALUE")
    return {name: value for name, _, value in pairs}


# A kernel's last exit handler ends it without the interpreter's teardown of torch (about
# a second a notebook): nbval has read every output by then.
QUICK_EXIT = "import atexit, os\natexit.register(os._exit, 0)\n"


def another_machine(ipython_dir: Path) -> dict[str, str]:
    """The environment variables of a kernel on 'another machine', its IPython folder made."""
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-other-thread-count.py").write_text(OTHER_THREAD_COUNT)
    (startup / "01-quick-exit.py").write_text(QUICK_EXIT)
    paths = code_paths(os.environ.get("ATTN_COURSE_OTHER_MACHINE") or OTHER_MACHINE)
    # A solution's check that imports torch._dynamo inside its time limit raises (grading/local).
    return {**paths, **SLEEP_AT_BARRIERS, DYNAMO_GUARD: "1", "IPYTHONDIR": str(ipython_dir)}


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("nbval_native"):
        ipython_dir = Path(tempfile.mkdtemp(prefix="attn-course-ipython-"))
        config.stash[_ANOTHER_MACHINE] = another_machine(ipython_dir)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _ANOTHER_MACHINE in config.stash:
        shutil.rmtree(config.stash[_ANOTHER_MACHINE]["IPYTHONDIR"], ignore_errors=True)


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Every test starts on one torch thread, whatever the test before it left. A command's
    ``main`` called in-process sets the command's own default (``train``: 2 threads); the rest
    of that pytest process then trained on 2 spinning threads (test_recordings: 2.9 s alone,
    26 CPU-s after tests/test_lm.py in the same process with the other core busy)."""
    yield
    torch.set_num_threads(1)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """An nbval cell runs with the other machine's variables in the environment, which the
    kernel that nbval starts (or restarts) for its notebook inherits."""
    env = item.config.stash.get(_ANOTHER_MACHINE, None)
    if env is None or not isinstance(item, IPyNbCell):
        return (yield)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        return (yield)

"""pytest's set-up for every run: a headless matplotlib, one torch thread, portable nbval.

Test files import helpers from ``tests/support.py``, never from here.

nbval runs every notebook as on another machine. Stored outputs come from executing the
notebooks on this machine (``python -m attn_course execute``); nbval compares them with the
outputs of a kernel that runs PyTorch's generic kernels instead of the machine's vector ones
(``ATEN_CPU_CAPABILITY=default``, MKL held to SSE4.2) and another ``torch.set_num_threads``: an
IPython startup file replaces it by one that sets 2 threads when a notebook asks for 1 (and 1
otherwise). So one nbval pass proves both that the outputs are current and that they are
portable: an output that depends on the instruction set, or on how a reduction is split between
threads, fails here instead of on a learner's CPU. ``--nbval-native`` runs the kernels as this
machine's own (``.ci/run`` under the other Pythons, whose torch builds differ anyway).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import matplotlib
import pytest
import torch
from nbval.plugin import IPyNbCell

matplotlib.use("Agg")  # before any test imports pyplot: no window, the same pixels everywhere
# One thread per test process: `make test` runs two processes on two cores, and on the small
# tensors of the tests a second thread mostly spins (three times the CPU time of one).
torch.set_num_threads(1)

GENERIC_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "SSE4_2"}
# How an idle OpenMP thread waits, not how work is split: the numbers stay the same. `make test`
# keeps both cores busy, and a thread that spins at a barrier while its partner waits for a
# core costs both (a 2-thread training loop here: 31 s instead of 2.3 s on a loaded machine).
SLEEP_AT_BARRIERS = {"OMP_WAIT_POLICY": "PASSIVE"}
OTHER_THREAD_COUNT = """\
import torch

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


def another_machine(ipython_dir: Path) -> dict[str, str]:
    """The environment variables of a kernel on 'another machine', its IPython folder made."""
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-other-thread-count.py").write_text(OTHER_THREAD_COUNT)
    return {**GENERIC_KERNELS, **SLEEP_AT_BARRIERS, "IPYTHONDIR": str(ipython_dir)}


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("nbval_native"):
        ipython_dir = Path(tempfile.mkdtemp(prefix="attn-course-ipython-"))
        config.stash[_ANOTHER_MACHINE] = another_machine(ipython_dir)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _ANOTHER_MACHINE in config.stash:
        shutil.rmtree(config.stash[_ANOTHER_MACHINE]["IPYTHONDIR"], ignore_errors=True)


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

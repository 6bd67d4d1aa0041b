"""The grading sandbox itself (``attn_course/grading/kernel/sandbox.py``): one process run in it,
reporting what it can see and do; and the README's description of it."""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys

import pytest
from support import ROOT

from attn_course.grading.kernel import sandbox
from attn_course.grading.kernel.kernels import KERNEL_ENV

needs_sandbox = pytest.mark.skipif(
    sandbox.available() is not None, reason=f"no grading sandbox: {sandbox.available()}"
)

PROBE = """
import json, os, resource, socket, sys
seen = {"uid": os.getuid(), "env": sorted(os.environ), "cwd": os.getcwd()}
seen["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
    seen["network"] = True
except OSError:
    seen["network"] = False
def writable(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        return True
    except OSError:
        return False
seen["writes"] = {p: writable(p) for p in sys.argv[2:]}
seen["limits"] = {name: resource.getrlimit(getattr(resource, "RLIMIT_" + name.upper()))[0]
                  for name in ("as", "nproc", "cpu", "fsize", "nofile", "core")}
import attn_course
seen["package"] = attn_course.__file__
print(json.dumps(seen))
"""


def run_in_sandbox(*args: str, cgroup=None, code: str = PROBE) -> dict:
    with open(os.devnull, "rb") as empty, open(os.devnull, "wb") as info:
        fds = (empty.fileno(), info.fileno())
        argv = [sys.executable, "-c", code, *args]
        command = sandbox.command(argv, sandbox.kernel_uid(), *fds, cgroup)
        done = subprocess.run(
            command,
            pass_fds=fds,
            capture_output=True,
            text=True,
            env=sandbox.environment(KERNEL_ENV),
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@needs_sandbox
@pytest.mark.slow  # a subprocess
def test_a_process_in_the_sandbox_sees_and_reaches_nothing_of_the_grader(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    host_file = tmp_path / "grader.txt"
    targets = [
        "/home/learner/scratch",
        "/tmp/scratch",
        f"{sandbox.COURSE_ROOT}/attn_course/planted.py",
        f"{sys.prefix}/planted.pth",
        str(host_file),
    ]
    group = sandbox.memory_cgroup()  # None where the grader may not make one
    try:
        seen = run_in_sandbox(str(listener.getsockname()[1]), *targets, cgroup=group)
        if group is not None:  # the probe's memory was charged to the sandbox's cgroup
            assert int((group / "memory.max_usage_in_bytes").read_text()) > 1 << 20
            assert int((group / "memory.limit_in_bytes").read_text()) == sandbox.MEMORY_BYTES
    finally:
        sandbox.remove_cgroup(group)
    listener.close()
    assert group is None or not group.exists()
    assert seen["uid"] != 0  # never root, even when the grader is
    allowed = {*sandbox.ENV_ALLOWED, "PATH", "HOME", "PYTHONPATH", "PWD", "MPLBACKEND"}
    assert set(seen["env"]) <= allowed | set(KERNEL_ENV)
    assert "OMP_WAIT_POLICY" in seen["env"]  # the kernels' threads sleep at barriers
    assert seen["cwd"] == sandbox.HOME
    assert len(seen["pids"]) <= 3  # bwrap's init, the probe (and setpriv's exec of it)
    assert seen["network"] is False
    writes = seen["writes"]
    assert writes["/home/learner/scratch"] and writes["/tmp/scratch"]
    assert not any(writes[t] for t in targets[2:])
    assert not host_file.exists()
    assert seen["package"] == f"{sandbox.COURSE_ROOT}/attn_course/__init__.py"
    assert seen["limits"] == sandbox.LIMITS


@needs_sandbox
@pytest.mark.slow  # a subprocess
def test_an_installed_copy_of_the_package_is_covered(monkeypatch):
    """Installed without -e, the package lies in the venv, which the sandbox binds: that copy
    (here a stand-in, the standard library's xmlrpc) is covered, the sandbox's own stays."""
    import xmlrpc

    installed = os.path.dirname(xmlrpc.__file__)
    monkeypatch.setattr(sandbox, "PACKAGE_DIR", type(sandbox.PACKAGE_DIR)(installed))
    listing = "import json, os, sys; print(json.dumps([os.listdir(p) for p in sys.argv[1:]]))"
    copy, own = run_in_sandbox(installed, f"{sandbox.COURSE_ROOT}/attn_course", code=listing)
    assert copy == [] and "client.py" in own


def test_the_readme_states_the_sandbox_as_built():
    text = re.sub(r"\s+", " ", (ROOT / "README.md").read_text(encoding="utf-8"))
    limits = sandbox.LIMITS
    assert f"{limits['as'] >> 30} GiB of address space" in text
    assert f"{limits['nproc']} processes and threads" in text
    assert f"{limits['cpu'] // 60} CPU minutes per process" in text
    assert f"{limits['fsize'] >> 20} MiB per file" in text
    assert f"{limits['nofile']:,} open files" in text
    assert f"`/tmp` of {sandbox.SCRATCH_BYTES >> 20} MiB each" in text
    assert f"a memory cgroup of {sandbox.MEMORY_BYTES >> 30} GiB" in text
    assert resource.RLIM_INFINITY not in limits.values()


@needs_sandbox
@pytest.mark.slow
def test_the_notebooks_deadline_bounds_every_call_and_stops_the_kernel():
    import time

    from attn_course.grading.kernel.kernels import Kernel, KernelLost

    kernel = Kernel(preload="")
    try:
        kernel.deadline = time.monotonic() + 3
        start = time.monotonic()
        with pytest.raises(KernelLost, match="time ran out"):
            kernel.execute("while True:\n    pass", timeout=600)
        assert time.monotonic() - start < 6
        assert not kernel.alive()
        with pytest.raises(KernelLost):  # and so does the next call, at once
            kernel.execute("1", timeout=600)
    finally:
        kernel.shutdown()

"""Capacity of the class server on this machine: planning figures for the README.

Run as root (it makes Unix users, as tests/test_class_hub.py does, and removes them):

    .venv/bin/python benchmarks/bench_class.py [--students 4] [--venv /opt/attn-class/venv]

It starts the class hub of ``classroom/`` on the loopback and prints:

* the hub's start time (process start to ``/hub/api`` answering);
* each student's server start time (the spawn API call, as a login does, to "ready");
* memory per student server, idle (its cgroup's ``memory.usage_in_bytes``), and at the peak
  while it runs lecture 01 (``memory.max_usage_in_bytes``);
* lecture 01 run by 1, 2, 3, ... students at once: each student's kernel executes the lecture
  inside their own cgroup, as that Unix user (nbclient from the class venv: the same kernel
  JupyterLab starts, without a browser), and the table gives the slowest cell's time against
  its solo time. It stops at the first count where a cell takes over twice its solo time.

The ratios are against the solo run of the same invocation; on a shared machine the load
average is printed with them. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import contextlib
import http.cookiejar
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "classroom"))
import test_class_hub  # noqa: E402
from limits import Hierarchy, StudentCgroup  # noqa: E402
from test_class_hub import Class  # noqa: E402

LECTURE = "01_causal_attention.ipynb"

# Run as the student: execute the lecture cell by cell, print each code cell's seconds.
RUNNER = r"""
import json, sys, time
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True)
times = []
with client.setup_kernel():
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        start = time.perf_counter()
        client.execute_cell(cell, index)
        times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def _ready(klass: Class, user: str, timeout: float = 300) -> float:
    """Seconds from posting the hub's login form (which starts the server) to "ready"."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(f"{klass.url}/hub/login", timeout=30).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode(
        {"username": user, "password": klass.passwords[user], "_xsrf": xsrf}
    ).encode()
    start = time.monotonic()
    with contextlib.suppress(OSError):  # the redirect to the pending page may time out
        opener.open(f"{klass.url}/hub/login", data=form, timeout=5).read()
    while time.monotonic() - start < timeout:
        model = klass.api(f"/users/{user}")
        server = model["servers"].get("")
        if server and server.get("ready"):
            return time.monotonic() - start
        time.sleep(0.25)
    raise TimeoutError(f"{user}'s server did not start in {timeout} s")


def _run_lecture(klass: Class, users: list[str], venv: Path) -> dict[str, list[float]]:
    """Lecture 01 as each of ``users`` at once, each inside their own cgroup."""
    hierarchy = Hierarchy.detect()
    processes = {}
    runner = klass.folder / "runner.py"
    runner.write_text(RUNNER)
    runner.chmod(0o644)
    for user in users:
        home = Path(f"~{user}").expanduser()
        procs = " ".join(str(f / "cgroup.procs") for f in StudentCgroup(hierarchy, user).folders)
        shell = (
            f"for f in {procs}; do echo $$ > $f; done; exec runuser -u {user} -- "
            f"env HOME={home} OMP_NUM_THREADS=1 {venv}/bin/python {runner} "
            f"{home}/lectures/{LECTURE}"
        )
        processes[user] = subprocess.Popen(
            ["sh", "-c", shell], cwd=home, stdout=subprocess.PIPE, text=True
        )
    return {user: json.loads(p.communicate()[0]) for user, p in processes.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--venv", type=Path, default=test_class_hub.CLASS_VENV)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench_class.py makes Unix users: run it as root")
    test_class_hub.CLASS_VENV = args.venv
    klass = Class()
    klass.students = [f"{klass.group.split('_')[0]}_s{i}" for i in range(1, args.students + 1)]
    klass.passwords.update({u: f"pw-{os.urandom(8).hex()}" for u in klass.students})
    try:
        klass.make_users()
        hub_s = klass.start_hub()
        print(f"hub start: {hub_s:.1f} s (load average {os.getloadavg()[0]:.1f})")
        starts = [_ready(klass, user) for user in klass.students]
        print(
            f"student server start: median {statistics.median(starts):.1f} s "
            f"(min {min(starts):.1f}, max {max(starts):.1f}, {len(starts)} servers, one at a time)"
        )
        time.sleep(5)
        hierarchy = Hierarchy.detect()
        idle = [StudentCgroup(hierarchy, u).memory_bytes() / 2**20 for u in klass.students]
        print(f"idle student server: {statistics.median(idle):.0f} MiB (median of {len(idle)})")
        solo = None
        print(f"{'students':>8} {'slowest cell s':>15} {'ratio':>6} {'lecture s':>10} {'load':>5}")
        for count in range(1, len(klass.students) + 1):
            users = klass.students[:count]
            start = time.monotonic()
            times = _run_lecture(klass, users, args.venv)
            wall = time.monotonic() - start
            if solo is None:
                solo = times[users[0]]
                heavy = max(range(len(solo)), key=solo.__getitem__)
                peak = StudentCgroup(hierarchy, users[0]).folders[0] / "memory.max_usage_in_bytes"
                print(f"peak memory running lecture 01: {int(peak.read_text()) / 2**20:.0f} MiB")
            worst = max(t[heavy] for t in times.values())
            ratio = worst / solo[heavy]
            load = os.getloadavg()[0]
            print(f"{count:>8} {worst:>15.2f} {ratio:>6.2f} {wall:>10.1f} {load:>5.1f}")
            if ratio > 2:
                print(f"a cell takes over 2x its solo time from {count} students at once")
                break
    finally:
        klass.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Attacks on the grader from inside a submission, run through the real ``grade --roster``.

Two or three more answer right, by a method the check forbids, hidden from the check's
instruments in the kernel (tiling, the fused kernel), one in a child process that has exited:
the sandbox's memory, measured from outside, fails them.
Every other attacker's notebook answers ``causal_mask`` with an oracle: the right mask only if its
attack WON (saw a secret, reached the grader, beat a limit), the wrong one otherwise. So a
mark for an attacker means an attack succeeded. Each attack must earn 0 marks, leave the
classmate's marks as they would be alone, and the class run must end with a gradebook.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest
from support import ROOT, grade_command, write_notebook

from attn_course.grading.kernel import sandbox

pytestmark = [
    pytest.mark.slow,  # grades a class in kernels
    pytest.mark.skipif(
        sandbox.available() is not None, reason=f"no grading sandbox: {sandbox.available()}"
    ),
]

STEM = "01_causal_attention"
SECRET = "ATTN_TEST_INSTRUCTOR_TOKEN"
MARKER = "attn-detached-marker-31337"  # in the command line of processes that must not survive
IMPORTS = "import os, sys, time, torch\nfrom attn_course.grading import check\nWON = False"
ORACLE = [
    "def causal_mask(num_tokens):\n"
    "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=int(WON))",
    'check("causal_mask", causal_mask)',
]
GOOD_SDPA = (
    "def scaled_dot_product_attention(queries, keys, values, mask=None):\n"
    "    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(mask, -torch.inf)\n"
    "    return torch.softmax(scores, dim=-1) @ values, torch.softmax(scores, dim=-1)"
)
CLASSMATE = [
    "import torch\nfrom attn_course.grading import check",
    "def causal_mask(num_tokens):\n"
    "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).triu(diagonal=1)",
    'check("causal_mask", causal_mask)',
    GOOD_SDPA,
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
]


def peek(port: int, paths: list[str]) -> str:
    """The grader's environment, the network, its processes, files outside the package."""
    return f"""
import socket
seen = []
if {SECRET!r} in os.environ:
    seen.append("env")
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    seen.append("network")
except OSError:
    pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if b"grade" in open(f"/proc/{{pid}}/cmdline", "rb").read():
            seen.append("grader process")
    except OSError:
        pass
seen += [p for p in {paths!r} if os.path.exists(p)]
WON = bool(seen)
print(seen)"""


MEMWRITE = """
import signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    try:
        with open(f"/proc/{pid}/mem", "r+b") as mem:  # e.g. flip the grader's verdicts
            mem.seek(0x400000)
            mem.write(b"passed")
            WON = True
    except OSError:
        pass
    for sig in (signal.SIGSTOP, signal.SIGKILL):  # stop, then kill, the parent and the rest
        try:
            os.kill(int(pid), sig)
        except OSError:
            pass
try:
    os.kill(os.getppid(), signal.SIGKILL)
except OSError:
    pass"""

FIFOS = """
import pathlib
for folder in (".", "/tmp", "/run/kernel", os.path.expanduser("~")):
    for name in (".grader-request-0.pt", ".grader-reply-0.pt", "zmq-9", "kernel.json.tmp"):
        try:
            os.mkfifo(os.path.join(folder, name))
        except OSError:
            pass
deep = pathlib.Path("deep")
for _ in range(3000):  # a clean-up that recurses would hit RecursionError
    deep = deep / "d"
try:
    os.makedirs(deep)
except OSError:
    pass"""

BOMBS = f"""
import subprocess
wins = []
try:
    big = torch.ones(40 * 2**30, dtype=torch.uint8)  # 40 GiB
    wins.append("memory")
except (RuntimeError, MemoryError):
    pass
children = []
try:
    for _ in range(400):
        children.append(subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)  # {MARKER}"],
            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    wins.append("processes")
except OSError:
    pass
written = 0
for folder in ("/tmp", os.path.expanduser("~"), "/run/kernel", "."):
    try:
        with open(os.path.join(folder, "fill"), "wb") as out:
            while written < 2 * 2**30:
                out.write(bytes(64 * 2**20))
                written += 64 * 2**20
    except OSError:
        pass
if written >= 2 * 2**30:
    wins.append("disk")
for child in children:
    child.kill()
    child.wait()
for path in ("/tmp/fill", os.path.expanduser("~/fill")):
    if os.path.exists(path):
        os.remove(path)
# detached survivors: a double fork out of the session, left running on purpose
subprocess.Popen(["/bin/sh", "-c",
    "(setsid {sys.executable} -c 'import time; time.sleep(300)  # {MARKER}' &)"])
WON = bool(wins)
print(wins)"""

FORGED_REPLIES = """
import base64, io, zipfile
import attn_course.grading.kernel.agent as agent
from IPython.display import publish_display_data
MIME = "application/x.attn-course-reply"
sent = [0]

def record(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()

def deflated(raw, extra):
    # the same records, one more of zeros that inflates 4000 times
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_DEFLATED)
        dst.writestr("archive/data/999", bytes(extra), compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()

def forged(request=None):
    sent[0] += 1
    kind = sent[0] % 4
    if kind == 1:    # malformed: a handle that is no int, an extra key
        data = record({"value": {"__handle__": "x", "info": {}}, "evil": 1})
    elif kind == 2:  # compressed: 4 MB that inflates to 1 GB
        data = deflated(record({"value": 1}), 2**30)
    elif kind == 3:  # a tensor view of one element standing for 10**12
        data = record({"value": torch.zeros(1).expand(10**6, 10**6)})
    else:            # two replies, then an oversized one
        publish_display_data({MIME: base64.b64encode(record({"value": 1})).decode()})
        publish_display_data({MIME: base64.b64encode(record({"value": 2})).decode()})
        data = bytes(100 * 2**20)
    publish_display_data({MIME: base64.b64encode(data).decode()})

agent.serve = forged"""

# Full attention, hidden from the in-kernel monitor of tiled_attention (its dispatch mode is
# switched off around the work): the kernel's memory, measured from outside, still tells.
UNMONITORED = """
from torch.utils._python_dispatch import _disable_current_modes

def tiled_attention(queries, keys, values, causal=False, block_size=64):
    with _disable_current_modes():
        scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
        if causal:  # the queries are the last positions (bottom-right), as tiled.py aligns them
            nq, nk = scores.shape[-2:]
            hidden = torch.ones(nq, nk, dtype=torch.bool).triu(1 + nk - nq)
            scores = scores.masked_fill(hidden, float("-inf"))
        return torch.softmax(scores, dim=-1) @ values"""

# Counted once by the in-kernel SDPA counter, then the scores, mask and softmax by hand.
DECOY_CALL = """
import torch.nn.functional as F
from attn_course.attention import MultiHeadAttention

class MultiHeadAttentionSDPA(MultiHeadAttention):
    def forward(self, x):
        b, n, _ = x.shape
        shape = (b, n, self.num_heads, self.head_dim)
        weights = (self.W_key, self.W_query, self.W_value)
        k, q, v = (w(x).view(shape).transpose(1, 2) for w in weights)
        F.scaled_dot_product_attention(q[:, :, :1], k[:, :, :1], v[:, :, :1])
        scores = (q @ k.transpose(-2, -1) / self.head_dim**0.5)
        scores = scores.masked_fill(self.mask.bool()[:n, :n], float("-inf"))
        context = self.dropout(torch.softmax(scores, dim=-1)) @ v
        return self.out_proj(context.transpose(1, 2).contiguous().view(b, n, self.d_out))"""


# The same, done in a child process that has exited by the time the kernel's processes are
# measured: only the peak of the sandbox's memory cgroup (where one can be made) tells.
FORKED = """
import os, pickle
from torch.utils._python_dispatch import _disable_current_modes

def full(queries, keys, values, causal):
    scores = queries @ keys.transpose(-2, -1) / queries.shape[-1] ** 0.5
    if causal:
        nq, nk = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(nq, nk).bool().triu(1 + nk - nq), -torch.inf)
    return torch.softmax(scores, dim=-1) @ values

def tiled_attention(queries, keys, values, causal=False, block_size=64):
    with _disable_current_modes():
        if queries.shape[-2] < 1024:  # not the memory probe: gradients must flow
            return full(queries, keys, values, causal)
        read, write = os.pipe()
        if os.fork() == 0:
            torch.set_num_threads(1)  # (OpenMP threads do not survive a fork)
            with os.fdopen(write, "wb") as pipe:
                pipe.write(pickle.dumps(full(queries, keys, values, causal)))
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            answer = pickle.loads(pipe.read())
        os.waitpid(-1, 0)
        return answer"""


def memory_cgroup_made() -> bool:
    group = sandbox.memory_cgroup()
    sandbox.remove_cgroup(group)
    return group is not None


# student -> (notebook, the check its method must fail, the answer's name, its code)
MEMORY_EVADERS = {
    "unmonitored": ("10_tiled_attention", "tiled_attention", "tiled_attention", UNMONITORED),
    "decoy": ("06_attention_cost", "sdpa_attention", "MultiHeadAttentionSDPA", DECOY_CALL),
}
if memory_cgroup_made():
    MEMORY_EVADERS["forked"] = ("10_tiled_attention", "tiled_attention", "tiled_attention", FORKED)


def survivors() -> list[str]:
    """Command lines on this machine that carry MARKER (detached processes that survived)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if MARKER.encode() in cmdline and b"pytest" not in cmdline:
            found.append(cmdline.decode(errors="replace"))
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks")
    roster, out = root / "class", root / "out"
    classmate = write_notebook(roster / "classmate" / f"{STEM}.ipynb", CLASSMATE)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    key = root / "instructor-key.txt"  # a file of the grader's user, outside the class
    key.write_text("s3cr3t", encoding="utf-8")
    hidden = [str(classmate), str(out), str(roster), str(ROOT / "pyproject.toml"), str(key)]
    attacks = {
        "peek": peek(port, hidden),
        "memwrite": MEMWRITE,
        "fifos": FIFOS,
        "bombs": BOMBS,
        "replies": FORGED_REPLIES,
    }
    for name, attack in attacks.items():
        write_notebook(roster / name / f"{STEM}.ipynb", [IMPORTS, attack, *ORACLE])
    for name, (stem, check_id, answer, attack) in MEMORY_EVADERS.items():
        cells = [IMPORTS, attack, f"check({check_id!r}, {answer})"]
        write_notebook(roster / name / f"{stem}.ipynb", cells)
    start = time.monotonic()
    process = grade_command("--roster", roster, "--out", out, cwd=root, env={SECRET: "s3cr3t"})
    seconds = time.monotonic() - start
    listener.close()
    time.sleep(1)  # a process killed with its sandbox is reaped by now
    left = survivors()
    assert process.returncode == 0, process.stderr[-3000:]
    with (out / "gradebook.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    students = {name: json.loads((out / "students" / f"{name}.json").read_text()) for name in rows}
    return rows, students, attacks, left, seconds


def test_every_attack_earns_nothing(graded):
    rows, students, attacks, _, _ = graded
    assert set(rows) == {"classmate", *MEMORY_EVADERS, *attacks}
    for name, (_, check_id, _, _) in MEMORY_EVADERS.items():
        (report,) = students[name]["notebooks"]
        (verdict,) = [c for c in report["checks"] if c["id"] == check_id]
        assert verdict["status"] == "failed" and "memory grew" in verdict["message"], verdict
    for name in attacks:
        (report,) = students[name]["notebooks"]
        verdicts = {c["id"]: (c["status"], c["message"]) for c in report["checks"]}
        assert rows[name]["total"] == "0", (name, verdicts)


def test_the_classmate_is_graded_as_if_alone(graded):
    rows, students, _, _, _ = graded
    assert rows["classmate"]["causal_mask"] == "1"
    assert rows["classmate"]["scaled_dot_product_attention"] == "1"
    assert rows["classmate"]["total"] == "2"


def test_forged_replies_are_refused_check_by_check(graded):
    _, students, _, _, _ = graded
    (report,) = students["replies"]["notebooks"]
    messages = [c["message"] for c in report["checks"]]
    assert all(c["status"] == "error" for c in report["checks"]), messages
    assert any("compressed" in m for m in messages), messages
    assert any("malformed" in m for m in messages), messages


def test_no_process_of_a_submission_outlives_its_grading(graded):
    _, _, _, left, _ = graded
    assert left == []


def test_roster_refuses_to_run_without_the_sandbox(tmp_path):
    (tmp_path / "class").mkdir()
    process = grade_command(
        "--roster", tmp_path / "class", "--out", tmp_path / "out", "--no-sandbox", cwd=tmp_path
    )
    assert process.returncode == 2
    assert "sandbox" in process.stderr

"""One share of the machine per student (issue 29): what one kernel's messages may cost the
grader, each sandbox's CPU share, and each student's wall budget.

The fast tests here feed the message reader of a kernel's relay (``relay.Inbox``)
serialized Jupyter messages and count what it decodes; the slow ones send a kernel's
messages through a relay, and grade a small class through ``grade --roster`` beside a
flooding, a forking, a sleeping and a many-parts notebook.
"""

from __future__ import annotations

import csv
import json
import os
import re
import threading
import time
import types
from pathlib import Path

import pytest
import zmq
from jupyter_client.session import Session
from support import ROOT, write_notebook
from support import grade_ok as grade

from attn_course.grading.checking.result import NotebookReport, Status
from attn_course.grading.classrun import runner
from attn_course.grading.kernel import kernels, relay, sandbox
from attn_course.grading.kernel.relay import REPLY_MIME, Flooded, Inbox

SESSION = Session(key=b"a key")


class _Socket:
    """A ZeroMQ socket holding serialized messages, handed over part by part as frames
    (``copy=False``)."""

    def __init__(self, messages: list[list[bytes]]):
        self.messages = [[zmq.Frame(part) for part in parts] for parts in messages]
        self.taken = 0  # parts handed over

    def poll(self, milliseconds: int = 0) -> int:
        return int(bool(self.messages))

    def recv(self, flags: int = 0, copy: bool = True) -> zmq.Frame:
        self.taken += 1
        return self.messages[0].pop(0)

    def getsockopt(self, option: int) -> int:
        assert option == zmq.RCVMORE
        if self.messages[0]:
            return 1
        self.messages.pop(0)
        return 0


def message(kind: str, content: dict, parent: str = "m1", buffers=()) -> list[bytes]:
    if kind == "display_data":  # as ipykernel publishes it
        content = {**content, "metadata": {}, "transient": {}}
    msg = SESSION.msg(kind, content, parent={"msg_id": parent})
    return [bytes(p) for p in SESSION.serialize(msg)] + list(buffers)


class _Counting(Session):
    """A session that counts the messages it decodes."""

    decoded: list[str]

    def deserialize(self, parts, content=True, copy=True):
        msg = super().deserialize(parts, content=content, copy=copy)
        self.decoded.append(msg["header"]["msg_type"])
        return msg


def inbox(replies: bool = True) -> Inbox:
    session = _Counting(key=b"a key")
    session.decoded = []
    return Inbox(session, "m1", replies)


FLOOD = json.dumps(list(range(100_000)))  # about 0.6 MB of JSON list: slow to parse


def test_the_relays_verifier_decodes_what_a_jupyter_session_signs_once():
    parts = [zmq.Frame(p) for p in message("status", {"execution_state": "idle"})[1:]]
    decoded = relay.Verifier(b"a key").deserialize(parts)
    assert decoded["msg_type"] == "status" and decoded["content"] == {"execution_state": "idle"}
    assert decoded["parent_header"] == {"msg_id": "m1"}
    verifier = relay.Verifier(b"a key")
    verifier.deserialize(parts)
    with pytest.raises(ValueError, match="replayed"):
        verifier.deserialize(parts)  # the same message again
    with pytest.raises(ValueError, match="not signed"):
        relay.Verifier(b"another key").deserialize(parts)
    forged = [*parts[:4], zmq.Frame(b'{"execution_state": "busy"}')]
    with pytest.raises(ValueError, match="not signed"):
        relay.Verifier(b"a key").deserialize(forged)


def test_types_the_protocol_does_not_use_are_dropped_unread():
    box = inbox()
    box.drain(
        _Socket(
            [
                message("stream", {"name": "stdout", "text": FLOOD}),
                message("comm_msg", {"data": FLOOD}),
                message("error", {"ename": "E", "evalue": FLOOD, "traceback": []}),
                message("execute_result", {"data": {"text/plain": FLOOD}}),
                message("display_data", {"data": {REPLY_MIME: "not ours"}}, parent="other"),
                message("status", {"execution_state": "idle"}),
            ]
        )
    )
    assert box.session.decoded == ["status"] and box.idle
    assert box.received > 4 * len(FLOOD)  # counted all the same


def test_a_cells_display_data_is_never_decoded():
    box = inbox(replies=False)  # a learner's cell: no reply is expected
    box.drain(_Socket([message("display_data", {"data": {"application/json": FLOOD}})] * 3))
    assert box.session.decoded == [] and box.replies == []


def test_one_reply_is_kept_and_later_ones_are_counted_unread():
    box = inbox()
    first = message("display_data", {"data": {REPLY_MIME: "QUJD"}})
    later = [message("display_data", {"data": {REPLY_MIME: "A" * len(FLOOD)}}) for _ in range(3)]
    box.drain(_Socket([first, *later]))
    assert box.replies == ["QUJD", "", "", ""]  # four answers: malformed, one kept
    assert box.session.decoded == []  # recognised by form, never parsed


def test_display_data_is_never_parsed():
    """A learner's plot is dropped unread; so is anything not exactly the agent's form."""
    box = inbox()
    plots = [message("display_data", {"data": {"application/json": FLOOD}}) for _ in range(5)]
    forged = [
        message("display_data", {"data": {REPLY_MIME: 'QU"JD'}}),
        message("display_data", {"data": {REPLY_MIME: "QUJD", "text/plain": FLOOD}}),
        message("display_data", {"data": {REPLY_MIME: "QUJD\u00e9"}}),
    ]
    unsigned = message("display_data", {"data": {REPLY_MIME: "QUJD"}})
    unsigned[1] = b"0" * 64  # a wrong signature
    box.drain(_Socket([*plots, *forged, unsigned]))
    assert box.session.decoded == [] and box.replies == []


def test_the_agents_reply_is_recognised_as_ipykernel_sends_it():
    """The form ``Inbox`` recognises is what a real kernel's publish_display_data sends."""
    kernel = kernels.Kernel(sandboxed=False, preload="")
    try:
        code = (
            f"from IPython.display import publish_display_data as p; p({{{REPLY_MIME!r}: 'QUJD'}})"
        )
        assert kernel.request(code, 30)[1] == ["QUJD"]
    finally:
        kernel.shutdown()


def test_oversized_headers_and_contents_are_dropped_unread():
    box = inbox()
    huge_header = message("status", {"execution_state": "idle"})
    huge_header[2] = json.dumps({"msg_type": "status", "pad": FLOOD}).encode()
    big_status = message("status", {"execution_state": "idle", "pad": FLOOD})
    box.drain(_Socket([huge_header, big_status]))
    assert box.session.decoded == [] and not box.idle
    big_reply = message("execute_reply", {"status": "ok", "pad": "x" * (5 << 20)})
    assert box.read_reply(_Socket([big_reply])) is None
    assert box.read_reply(_Socket([message("execute_reply", {"status": "ok"})])) is not None


def test_a_request_past_its_byte_cap_is_stopped_before_decoding(monkeypatch):
    monkeypatch.setattr(relay, "MAX_REQUEST_BYTES", 10 * len(FLOOD))
    box = inbox()
    with pytest.raises(Flooded, match="messages for one request"):
        box.drain(_Socket([message("stream", {"text": FLOOD})] * 20))
    assert box.session.decoded == []
    # extra frames (buffers) count too
    box = inbox()
    with pytest.raises(Flooded):
        box.drain(_Socket([message("status", {}, buffers=[FLOOD.encode()] * 12)]))
    # and so does the count of messages, however small
    monkeypatch.setattr(relay, "MAX_REQUEST_MESSAGES", 100)
    box = inbox()
    with pytest.raises(Flooded):
        box.drain(_Socket([message("stream", {"text": "x"}) for _ in range(101)]))


def test_a_message_of_too_many_parts_is_stopped_at_the_cap():
    """Read part by part: the count stops at MAX_MESSAGE_PARTS, before the rest is taken."""
    box = inbox()
    socket = _Socket([message("status", {}, buffers=[b"x"] * 10_000)])
    with pytest.raises(Flooded, match="parts"):
        box.drain(socket)
    assert socket.taken == relay.MAX_MESSAGE_PARTS + 1 and box.session.decoded == []
    box = inbox()  # a message of a few buffers is read as before
    box.drain(_Socket([message("status", {"execution_state": "idle"}, buffers=[b"x"] * 8)]))
    assert box.idle


def test_the_join_shell_puts_the_sandbox_in_every_cgroup(tmp_path):
    groups = [tmp_path / "cpu", tmp_path / "pids"]
    for group in groups:
        group.mkdir()
    argv = sandbox.command(["/usr/bin/true"], None, 0, 1, None, (), tuple(groups))
    at = argv.index("--")
    assert argv[:3] == ["/bin/sh", "-c", sandbox._JOIN] and argv[4:at] == list(map(str, groups))
    import subprocess

    done = subprocess.run([*argv[: at + 1], "sh", "-c", "echo $$"], capture_output=True, text=True)
    pid = done.stdout.strip()
    assert all((g / "cgroup.procs").read_text().strip() == pid for g in groups)


def test_share_cgroups_v1_and_v2(tmp_path):
    """Made in the grader's own cgroup of each v1 hierarchy; beside it in v2."""
    v1 = tmp_path / "v1"
    for name in ("cpu,cpuacct/grader", "pids/grader"):
        (v1 / name).mkdir(parents=True)
    made = sandbox.share_cgroups(v1, "4:pids:/grader\n2:cpu,cpuacct:/grader\n0::/\n")
    assert [g.parent for g in made] == [v1 / "cpu,cpuacct/grader", v1 / "pids/grader"]
    assert (made[0] / "cpu.shares").read_text() == str(sandbox.CPU_SHARES)
    assert (made[1] / "pids.max").read_text() == str(sandbox.PIDS_MAX)
    v2 = tmp_path / "v2"
    (v2 / "service" / "grader").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    (made,) = sandbox.share_cgroups(v2, "0::/service/grader\n")
    assert made.parent == v2 / "service"
    assert (made / "cpu.weight").read_text() == str(sandbox.CPU_WEIGHT)
    assert sandbox.share_cgroups(tmp_path / "none", "0::/\n") == ()


def test_no_stdin_channel_and_a_short_receive_queue():
    """What ZeroMQ may hold for the relay per socket is RECEIVE_QUEUE messages of at most
    MAX_MESSAGE_BYTES a part; nothing reads a stdin channel, so none is opened."""
    source = Path(relay.__file__).read_text()
    assert "setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)" in source
    assert "setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)" in source
    assert '(("shell", zmq.DEALER), ("control", zmq.DEALER), ("iopub", zmq.SUB))' in source


# One message of many parts: ZeroMQ caps each part (MAXMSGSIZE), not their number, and hands
# a message over only once its last part has come: the relay holds it, never the grader.
MANY_PARTS = """
kernel = get_ipython().kernel
kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": ""},
                    parent=kernel.get_parent(), buffers=[b"x" * 100] * 500_000)
"""


def _grader_growth(code: str, timeout: float = 60) -> tuple[int, str]:
    """The bytes this process (the grader) grew by at its peak while a kernel ran ``code``,
    and how the request ended ("ok", or why the kernel was lost)."""
    sandboxed = sandbox.available() is None
    kernel = kernels.Kernel(sandboxed=sandboxed, preload="")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again here
        before = kernels._status_bytes(os.getpid(), "VmRSS")
        try:
            ended = kernel.execute(code, timeout)["status"]
        except kernels.KernelLost as lost:
            ended = str(lost)
        return kernels._status_bytes(os.getpid(), "VmHWM") - before, ended
    finally:
        kernel.shutdown()


@pytest.mark.slow
def test_a_message_of_many_parts_costs_the_relay_not_the_grader():
    """500,000 parts of 100 bytes: the grader's own process grew by about 230 MB when it held
    the sockets; now its kernel's relay holds them, and stops the kernel at the part cap."""
    grown, ended = _grader_growth(MANY_PARTS)
    assert grown < 4 << 20, grown
    assert ended == f"sent a message of more than {relay.MAX_MESSAGE_PARTS} parts, and was stopped"


@pytest.mark.slow
def test_a_message_larger_than_the_relay_may_hold_never_reaches_the_grader(monkeypatch):
    """Four parts of 90 MiB to a relay of 400 MiB: it cannot take them in (libzmq drops the
    connection, or the relay ends and the kernel is stopped); the grader holds none of it."""
    monkeypatch.setattr(relay, "ADDRESS_SPACE", 400 << 20)
    code = MANY_PARTS.replace('[b"x" * 100] * 500_000', '[b"x" * (90 << 20)] * 4')
    grown, ended = _grader_growth(code + "\nimport time; time.sleep(1)")
    assert grown < 4 << 20, grown
    assert ended in ("ok", relay.ENDED)


@pytest.mark.slow
def test_a_relay_that_ends_loses_its_kernel_with_a_sentence():
    """Killed (as the memory cgroup's OOM killer would), the relay's pipe ends: the request
    raises KernelLost at once, and the kernel is stopped."""
    kernel = kernels.Kernel(sandboxed=sandbox.available() is None, preload="")
    try:
        threading.Timer(1.0, kernel.relay.process.kill).start()
        start = time.monotonic()
        with pytest.raises(kernels.KernelLost, match="the process that reads its messages"):
            kernel.execute("import time; time.sleep(20)", 30)
        assert time.monotonic() - start < 10 and not kernel.alive()
    finally:
        kernel.shutdown()


@pytest.mark.slow
def test_the_relay_runs_in_the_kernels_cgroups_under_its_memory_limit():
    if sandbox.available() is not None:
        pytest.skip(f"no grading sandbox: {sandbox.available()}")
    kernel = kernels.Kernel(preload="")
    try:
        pid = str(kernel.relay.process.pid)
        groups = [g for g in (kernel.cgroup, *kernel.shares) if g is not None]
        assert all(pid in (g / "cgroup.procs").read_text().split() for g in groups)
        limits = Path(f"/proc/{pid}/limits").read_text()
        assert f"Max address space         {relay.ADDRESS_SPACE}" in limits
    finally:
        kernel.shutdown()


def test_the_readme_states_the_relays_limits():
    text = re.sub(r"\s+", " ", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert f"address space to {relay.ADDRESS_SPACE >> 30} GiB" in text
    assert f"more than {relay.MAX_MESSAGE_PARTS} parts" in text
    assert (
        f"{relay.MAX_REQUEST_BYTES >> 20} MiB and {relay.MAX_REQUEST_MESSAGES:,} messages" in text
    )
    assert f"frames of at most {relay.MAX_FRAME_BYTES >> 20} MiB" in text
    assert f"any message part over {relay.MAX_MESSAGE_BYTES >> 20} MiB" in text


def test_a_student_over_budget_has_every_notebook_left_marked(monkeypatch, tmp_path):
    """Without kernels: a student's notebooks run one after another until the budget; the
    one running then says it was cut, the ones left say they were not graded."""
    monkeypatch.setattr(runner, "KernelPool", lambda jobs, plan: types.SimpleNamespace(
        close=lambda: None))  # fmt: skip
    ran: list[str] = []

    def slow(path, pool, cell_timeout, until):
        ran.append(path.name)
        time.sleep(1.2)
        return NotebookReport(str(path), notebook=path.stem)

    monkeypatch.setattr(runner, "_grade_one_file", slow)
    monkeypatch.setattr(runner, "REPLACE_MIN_SECONDS", 0.1)
    paths = {}
    for name in ("sleeper/a", "sleeper/b", "sleeper/c", "honest/a"):
        path = tmp_path / name / f"{STEM}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_bytes((ROOT / "exercises" / f"{STEM}.ipynb").read_bytes())
        paths[name] = path
    done: list[NotebookReport] = []
    sleeper, honest = runner.grade_students(
        [[paths["sleeper/a"], paths["sleeper/b"], paths["sleeper/c"]], [paths["honest/a"]]],
        budget=2.0, jobs=2, on_done=done.append,
    )  # fmt: skip
    assert len(ran) == 3 and len(done) == 4  # sleeper a and b ran, c did not; honest ran
    assert sleeper[0].error is None and "while this notebook" in sleeper[1].error
    assert "before this notebook" in sleeper[2].error
    assert [c.status for c in sleeper[2].checks] == [Status.TIMEOUT] * 3
    assert honest[0].error is None


def test_kernels_are_planned_in_the_order_the_slots_ask_for_them():
    students = [["a1", "a2", "a3"], ["b1"], ["c1", "c2"], ["d1"], ["e1"]]
    order = runner._in_grading_order(students, 2)  # type: ignore[arg-type]
    assert order == ["a1", "b1", "a2", "a3", "c1", "d1", "c2", "e1"]


# ---- a class graded beside a flooding, a forking and a sleeping notebook (slow) ----------

STEM = "04_stepwise_reshape"  # the quickest notebook to grade: 3 checks
BUDGET = 30  # --student-budget of the class run
CELL_TIMEOUT = 10
FLOOD_CELL = """
import time
from IPython.display import publish_display_data
big = list(range(400_000))  # about 2.7 MB of JSON list, slow to parse
start = time.time()
while time.time() - start < 60:  # interrupted at the cell timeout
    publish_display_data({"application/json": big})
    time.sleep(0.25)
"""
FLOODING_CHECK = """
_split_heads = split_heads
fake = "A" * (40 << 20)  # reply-typed messages: the grader keeps none of them
def split_heads(x, num_heads):
    for _ in range(5):
        publish_display_data({"application/x.attn-course-reply": fake})
    publish_display_data({"application/json": big})
    return _split_heads(x, num_heads)
"""
PARTS_CHECK = """
_split_heads = split_heads
def split_heads(x, num_heads):  # one message of 500,000 parts, while the check runs
    kernel = get_ipython().kernel
    kernel.session.send(kernel.iopub_socket, "stream", {"name": "stdout", "text": ""},
                        parent=kernel.get_parent(), buffers=[b"x" * 100] * 500_000)
    return _split_heads(x, num_heads)
"""
FORK_CELL = """
import os, time
for _ in range(200):  # busy processes: one CPU share for all of them
    if os.fork() == 0:
        end = time.time() + 8
        while time.time() < end:
            pass
        os._exit(0)
"""
SLEEP_CELL = "try:\n    time.sleep(9)\nexcept BaseException:\n    pass"


def _solution_cells() -> list[str]:
    notebook = json.loads((ROOT / "solutions" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


@pytest.fixture(scope="module")
def attacked_class(tmp_path_factory):
    if sandbox.available() is not None:
        pytest.skip(f"no grading sandbox: {sandbox.available()}")
    root = tmp_path_factory.mktemp("shares")
    cells = _solution_cells()  # imports, split_heads, its check, merge_heads, ...
    students = {
        "a_flood": [cells[0], FLOOD_CELL, cells[1], FLOODING_CHECK, *cells[2:]],
        "b_honest": cells,
        "c_fork": [cells[0], FORK_CELL, *cells[1:]],
        "d_honest": cells,
        "e_sleep": [cells[0], "import time", *[SLEEP_CELL] * 12, *cells[1:]],
        "f_parts": [cells[0], cells[1], PARTS_CHECK, *cells[2:]],
    }
    for name, sources in students.items():
        write_notebook(root / "class" / name / f"{STEM}.ipynb", sources)
    # the sleeper's second notebook (graded after 04, by name): never reached, marked so
    exercise = ROOT / "exercises" / "06_attention_cost.ipynb"
    (root / "class" / "e_sleep" / exercise.name).write_bytes(exercise.read_bytes())
    grade(
        "--roster", root / "class", "--out", root / "out", "--jobs", "2",
        "--cell-timeout", CELL_TIMEOUT, "--student-budget", BUDGET, cwd=root,
    )  # fmt: skip
    with (root / "out" / "gradebook.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    reports = {
        name: json.loads((root / "out" / "students" / f"{name}.json").read_text()) for name in rows
    }
    return rows, reports


@pytest.mark.slow
def test_honest_classmates_keep_full_marks_and_the_run_ends_with_a_gradebook(attacked_class):
    rows, _ = attacked_class
    assert set(rows) == {"a_flood", "b_honest", "c_fork", "d_honest", "e_sleep", "f_parts"}
    for name in ("b_honest", "d_honest"):
        assert rows[name]["split_heads"] == rows[name]["merge_heads"] == "1", rows[name]
        assert rows[name]["split_shape"] == "1"


@pytest.mark.slow
def test_a_message_of_many_parts_costs_its_own_check_only(attacked_class):
    """The relay stops the kernel at the part cap: that check's verdict says so; the
    notebook's other checks run in a new kernel."""
    rows, reports = attacked_class
    (notebook,) = reports["f_parts"]["notebooks"]
    checks = {c["id"]: c for c in notebook["checks"]}
    assert checks["split_heads"]["status"] == "error", checks["split_heads"]
    assert "more than 64 parts, and was stopped" in checks["split_heads"]["message"]
    assert rows["f_parts"]["merge_heads"] == rows["f_parts"]["split_shape"] == "1"


@pytest.mark.slow
def test_a_sleeping_student_holds_a_slot_for_the_budget_only(attacked_class):
    """What bounds the run's growth: the student's notebooks end at the budget (plus the
    grace of stopping a kernel), and the notebook left is marked, not lost."""
    _, reports = attacked_class
    cut, left = sorted(reports["e_sleep"]["notebooks"], key=lambda nb: nb["notebook"])
    assert cut["notebook"] == STEM and "ran out while this notebook" in cut["error"]
    assert cut["seconds"] <= BUDGET + kernels.INTERRUPT_GRACE + 5
    assert left["notebook"] == "06_attention_cost"
    assert "ran out before this notebook" in left["error"]
    assert left["checks"] and all(c["status"] == "timeout" for c in left["checks"])


@pytest.mark.slow
def test_a_sandbox_and_every_process_it_forks_share_one_cpu_group():
    """The mechanism of one CPU share per sandbox: its processes, forked ones included, are
    in one cpu cgroup of CPU_SHARES (where the grader can make one)."""
    if sandbox.available() is not None:
        pytest.skip(f"no grading sandbox: {sandbox.available()}")
    if not sandbox.share_cgroups():
        pytest.skip("the grader cannot make cgroups here")
    kernel = kernels.Kernel(preload="")
    try:
        kernel.execute("import os, time\nfor _ in range(3):\n    os.fork() or time.sleep(60)", 1)
        cpu = next(g for g in kernel.shares if (g / "cpu.shares").exists())
        assert (cpu / "cpu.shares").read_text().strip() == str(sandbox.CPU_SHARES)
        inside = set((cpu / "cgroup.procs").read_text().split())
        processes = {str(pid) for pid in kernel._processes()}
        assert processes <= inside and len(processes) >= 4  # the kernel and its 3 forks
    finally:
        kernel.shutdown()


def test_the_import_of_torch_dynamo_is_not_on_the_checks_clock(monkeypatch):
    """On a loaded machine the meta device's first use (it imports torch._dynamo) took a
    correct causal_attention past its time limit: the grader now imports it in the kernel
    first, once per kernel, and extends the check's deadline by what that took."""
    from attn_course.grading.kernel import remote

    executed: list[str] = []

    class Slow:
        dynamo_ready = False

        def execute(self, code: str, timeout: float, silent: bool = False) -> dict:
            executed.append(code)
            time.sleep(0.2)
            return {"status": "ok"}

    session = remote.Session(Slow())  # type: ignore[arg-type]
    monkeypatch.setattr(session, "request", lambda *args, **kwargs: {"result": None})
    session.start_check(1.0)
    before = session.deadline
    session.call(object(), (), None, device="meta")
    session.call(object(), (), None, track_largest=True)
    session.call(object(), (), None)
    assert executed == ["import torch._dynamo"]
    assert session.deadline - before >= 0.2

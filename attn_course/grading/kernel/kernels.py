"""Fresh Jupyter kernels for grading, each in its own sandbox, started ahead of time.

``Kernel`` runs code in a fresh python3 kernel and keeps no outputs. The kernel process is
started here (``subprocess``), wrapped in the sandbox of ``sandbox.py`` unless
``sandboxed=False``; it talks over the ZeroMQ ``ipc`` sockets of a runtime folder the
grader made for it alone (TCP on loopback cannot cross the sandbox's network namespace).
Those sockets are held by the kernel's ``relay.Relay``, a process of its own in the
kernel's cgroups and under a memory limit, never by the grader: ZeroMQ holds a message of
any number of parts whole before anyone can count them, so what a flood can cost falls on
the relay (and the student's cgroup). The relay bounds what one kernel's messages may cost
the grader before anything is decoded (``relay.Inbox``: bytes, messages and parts per
request, only the message types the protocol uses, one agent reply per request) and
passes on only the request's reply, idle status and agent replies; a flood, or the
relay's end, stops the kernel (``KernelLost``).

``KernelPool`` starts kernels in the background, so that their start-up (and their import
of torch) overlaps with the grader's own imports and with grading the previous notebook.
Every notebook gets a kernel of its own: nothing is shared between submissions.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..checking import withheld
from . import sandbox
from .context import OFFICIAL_ENV
from .relay import REPLY_MIME, Flooded, Relay

__all__ = [
    "CELL_TIMEOUT",
    "STUDENT_BUDGET",
    "REPLY_MIME",
    "REQUEST_KEY",
    "Kernel",
    "KernelLost",
    "KernelPool",
    "start_kernel",
]

CELL_TIMEOUT = 60  # seconds a learner's cell may run (default of the grade command)
STUDENT_BUDGET = 900  # seconds one student's notebooks may take in all (grade --roster)
# The grader's requests to the agent travel in this key of an execute_request's metadata,
# beside a few bytes of code that call the agent: never in the code, which IPython and
# ipykernel tokenize, transform and hash in pure Python (seconds for a model of a few MB).
REQUEST_KEY = "attn_course_request"
# The folder that holds the imported attn_course/ (a clone's root, or site-packages for a
# non-editable install): the kernel imports the grader's own package, never another copy.
_IMPORT_ROOT = Path(__file__).resolve().parents[3]
START_ATTEMPTS = 2  # a kernel start can fail on a loaded machine ("died before replying")
START_TIMEOUT = 120  # seconds a kernel may take to start and import torch
INTERRUPT_GRACE = 3.0  # seconds an interrupted kernel has to answer before it is killed
_CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
# Set in every grading kernel: the official flag, and idle OpenMP threads that sleep at a
# barrier instead of spinning (how they wait, not how work is split: the numbers stay the
# same). Several kernels share the cores in a class run, and a spinning thread waiting for its
# partner, itself waiting for a core, once made a correct check time out under load.
KERNEL_ENV = {OFFICIAL_ENV: "1", "OMP_WAIT_POLICY": "PASSIVE"}
OUTPUT_GRACE = 5.0  # seconds the outputs of a request may trail its reply


class KernelLost(BaseException):
    """The kernel died, or ran away and had to be killed, or the notebook's time ran out.

    A BaseException, like ``agent.TimeLimit``: a check's ``except Exception`` must not turn
    it into a verdict, the runner has to see it to replace the kernel.
    """


class Kernel:
    """A fresh python3 kernel; ``execute`` runs code and returns the execute_reply content.

    ``deadline`` (``time.monotonic()``) bounds every call: past it, calls raise KernelLost.
    """

    def __init__(
        self,
        sandboxed: bool = True,
        preload: str = "import torch, numpy, attn_course.grading",
        withholding: withheld.Withholding = withheld.ONLY_HIDDEN,
    ):
        """``withholding``: what its sandbox withholds (``withheld.sandboxes``)."""
        self.sandboxed, self.lost, self.deadline = sandboxed, False, float("inf")
        self.dynamo_ready = False  # torch._dynamo imported (``remote.Session``)
        self.withholding = withholding
        self.cgroup: Path | None = None  # the sandbox's memory cgroup, where one is made
        self.shares: tuple[Path, ...] = ()  # its CPU-share and process cgroups (the same)
        self._memory_base = 0  # of the peak-memory measurement: its processes' RSS
        self._group_base: int | None = None  # and its memory cgroup's usage
        self.runtime = Path(tempfile.mkdtemp(prefix="attn-kernel-"))  # the grader's only
        connection = self.runtime / "kernel.json"
        inside = sandbox.RUNTIME if sandboxed else str(self.runtime)
        ports = dict(zip(_CHANNELS, range(1, 6), strict=True))  # ipc: socket file suffixes
        key = secrets.token_hex(32)
        connection.write_text(
            json.dumps(
                {
                    **ports,
                    "transport": "ipc",
                    "ip": f"{inside}/zmq",
                    "key": key,
                    "signature_scheme": "hmac-sha256",
                }
            )
        )
        kernel_file = sandbox.CONNECTION_FILE if sandboxed else str(connection)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", kernel_file]
        argv.append("--IPKernelApp.log_level=ERROR")
        try:  # the kernel starts first: the imports below overlap with its start
            self.process = self._launch(argv, connection) if sandboxed else self._plain(argv)
            from jupyter_client.session import Session

            self.session = Session(key=key.encode(), signature_scheme="hmac-sha256")
            # its sockets, seen from here: through the sandbox's root; held by its relay, in
            # its cgroups (no stdin or heartbeat channel: no input is ever asked for)
            ip = f"/proc/{self.sandbox_pid}/root{sandbox.RUNTIME}" if sandboxed else inside
            self.relay = Relay(connection, f"{ip}/zmq", (self.cgroup, *self.shares))
            self._wait_for_ready(time.monotonic() + START_TIMEOUT)
            if preload:  # pays the import of torch before the learner's first cell
                self.execute(preload, timeout=START_TIMEOUT, silent=True)
        except BaseException:
            self.shutdown()
            raise

    def _launch(self, argv: list[str], connection: Path) -> subprocess.Popen:
        """Start ``argv`` in the sandbox; ``sandbox_pid``: its first process, seen from here."""
        info_read, info_write = os.pipe()
        with connection.open("rb") as data:
            fds = (data.fileno(), info_write)
            self.cgroup = sandbox.memory_cgroup()
            self.shares = sandbox.share_cgroups()
            overlays = withheld.overlays(self.withholding)
            uid = sandbox.kernel_uid()
            command = sandbox.command(argv, uid, *fds, self.cgroup, overlays, self.shares)
            try:
                process = subprocess.Popen(
                    command,
                    env=sandbox.environment(KERNEL_ENV),
                    pass_fds=fds,
                    **_DETACHED,
                )
            finally:
                os.close(info_write)
        text, deadline = b"", time.monotonic() + START_TIMEOUT
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([info_read], [], [], deadline - time.monotonic())
                chunk = os.read(info_read, 65536) if ready else b""
                text += chunk
                try:
                    self.sandbox_pid = int(json.loads(text)["child-pid"])
                    return process
                except (ValueError, KeyError, TypeError):
                    if not chunk:
                        break
        finally:
            os.close(info_read)
        process.kill()
        raise KernelLost("the sandbox did not start")

    def _plain(self, argv: list[str]) -> subprocess.Popen:
        """Start ``argv`` as the grader's own user (``--no-sandbox``)."""
        paths = os.pathsep.join(filter(None, [str(_IMPORT_ROOT), os.getenv("PYTHONPATH")]))
        env = {**os.environ, **KERNEL_ENV, "PYTHONPATH": paths}
        return subprocess.Popen(argv, env=env, **_DETACHED)

    def _wait_for_ready(self, deadline: float) -> None:
        """Until the kernel answers ``kernel_info`` and its iopub messages reach the relay:
        a subscriber misses what is published before its subscription takes, and the agent's
        first reply would be lost (seen once in CI)."""
        try:
            while time.monotonic() < deadline:
                self._send("kernel_info_request", {}, replies=False)
                until, answered, idle = time.monotonic() + 0.5, False, False
                while not (answered and idle) and time.monotonic() < until:
                    event = self.relay.event(until - time.monotonic())
                    if event is None:
                        if self.process.poll() is not None:
                            raise KernelLost("the Python kernel died while starting")
                        continue
                    kind, payload = event
                    if kind == b"R" and json.loads(payload)["msg_type"] == "kernel_info_reply":
                        until, answered = time.monotonic() + 0.5, True  # then its idle status
                    idle = idle or kind == b"I"
                if answered and idle:
                    return  # else: published before the subscription took, or slow: ask again
        except Flooded as flood:
            raise KernelLost(str(flood)) from None
        raise KernelLost("the Python kernel did not start in time")

    def _send(
        self, msg_type: str, content: dict, replies: bool, metadata: dict | None = None
    ) -> None:
        """Send a shell request through the relay, which from now on reads its answers."""
        message = self.session.msg(msg_type, content, metadata=metadata or {})
        self.relay.start(
            "shell", self.session.serialize(message), message["header"]["msg_id"], replies
        )

    def alive(self) -> bool:
        return not self.lost and self.process.poll() is None

    def execute(self, code: str, timeout: float, silent: bool = False) -> dict:
        """Run ``code``; the reply content, or ``{"status": "timeout"}`` after an interrupt.

        Raises:
            KernelLost: the kernel died, or did not stop within INTERRUPT_GRACE seconds
                of the interrupt (it is then killed), or the notebook's time ran out, or it
                flooded its relay (``relay.Inbox``'s caps), or the relay ended.
        """
        return self._request(code, timeout, silent, replies=False)[0]

    def request(
        self, code: str, timeout: float, silent: bool = True, data: str | None = None
    ) -> tuple[dict, list]:
        """``execute``, and the agent's replies (``REPLY_MIME`` data) the code published: the
        first in full, every later one as ``""`` (counted, never read: ``Inbox``); ``data``:
        the request that the code reads from the message (``REQUEST_KEY``)."""
        return self._request(code, timeout, silent, replies=True, data=data)

    def _request(
        self, code: str, timeout: float, silent: bool, replies: bool, data: str | None = None
    ) -> tuple[dict, list]:
        if time.monotonic() >= self.deadline:
            self.shutdown()
            raise KernelLost("the notebook's time ran out")
        if not self.alive():
            raise KernelLost("the Python kernel had stopped")
        content = {
            "code": code,
            "silent": silent,
            "store_history": not silent,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": False,
        }
        metadata = {} if data is None else {REQUEST_KEY: data}
        deadline, interrupted = min(time.monotonic() + timeout, self.deadline), False
        reply, idle, answers = None, False, list[str]()
        try:
            self._send("execute_request", content, replies, metadata)
            while reply is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if interrupted or time.monotonic() >= self.deadline:
                        self.shutdown()
                        if not interrupted:
                            raise KernelLost("the notebook's time ran out, and it was stopped")
                        raise KernelLost("it kept running after an interrupt and was stopped")
                    self._interrupt()
                    deadline, interrupted = time.monotonic() + INTERRUPT_GRACE, True
                    continue
                event = self.relay.event(min(0.05, remaining))
                if event is None:
                    if not self.alive():
                        self.shutdown()
                        raise KernelLost("the Python kernel died")
                    continue
                reply = self._take(event, answers) or reply
                idle |= event[0] == b"I"
            # The idle status may come before the reply (then it was seen) or after.
            until = min(time.monotonic() + OUTPUT_GRACE, self.deadline)
            while not (idle or time.monotonic() > until):
                event = self.relay.event(until - time.monotonic())
                if event is not None:
                    self._take(event, answers)
                    idle |= event[0] == b"I"
        except Flooded as flood:
            self.shutdown()
            raise KernelLost(str(flood)) from None
        return {"status": "timeout"} if interrupted else reply["content"], answers

    @staticmethod
    def _take(event: tuple[bytes, bytearray], answers: list[str]) -> dict | None:
        """The reply an event of the relay carries (None for others); an agent reply's text
        is added to ``answers``."""
        kind, payload = event
        if kind == b"A":
            answers.append(payload.decode("ascii"))
        return json.loads(payload) if kind == b"R" else None

    def _processes(self) -> list[int]:
        """The host PIDs of the kernel's processes (the sandbox's, all of them)."""
        found, todo = [], [getattr(self, "sandbox_pid", self.process.pid)]
        while todo:
            pid = todo.pop()
            found.append(pid)
            for task in Path(f"/proc/{pid}/task").glob("*/children"):
                try:
                    todo += [int(child) for child in task.read_text().split()]
                except (OSError, ValueError):  # gone meanwhile
                    pass
        return found

    def reset_peak_memory(self) -> None:
        """Start measuring ``peak_memory`` now: resets the Linux kernel's peak RSS counters of
        the kernel's processes, and the peak of its memory cgroup where it has one."""
        self._memory_base = 0
        for pid in self._processes():
            try:
                Path(f"/proc/{pid}/clear_refs").write_text("5")
                self._memory_base += _status_bytes(pid, "VmRSS")
            except OSError:
                pass
        self._group_base = None
        if self.cgroup is not None:
            try:
                (self.cgroup / "memory.max_usage_in_bytes").write_text("0")
                self._group_base = int((self.cgroup / "memory.usage_in_bytes").read_text())
            except (OSError, ValueError):
                pass

    def peak_memory(self) -> int | None:
        """Bytes of memory the kernel gained at its peak since ``reset_peak_memory``, as the
        Linux kernel counted them (nothing the learner's code can reach): the resident
        memory of its processes, and where it has a memory cgroup the cgroup's peak, which
        also counts processes that have exited meanwhile. None when it cannot be read."""
        try:
            peak = sum(_status_bytes(pid, "VmHWM") for pid in self._processes())
        except OSError:
            return None
        grown = max(0, peak - self._memory_base)
        if self.cgroup is not None and self._group_base is not None:
            try:
                group_peak = int((self.cgroup / "memory.max_usage_in_bytes").read_text())
                grown = max(grown, group_peak - self._group_base)
            except (OSError, ValueError):
                pass
        return grown

    def _interrupt(self) -> None:
        """SIGINT to the kernel, sent by the kernel itself (ipykernel's interrupt_request):
        the grader cannot see into the sandbox's PID namespace, and needs not."""
        message = self.session.msg("interrupt_request", content={})
        self.relay.send("control", self.session.serialize(message))

    def shutdown(self) -> None:
        """Kill the kernel and everything it started (the whole sandbox); never raises."""
        self.lost = True
        try:
            if self.sandboxed:
                self.process.kill()  # bwrap: its PID namespace, all of it, dies with it
            else:
                os.killpg(self.process.pid, signal.SIGKILL)  # its process group only
        except (OSError, AttributeError):  # already gone, or never started
            pass
        try:
            self.process.wait(timeout=10)
        except (subprocess.TimeoutExpired, AttributeError):
            pass
        if hasattr(self, "relay"):
            self.relay.close()  # before its cgroups are removed: it is in them
        shutil.rmtree(self.runtime, ignore_errors=True)  # the grader's files only
        for group in (self.cgroup, *self.shares):
            sandbox.remove_cgroup(group)


def _status_bytes(pid: int, field: str) -> int:
    """A ``kB`` field of /proc/PID/status, in bytes (0 for a process without memory)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    return 0


# no terminal; a session of its own, so signals to the grader's process group miss it
_DETACHED: dict = {
    "stdin": subprocess.DEVNULL,
    "stdout": subprocess.DEVNULL,
    "stderr": subprocess.DEVNULL,
    "start_new_session": True,
}


def start_kernel(
    sandboxed: bool = True, withholding: withheld.Withholding = withheld.ONLY_HIDDEN
) -> Kernel:
    """A fresh ``Kernel`` whose sandbox withholds ``withholding``; a failed start is tried
    again, up to START_ATTEMPTS in all."""
    for _ in range(START_ATTEMPTS - 1):
        try:
            return Kernel(sandboxed, withholding=withholding)
        except (Exception, KernelLost):  # Kernel() shut the failed one down: start another
            pass
    return Kernel(sandboxed, withholding=withholding)


class KernelPool:
    """Kernels started ahead of time, each used for ONE notebook (fresh per submission).

    ``notebooks`` names the course notebook of each submission to grade, in grading order
    (None for one that no kernel will grade: ``planned_notebook``).
    Each kernel is started for the sandbox it will be (``withheld.sandboxes``: what it
    withholds), and ``warm`` of them start in the background while others are in use, so
    that kernel start-up and the import of torch overlap with grading.
    """

    def __init__(self, warm: int, notebooks: list[str | None], sandboxed: bool = True):
        self.sandboxed = sandboxed
        # the kernels still to start, in order
        self._plan = collections.deque(
            w for nb in notebooks if nb is not None for w, _ in withheld.sandboxes(nb)
        )
        self._ready: dict[withheld.Withholding, queue.Queue] = collections.defaultdict(queue.Queue)
        self._started: collections.Counter[withheld.Withholding] = collections.Counter()
        self._asked: collections.Counter[withheld.Withholding] = collections.Counter()
        self._lock = threading.Lock()
        self._starter = ThreadPoolExecutor(max(1, warm), thread_name_prefix="kernel-start")
        if sandboxed:  # the first kernels' stand-ins, written here: in a thread they would wait
            for withholding in list(self._plan)[:warm]:  # for the GIL while torch is imported
                withheld.overlays(withholding)
        for _ in range(min(warm, len(self._plan))):
            self._spawn()

    def _spawn(self, withholding: withheld.Withholding | None = None) -> None:
        """Start the next planned kernel, or one for ``withholding`` (out of the plan's turn)."""
        with self._lock:
            if withholding is None and not self._plan:
                return
            if withholding is None:
                withholding = self._plan.popleft()
            elif withholding in self._plan:
                self._plan.remove(withholding)
            self._started[withholding] += 1
        self._starter.submit(self._start_one, withholding)

    def _start_one(self, withholding: withheld.Withholding) -> None:
        try:
            self._ready[withholding].put(start_kernel(self.sandboxed, withholding))
        except (Exception, KernelLost) as exc:  # reported by get()
            self._ready[withholding].put(exc)

    def get(self, withholding: withheld.Withholding) -> Kernel:
        """A started kernel whose sandbox withholds ``withholding`` (waits for one); starts
        the next in the background."""
        with self._lock:
            self._asked[withholding] += 1
            unplanned = self._asked[withholding] > self._started[withholding]
        if unplanned:  # not in the plan, or not reached yet: start it now
            self._spawn(withholding)
        self._spawn()
        kernel = self._ready[withholding].get(timeout=300)
        if isinstance(kernel, BaseException):
            raise kernel
        return kernel

    def close(self) -> None:
        self._starter.shutdown(wait=True)
        for ready in self._ready.values():
            while not ready.empty():
                kernel = ready.get()
                if isinstance(kernel, Kernel):
                    kernel.shutdown()

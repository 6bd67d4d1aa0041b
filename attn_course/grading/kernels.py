"""Fresh Jupyter kernels for grading, each in its own sandbox, started ahead of time.

``Kernel`` runs code in a fresh python3 kernel and keeps no outputs. The kernel process is
started here (``subprocess``), wrapped in the sandbox of ``sandbox.py`` unless
``sandboxed=False``; it talks to the grader over the ZeroMQ ``ipc`` sockets of a runtime
folder the grader made for it alone (TCP on loopback cannot cross the sandbox's network
namespace). Every message the grader receives is capped at ``MAX_MESSAGE_BYTES`` by ZeroMQ
itself, before it is read into memory.

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

from . import sandbox, withheld
from .context import OFFICIAL_ENV

__all__ = [
    "CELL_TIMEOUT",
    "REPLY_MIME",
    "REQUEST_KEY",
    "Kernel",
    "KernelLost",
    "KernelPool",
    "start_kernel",
]

CELL_TIMEOUT = 60  # seconds a learner's cell may run (default of the grade command)
REPLY_MIME = "application/x.attn-course-reply"  # the agent's replies (display_data)
# The grader's requests to the agent travel in this key of an execute_request's metadata,
# beside a few bytes of code that call the agent: never in the code, which IPython and
# ipykernel tokenize, transform and hash in pure Python (seconds for a model of a few MB).
REQUEST_KEY = "attn_course_request"
# The folder that holds the imported attn_course/ (a clone's root, or site-packages for a
# non-editable install): the kernel imports the grader's own package, never another copy.
_IMPORT_ROOT = Path(__file__).resolve().parents[2]
START_ATTEMPTS = 2  # a kernel start can fail on a loaded machine ("died before replying")
START_TIMEOUT = 120  # seconds a kernel may take to start and import torch
INTERRUPT_GRACE = 3.0  # seconds an interrupted kernel has to answer before it is killed
MAX_MESSAGE_BYTES = 96 << 20  # ZeroMQ drops (and disconnects) any larger message
_CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
MAX_DRAIN = 1000  # messages dropped per look at the output channel
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
        self.withholding = withholding
        self.cgroup: Path | None = None  # the sandbox's memory cgroup, where one is made
        self._memory_base = 0  # of the peak-memory measurement: its processes' RSS
        self._group_base: int | None = None  # and its memory cgroup's usage
        self.runtime = Path(tempfile.mkdtemp(prefix="attn-kernel-"))  # the grader's only
        connection = self.runtime / "kernel.json"
        inside = sandbox.RUNTIME if sandboxed else str(self.runtime)
        ports = dict(zip(_CHANNELS, range(1, 6), strict=True))  # ipc: socket file suffixes
        connection.write_text(
            json.dumps(
                {
                    **ports,
                    "transport": "ipc",
                    "ip": f"{inside}/zmq",
                    "key": secrets.token_hex(32),
                    "signature_scheme": "hmac-sha256",
                }
            )
        )
        kernel_file = sandbox.CONNECTION_FILE if sandboxed else str(connection)
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", kernel_file]
        argv.append("--IPKernelApp.log_level=ERROR")
        try:  # the kernel starts first: the imports below overlap with its start
            self.process = self._launch(argv, connection) if sandboxed else self._plain(argv)
            import zmq
            from jupyter_client.blocking import BlockingKernelClient

            self.context = zmq.Context()
            self.context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
            self.client = BlockingKernelClient(context=self.context)
            self.client.load_connection_file(str(connection))
            if sandboxed:  # its sockets, seen from here: through the sandbox's root
                self.client.ip = f"/proc/{self.sandbox_pid}/root{sandbox.RUNTIME}/zmq"
            self.client.start_channels(hb=False)
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
            overlays = withheld.overlays(self.withholding)
            command = sandbox.command(argv, sandbox.kernel_uid(), *fds, self.cgroup, overlays)
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
        while time.monotonic() < deadline:
            self.client.kernel_info()
            try:
                msg = self.client.get_shell_msg(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    raise KernelLost("the Python kernel died while starting") from None
                continue
            if msg["msg_type"] == "kernel_info_reply":
                return
        raise KernelLost("the Python kernel did not start in time")

    def alive(self) -> bool:
        return not self.lost and self.process.poll() is None

    def _drain_outputs(self, msg_id: str, collect: list[str], until: float) -> bool:
        """Drop what the kernel printed (grading keeps no outputs); keep replies to ``msg_id``.

        True once the kernel said it is idle after ``msg_id``: its outputs are all in.
        """
        channel = self.client.iopub_channel
        for _ in range(MAX_DRAIN):
            if time.monotonic() > until or not channel.msg_ready():
                return False
            msg = channel.get_msg(timeout=0)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            content = msg["content"]
            if msg["msg_type"] == "status" and content.get("execution_state") == "idle":
                return True
            if msg["msg_type"] == "display_data" and isinstance(content.get("data"), dict):
                if REPLY_MIME in content["data"]:
                    collect.append(content["data"][REPLY_MIME])
        return False

    def execute(self, code: str, timeout: float, silent: bool = False) -> dict:
        """Run ``code``; the reply content, or ``{"status": "timeout"}`` after an interrupt.

        Raises:
            KernelLost: the kernel died, or did not stop within INTERRUPT_GRACE seconds
                of the interrupt (it is then killed), or the notebook's time ran out.
        """
        return self.request(code, timeout, silent)[0]

    def request(
        self, code: str, timeout: float, silent: bool = True, data: str | None = None
    ) -> tuple[dict, list]:
        """``execute``, and the agent's replies (``REPLY_MIME`` data) the code published;
        ``data``: the request that the code reads from the message (``REQUEST_KEY``)."""
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
        message = self.client.session.msg("execute_request", content, metadata=metadata)
        self.client.shell_channel.send(message)
        msg_id = message["header"]["msg_id"]
        replies: list = []
        deadline, interrupted = min(time.monotonic() + timeout, self.deadline), False
        idle = False  # the kernel said it is idle after msg_id: every output is in
        while True:
            idle = idle or self._drain_outputs(msg_id, replies, deadline)
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
            try:
                msg = self.client.get_shell_msg(timeout=min(0.2, remaining))
            except queue.Empty:
                if not self.alive():
                    self.shutdown()
                    raise KernelLost("the Python kernel died") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                # The idle status may come before the reply (then it was seen above) or after.
                until = min(time.monotonic() + OUTPUT_GRACE, self.deadline)
                while not (idle or time.monotonic() > until):
                    self.client.iopub_channel.socket.poll(50)
                    idle = self._drain_outputs(msg_id, replies, until)
                return ({"status": "timeout"} if interrupted else msg["content"]), replies

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
        msg = self.client.session.msg("interrupt_request", content={})
        self.client.control_channel.send(msg)

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
        try:
            self.client.stop_channels()
            self.context.destroy(linger=0)
        except Exception:  # never connected
            pass
        shutil.rmtree(self.runtime, ignore_errors=True)  # the grader's files only
        sandbox.remove_cgroup(self.cgroup)


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

    ``notebooks`` names the course notebook of each submission to grade, in grading order.
    Each kernel is started for the sandbox it will be (``withheld.sandboxes``: what it
    withholds), and ``warm`` of them start in the background while others are in use, so
    that kernel start-up and the import of torch overlap with grading.
    """

    def __init__(self, warm: int, notebooks: list[str], sandboxed: bool = True):
        self.sandboxed = sandboxed
        # the kernels still to start, in order
        self._plan = collections.deque(w for nb in notebooks for w, _ in withheld.sandboxes(nb))
        self._ready: dict[withheld.Withholding, queue.Queue] = collections.defaultdict(queue.Queue)
        self._started: collections.Counter[withheld.Withholding] = collections.Counter()
        self._asked: collections.Counter[withheld.Withholding] = collections.Counter()
        self._lock = threading.Lock()
        self._starter = ThreadPoolExecutor(max(1, warm), thread_name_prefix="kernel-start")
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

"""Fresh Jupyter kernels for grading, each in its own sandbox, started ahead of time.

``Kernel`` runs code in a fresh python3 kernel and keeps no outputs. The kernel process is
started here (``subprocess``), wrapped in the sandbox of ``sandbox.py`` unless
``sandboxed=False``; it talks to the grader over the ZeroMQ ``ipc`` sockets of a runtime
folder the grader made for it alone (TCP on loopback cannot cross the sandbox's network
namespace). What one kernel's messages may cost the grader is bounded before anything is
decoded (``Inbox``): ZeroMQ refuses a message part over ``MAX_MESSAGE_BYTES`` and holds at
most ``RECEIVE_QUEUE`` messages per socket for the grader (the rest wait in the kernel's own
memory); every request (a learner's cell, a check's call) may bring in ``MAX_REQUEST_BYTES``
in all, counted off the socket, else its kernel is stopped; only the message types the
protocol uses, addressed to the request, are decoded, each within its cap; and the grader
keeps one agent reply per request.

``KernelPool`` starts kernels in the background, so that their start-up (and their import
of torch) overlaps with the grader's own imports and with grading the previous notebook.
Every notebook gets a kernel of its own: nothing is shared between submissions.
"""

from __future__ import annotations

import collections
import hmac
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
from typing import Any

from ..checking import withheld
from . import sandbox
from .context import OFFICIAL_ENV

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
REPLY_MIME = "application/x.attn-course-reply"  # the agent's replies (display_data)
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
MAX_MESSAGE_BYTES = 96 << 20  # ZeroMQ drops (and disconnects) any larger message part
RECEIVE_QUEUE = 4  # messages ZeroMQ holds for the grader per socket; the rest wait in the kernel
MAX_REQUEST_BYTES = 256 << 20  # raw bytes one request (a cell, a check's call) may send in all
MAX_HEADER_BYTES = 4096  # a message's header or parent header, else it is dropped unread
MAX_STATUS_BYTES = 4096  # the content of a status message, else dropped unread
MAX_EXECUTE_REPLY_BYTES = 4 << 20  # the content of an execute reply (a traceback), else dropped
MAX_REQUEST_MESSAGES = 50_000  # messages one request may send in all (each header is read)
_CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
MAX_DRAIN = 1000  # messages read per look at the output channel
_DELIMITER = b"<IDS|MSG>"
# The agent's reply as ipykernel serializes it (publish_display_data): recognised by its
# form, never parsed as JSON, since display data can be JSON that is slow to parse.
_REPLY_HEAD = b'{"data": {"' + REPLY_MIME.encode() + b'": "'
_REPLY_TAIL = b'"}, "metadata": {}, "transient": {}}'
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


class Flooded(Exception):
    """A request brought in more than MAX_REQUEST_BYTES: its kernel is stopped."""


class Inbox:
    """What one request reads from the kernel's sockets, counted in raw bytes before decoding.

    Every message part is counted as ZeroMQ hands it over (``copy=False``: not even copied);
    past MAX_REQUEST_BYTES or MAX_REQUEST_MESSAGES for the request ``Flooded`` is raised.
    Only the message types the protocol uses are decoded (``status`` on the output channel,
    ``execute_reply`` and ``kernel_info_reply`` on the shell channel), only when their small
    header and parent header (read first, each capped) say they answer this request, and only
    within their size caps; everything else (streams, errors, comm messages, other requests'
    messages, oversized headers) is dropped unread. Display data is never parsed: when
    ``replies`` is set (a check's request to the agent; never for a learner's cell) the
    agent's reply is recognised by its exact form (``_REPLY_HEAD``...``_REPLY_TAIL``, a
    base64 text between), the first is kept and every later one is counted as another
    answer (``""``, which makes the request's reply malformed) without being read, so the
    grader keeps at most one reply per request. Any other display data (a learner's plot) is
    dropped unread.
    """

    def __init__(self, session: Any, msg_id: str, replies: bool):
        self.session, self.msg_id, self.want_replies = session, msg_id, replies
        self.received = 0  # raw bytes of every message part, decoded or not
        self.messages = 0
        self.replies: list[str] = []
        self.idle = False  # the kernel said it is idle after this request: outputs all in

    def _receive(self, socket: Any) -> tuple[str, list] | None:
        """The next message's type and parts after the delimiter, if it answers this
        request and its header and parent header are within their caps; else None."""
        import zmq

        parts = socket.recv_multipart(zmq.NOBLOCK, copy=False)
        self.received += sum(len(part) for part in parts)
        self.messages += 1
        if self.received > MAX_REQUEST_BYTES or self.messages > MAX_REQUEST_MESSAGES:
            raise Flooded(
                f"sent more than {MAX_REQUEST_BYTES >> 20} MiB or {MAX_REQUEST_MESSAGES:,} "
                "messages for one request, and was stopped"
            )
        at = next(
            (i for i, part in enumerate(parts[:8]) if len(part) == len(_DELIMITER)
             and part.bytes == _DELIMITER),
            None,
        )  # fmt: skip
        parts = parts[at + 1 :] if at is not None else []
        if len(parts) < 5 or max(len(parts[1]), len(parts[2])) > MAX_HEADER_BYTES:
            return None
        try:
            header, parent = json.loads(parts[1].bytes), json.loads(parts[2].bytes)
            kind, answers = header.get("msg_type"), parent.get("msg_id")
        except (ValueError, AttributeError):
            return None
        return (kind, parts) if answers == self.msg_id and isinstance(kind, str) else None

    def _decode(self, parts: list) -> dict | None:
        try:
            return self.session.deserialize(parts, content=True, copy=False)
        except Exception:  # unsigned, a replayed signature, not JSON: dropped
            return None

    def drain(self, socket: Any) -> None:
        """Read what waits on the output channel (MAX_DRAIN messages at most)."""
        for _ in range(MAX_DRAIN):
            if not socket.poll(0):
                return
            found = self._receive(socket)
            if found is None:
                continue
            kind, parts = found
            size = len(parts[4])
            if kind == "status" and size <= MAX_STATUS_BYTES:
                msg = self._decode(parts)
                if msg is not None and msg["content"].get("execution_state") == "idle":
                    self.idle = True
            elif kind == "display_data" and self.want_replies:
                text = self._reply_text(parts, whole=not self.replies)
                if text is not None:
                    self.replies.append("" if self.replies else text)

    def _reply_text(self, parts: list, whole: bool) -> str | None:
        """The base64 text of an agent reply (``whole``: checked and copied; else only its
        form's ends are looked at), or None for other display data; nothing is parsed."""
        content = parts[4]
        size, head, tail = len(content), len(_REPLY_HEAD), len(_REPLY_TAIL)
        view = memoryview(content)
        if size < head + tail or view[:head] != _REPLY_HEAD or view[size - tail :] != _REPLY_TAIL:
            return None
        if not whole:
            return ""
        text = content.bytes[head : size - tail]
        if b'"' in text or b"\\" in text or not self._signed(parts):
            return None
        try:
            return text.decode("ascii")
        except UnicodeDecodeError:
            return None

    def _signed(self, parts: list) -> bool:
        if self.session.auth is None:
            return True
        check = self.session.sign([part.buffer for part in parts[1:5]])
        return hmac.compare_digest(parts[0].bytes, check)

    def read_reply(self, socket: Any) -> dict | None:
        """The next shell message, decoded if it is this request's reply, else None."""
        found = self._receive(socket)
        if found is None or found[0] not in ("execute_reply", "kernel_info_reply"):
            return None
        if len(found[1][4]) > MAX_EXECUTE_REPLY_BYTES:
            return None
        return self._decode(found[1])


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
            self.context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
            self.client = BlockingKernelClient(context=self.context)
            self.client.load_connection_file(str(connection))
            if sandboxed:  # its sockets, seen from here: through the sandbox's root
                self.client.ip = f"/proc/{self.sandbox_pid}/root{sandbox.RUNTIME}/zmq"
            self.client.start_channels(stdin=False, hb=False)  # no input is ever asked for
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
        """Until the kernel answers ``kernel_info`` and its iopub messages reach the grader:
        a subscriber misses what is published before its subscription takes, and the agent's
        first reply would be lost (seen once in CI)."""
        while time.monotonic() < deadline:
            self.client.kernel_info()
            try:
                msg = self.client.get_shell_msg(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    raise KernelLost("the Python kernel died while starting") from None
                continue
            if msg["msg_type"] != "kernel_info_reply":
                continue
            try:
                self.client.get_iopub_msg(timeout=0.5)  # the request's busy/idle status
            except queue.Empty:
                continue  # published before the subscription took: ask again
            return
        raise KernelLost("the Python kernel did not start in time")

    def alive(self) -> bool:
        return not self.lost and self.process.poll() is None

    def execute(self, code: str, timeout: float, silent: bool = False) -> dict:
        """Run ``code``; the reply content, or ``{"status": "timeout"}`` after an interrupt.

        Raises:
            KernelLost: the kernel died, or did not stop within INTERRUPT_GRACE seconds
                of the interrupt (it is then killed), or the notebook's time ran out, or it
                sent more than MAX_REQUEST_BYTES.
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
        message = self.client.session.msg("execute_request", content, metadata=metadata)
        self.client.shell_channel.send(message)
        msg_id = message["header"]["msg_id"]
        inbox = Inbox(self.client.session, msg_id, replies)
        shell, iopub = self.client.shell_channel.socket, self.client.iopub_channel.socket
        deadline, interrupted = min(time.monotonic() + timeout, self.deadline), False
        try:
            while True:
                inbox.drain(iopub)
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
                if not shell.poll(int(1000 * min(0.05, remaining)) + 1):
                    if not self.alive():
                        self.shutdown()
                        raise KernelLost("the Python kernel died")
                    continue
                reply = inbox.read_reply(shell)
                if reply is not None:
                    # The idle status may come before the reply (then it was seen) or after.
                    until = min(time.monotonic() + OUTPUT_GRACE, self.deadline)
                    while not (inbox.idle or time.monotonic() > until):
                        if iopub.poll(50):
                            inbox.drain(iopub)
                    content = {"status": "timeout"} if interrupted else reply["content"]
                    return content, inbox.replies
        except Flooded as flood:
            self.shutdown()
            raise KernelLost(str(flood)) from None

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

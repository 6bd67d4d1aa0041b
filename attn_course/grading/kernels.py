"""Fresh Jupyter kernels for grading, started ahead of time (no torch needed here).

``Kernel`` runs code in a fresh python3 kernel and keeps no outputs. ``KernelPool`` starts
kernels in the background, so that their start-up (and their import of torch) overlaps
with the grader's own imports and with grading the previous notebook. Every notebook gets a
kernel of its own: nothing is shared between submissions.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["CELL_TIMEOUT", "OFFICIAL_ENV", "Kernel", "KernelLost", "KernelPool", "start_kernel"]

CELL_TIMEOUT = 60  # seconds a learner's cell may run (default of the grade command)
OFFICIAL_ENV = "ATTN_COURSE_OFFICIAL"  # set in grading kernels: check() only hands answers over
_SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding attn_course/
START_ATTEMPTS = 2  # a kernel start can fail on a loaded machine ("died before replying")
INTERRUPT_GRACE = 3.0  # seconds an interrupted kernel has to answer before it is killed


class KernelLost(BaseException):
    """The kernel died, or ran away and had to be killed.

    A BaseException, like ``agent.TimeLimit``: a check's ``except Exception`` must not turn
    it into a verdict, the runner has to see it to replace the kernel.
    """


class Kernel:
    """A fresh python3 kernel; ``execute`` runs code and returns the execute_reply content."""

    def __init__(self, preload: str = "import torch, numpy, attn_course.grading"):
        from jupyter_client.manager import KernelManager

        path = os.pathsep.join(filter(None, [str(_SOURCE_ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, OFFICIAL_ENV: "1", "PYTHONPATH": path}
        self.lost = False  # shut down: every later execute() raises KernelLost
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(extra_arguments=["--IPKernelApp.log_level=ERROR"], env=env)
        self.client = self.manager.client()
        try:
            self.client.start_channels()
            self.client.wait_for_ready(timeout=120)
            if preload:  # pays the import of torch before the learner's first cell
                self.execute(preload, timeout=120, silent=True)
        except BaseException:
            self.shutdown()
            raise

    def alive(self) -> bool:
        return not self.lost and self.manager.is_alive()

    def _drain_outputs(self) -> None:
        """Drop what the kernel printed: grading keeps no outputs."""
        channel = self.client.iopub_channel
        while channel.msg_ready():
            channel.get_msg(timeout=0)

    def execute(self, code: str, timeout: float, silent: bool = False) -> dict:
        """Run ``code``; the reply content, or ``{"status": "timeout"}`` after an interrupt.

        Raises:
            KernelLost: the kernel died, or did not stop within INTERRUPT_GRACE seconds
                of the interrupt (it is then killed).
        """
        if not self.alive():
            raise KernelLost("the Python kernel had stopped")
        msg_id = self.client.execute(
            code, silent=silent, store_history=not silent, allow_stdin=False, stop_on_error=False
        )
        deadline, interrupted = time.monotonic() + timeout, False
        while True:
            self._drain_outputs()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if interrupted:
                    self.shutdown()
                    raise KernelLost("it kept running after an interrupt and was stopped")
                self.manager.interrupt_kernel()
                deadline, interrupted = time.monotonic() + INTERRUPT_GRACE, True
                continue
            try:
                msg = self.client.get_shell_msg(timeout=min(0.2, remaining))
            except queue.Empty:
                if not self.alive():
                    raise KernelLost("the Python kernel died") from None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                return {"status": "timeout"} if interrupted else msg["content"]

    def shutdown(self) -> None:
        self.lost = True
        try:
            self.client.stop_channels()
            self.manager.shutdown_kernel(now=True)
        except Exception:  # already gone
            pass


def start_kernel() -> Kernel:
    """A fresh ``Kernel``; a failed start is tried again, up to START_ATTEMPTS in all."""
    for _ in range(START_ATTEMPTS - 1):
        try:
            return Kernel()
        except (Exception, KernelLost):  # Kernel() shut the failed one down: start another
            pass
    return Kernel()


class KernelPool:
    """Kernels started ahead of time, each used for ONE notebook (fresh per submission).

    ``warm`` kernels start in the background while others are in use, so kernel start-up
    and the import of torch overlap with grading.
    """

    def __init__(self, warm: int, needed: int):
        self._ready: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._to_start = needed
        self._starter = ThreadPoolExecutor(max(1, warm), thread_name_prefix="kernel-start")
        for _ in range(min(warm, needed)):
            self._spawn()

    def _spawn(self) -> None:
        with self._lock:
            if self._to_start <= 0:
                return
            self._to_start -= 1
        self._starter.submit(self._start_one)

    def _start_one(self) -> None:
        try:
            self._ready.put(start_kernel())
        except (Exception, KernelLost) as exc:  # reported by get()
            self._ready.put(exc)

    def get(self) -> Kernel:
        """A started kernel (waits for one); starts the next in the background."""
        self._spawn()
        kernel = self._ready.get(timeout=300)
        if isinstance(kernel, BaseException):
            raise kernel
        return kernel

    def close(self) -> None:
        self._starter.shutdown(wait=True)
        while not self._ready.empty():
            kernel = self._ready.get()
            if isinstance(kernel, Kernel):
                kernel.shutdown()

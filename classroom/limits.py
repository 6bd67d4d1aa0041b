"""Per-student memory, CPU and process limits, set by the Linux kernel through cgroups.

JupyterHub's ``LocalProcessSpawner`` hands ``mem_limit`` and ``cpu_limit`` to the server as
environment variables and enforces nothing. systemd hosts use ``jupyterhub-systemdspawner``
(what The Littlest JupyterHub does: a transient unit per user). This class server also has to
run where systemd is not PID 1 (containers, CI, this project's machines), so it writes the
cgroup itself: the hub (root) makes one cgroup per student before the spawn, and the new
server process joins it in ``preexec_fn``, before it drops root. Every process the server
starts (kernels, terminals) is born inside it, so the limit covers the student's whole
session; a stopped or culled server's leftovers are killed through it.

* cgroup v1 (a hierarchy per controller, as here): ``memory.limit_in_bytes``,
  ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, ``pids.max``, each student's cgroup nested
  in the hub's own cgroup of that controller.
* cgroup v2 (one unified hierarchy): ``memory.max``, ``cpu.max``, ``pids.max`` under
  ``attn-class/`` at the root, with the controllers enabled in ``cgroup.subtree_control``.

A kernel that passes the memory limit is killed by the kernel's OOM killer (JupyterLab says
"the kernel died" and restarts it); the server and the student's other kernels live on.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

CPU_PERIOD_US = 100_000
CONTROLLERS = ("memory", "cpu", "pids")
ACCOUNTING = "cpuacct"  # v1 only, where mounted: CPU-seconds per student (v2: cpu.stat)
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str | int) -> int:
    """``"2G"`` -> 2147483648 (JupyterHub's ByteSpecification: K, M, G, T; powers of 1024)."""
    if isinstance(text, int):
        return text
    text = text.strip().upper()
    if text[-1:] in _UNITS:
        return int(float(text[:-1]) * _UNITS[text[-1]])
    return int(text)


@dataclass(frozen=True)
class Hierarchy:
    """Where cgroups can be made: v1 (one folder per controller) or v2 (one folder)."""

    version: int
    parents: dict[str, Path]  # controller -> folder to make a student's cgroup in (v2: "")

    @classmethod
    def detect(cls, mountinfo: str | None = None, self_cgroup: str | None = None) -> Hierarchy:
        """The hierarchy of this machine, from /proc/self/mountinfo and /proc/self/cgroup."""
        mountinfo = mountinfo if mountinfo is not None else Path("/proc/self/mountinfo").read_text()
        if self_cgroup is None:
            self_cgroup = Path("/proc/self/cgroup").read_text()
        own = {}  # controller -> this process's cgroup path in its v1 hierarchy
        for line in self_cgroup.splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(","):
                if name:
                    own[name] = path
        mounts_v1: dict[str, Path] = {}
        unified: Path | None = None
        for line in mountinfo.splitlines():
            left, _, right = line.partition(" - ")
            fstype, _, options = right.split()[:3]
            mount_point = Path(left.split()[4])
            if fstype == "cgroup":
                for name in options.split(","):
                    if name in (*CONTROLLERS, ACCOUNTING):
                        mounts_v1[name] = mount_point
            elif fstype == "cgroup2" and (mount_point / "cgroup.controllers").exists():
                if set(CONTROLLERS) <= set(
                    (mount_point / "cgroup.controllers").read_text().split()
                ):
                    unified = mount_point
        if set(CONTROLLERS) <= set(mounts_v1):
            parents = {
                name: mounts_v1[name] / own.get(name, "/").lstrip("/") / "attn-class"
                for name in (*CONTROLLERS, ACCOUNTING)
                if name in mounts_v1
            }
            return cls(1, parents)
        if unified is not None:
            return cls(2, {"": unified / "attn-class"})
        raise RuntimeError(
            "no cgroup hierarchy with the memory, cpu and pids controllers is mounted: the "
            "class server cannot limit its students' servers. On a systemd host use "
            "jupyterhub-systemdspawner instead (ATTN_CLASS_LIMITS=off runs without limits)."
        )


@dataclass(frozen=True)
class Limits:
    memory: int  # bytes
    cpus: float  # cores
    pids: int = 1024


class StudentCgroup:
    """One student's cgroup(s): made with ``create``, joined by ``join`` (in the child),
    emptied and removed by ``remove``."""

    def __init__(self, hierarchy: Hierarchy, name: str) -> None:
        self.hierarchy = hierarchy
        self.folders = [parent / name for parent in hierarchy.parents.values()]

    def create(self, limits: Limits) -> None:
        quota = int(limits.cpus * CPU_PERIOD_US)
        if self.hierarchy.version == 1:
            memory, cpu, pids = self.folders[:3]
            for folder in self.folders:
                folder.mkdir(parents=True, exist_ok=True)
            _write(memory / "memory.limit_in_bytes", limits.memory)
            if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounting is on
                _write(memory / "memory.memsw.limit_in_bytes", limits.memory)
            _write(cpu / "cpu.cfs_period_us", CPU_PERIOD_US)
            _write(cpu / "cpu.cfs_quota_us", quota)
            _write(pids / "pids.max", limits.pids)
        else:
            (folder,) = self.folders
            parent = folder.parent
            parent.mkdir(exist_ok=True)
            enable = " ".join(f"+{name}" for name in CONTROLLERS)
            _write(parent.parent / "cgroup.subtree_control", enable)
            _write(parent / "cgroup.subtree_control", enable)
            folder.mkdir(exist_ok=True)
            _write(folder / "memory.max", limits.memory)
            _write(folder / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            _write(folder / "pids.max", limits.pids)

    def join(self, pid: int | None = None) -> None:
        """Move ``pid`` (default: this process) into the cgroup; its children follow."""
        for folder in self.folders:
            _write(folder / "cgroup.procs", pid or os.getpid())

    def pids(self) -> set[int]:
        """The processes in the cgroup now."""
        found: set[int] = set()
        for folder in self.folders:
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        return found

    def cpu_seconds(self) -> float | None:
        """CPU time used by everything in the cgroup so far (None: not accounted here)."""
        if self.hierarchy.version == 1:
            if len(self.folders) < 4:
                return None
            return int((self.folders[3] / "cpuacct.usage").read_text()) / 1e9
        stat = (self.folders[0] / "cpu.stat").read_text().split()
        return int(stat[stat.index("usage_usec") + 1]) / 1e6

    def memory_bytes(self) -> int:
        """Memory charged to the cgroup now (RSS and page cache of its files)."""
        if self.hierarchy.version == 1:
            return int((self.folders[0] / "memory.usage_in_bytes").read_text())
        return int((self.folders[0] / "memory.current").read_text())

    def remove(self, wait: float = 5.0) -> None:
        """Kill what is left inside (kernels of a stopped server), then remove the cgroup."""
        deadline = time.monotonic() + wait
        while (left := self.pids()) and time.monotonic() < deadline:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass


def _write(path: Path, value: object) -> None:
    with open(path, "w") as file:  # one write() per value, as cgroupfs wants
        file.write(str(value))

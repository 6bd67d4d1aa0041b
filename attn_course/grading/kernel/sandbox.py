"""The sandbox every submission's kernel runs in: Debian's bubblewrap (``bwrap``).

Why bubblewrap: it is the sandbox of Flatpak, small, audited and packaged by every Linux
distribution (one apt package, no daemon), and it gives what mature graders get from a
throw-away container per submission (otter-grader, PrairieLearn) with Linux namespaces
alone: a mount namespace holding only what we bind, new PID, network, IPC and UTS
namespaces, ``--die-with-parent`` and ``--new-session``. A kernel starts in it in well
under a second more than without it. Docker or podman would need a daemon or an image;
nsjail and firejail are less widely packaged.

What the kernel sees (``command``):

* read-only: ``/usr`` (and the ``/bin``, ``/lib`` links), the venv and the Python it was
  made from, and the course package alone (``/opt/attn-course/attn_course``, first on
  ``PYTHONPATH``), never the checkout around it (an installed copy in the venv is covered
  by an empty folder);
* in that package, the answers of the checks the kernel grades withheld, and the checks
  themselves absent (``withheld.py``);
* its own ``/proc`` (the processes of this sandbox only) and a minimal ``/dev``;
* a private home and ``/tmp``, each a tmpfs of ``SCRATCH_BYTES``;
* ``/run/kernel``, a tiny tmpfs with a read-only copy of its connection file, where it
  makes its ZeroMQ ``ipc`` sockets; the grader reaches them through
  ``/proc/PID/root/run/kernel``. No folder of the host is writable in the sandbox;
* an environment of ``ENV_ALLOWED`` only, no network (not even loopback to the host), no
  terminal (stdin/stdout/stderr are /dev/null), no capabilities.

Limits, set by the Linux kernel (``prlimit``, util-linux), not by Python code the learner
could undo: ``LIMITS`` (address space, processes, CPU seconds, file size, open files, no
core dumps); and, where the grader may make one (cgroup v1, e.g. as root), a memory cgroup
of ``MEMORY_BYTES`` for all the sandbox's processes, its tmpfs included. One share of the
CPU for the whole sandbox, whatever its process count, and a cap of ``PIDS_MAX`` tasks:
a ``cpu`` and a ``pids`` cgroup of its own where the grader can make them
(``share_cgroups``, cgroup v1 or v2). The kernel's relay (``relay.py``, the process that
holds its sockets) joins the same cgroups (``joined``), so that what it holds and spends is
charged to that sandbox.

When the grader runs as root, bwrap runs privileged (no user namespace) and the kernel is
started by ``setpriv`` as an unprivileged user id of its own (a random one above
``SANDBOX_UID_BASE``, so that concurrent graders do not share one):
root ignores the process limit, an unprivileged user does not.
Run as another user, bwrap maps that user to uid 1000 in a user namespace of its own.

Killing the bwrap process ends the sandbox: its PID namespace dies with its first
process (``--die-with-parent``), and every process in it, detached or not, with it.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "INSTALL",
    "LIMITS",
    "available",
    "can_share",
    "command",
    "environment",
    "joined",
    "kernel_uid",
    "memory_cgroup",
    "remove_cgroup",
    "share_cgroups",
]

INSTALL = "sudo apt-get install bubblewrap"  # Debian and Ubuntu
PACKAGE_DIR = Path(__file__).resolve().parents[2]  # attn_course/
COURSE_ROOT = "/opt/attn-course"  # where the package is bound in the sandbox
HOME = "/home/learner"
RUNTIME = "/run/kernel"  # the kernel's connection file and ZeroMQ ipc sockets
CONNECTION_FILE = f"{RUNTIME}/kernel.json"
RUNTIME_BYTES = 1 << 20
SCRATCH_BYTES = 256 << 20  # each of the home and /tmp tmpfs
LIMITS = {  # prlimit option -> value
    "as": 6 << 30,  # bytes of address space (torch and the kernel take about 1 GiB)
    "nproc": 256,  # processes and threads of the sandbox's user
    "cpu": 1800,  # CPU seconds of one process
    "fsize": 128 << 20,  # bytes of one file
    "nofile": 1024,  # open files
    "core": 0,  # no core dumps
}
ENV_ALLOWED = ("LANG", "LC_ALL", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TZ")
MEMORY_BYTES = 8 << 30  # all the sandbox's processes together, where a cgroup can be made
CGROUP_ROOT = Path("/sys/fs/cgroup")
CPU_SHARES = 1024  # cgroup v1: a sandbox weighs as one ordinary (nice 0) process
CPU_WEIGHT = 100  # cgroup v2: the same
PIDS_MAX = 256  # tasks (processes and threads) of one sandbox, where a pids cgroup is made
SANDBOX_UID_BASE = 100_000  # root: each kernel runs as a uid above it, at random


def _bwrap() -> str | None:
    return shutil.which("bwrap")


def kernel_uid() -> int | None:
    """The unprivileged uid for the next kernel when the grader is root, else None."""
    return SANDBOX_UID_BASE + secrets.randbelow(1 << 24) if os.geteuid() == 0 else None


def _dirs_for(*paths: str) -> list[str]:
    """``--dir`` for every ancestor of ``paths`` (bwrap would make them mode 0700)."""
    made = ("/",)
    ancestors = sorted({str(p) for path in paths for p in Path(path).parents if str(p) not in made})
    return [arg for a in ancestors for arg in ("--perms", "0755", "--dir", a)]


def scratch(path: str) -> list[str]:
    """A private tmpfs of SCRATCH_BYTES at ``path`` that anyone may write (like /tmp)."""
    return ["--perms", "1777", "--size", str(SCRATCH_BYTES), "--tmpfs", path]


def memory_cgroup() -> Path | None:
    """A new memory cgroup (v1) under the grader's own, limited to MEMORY_BYTES; None where
    the grader cannot make one (then only the per-process address-space limit holds)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "memory" in controllers.split(","):
                parent = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
                group = Path(tempfile.mkdtemp(prefix="attn-kernel-", dir=parent))
                try:
                    (group / "memory.limit_in_bytes").write_text(str(MEMORY_BYTES))
                except OSError:
                    group.rmdir()
                    raise
                return group
    except OSError:
        pass
    return None


def _grader_groups(self_cgroup: str) -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller: path}; the cgroup v2 path under ``""``."""
    found = {}
    for line in self_cgroup.splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
        if controllers:
            found[f"mount:{controllers.split(',')[0]}"] = controllers  # its hierarchy's folder
    return found


def share_cgroups(root: Path = CGROUP_ROOT, self_cgroup: str | None = None) -> tuple[Path, ...]:
    """New cgroups that give the next sandbox one share of the CPU and a process cap,
    whatever its process count; () where the grader cannot make them.

    cgroup v1 (as here: a hierarchy per controller): a ``cpu`` cgroup of ``CPU_SHARES``
    (what one ordinary process of the grader's own group weighs) and a ``pids`` cgroup of
    ``PIDS_MAX`` tasks, each made in the grader's own. cgroup v2 (one hierarchy): one cgroup
    beside the grader's with ``cpu.weight`` ``CPU_WEIGHT``, ``pids.max`` and ``memory.max``,
    where its parent delegates those controllers. Without them, see the README: a sandbox's
    processes then each weigh as one process of the machine.
    """
    try:
        text = self_cgroup if self_cgroup is not None else Path("/proc/self/cgroup").read_text()
        own = _grader_groups(text)
    except (OSError, ValueError):
        return ()
    made: list[Path] = []
    if "cpu" in own or "pids" in own:  # v1
        for name, settings in (
            ("cpu", {"cpu.shares": CPU_SHARES}),
            ("pids", {"pids.max": PIDS_MAX}),
        ):
            if name in own:
                parent = root / own[f"mount:{name}"] / own[name].lstrip("/")
                group = _make_group(parent, settings)
                if group is not None:
                    made.append(group)
    elif "" in own and (root / "cgroup.controllers").is_file():  # v2 only
        parent = (root / own[""].lstrip("/")).parent  # beside the grader's: no process in it
        settings = {"cpu.weight": CPU_WEIGHT, "pids.max": PIDS_MAX, "memory.max": MEMORY_BYTES}
        group = _make_group(parent, settings, required="cpu.weight")
        if group is not None:
            made.append(group)
    return tuple(made)


@functools.cache
def can_share() -> bool:
    """Whether ``share_cgroups`` can make a CPU share here (tried once: made and removed)."""
    groups = share_cgroups()
    for group in groups:
        remove_cgroup(group)
    return bool(groups)


def _make_group(parent: Path, settings: dict[str, int], required: str = "") -> Path | None:
    """A new cgroup in ``parent`` with ``settings`` written (all of them, or at least
    ``required`` where given); None where it cannot be made so."""
    try:
        group = Path(tempfile.mkdtemp(prefix="attn-kernel-", dir=parent))
    except OSError:
        return None
    written = set()
    for name, value in settings.items():
        try:
            (group / name).write_text(str(value))
            written.add(name)
        except OSError:
            pass
    if (required in written) if required else written == set(settings):
        return group
    remove_cgroup(group)
    return None


def remove_cgroup(group: Path | None) -> None:
    """Remove ``group`` once its processes are gone (they were killed just before)."""
    for _ in range(20):
        try:
            if group is not None:
                group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # still busy for a moment
            time.sleep(0.05)


def command(
    argv: list[str],
    uid: int | None,
    connection_fd: int,
    info_fd: int,
    cgroup: Path | None = None,
    overlays: tuple[tuple[str, str], ...] = (),
    shares: tuple[Path, ...] = (),
) -> list[str]:
    """``argv`` (the kernel's command) wrapped in prlimit and bwrap, the way this doc says.

    ``connection_fd`` is read into ``CONNECTION_FILE`` (read-only); bwrap writes the host
    PID of the sandbox's first process to ``info_fd`` (JSON), whose ``/proc/PID/root`` is
    the way in to the kernel's sockets. ``cgroup`` (memory) and ``shares``
    (``share_cgroups``): joined before anything else runs.
    ``overlays``: (file, path in the package) pairs bound over the package read-only
    (``withheld.overlays``).
    """
    venv, base = Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()
    binds = [str(p) for p in dict.fromkeys([venv, base]) if p.parts[:2] != ("/", "usr")]
    package = f"{COURSE_ROOT}/attn_course"
    namespaces = (
        ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        + ["--unshare-cgroup-try"]
        if uid is not None
        else [
            "--unshare-all",
            "--unshare-user",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--disable-userns",
        ]
    )
    links = [
        arg
        for name in ("bin", "lib", "lib64", "sbin")
        if Path(f"/{name}").is_symlink()
        for arg in ("--symlink", os.readlink(f"/{name}"), f"/{name}")
    ]
    drop = (
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
        if uid is not None
        else []
    )
    limits = [f"--{name}={value}" for name, value in LIMITS.items()]
    # the package where a bind shows it too (a non-editable install, in the venv): covered,
    # so that the sandbox's one copy is ``package``, with the overlays
    seen = any(PACKAGE_DIR.is_relative_to(path) for path in ["/usr", *binds])
    copy = str(PACKAGE_DIR)
    cover = ["--perms", "0555", "--tmpfs", copy, "--remount-ro", copy] if seen else []
    sandboxed = [
        "prlimit",
        *limits,
        "--",
        _bwrap() or "bwrap",
        *namespaces,
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--ro-bind",
        "/usr",
        "/usr",
        *links,
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *[arg for d in ("/tmp", HOME) for arg in scratch(d)],
        *_dirs_for(*binds, package),
        *[arg for path in binds for arg in ("--ro-bind", path, path)],
        *cover,
        "--ro-bind",
        str(PACKAGE_DIR),
        package,
        *[arg for file, path in overlays for arg in ("--ro-bind", file, f"{package}/{path}")],
        "--perms",
        "1777",
        "--size",
        str(RUNTIME_BYTES),
        "--tmpfs",
        RUNTIME,
        "--perms",
        "0444",
        "--ro-bind-data",
        str(connection_fd),
        CONNECTION_FILE,
        "--info-fd",
        str(info_fd),
        "--chdir",
        HOME,
        *drop,
        *argv,
    ]
    return joined((cgroup, *shares), sandboxed)


def joined(groups: Sequence[Path | None], argv: list[str]) -> list[str]:
    """``argv``, run by a shell that first puts itself in each of ``groups`` (cgroups; None
    is skipped); ``argv`` itself when there are none."""
    names = [str(g) for g in groups if g is not None]
    return ["/bin/sh", "-c", _JOIN, "sh", *names, "--", *argv] if names else list(argv)


# the shell that puts itself (then everything it execs) in each cgroup named before "--"
_JOIN = (
    'while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 1; shift; done; shift; exec "$@"'
)


def environment(extra: dict[str, str]) -> dict[str, str]:
    """The kernel's whole environment: an allow-list, nothing else of the grader's."""
    kept = {k: os.environ[k] for k in ENV_ALLOWED if k in os.environ}
    return {
        **kept,
        "PATH": "/usr/bin:/bin",
        "HOME": HOME,
        "PYTHONPATH": COURSE_ROOT,
        "MPLBACKEND": "Agg",
        **extra,
    }


@functools.cache
def available() -> str | None:
    """None when bwrap can make a sandbox here; else a sentence saying why not."""
    if _bwrap() is None:
        return f"the grading sandbox needs bubblewrap (bwrap), which is not installed: {INSTALL}"
    if shutil.which("prlimit") is None or (os.geteuid() == 0 and not shutil.which("setpriv")):
        return "the grading sandbox needs prlimit and setpriv (Debian's util-linux)"
    with open(os.devnull, "rb") as empty, open(os.devnull, "wb") as info:
        fds = (empty.fileno(), info.fileno())  # an empty connection file; `true` needs none
        trial = command(["/usr/bin/true"], kernel_uid(), *fds)
        try:
            done = subprocess.run(
                trial, capture_output=True, text=True, timeout=30, env={}, pass_fds=fds
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap could not make a sandbox here: {exc}"
    if done.returncode != 0:
        return f"bubblewrap could not make a sandbox here: {done.stderr.strip()[:300]}"
    return None

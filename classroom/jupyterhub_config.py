"""JupyterHub for a class on one Linux machine (``make class-server``; README, "Running a class").

Run as root by ``classroom/teach.py hub``, from the class venv (``make class-venv``), with the
class folder that ``teach.py setup`` made (``ATTN_CLASS_PREFIX``). What it sets up:

* PAM login with the machine's Unix users: members of ``ATTN_CLASS_GROUP`` (the students) and
  the instructor ``ATTN_CLASS_INSTRUCTOR`` (a hub admin). The README says how to swap in an
  OAuth or LTI authenticator.
* Each user's JupyterLab runs as that Unix user, from the class venv (the course's pinned
  environment), in their home, inside a cgroup with their memory, CPU and process limits
  (``limits.py``), with nbgrader's Assignments tab (``ATTN_CLASS_PREFIX/etc/jupyter``).
* Their own copy of the lectures in ``~/lectures``, refreshed at each start (``lectures.py``).
* ``jupyterhub-idle-culler`` as a hub service: a server idle for ``ATTN_CLASS_CULL`` seconds
  is stopped; the home page says so, and that saved work stays.
* configurable-http-proxy from ``classroom/node_modules`` (``make class-proxy``).
"""

# ruff: noqa: F821  (``c`` is the config object JupyterHub passes in)
from __future__ import annotations

import asyncio
import os
import pwd
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from limits import Hierarchy, Limits, StudentCgroup, parse_bytes  # noqa: E402

from attn_course.tools.lab import APP_SETTINGS, QUIET_OPTIONS  # noqa: E402

PREFIX = Path(os.environ.get("ATTN_CLASS_PREFIX", "/srv/attn-class"))
VENV = Path(sys.prefix)
GROUP = os.environ.get("ATTN_CLASS_GROUP", "attn-students")
INSTRUCTOR = os.environ.get("ATTN_CLASS_INSTRUCTOR", "")
MEMORY = os.environ.get("ATTN_CLASS_MEM", "2G")
CPUS = float(os.environ.get("ATTN_CLASS_CPUS", "1"))
CULL_S = int(os.environ.get("ATTN_CLASS_CULL", "3600"))
LIMITS_ON = os.environ.get("ATTN_CLASS_LIMITS", "on") != "off"
PROXY = os.environ.get(
    "ATTN_CLASS_PROXY", str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")
)


class ClassSpawner(LocalProcessSpawner):
    """LocalProcessSpawner + the student's cgroup + their lecture copies refreshed."""

    _cgroup: StudentCgroup | None = None

    def make_preexec_fn(self, name):
        become_user = super().make_preexec_fn(name)
        cgroup = self._cgroup

        def preexec() -> None:
            if cgroup is not None:
                cgroup.join()  # as root, before the server drops to the student's user
            become_user()

        return preexec

    async def start(self):
        if LIMITS_ON:
            self._cgroup = StudentCgroup(Hierarchy.detect(), self.user.name)
            self._cgroup.create(Limits(parse_bytes(self.mem_limit), self.cpu_limit))
        await self._refresh_lectures()
        return await super().start()

    async def stop(self, now=False):
        await super().stop(now=now)
        if self._cgroup is not None:  # kernels the server left behind die with it
            await asyncio.get_running_loop().run_in_executor(None, self._cgroup.remove)

    async def _refresh_lectures(self) -> None:
        """Run lectures.py as the student (never as root in their home: no link can trick it)."""
        user = pwd.getpwnam(self.user.name)
        process = await asyncio.create_subprocess_exec(
            str(VENV / "bin" / "python"),
            str(PREFIX / "share" / "lectures.py"),
            str(PREFIX / "share" / "lectures"),
            str(Path(user.pw_dir) / "lectures"),
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
            cwd=user.pw_dir,
            env={"HOME": user.pw_dir, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
        if output:
            self.log.info("lectures for %s: %s", self.user.name, output.decode(errors="replace"))


c.JupyterHub.bind_url = os.environ.get("ATTN_CLASS_URL", "http://:8000")
c.JupyterHub.hub_port = int(os.environ.get("ATTN_CLASS_HUB_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = os.environ.get("ATTN_CLASS_PROXY_API", "http://127.0.0.1:8001")
c.ConfigurableHTTPProxy.command = [PROXY]
c.JupyterHub.db_url = f"sqlite:///{PREFIX / 'hub' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(PREFIX / "hub" / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(PREFIX / "hub" / "jupyterhub.pid")

# Who may log in: PAM (the machine's passwords) for the students' group and the instructor.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {INSTRUCTOR} if INSTRUCTOR else set()
c.LocalAuthenticator.allowed_groups = {GROUP}
c.Authenticator.admin_users = {INSTRUCTOR} if INSTRUCTOR else set()
c.PAMAuthenticator.open_sessions = False  # no systemd-logind session per server

c.JupyterHub.spawner_class = ClassSpawner
c.Spawner.cmd = [str(VENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.args = [
    *QUIET_OPTIONS,
    f"--LabApp.app_settings_dir={APP_SETTINGS}",
    *os.environ.get("ATTN_CLASS_SINGLEUSER_ARGS", "").split(),
]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.mem_limit = MEMORY
c.Spawner.cpu_limit = CPUS
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    # nbgrader's course id and exchange, the Assignments tab only (no formgrader for students)
    "JUPYTER_CONFIG_PATH": str(PREFIX / "etc" / "jupyter"),
    "OMP_NUM_THREADS": str(max(1, int(CPUS))),  # torch's threads within the CPU quota
}

c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
            f"--timeout={CULL_S}",
            f"--cull-every={max(10, CULL_S // 6)}",
        ],
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]

# An operator's token (a script that stops servers, as the culler does): off unless set.
if os.environ.get("ATTN_CLASS_API_TOKEN"):
    c.JupyterHub.services.append(
        {"name": "class-admin", "api_token": os.environ["ATTN_CLASS_API_TOKEN"]}
    )
    c.JupyterHub.load_roles.append(
        {
            "name": "class-admin",
            "scopes": ["admin:servers", "list:users", "read:users", "list:services"],
            "services": ["class-admin"],
        }
    )

_IDLE = (
    f"A server idle for {CULL_S // 60} minutes is stopped to free the machine for others. "
    "Your files stay in your home: everything saved is there when you start again "
    "(JupyterLab saves open notebooks every 2 minutes; save before you leave)."
)
c.JupyterHub.template_vars = {"announcement_home": _IDLE, "announcement_spawn": _IDLE}

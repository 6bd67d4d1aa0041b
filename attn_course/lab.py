"""``python -m attn_course lab``: JupyterLab on the course, from the repository root.

Options: ``--port`` (0 lets the OS pick a free one), ``--token``, ``--headless`` (open no
browser); any other ``--Class.trait=value`` option is passed on to ``jupyter lab``. The
server writes its URL to ``$JUPYTER_RUNTIME_DIR/jpserver-<pid>.json`` and prints it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The course runs offline: no news feed, no update check against the internet.
QUIET_OPTIONS = (
    "--LabApp.news_url=None",
    "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
)
# JupyterLab's defaults for this course, read by every learner's server: its overrides.json
# answers "Would you like to get notified about official Jupyter news?" with no, a pop-up that
# the server options above do not prevent (it is a setting of the notification plugin). A
# learner's own settings still win over these defaults.
APP_SETTINGS = Path(__file__).resolve().parent / "lab_settings"


def build_command(
    port: int | None = None,
    token: str | None = None,
    headless: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``jupyter lab`` command line the course uses.

    Args:
        port: port on 127.0.0.1; None = Jupyter's default (8888 or the next free one),
            0 = a free port chosen by the OS.
        token: the login token; None = a random one that Jupyter prints.
        headless: do not open a browser.
        extra: further ``jupyter lab`` options, appended last.
    """
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={ROOT}",
        "--ServerApp.ip=127.0.0.1",
        "--LabApp.default_url=/lab/tree/notebooks/00_numpy_attention.ipynb",
        *QUIET_OPTIONS,
        f"--LabApp.app_settings_dir={APP_SETTINGS}",
    ]
    if port is not None:
        cmd.append(f"--ServerApp.port={port}")
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if headless:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # JupyterLab refuses to run as root without it
    cmd.extend(extra)
    return cmd


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn_course lab", description=__doc__)
    parser.add_argument("--port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--headless", action="store_true", help="do not open a browser")
    args, extra = parser.parse_known_args(argv)
    unknown = [arg for arg in extra if not arg.startswith("--") or "=" not in arg]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)} (use --Class.trait=value)")
    cmd = build_command(args.port, args.token, args.headless, extra)
    # Become the server: it keeps this PID, and Ctrl-C asks before shutting down the
    # kernels instead of killing the server under them.
    os.execv(cmd[0], cmd)  # never returns

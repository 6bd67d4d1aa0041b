"""``attn-course lab``: JupyterLab on the course, in the clone the command runs in.

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

FIRST_NOTEBOOK = Path("notebooks") / "00_numpy_attention.ipynb"

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


def course_root(start: Path | None = None) -> Path:
    """The course's folder (a clone of the repository): ``start`` (default: the current
    folder) or the nearest folder above it that holds the notebooks.

    The notebooks are not part of the installed package, so the lab opens on a clone, found
    from where the command runs, never from where the package is installed.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / FIRST_NOTEBOOK).is_file():
            return folder
    raise SystemExit(
        f"attn-course lab: no course here: neither {here} nor a folder above it holds "
        f"{FIRST_NOTEBOOK}. Run it inside your clone of the course repository (the notebooks "
        "are not part of the installed package)."
    )


def build_command(
    root: Path,
    port: int | None = None,
    token: str | None = None,
    headless: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``jupyter lab`` command line the course uses.

    Args:
        root: the course's folder (``course_root()``).
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
        f"--ServerApp.root_dir={root}",
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
    parser = argparse.ArgumentParser(prog="attn-course lab", description=__doc__)
    parser.add_argument("--port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--headless", action="store_true", help="do not open a browser")
    args, extra = parser.parse_known_args(argv)
    unknown = [arg for arg in extra if not arg.startswith("--") or "=" not in arg]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)} (use --Class.trait=value)")
    cmd = build_command(course_root(), args.port, args.token, args.headless, extra)
    # Become the server: it keeps this PID, and Ctrl-C asks before shutting down the
    # kernels instead of killing the server under them.
    os.execv(cmd[0], cmd)  # never returns

"""``python -m attn_course lab``: JupyterLab on the course, from the repository root."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build_command(
    port: int | None = None, token: str | None = None, headless: bool = False
) -> list[str]:
    """The ``jupyter lab`` command line the course uses."""
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--ServerApp.root_dir={ROOT}",
        "--ServerApp.ip=127.0.0.1",
        "--LabApp.default_url=/lab/tree/notebooks/00_numpy_attention.ipynb",
    ]
    if port is not None:
        cmd.append(f"--ServerApp.port={port}")
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if headless:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # JupyterLab refuses to run as root without it
    return cmd


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m attn_course lab", description=__doc__)
    parser.add_argument("--port", type=int)
    parser.add_argument("--token")
    parser.add_argument("--headless", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    return subprocess.call(build_command(args.port, args.token, args.headless))

"""What makes a stored result trustworthy: the course version that graded it and a signature.

* ``course_version()``: the package version plus a digest of everything that grades: every
  file of the ``attn_course`` package (references, checks, grading, data, weights), the
  name and version of every distribution installed in the environment, the ``.pth`` files
  of its site-packages and the Python version. Anything changed there means new grades.
* ``sign(data, key)`` / ``verified(data, key)``: an HMAC-SHA256 over a student file's
  canonical JSON, so that resume and ``--merge`` only trust files this grader wrote.

The key lives outside the output folder: ``--key-file PATH``, else the environment variable
``ATTN_GRADE_KEY`` (the key itself, at least 16 characters), else
``$XDG_CONFIG_HOME/attn-course/grading.key`` (``~/.config/...``); a key file is made on first
use with mode 0600. Shards merged on another machine need the same key there.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

__all__ = [
    "KEY_ENV",
    "SIGNATURE",
    "course_version",
    "default_key_file",
    "load_key",
    "sign",
    "verified",
]

KEY_ENV = "ATTN_GRADE_KEY"
SIGNATURE = "signature"
_MIN_KEY = 16
_PACKAGE_DIR = Path(__file__).resolve().parents[2]


@functools.cache
def course_version() -> str:
    """``<package version>+<digest>``: the same only for the same course and environment."""
    digest = hashlib.sha256(sys.version.encode())
    for path in sorted(p for p in _PACKAGE_DIR.rglob("*") if p.is_file()):
        if "__pycache__" not in path.parts:
            digest.update(path.relative_to(_PACKAGE_DIR).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    digest.update("\n".join(installed).encode())
    for folder in sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}):
        for pth in sorted(Path(folder).glob("*.pth")):
            digest.update(pth.name.encode() + b"\0" + pth.read_bytes())
    try:
        version = metadata.version("attn-course")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"{version}+{digest.hexdigest()[:16]}"


def default_key_file() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(config) / "attn-course" / "grading.key"


def load_key(key_file: Path | None, out: Path, create: bool = True) -> bytes:
    """The signing key (see the module docstring); ValueError with a sentence when unusable.

    ``create`` makes the key file when it is missing (grading); merging needs the key that
    signed the shards, so it does not.
    """
    if key_file is None and os.environ.get(KEY_ENV):
        key = os.environ[KEY_ENV].encode()
        if len(key) < _MIN_KEY:
            raise ValueError(f"{KEY_ENV} must hold at least {_MIN_KEY} characters")
        return key
    path = (key_file or default_key_file()).expanduser()
    if path.resolve().is_relative_to(out.resolve()):
        raise ValueError(
            f"the grading key {path} is inside the output folder {out}: keep it outside, "
            "where no submission can reach it"
        )
    if not path.exists() and create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise ValueError(
                f"could not make a grading key at {path} ({exc.strerror}): "
                f"pass --key-file or set {KEY_ENV}"
            ) from None
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        print(f"made a new grading key: {path}", file=sys.stderr)
    try:
        key = path.read_bytes().strip()
    except OSError as exc:
        raise ValueError(
            f"no grading key at {path} ({exc.strerror}): results are signed with the key of "
            f"the machine that graded them; copy that key here, pass --key-file or set {KEY_ENV}"
        ) from None
    if len(key) < _MIN_KEY:
        raise ValueError(f"the grading key {path} must hold at least {_MIN_KEY} characters")
    return key


def _mac(data: dict, key: bytes) -> str:
    body = {k: v for k, v in data.items() if k != SIGNATURE}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hmac.new(key, canonical.encode(), hashlib.sha256).hexdigest()


def sign(data: dict, key: bytes) -> dict:
    """``data`` with its signature."""
    return {**data, SIGNATURE: _mac(data, key)}


def verified(data: object, key: bytes) -> bool:
    """Whether ``data`` is a dict signed with ``key``, unchanged since."""
    return (
        isinstance(data, dict)
        and isinstance(data.get(SIGNATURE), str)
        and hmac.compare_digest(data[SIGNATURE], _mac(data, key))
    )

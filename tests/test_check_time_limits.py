"""No check spends its time limit importing torch's compiler stack.

The first use of the meta device or of a dispatch mode imports ``torch._dynamo``: about 1 s
on a quiet machine and over 15 s on a loaded one, where an honest answer then times out
(it happened to tiled_attention in CI). ``run_check`` imports it before the limit starts for
checks registered with ``imports_dynamo=True`` and for module answers. Each solution
notebook runs here in a fresh interpreter (nothing imported yet) with ``agent.time_limit``
wrapped to record which checks imported it inside their limit.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import ROOT

pytestmark = pytest.mark.slow  # one interpreter per solution notebook

RUN_NOTEBOOK = """
import contextlib, io, json, os, sys
os.environ["MPLBACKEND"] = "Agg"
from attn_course.grading import agent

limited = agent.time_limit
inside = []


@contextlib.contextmanager
def recording_limit(seconds):
    before = "torch._dynamo" in sys.modules
    with limited(seconds):
        yield
    if not before and "torch._dynamo" in sys.modules:
        inside.append(seconds)


agent.time_limit = recording_limit
cells = [c for c in json.load(open(sys.argv[1]))["cells"] if c["cell_type"] == "code"]
namespace, found = {}, []
for cell in cells:
    source = "".join(cell["source"])
    if source.startswith("%"):
        continue
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, "cell", "exec"), namespace)
    if inside:
        found.append(source.splitlines()[-1])
        inside.clear()
print(json.dumps(found))
"""


@pytest.mark.parametrize("path", sorted((ROOT / "solutions").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_check_imports_dynamo_inside_its_time_limit(path):
    result = subprocess.run(
        [sys.executable, "-c", RUN_NOTEBOOK, str(path)],
        cwd=path.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(result.stdout.splitlines()[-1])
    assert found == [], (
        f"{path.name}: these check cells import torch._dynamo inside the check's time limit "
        f"(register the check with imports_dynamo=True): {found}"
    )

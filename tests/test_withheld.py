"""The course's own code is absent from the sandbox that grades a notebook, but for what the
notebook's own cells need (``withheld``: withhold by default)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from answers import REFERENCE
from support import ROOT, grade_command, serve_in_process, write_notebook

from attn_course.grading.checking import withheld
from attn_course.grading.checking.registry import load_checks
from attn_course.grading.checking.withheld import (
    ANSWERS,
    APART,
    HANDED,
    HELPERS,
    KEPT,
    KEPT_HELPERS,
    SCAFFOLD,
    WithheldAnswer,
    allowed,
    graded_here,
    package_objects,
    sandboxes,
    stand_in_source,
)
from attn_course.grading.kernel import sandbox

CHECKS = load_checks()


def package_answers() -> dict[str, tuple[str, str]]:
    """check id -> (notebook, module.name) for each check whose answer is a package object."""
    return {c: (nb, name) for nb, answers in ANSWERS.items() for c, name in answers.items() if name}


def kernels() -> list[tuple[str, bool]]:
    """(notebook, of_apart) for every grading kernel of the course."""
    return [(nb, of_apart) for nb in sorted(SCAFFOLD) for _, of_apart in sandboxes(nb)]


def test_every_check_of_the_registry_is_in_answers():
    """Each registered check has its entry: the package object that answers it, or None."""
    listed = {c: nb for nb, answers in ANSWERS.items() for c in answers}
    assert listed == {check_id: spec.notebook for check_id, spec in CHECKS.items()}
    assert set(SCAFFOLD) == set(ANSWERS)
    assert set(HELPERS) <= set(listed) and set(KEPT_HELPERS) <= set(HELPERS)
    for name in [n for a in ANSWERS.values() for n in a.values() if n]:
        assert name in package_objects(), name
    for name in [n for names in HELPERS.values() for n in names]:
        assert name in package_objects(), name


def exercise_uses(notebook: str, folder: str = "exercises") -> set[str]:
    """The package objects (module.name) the exercise notebook's code imports or reads off
    an imported package module, ``grading`` aside (``folder="solutions"``: once solved)."""
    nb = nbformat.read(ROOT / folder / f"{notebook}.ipynb", as_version=4)
    trees = [ast.parse(c.source) for c in nb.cells if c.cell_type == "code"]
    modules, used = {}, set()
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attn_course"):
            for alias in node.names:
                if node.module == "attn_course":
                    modules[alias.asname or alias.name] = alias.name
                else:
                    used.add(f"{node.module.removeprefix('attn_course.')}.{alias.name}")
    for node in (n for tree in trees for n in ast.walk(tree)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                used.add(f"{modules[node.value.id]}.{node.attr}")
    return {name for name in used if not name.startswith("grading")}


@pytest.mark.parametrize("notebook", sorted(SCAFFOLD))
def test_the_scaffold_is_what_the_exercise_notebook_uses(notebook):
    """All the exercise's own code uses, and no more than its solved cells use too."""
    needed = exercise_uses(notebook)
    assert needed <= set(SCAFFOLD[notebook]) <= needed | exercise_uses(notebook, "solutions")


# Kernels whose kept code names one of the answers it withholds: the exercise cells that
# need it run in the notebook's other kernel, where that check is not graded.
NEEDS_WITHHELD = {
    ("05_transformer_blocks", False): {"blocks.MultiHeadCrossAttention"},
    ("08_trained_attention", False): {
        "head_scores.previous_token_score",
        "positions.sinusoidal_positions",
    },
}


@pytest.mark.parametrize(("notebook", "of_apart"), kernels())
def test_a_kernel_keeps_no_answer_or_helper_of_the_checks_it_grades(notebook, of_apart):
    kept = allowed(notebook, of_apart)
    assert kept <= set(package_objects())
    for check_id in graded_here(notebook, of_apart):
        answer = ANSWERS[notebook][check_id]
        if notebook not in KEPT:
            assert answer not in kept, (check_id, answer)
        if check_id not in KEPT_HELPERS and notebook not in KEPT:
            assert not set(HELPERS.get(check_id, ())) & kept, check_id
    # the roots' references: an answer withheld here that kept code needs is a known one
    own = {ANSWERS[notebook][c] for c in graded_here(notebook, of_apart)} - {None}
    handed = {name for c in graded_here(notebook, of_apart) for name in HANDED.get(c, ())}
    roots = frozenset(kept & (set(SCAFFOLD[notebook]) | handed) | withheld._import_time())
    needs = withheld._closure(roots - own) & own if notebook not in KEPT else set()
    assert needs == NEEDS_WITHHELD.get((notebook, of_apart), set())


def test_the_allow_list_follows_references(tmp_path, monkeypatch):
    """A kept function keeps what it calls; a module-level call keeps its callee; a name
    that is only mentioned (a command table) does not; annotations do not."""
    package = tmp_path / "attn_course"
    (package / "grading").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from .b import helper\nfrom . import b\n"
        "def kept(x: 'b.Hint') -> int:\n    return helper(x) + b.other(x)\n"
        "def withheld(x):\n    return b.answer(x)\n"
        "TABLE = {'w': withheld}\nVALUE = b.made()\n"
    )
    (package / "b.py").write_text(
        "class Hint:\n    pass\n"
        "def helper(x):\n    return x\ndef other(x):\n    return x\n"
        "def answer(x):\n    return x\ndef made():\n    return 1\n"
    )
    monkeypatch.setattr(withheld, "PACKAGE_DIR", package)
    for cached in (withheld._modules, withheld._closure, withheld._import_time):
        monkeypatch.setattr(withheld, cached.__name__, cached.__wrapped__)
    assert withheld._import_time() == {"b.made"}
    assert withheld._closure(frozenset({"a.kept"})) == {"a.kept", "b.helper", "b.other"}
    assert withheld._closure(frozenset({"a.withheld"})) == {"a.withheld", "b.answer"}


def test_every_check_answered_by_the_package_is_in_answers():
    """REFERENCE takes the package's answers from ANSWERS; its other answers are not the
    package's (else the sandbox would not withhold them)."""
    for check_id, obj in REFERENCE.items():
        module = getattr(obj, "__module__", "") or ""
        assert module.startswith("attn_course.") == (check_id in package_answers()), check_id
    for check_id, (notebook, _) in package_answers().items():
        assert CHECKS[check_id].notebook == notebook
    for notebook, apart in APART.items():
        assert set(apart) < {spec.id for spec in CHECKS.values() if spec.notebook == notebook}
    assert set(KEPT) <= set(ANSWERS)


@pytest.mark.parametrize("notebook", sorted(ANSWERS))
def test_each_check_is_graded_where_its_own_answer_is_withheld(notebook):
    withheld_from = {}
    for withholding, of_apart in sandboxes(notebook):
        assert withholding.notebook == notebook
        for check_id in ANSWERS[notebook]:
            if (check_id in APART.get(notebook, ())) == of_apart:
                withheld_from[check_id] = withholding.names
    for check_id, name in ANSWERS[notebook].items():
        if name is not None:
            assert (name in withheld_from[check_id]) == (notebook not in KEPT), check_id


@pytest.mark.parametrize("notebook", sorted(ANSWERS))
def test_each_exercise_notebook_says_what_its_grading_withholds(notebook):
    intro = nbformat.read(ROOT / "exercises" / f"{notebook}.ipynb", as_version=4).cells[0]
    _, _, sentence = intro.source.partition("When the notebook is graded")
    said = set(re.findall(r"`(\w+)`", sentence))
    names = {} if notebook in KEPT else ANSWERS[notebook]
    assert said == {name.rsplit(".", 1)[1] for name in names.values() if name}


SOURCE = '''"""A module."""
import functools
from torch import nn


@functools.cache
def table(n):
    return list(range(n))


class Layer(nn.Module, metaclass=type):
    scale = 2

    def __init__(self, width):
        super().__init__()
        self.width = width

    def forward(self, x):
        return x * self.scale


def kept(n):
    return table(n)
'''


def test_a_stand_in_raises_on_every_use_and_keeps_the_rest():
    code = stand_in_source(SOURCE, "demo", {"table", "Layer"}, "01_causal_attention")
    assert "range" not in code and "self.width" not in code and "x * self.scale" not in code
    namespace: dict = {}
    exec(compile(code, "demo.py", "exec"), namespace)
    for use in (
        lambda: namespace["table"](3),
        lambda: namespace["Layer"](4),
        lambda: type("Mine", (namespace["Layer"],), {})(4),  # a subclass
        lambda: namespace["Layer"].forward(None, 1),
        lambda: namespace["kept"](3),  # kept code that calls a withheld function
    ):
        with pytest.raises(WithheldAnswer, match="attn_course.demo.(table|Layer) is withheld"):
            use()
    assert issubclass(namespace["Layer"], __import__("torch").nn.Module)
    with pytest.raises(ValueError, match="defines no missing"):
        stand_in_source(SOURCE, "demo", {"missing"}, "01_causal_attention")


@pytest.mark.parametrize("notebook", sorted(set(ANSWERS) - set(KEPT)))
def test_every_stand_in_module_defines_the_same_names(notebook):
    for withholding, _ in sandboxes(notebook):
        pairs = {path: file for file, path in withheld.overlays(withholding)}
        for module in {dotted.rpartition(".")[0] for dotted in withholding.names}:
            relative = str(withheld._modules()[module].path)
            original = (withheld.PACKAGE_DIR / relative).read_text(encoding="utf-8")
            stand_in = Path(pairs[relative]).read_text(encoding="utf-8")
            assert _top_level_names(stand_in) == _top_level_names(original)


def _top_level_names(source: str) -> set[str]:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
    return names


def test_compiled_copies_and_the_check_library_are_covered(tmp_path, monkeypatch):
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "tiled.py").write_text(
        "def online_softmax_update():\n    pass\n"
        "def attention_tile():\n    pass\n"
        "def tiled_attention():\n    pass\n"
    )
    for name in ("tiled.cpython-311.pyc", "tiled.cpython-313.opt-1.pyc", "tiles.cpython-311.pyc"):
        (tmp_path / "__pycache__" / name).write_bytes(b"compiled reference code")
    monkeypatch.setattr(withheld, "PACKAGE_DIR", tmp_path)
    for cached in (withheld._overlays, withheld._modules, withheld.package_objects):
        monkeypatch.setattr(withheld, cached.__name__, cached.__wrapped__)
    for cached in (withheld._closure, withheld._import_time):
        monkeypatch.setattr(withheld, cached.__name__, cached.__wrapped__)
    ((withholding, _),) = sandboxes("10_tiled_attention")
    assert set(withholding.names) == {
        "tiled.online_softmax_update",
        "tiled.attention_tile",
        "tiled.tiled_attention",
    }
    pairs = {path: Path(file) for file, path in withheld.overlays(withholding)}
    assert pairs["__pycache__/tiled.cpython-311.pyc"].read_bytes() == b""
    assert pairs["__pycache__/tiled.cpython-313.opt-1.pyc"].read_bytes() == b""
    assert "__pycache__/tiles.cpython-311.pyc" not in pairs
    for hidden in withheld.HIDDEN:
        assert pairs[hidden].is_dir() != hidden.endswith(".py")
        assert not pairs[hidden].is_dir() or not any(pairs[hidden].iterdir())


# A submission that hands in the package's own objects, and a cell that looks for the
# course's code in the sandbox: its last answer is right only if it found some.
LOOK = (
    "import inspect, pathlib, attn_course.grading\n"
    "from attn_course import attention\n"
    "grading = pathlib.Path(attn_course.grading.__file__).parent\n"
    "FOUND = [\n"
    "    'triu' in inspect.getsource(attention.causal_mask),\n"
    "    any((grading / 'checking' / 'checks').glob('*.py')),\n"
    "    (grading / 'checking' / 'shared_checks.py').stat().st_size > 0,\n"
    "]"
)


def cheating_notebook(folder: Path, notebook: str) -> Path:
    cells = ["import torch\nfrom attn_course.grading import check"]
    for check_id, name in ANSWERS[notebook].items():
        if name is None:
            continue
        module, attr = name.rsplit(".", 1)
        cells.append(f"from attn_course.{module} import {attr}\ncheck({check_id!r}, {attr})")
    if notebook == "01_causal_attention":
        cells += [LOOK, 'check("causal_attention_parameters", 24 if any(FOUND) else 0)']
    return write_notebook(folder / f"{notebook}.ipynb", cells)


@pytest.mark.slow  # grades a notebook per course notebook in the sandbox
@pytest.mark.skipif(sandbox.available() is not None, reason=f"{sandbox.available()}")
def test_the_course_answers_fail_loudly_in_the_sandbox(tmp_path):
    for notebook in set(ANSWERS) - set(KEPT):
        cheating_notebook(tmp_path / "class", notebook)
    process = grade_command(tmp_path / "class", "--json", tmp_path / "report.json")
    assert process.returncode == 0, process.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    graded = 0
    for entry in report["notebooks"]:
        for result in entry["checks"]:
            if result["id"] == "causal_attention_parameters":
                assert result["status"] == "failed", "the course's code was found in the sandbox"
            elif result["status"] != "not_attempted":
                assert result["status"] == "error", result
                assert "is withheld while" in result["message"], result
                assert result["id"] in ANSWERS[entry["notebook"]]
                graded += 1
    assert graded == len([n for nb in set(ANSWERS) - set(KEPT) for n in ANSWERS[nb].values() if n])


# Run in a grading sandbox: every function, class and method the package's modules define,
# as withheld (a stand-in whose use raises WithheldAnswer, proven by using it) or kept.
ENUMERATE = """
import importlib, inspect, json, sys, types
from attn_course.grading.checking.withheld import WithheldAnswer

def stand_in(func):
    func = inspect.unwrap(func) if callable(func) else func
    return isinstance(func, types.FunctionType) and "_WithheldAnswer" in func.__code__.co_names

def raises(use):
    try:
        use()
    except WithheldAnswer:
        return True
    except Exception:
        return False
    return False

found, errors = {}, {}
for dotted in json.loads(sys.argv[1]):
    name = "attn_course" + ("." + dotted if dotted else "")
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        errors[dotted] = f"{type(exc).__name__}: {exc}"
        continue
    prefix = f"{dotted}." if dotted else ""
    for obj in vars(module).values():
        if not isinstance(obj, types.FunctionType | type) or obj.__module__ != name:
            continue
        if obj.__name__.startswith("__"):
            continue
        attr = obj.__qualname__  # an alias (main = train_main) by its definition's name
        if isinstance(obj, types.FunctionType):
            found[prefix + attr] = stand_in(obj)
            if stand_in(obj) and not raises(obj):
                errors[prefix + attr] = "a stand-in that does not raise"
        elif isinstance(obj, type):
            methods = {
                m: f for m, f in vars(obj).items()
                if isinstance(f, types.FunctionType)
                and f.__qualname__.startswith(obj.__qualname__ + ".")
            }
            withheld = stand_in(methods.get("__init__"))
            found[prefix + attr] = withheld
            if withheld and not raises(obj):
                errors[prefix + attr] = "a stand-in class that can be built"
            for m, f in methods.items():
                found[f"{prefix}{attr}.{m}"] = stand_in(f)
                if stand_in(f) and not raises(lambda: f(None)):
                    errors[f"{prefix}{attr}.{m}"] = "a stand-in method that does not raise"
print(json.dumps({"withheld": found, "errors": errors}))
"""


def enumerate_in_sandbox(withholding: withheld.Withholding) -> dict:
    modules = sorted(withheld._modules())
    with open(os.devnull, "rb") as empty, open(os.devnull, "wb") as info:
        fds = (empty.fileno(), info.fileno())
        argv = [sys.executable, "-c", ENUMERATE, json.dumps(modules)]
        overlays = withheld.overlays(withholding)
        command = sandbox.command(argv, sandbox.kernel_uid(), *fds, None, overlays)
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=300,
            env=sandbox.environment({}),
            pass_fds=fds,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # imports the whole package in a sandbox per grading kernel
@pytest.mark.skipif(sandbox.available() is not None, reason=f"{sandbox.available()}")
@pytest.mark.parametrize(("notebook", "of_apart"), kernels())
def test_every_package_callable_in_a_sandbox_is_kept_only_if_allowed(notebook, of_apart):
    """Each module of the package imports in the sandbox; each of its functions, classes
    and methods is a stand-in that raises WithheldAnswer, unless allowed for that kernel
    (a method goes with its class)."""
    (withholding,) = [w for w, apart in sandboxes(notebook) if apart == of_apart]
    seen = enumerate_in_sandbox(withholding)
    assert seen["errors"] == {}
    kept = allowed(notebook, of_apart)
    top_level = set(package_objects())
    assert top_level <= set(seen["withheld"])
    for name, is_withheld in seen["withheld"].items():
        owner = name if name in top_level else name.rpartition(".")[0]
        assert owner in top_level, name
        assert is_withheld == (owner not in kept), name


# Answers glued from course code that is not the check's own answer (issue 29): each must
# earn nothing, graded for real in the sandbox.
GLUED = {
    "03_weight_split_mha": [
        "import torch\nfrom torch import nn\nfrom attn_course.grading import check\n"
        "from attn_course.attention import MultiHeadAttentionSDPA, causal_mask",
        "class MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):\n"
        "        super().__init__()\n"
        "        self.d_in, self.d_out, self.context_length = d_in, d_out, context_length\n"
        "        self.num_heads, self.head_dim = num_heads, d_out // num_heads\n"
        "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.out_proj = nn.Linear(d_out, d_out)\n"
        "        self.dropout = nn.Dropout(dropout)\n"
        "        ones = torch.ones(context_length, context_length)\n"
        "        self.register_buffer('mask', ones.triu(1).bool())\n"
        "        self.attn_weights = None\n"
        "    forward = MultiHeadAttentionSDPA.forward",
        'check("multi_head_attention", MultiHeadAttention)',
    ],
    "01_causal_attention": [
        "import torch\nfrom torch import nn\nfrom attn_course.grading import check\n"
        "from attn_course.attention import MultiHeadAttention",
        "class CausalAttention(nn.Module):  # one head, no output projection\n"
        "    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):\n"
        "        super().__init__()\n"
        "        self.d_in, self.d_out, self.context_length = d_in, d_out, context_length\n"
        "        self.num_heads, self.head_dim = 1, d_out\n"
        "        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)\n"
        "        self.out_proj = nn.Identity()\n"
        "        self.dropout = nn.Dropout(dropout)\n"
        "        ones = torch.ones(context_length, context_length)\n"
        "        self.register_buffer('mask', ones.triu(1).bool())\n"
        "        self.attn_weights = None\n"
        "    forward = MultiHeadAttention.forward",
        'check("causal_attention", CausalAttention)',
    ],
    "11_language_model": [
        "import collections, torch\nfrom attn_course.grading import check\n"
        "from attn_course.sampling import apply_temperature, top_k_filter, top_p_filter\n"
        "from attn_course.bpe import merge_step",
        "def sampling_probabilities(logits, temperature=1.0, top_k=None, top_p=None):\n"
        "    if temperature == 0:\n"
        "        greedy = logits.argmax(dim=-1, keepdim=True)\n"
        "        return torch.zeros_like(logits).scatter_(-1, greedy, 1.0)\n"
        "    logits = apply_temperature(logits, temperature)\n"
        "    if top_k is not None:\n"
        "        logits = top_k_filter(logits, top_k)\n"
        "    if top_p is not None:\n"
        "        logits = top_p_filter(logits, top_p)\n"
        "    return torch.softmax(logits, dim=-1)",
        'check("sampling_probabilities", sampling_probabilities)',
        "def bpe_merge_step(tokens):\n"
        "    counts = collections.Counter(zip(tokens, tokens[1:]))\n"
        "    pair = max(counts, key=counts.get)\n"
        "    return pair, merge_step(tokens, pair)",
        'check("bpe_merge_step", bpe_merge_step)',
    ],
}


@pytest.mark.slow  # grades three notebooks in the sandbox
@pytest.mark.skipif(sandbox.available() is not None, reason=f"{sandbox.available()}")
def test_answers_glued_from_other_course_code_earn_nothing(tmp_path):
    for notebook, cells in GLUED.items():
        write_notebook(tmp_path / "class" / f"{notebook}.ipynb", cells)
    process = grade_command(tmp_path / "class", "--json", tmp_path / "report.json")
    assert process.returncode == 0, process.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    attempted = {
        result["id"]: result
        for entry in report["notebooks"]
        for result in entry["checks"]
        if result["status"] != "not_attempted"
    }
    glued = {"multi_head_attention", "causal_attention", "sampling_probabilities", "bpe_merge_step"}
    assert set(attempted) == glued
    for result in attempted.values():
        assert result["status"] == "error", result
        assert "is withheld while" in result["message"], result


class _InProcessKernel:
    """A grading kernel played in this process: serves a ``Session``'s requests with the
    agent, and records the package objects (module.name) that the requests' pickles name:
    what the checks hand to the kernel whole (a model, a cache, a config)."""

    dynamo_ready = True  # no torch._dynamo import to prepare: the grader's own process

    def __init__(self) -> None:
        self.named: set[str] = set()

    def request(self, code: str, timeout: float, silent: bool = True, data=None):
        import base64
        import io
        import pickle
        import types

        import torch

        named = self.named

        class Recording(pickle.Unpickler):
            def find_class(self, module: str, name: str):
                if module.startswith("attn_course.") and not module.startswith(
                    "attn_course.grading"
                ):
                    named.add(f"{module.removeprefix('attn_course.')}.{name.split('.')[0]}")
                return super().find_class(module, name)

        recording = types.ModuleType("recording")
        recording.Unpickler, recording.load = Recording, pickle.load  # type: ignore[attr-defined]
        torch.load(io.BytesIO(base64.b64decode(data)), weights_only=False, pickle_module=recording)
        return serve_in_process(data)

    def reset_peak_memory(self) -> None:
        pass

    def peak_memory(self) -> int:
        return 0


@pytest.mark.slow  # runs every check on its reference answer (about a minute)
@pytest.mark.parametrize("notebook", sorted(SCAFFOLD))
def test_what_the_checks_hand_to_a_kernel_is_kept_there(notebook):
    """Every package object that a check sends to the kernel (pickled whole: 08's
    TinyTransformer and its ModelConfig, 09's KVCache, 11's GPTModel) is kept in the kernel
    that grades it: a stand-in there would raise WithheldAnswer, or worse, unpickle
    silently and fail later (SCAFFOLD or HANDED names them)."""
    from attn_course.grading.checking.registry import checks_for
    from attn_course.grading.checking.result import Status
    from attn_course.grading.checking.verdicts import run_check
    from attn_course.grading.kernel import agent
    from attn_course.grading.kernel.context import SALT
    from attn_course.grading.kernel.remote import Session

    apart = APART.get(notebook, ())
    for spec in checks_for(notebook):
        kernel = _InProcessKernel()
        session = Session(kernel)  # type: ignore[arg-type]
        agent.ANSWERS[spec.id] = REFERENCE[spec.id]
        session.start_check(600)
        token = SALT.set(12345)
        try:
            result = run_check(spec, session.resolve(spec.id), session)
        finally:
            SALT.reset(token)
            agent.ANSWERS.pop(spec.id)
        assert result.status == Status.PASSED, (spec.id, result.message)
        kept = allowed(notebook, spec.id in apart)
        assert kernel.named <= kept, (spec.id, sorted(kernel.named - kept))

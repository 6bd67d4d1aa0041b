"""The course's own answers, withheld from the sandbox while their notebook is graded.

Many answers exist in the package: the lectures need ``CausalAttention`` or
``split_heads``, and notebook 02 builds on notebook 01's ``CausalAttention``. A learner
could hand in the package's object for the exercise that asks them to write it. In the
grading sandbox (``sandbox.py``) the package is bound read-only, and for the notebook being
graded each module holding one of its ``WITHHELD`` answers is covered by a stand-in: the
same source with each withheld ``def`` or ``class`` replaced by one whose every use raises
``WithheldAnswer``; any compiled copy of the module is covered by an empty file. The course's
code for those answers is then nowhere in the sandbox, so an answer that uses it fails
loudly, whatever it does to hide the use. The other notebooks' answers stay usable.

Outside the sandbox (``check()`` in a notebook, ``grade --no-sandbox``) nothing is withheld;
the agent flags an answer that is the course's own object (``uses_reference``) instead.
"""

from __future__ import annotations

import ast
import atexit
import functools
import shutil
import tempfile
import threading
from pathlib import Path

__all__ = ["HIDDEN", "KEPT", "WITHHELD", "WithheldAnswer", "overlays", "stand_in_source"]

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # attn_course/

# notebook id -> the package objects (module.name) that are answers to its checks, withheld
# while it is graded. ``tests/test_withheld.py`` checks each against its checks, and that
# every package object that answers a check is here or in KEPT.
WITHHELD: dict[str, tuple[str, ...]] = {
    "00_numpy_attention": (
        "numpy_attention.softmax",
        "numpy_attention.self_attention",
        "numpy_attention.multi_head_attention",
        "numpy_attention.weightless_attention",
    ),
    "01_causal_attention": (
        "attention.causal_mask",
        "attention.scaled_dot_product_attention",
        "attention.CausalAttention",
    ),
    "02_multihead_wrapper": ("attention.MultiHeadAttentionWrapper",),
    "03_weight_split_mha": ("attention.MultiHeadAttention", "attention.copy_wrapper_weights"),
    "04_stepwise_reshape": ("attention.split_heads", "attention.merge_heads"),
    "05_transformer_blocks": (
        "attention.padding_mask",
        "blocks.EncoderLayer",
        "blocks.TransformerBlock",
    ),
    "06_attention_cost": ("attention.MultiHeadAttentionSDPA",),
    "08_trained_attention": (
        "positions.sinusoidal_positions",
        "positions.apply_rope",
        "positions.rope_attention",
    ),
    "09_generation_kv_cache": (
        "attention.sliding_window_mask",
        "gqa.repeat_kv",
        "gqa.kv_cache_bytes",
        "generation.attend_cached",
    ),
    "10_tiled_attention": (
        "tiled.online_softmax_update",
        "tiled.attention_tile",
        "tiled.tiled_attention",
    ),
    "11_language_model": ("sampling.sampling_probabilities",),
}

# The checks and the check library, never needed in a grading kernel (its ``check()`` only
# hands the answer to the grader): their inputs and comparisons stay out of the sandbox.
HIDDEN = ("grading/checks", "grading/expect", "grading/shared_checks.py", "grading/hints.py")

# The package answers a notebook needs while it is graded, and why: these stay, and
# ``uses_reference`` (observed in the kernel) flags an answer that is one of them.
KEPT: dict[str, dict[str, str]] = {
    "05_transformer_blocks": {
        "blocks.FeedForward": "the TransformerBlock exercise builds on the course's",
        "blocks.LayerNorm": "the EncoderLayer and TransformerBlock exercises build on the course's",
        "blocks.MultiHeadCrossAttention": "the EncoderLayer exercise builds on the course's "
        "MultiHeadSelfAttention, which is this class",
    },
    "07_bug_zoo": {
        name: "each exercise fixes one bug in a subclass of the course's class"
        for name in (
            "attention.CausalAttention",
            "attention.MultiHeadAttention",
            "blocks.EncoderLayer",
            "blocks.MultiHeadCrossAttention",
        )
    },
    "08_trained_attention": {
        "head_scores.previous_token_score": "head_scores(), which find_induction_heads "
        "may use, computes it",
    },
}


class WithheldAnswer(RuntimeError):
    """Raised by every use of a withheld answer in the grading sandbox."""

    def __init__(self, name: str, notebook: str):
        super().__init__(
            f"the course's attn_course.{name} is withheld while {notebook} is graded "
            "(it answers one of its exercises): write your own"
        )


def _raising(name: str, args: str, qualified: str, notebook: str) -> str:
    return f"def {name}({args}):\n    raise _WithheldAnswer({qualified!r}, {notebook!r})\n"


def _stand_in(node: ast.FunctionDef | ast.ClassDef, source: str, module: str, notebook: str) -> str:
    """A definition of ``node``'s name whose every use raises WithheldAnswer."""
    qualified = f"{module}.{node.name}"
    head = "from attn_course.grading.withheld import WithheldAnswer as _WithheldAnswer\n"
    if isinstance(node, ast.FunctionDef):
        return head + _raising(node.name, "*args, **kwargs", qualified, notebook)
    bases = [ast.get_source_segment(source, b) for b in [*node.bases, *node.keywords]]
    methods = {"__init__"} | {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
    body = "".join(
        "    " + line
        for m in sorted(methods)
        for line in _raising(m, "self, *args, **kwargs", qualified, notebook).splitlines(True)
    )
    return head + f"class {node.name}({', '.join(map(str, bases))}):\n{body}"


def stand_in_source(source: str, module: str, names: set[str], notebook: str) -> str:
    """``source`` (of ``attn_course.<module>``) with the top-level definitions of ``names``
    replaced by stand-ins; ValueError if one of them is not defined there."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found = set()
    for node in reversed(tree.body):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in names:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines[first - 1 : node.end_lineno] = [_stand_in(node, source, module, notebook)]
            found.add(node.name)
    if found != names:
        raise ValueError(f"attn_course.{module} defines no {', '.join(sorted(names - found))}")
    return "".join(lines)


@functools.cache
def _folder() -> Path:
    """The grader's folder of stand-ins, with an empty file and an empty folder to cover
    what the sandbox must not show."""
    folder = Path(tempfile.mkdtemp(prefix="attn-withheld-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    folder.chmod(0o755)
    (folder / "empty").touch(mode=0o644)
    (folder / "nothing").mkdir(mode=0o755)
    return folder


_LOCK = threading.Lock()  # kernels start in threads


def overlays(notebook: str) -> tuple[tuple[str, str], ...]:
    """(file or folder here, path in the package) pairs to bind read-only over the package
    in the sandbox that grades ``notebook``: ``HIDDEN`` covered by an empty folder or file,
    the stand-ins of the modules that hold its ``WITHHELD`` answers, and an empty file over
    every compiled copy of those modules."""
    with _LOCK:
        return _overlays(notebook)


def _compiled(relative: Path) -> list[Path]:
    cache = PACKAGE_DIR / relative.parent / "__pycache__"
    return [p.relative_to(PACKAGE_DIR) for p in sorted(cache.glob(f"{relative.stem}.*.pyc"))]


@functools.cache
def _overlays(notebook: str) -> tuple[tuple[str, str], ...]:
    folder = _folder()
    by_module: dict[str, set[str]] = {}
    for dotted in WITHHELD.get(notebook, ()):
        module, name = dotted.rsplit(".", 1)
        by_module.setdefault(module, set()).add(name)
    pairs = [(str(folder / ("nothing" if "." not in h else "empty")), h) for h in HIDDEN]
    for module, names in sorted(by_module.items()):
        relative = Path(*module.split(".")).with_suffix(".py")
        source = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        stand_in = folder / notebook / f"{module}.py"
        stand_in.parent.mkdir(mode=0o755, exist_ok=True)
        stand_in.write_text(stand_in_source(source, module, names, notebook), encoding="utf-8")
        stand_in.chmod(0o644)  # read by the sandbox's own user
        pairs.append((str(stand_in), str(relative)))
    for hidden in [*HIDDEN, *(f"{m.replace('.', '/')}.py" for m in by_module)]:
        pairs += [(str(folder / "empty"), str(c)) for c in _compiled(Path(hidden))]
    return tuple(pairs)

"""The course's own answers, withheld from the sandbox that grades them.

Many answers exist in the package: the lectures need ``CausalAttention`` or
``split_heads``, and notebook 02 builds on notebook 01's ``CausalAttention``. A learner
could hand in the package's object for the exercise that asks them to write it. In the
grading sandbox (``sandbox.py``) the package is bound read-only, and each module holding an
answer of the checks that the kernel grades (``ANSWERS``) is covered by a stand-in: the
same source with each withheld ``def`` or ``class`` replaced by one whose every use raises
``WithheldAnswer``; any compiled copy of the module is covered by an empty file. The course's
code for those answers is then nowhere in that sandbox, so an answer that uses it fails
loudly, whatever it does to hide the use. The other notebooks' answers stay usable; checks
that build on the course's versions of their own notebook's other answers are graded in a
second kernel (``APART``, ``sandboxes``).

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
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ANSWERS",
    "APART",
    "HIDDEN",
    "KEPT",
    "ONLY_HIDDEN",
    "Withholding",
    "WithheldAnswer",
    "overlays",
    "sandboxes",
    "stand_in_source",
]

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # attn_course/

# notebook -> {check id: the package object (module.name) that answers it}, for the checks
# whose answer is in the package. ``tests/test_withheld.py`` holds it to the checks' answers.
ANSWERS: dict[str, dict[str, str]] = {
    "00_numpy_attention": {
        "numpy_softmax": "numpy_attention.softmax",
        "numpy_self_attention": "numpy_attention.self_attention",
        "numpy_multi_head_attention": "numpy_attention.multi_head_attention",
        "weightless_attention": "numpy_attention.weightless_attention",
    },
    "01_causal_attention": {
        "causal_mask": "attention.causal_mask",
        "scaled_dot_product_attention": "attention.scaled_dot_product_attention",
        "causal_attention": "attention.CausalAttention",
    },
    "02_multihead_wrapper": {"multi_head_wrapper": "attention.MultiHeadAttentionWrapper"},
    "03_weight_split_mha": {
        "multi_head_attention": "attention.MultiHeadAttention",
        "copy_wrapper_weights": "attention.copy_wrapper_weights",
    },
    "04_stepwise_reshape": {
        "split_heads": "attention.split_heads",
        "merge_heads": "attention.merge_heads",
    },
    "05_transformer_blocks": {
        "padding_mask": "attention.padding_mask",
        "feed_forward": "blocks.FeedForward",
        "layer_norm": "blocks.LayerNorm",
        "encoder_layer": "blocks.EncoderLayer",
        "transformer_block": "blocks.TransformerBlock",
        "cross_attention": "blocks.MultiHeadCrossAttention",
    },
    "06_attention_cost": {"sdpa_attention": "attention.MultiHeadAttentionSDPA"},
    "07_bug_zoo": {
        "bug_mask_in_place": "attention.CausalAttention",
        "bug_keys_for_values": "attention.CausalAttention",
        "bug_out_proj_width": "attention.MultiHeadAttention",
        "bug_head_scale": "attention.MultiHeadAttention",
        "bug_encoder_residual": "blocks.EncoderLayer",
        "bug_padding_mask_unsqueeze": "blocks.MultiHeadCrossAttention",
    },
    "08_trained_attention": {
        "previous_token_score": "head_scores.previous_token_score",
        "sinusoidal_positions": "positions.sinusoidal_positions",
        "apply_rope": "positions.apply_rope",
        "rope_attention": "positions.rope_attention",
        "next_token_loss": "training.next_token_loss",
        "train_step": "training.train_step",
    },
    "09_generation_kv_cache": {
        "sliding_window_mask": "attention.sliding_window_mask",
        "repeat_kv": "gqa.repeat_kv",
        "kv_cache_bytes": "gqa.kv_cache_bytes",
        "attend_cached": "generation.attend_cached",
    },
    "10_tiled_attention": {
        "online_softmax_update": "tiled.online_softmax_update",
        "attention_tile": "tiled.attention_tile",
        "tiled_attention": "tiled.tiled_attention",
    },
    "11_language_model": {"sampling_probabilities": "sampling.sampling_probabilities"},
}

# Checks that build on the course's versions of their notebook's other answers: they are
# graded in a second kernel of their own, where only their own answers are withheld.
APART: dict[str, tuple[str, ...]] = {
    # the lecture's FeedForward, LayerNorm and MultiHeadSelfAttention (= cross-attention)
    "05_transformer_blocks": ("encoder_layer", "transformer_block"),
    # head_scores() needs the course's; a train_step may use the course's next_token_loss
    "08_trained_attention": ("find_induction_heads", "train_step"),
}

# Notebooks whose answers stay in the sandbox, and why; ``uses_reference`` (observed in the
# kernel) flags an answer that is the course's own object there.
KEPT = {"07_bug_zoo": "each exercise fixes one bug in a subclass of the course's class"}

# The checks and the check library, never needed in a grading kernel (its ``check()`` only
# hands the answer to the grader): their inputs and comparisons stay out of the sandbox.
HIDDEN = ("grading/checks", "grading/expect", "grading/shared_checks.py", "grading/hints.py")


@dataclass(frozen=True)
class Withholding:
    """What one grading sandbox withholds: ``names`` (module.name), while ``notebook`` is
    graded (``HIDDEN`` is withheld from every sandbox)."""

    notebook: str = ""
    names: tuple[str, ...] = ()


ONLY_HIDDEN = Withholding()  # a sandbox that withholds no answer


def sandboxes(notebook: str) -> list[tuple[Withholding, bool]]:
    """The kernels that grade ``notebook``: (what one withholds, whether it grades the
    notebook's APART checks or the others). Each check's package answer is withheld from the
    kernel that grades it, unless the notebook is KEPT."""
    answers = {} if notebook in KEPT else ANSWERS.get(notebook, {})
    apart = APART.get(notebook, ())

    def withholding(of_apart: bool) -> Withholding:
        names = tuple(name for c, name in answers.items() if (c in apart) == of_apart)
        return Withholding(notebook, names)

    return [(withholding(False), False)] + ([(withholding(True), True)] if apart else [])


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


def overlays(withholding: Withholding) -> tuple[tuple[str, str], ...]:
    """(file or folder here, path in the package) pairs to bind read-only over the package
    in a grading sandbox: ``HIDDEN`` covered by an empty folder or file, the stand-ins of
    the modules that hold ``withholding``'s names, and an empty file over every compiled
    copy of those modules."""
    with _LOCK:
        return _overlays(withholding)


def _compiled(relative: Path) -> list[Path]:
    cache = PACKAGE_DIR / relative.parent / "__pycache__"
    return [p.relative_to(PACKAGE_DIR) for p in sorted(cache.glob(f"{relative.stem}.*.pyc"))]


@functools.cache
def _overlays(withholding: Withholding) -> tuple[tuple[str, str], ...]:
    folder = _folder()
    by_module: dict[str, set[str]] = {}
    for dotted in withholding.names:
        module, name = dotted.rsplit(".", 1)
        by_module.setdefault(module, set()).add(name)
    pairs = [(str(folder / ("nothing" if "." not in h else "empty")), h) for h in HIDDEN]
    stand_ins = Path(tempfile.mkdtemp(dir=folder)) if by_module else folder
    stand_ins.chmod(0o755)
    for module, names in sorted(by_module.items()):
        relative = Path(*module.split(".")).with_suffix(".py")
        source = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        stand_in = stand_ins / f"{module}.py"
        code = stand_in_source(source, module, names, withholding.notebook)
        stand_in.write_text(code, encoding="utf-8")
        stand_in.chmod(0o644)  # read by the sandbox's own user
        pairs.append((str(stand_in), str(relative)))
    for hidden in [*HIDDEN, *(f"{m.replace('.', '/')}.py" for m in by_module)]:
        pairs += [(str(folder / "empty"), str(c)) for c in _compiled(Path(hidden))]
    return tuple(pairs)

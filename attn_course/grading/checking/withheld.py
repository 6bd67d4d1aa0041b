"""The course's own code, withheld from the sandbox that grades a notebook: by default.

Many answers exist in the package: the lectures need ``CausalAttention`` or
``split_heads``, and notebook 02 builds on notebook 01's ``CausalAttention``. A learner
could hand in the package's object for the exercise that asks them to write it, or glue an
answer from the package's other code (03's ``MultiHeadAttention`` with the forward of
``MultiHeadAttentionSDPA``, 11's sampling from the package's top-k and top-p filters). So a
grading sandbox (``sandbox.py``) exposes only what its notebook's own code needs: the
package is bound read-only, and every module of it (``grading`` apart) is covered by a
stand-in: the same source with every top-level ``def`` or ``class`` that is not ALLOWED
replaced by one whose every use raises ``WithheldAnswer`` (a class's methods with it); any
compiled copy of the module is covered by an empty file. ALLOWED, per kernel, is the
closure of ``SCAFFOLD`` (what the exercise notebook's code uses, tested against the
exercise notebooks, and what the checks hand to the learner's code) under the references
of the allowed code itself (``allowed``: what an allowed function calls, an allowed class
builds, a module runs when imported), less the answers of the checks that kernel grades
(``ANSWERS``). The course's code for everything else is then nowhere in that sandbox, so an
answer that uses it fails loudly, whatever it does to hide the use. Checks that build on
the course's versions of their own notebook's other answers are graded in a second kernel
(``APART``, ``sandboxes``); the few checks whose kernel keeps course code that could help
answer them are ``KEPT_HELPERS`` (and the README names them).

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ALLOWED_EVERYWHERE",
    "ANSWERS",
    "APART",
    "HANDED",
    "HELPERS",
    "HIDDEN",
    "KEPT",
    "KEPT_HELPERS",
    "SCAFFOLD",
    "ONLY_HIDDEN",
    "Withholding",
    "WithheldAnswer",
    "allowed",
    "package_objects",
    "overlays",
    "sandboxes",
    "stand_in_source",
]

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # attn_course/

# notebook -> {check id: the package object (module.name) that IS its answer, or None where
# the answer is no package object (a number, a shape, a function the package lacks)}, for
# every registered check (``tests/test_withheld.py`` holds it to the registry and to the
# checks' answers). The package code that computes the other answers is in HELPERS.
ANSWERS: dict[str, dict[str, str | None]] = {
    "00_numpy_attention": {
        "numpy_softmax": "numpy_attention.softmax",
        "numpy_weights_shape": None,
        "numpy_self_attention": "numpy_attention.self_attention",
        "numpy_multi_head_attention": "numpy_attention.multi_head_attention",
        "weightless_attention": "numpy_attention.weightless_attention",
    },
    "01_causal_attention": {
        "causal_mask": "attention.causal_mask",
        "scaled_dot_product_attention": "attention.scaled_dot_product_attention",
        "causal_attention": "attention.CausalAttention",
        "causal_attention_parameters": None,
    },
    "02_multihead_wrapper": {
        "multi_head_wrapper": "attention.MultiHeadAttentionWrapper",
        "wrapper_output_shape": None,
        "wrapper_parameter_count": None,
    },
    "03_weight_split_mha": {
        "multi_head_attention": "attention.MultiHeadAttention",
        "copy_wrapper_weights": "attention.copy_wrapper_weights",
        "mha_parameter_count": None,
    },
    "04_stepwise_reshape": {
        "split_heads": "attention.split_heads",
        "merge_heads": "attention.merge_heads",
        "split_shape": None,
    },
    "05_transformer_blocks": {
        "padding_mask": "attention.padding_mask",
        "feed_forward": "blocks.FeedForward",
        "layer_norm": "blocks.LayerNorm",
        "encoder_layer": "blocks.EncoderLayer",
        "transformer_block": "blocks.TransformerBlock",
        "cross_attention": "blocks.MultiHeadCrossAttention",
        "gpt2_block_parameters": None,
    },
    "06_attention_cost": {
        "sdpa_attention": "attention.MultiHeadAttentionSDPA",
        "attn_weights_numel": None,
        "attn_memory_ratio": None,
    },
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
        "find_induction_heads": None,
        "zero_head": None,
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
    "11_language_model": {
        "sampling_probabilities": "sampling.sampling_probabilities",
        "bpe_merge_step": None,
        "per_token_loss": None,
        "perplexity": None,
        "find_previous_char_head": None,
    },
}

# check id -> package objects that compute its answer, or most of it, in a few lines of
# glue (besides its ANSWERS entry). Withheld from the kernel that grades the check, like
# the answer, unless named in KEPT_HELPERS (``tests/test_withheld.py``).
HELPERS: dict[str, tuple[str, ...]] = {
    "numpy_weights_shape": ("numpy_attention.self_attention",),
    "causal_attention_parameters": ("attention.CausalAttention",),
    "wrapper_output_shape": ("attention.MultiHeadAttentionWrapper",),
    "wrapper_parameter_count": ("attention.MultiHeadAttentionWrapper",),
    "multi_head_attention": (
        "attention.MultiHeadAttentionSDPA",
        "blocks.MultiHeadSelfAttention",
        "gqa.GroupedQueryAttention",
    ),
    "mha_parameter_count": ("attention.MultiHeadAttention",),
    "split_shape": ("attention.split_heads",),
    "gpt2_block_parameters": ("blocks.TransformerBlock", "blocks.block_parameter_counts"),
    "causal_attention": ("attention.MultiHeadAttention", "attention.MultiHeadAttentionWrapper"),
    "attn_weights_numel": ("attention.MultiHeadAttention",),
    "find_induction_heads": ("head_scores.head_scores", "head_scores.induction_score"),
    "zero_head": ("model.ablated",),
    "sampling_probabilities": (
        "sampling.apply_temperature",
        "sampling.top_k_filter",
        "sampling.top_p_filter",
        "sampling.sample_next",
    ),
    "bpe_merge_step": ("bpe.merge_step", "bpe.learn_merges", "bpe.BPETokenizer"),
    "per_token_loss": ("lm._loss", "lm.evaluate_text", "training.next_token_loss"),
    "perplexity": ("lm.evaluate_text", "lm.held_out_loss"),
    "find_previous_char_head": (
        "head_scores.previous_token_score",
        "text_heads.text_head_scores",
        "text_heads.best_heads",
    ),
}

# The package objects that a notebook's exercise code uses (``tests/test_withheld.py``
# derives them from exercises/NN.ipynb): with HANDED, the roots of what its sandboxes keep
# (``allowed``).
SCAFFOLD: dict[str, tuple[str, ...]] = {
    "00_numpy_attention": ("data.example",),
    "01_causal_attention": (),
    "02_multihead_wrapper": ("attention.CausalAttention", "data.example"),
    "03_weight_split_mha": (
        "attention.MultiHeadAttention",
        "attention.MultiHeadAttentionWrapper",
        "data.example",
    ),
    "04_stepwise_reshape": ("data.example",),
    "05_transformer_blocks": (
        "attention.MultiHeadAttention",
        "attention.merge_heads",
        "attention.scaled_dot_product_attention",
        "attention.split_heads",
        "blocks.FeedForward",
        "blocks.LayerNorm",
        "blocks.MultiHeadSelfAttention",
    ),
    "06_attention_cost": ("attention.MultiHeadAttention",),
    "07_bug_zoo": (
        "attention.CausalAttention",
        "attention.MultiHeadAttention",
        "attention.merge_heads",
        "attention.padding_mask",
        "attention.scaled_dot_product_attention",
        "attention.split_heads",
        "blocks.EncoderLayer",
        "blocks.MultiHeadCrossAttention",
        "data.example",
    ),
    "08_trained_attention": (
        "head_scores.head_scores",
        "model.ModelConfig",
        "model.TinyTransformer",
    ),
    "09_generation_kv_cache": (
        "attention.merge_heads",
        "attention.scaled_dot_product_attention",
        "attention.split_heads",
        "generation.KVCache",
    ),
    "10_tiled_attention": (),
    "11_language_model": (),
}

# Kept in every sandbox: what the grading kernel itself runs (``grading`` imports them).
ALLOWED_EVERYWHERE: tuple[str, ...] = ()

# Checks that build on the course's versions of their notebook's other answers: they are
# graded in a second kernel of their own, where only their own answers are withheld.
APART: dict[str, tuple[str, ...]] = {
    # the lecture's FeedForward, LayerNorm and MultiHeadSelfAttention (= cross-attention)
    "05_transformer_blocks": ("encoder_layer", "transformer_block"),
    # head_scores() needs the course's; a train_step may use the course's next_token_loss
    "08_trained_attention": ("find_induction_heads", "train_step"),
    # its check hands the learner's function a MultiHeadAttention to copy into
    "03_weight_split_mha": ("copy_wrapper_weights",),
    # its check hands a MultiHeadAttention and a GroupedQueryAttention (which needs repeat_kv)
    "09_generation_kv_cache": ("attend_cached",),
}

# check id -> the package objects its check hands to the learner's code in the kernel
# (pickled whole): kept in the kernel that grades it, even where one is an answer of the
# notebook (that check is then graded APART from the one whose answer it is).
HANDED: dict[str, tuple[str, ...]] = {
    "copy_wrapper_weights": ("attention.MultiHeadAttention", "attention.MultiHeadAttentionWrapper"),
    "attend_cached": (
        "attention.MultiHeadAttention",
        "gqa.GroupedQueryAttention",
        "generation.KVCache",
    ),
    "find_previous_char_head": ("generation.GPTModel",),
}

# Notebooks whose answers stay in the sandbox, and why; ``uses_reference`` (observed in the
# kernel) flags an answer that is the course's own object there.
KEPT = {"07_bug_zoo": "each exercise fixes one bug in a subclass of the course's class"}

# check id -> the HELPERS its kernel keeps, and why (the README names them).
KEPT_HELPERS: dict[str, str] = {
    "find_induction_heads": "08's exercise computes the scores with the course's head_scores",
    "attn_weights_numel": "06's exercise subclasses the course's MultiHeadAttention, whose "
    "attn_weights could be counted instead of worked out",
}

# The checks and the check library, never needed in a grading kernel (its ``check()`` only
# hands the answer to the grader): their inputs and comparisons stay out of the sandbox.
HIDDEN = (
    "grading/checking/checks",
    "grading/checking/expect",
    "grading/checking/shared_checks.py",
    "grading/checking/hints.py",
)


@dataclass(frozen=True)
class Withholding:
    """What one grading sandbox withholds: ``names`` (module.name), while ``notebook`` is
    graded (``HIDDEN`` is withheld from every sandbox)."""

    notebook: str = ""
    names: tuple[str, ...] = ()


ONLY_HIDDEN = Withholding()  # a sandbox that withholds no answer


def sandboxes(notebook: str) -> list[tuple[Withholding, bool]]:
    """The kernels that grade ``notebook``: (what one withholds, whether it grades the
    notebook's APART checks or the others). A kernel withholds every package object but
    those ``allowed`` there; a notebook the course does not know withholds only HIDDEN."""
    if notebook not in SCAFFOLD:
        return [(Withholding(notebook), False)]
    apart = APART.get(notebook, ())
    every = package_objects()

    def withholding(of_apart: bool) -> Withholding:
        kept = allowed(notebook, of_apart)
        return Withholding(notebook, tuple(sorted(set(every) - kept)))

    return [(withholding(False), False)] + ([(withholding(True), True)] if apart else [])


def graded_here(notebook: str, of_apart: bool) -> list[str]:
    """The checks of ``notebook`` that the kernel of ``of_apart`` grades."""
    apart = APART.get(notebook, ())
    return [c for c in ANSWERS.get(notebook, {}) if (c in apart) == of_apart]


def allowed(notebook: str, of_apart: bool = False) -> frozenset[str]:
    """The package objects (module.name) kept in the kernel that grades ``notebook``'s
    checks (its APART ones, or the others): SCAFFOLD and what the kernel needs to import
    the package and its grading agent, closed under the references of the code kept,
    less the answers of the checks it grades (unless the notebook is KEPT). An answer that
    the closure would need back is an error: ``tests/test_withheld.py``."""
    answers = ANSWERS.get(notebook, {})
    checks = graded_here(notebook, of_apart)
    own = set() if notebook in KEPT else {answers[c] for c in checks if answers[c]}
    other_answers = {a for c, a in answers.items() if a and c not in checks}
    handed = {name for c in checks for name in HANDED.get(c, ())}
    roots = set(SCAFFOLD.get(notebook, ())) | set(ALLOWED_EVERYWHERE) | _import_time() | handed
    if of_apart:  # the course's versions of the notebook's other answers
        roots |= other_answers
    return frozenset(_closure(frozenset(roots - own)) - own)


# ---- the package's code, read as a graph of references ----------------------------------


@dataclass(frozen=True)
class _Module:
    path: Path  # relative to the package
    tree: ast.Module
    defs: dict[str, ast.FunctionDef | ast.ClassDef]
    aliases: dict[str, tuple[str, str | None]]  # local name -> (module, name or None)


def _resolve_from(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """The package module (dotted, relative to attn_course) of ``from <level dots><name>``
    inside ``module``; None outside the package."""
    if level == 0:
        if name is None or not (name == "attn_course" or name.startswith("attn_course.")):
            return None
        return name.removeprefix("attn_course").removeprefix(".")
    parts = module.split(".") if module else []
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([*base, *([name] if name else [])])


def _statements(body: list) -> Iterator[ast.stmt]:
    """Every statement in ``body``, nested ones included (an import is a statement: no need
    to walk the expressions, most of a module's nodes)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            yield from _statements(getattr(node, field, []))


@functools.cache
def _modules() -> dict[str, _Module]:
    """Every module of the package but ``grading``, by dotted name ("" is the package)."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = path.relative_to(PACKAGE_DIR)
        if relative.parts[0] == "grading":
            continue
        is_package = relative.name == "__init__.py"
        dotted = ".".join(relative.parent.parts if is_package else relative.with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = {
            n.name: n
            for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef)
            and not (n.name.startswith("__") and n.name.endswith("__"))
        }
        aliases: dict[str, tuple[str, str | None]] = {}
        for node in _statements(tree.body):
            if isinstance(node, ast.ImportFrom):
                source = _resolve_from(dotted, is_package, node.level, node.module)
                if source is not None:
                    for a in node.names:
                        aliases[a.asname or a.name] = (source, a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    target = _resolve_from(dotted, is_package, 0, a.name)
                    if target is not None:
                        aliases[a.asname or a.name.split(".")[0]] = (
                            (target, None) if a.asname else ("", None)
                        )
        found[dotted] = _Module(relative, tree, defs, aliases)
    return found


@functools.cache
def package_objects() -> tuple[str, ...]:
    """Every top-level function and class of the package but ``grading`` (module.name)."""
    return tuple(f"{m}.{n}" if m else n for m, info in _modules().items() for n in info.defs)


def _object(module: str, name: str, depth: int = 0) -> str | None:
    """``module.name`` as a package object (following re-exports), or as a module ("m:"),
    or None."""
    modules = _modules()
    child = f"{module}.{name}" if module else name
    if child in modules:
        return f"{child}:"
    info = modules.get(module)
    if info is None or depth > 10:
        return None
    if name in info.defs:
        return child
    if name in info.aliases:
        source, attr = info.aliases[name]
        return f"{source}:" if attr is None else _object(source, attr, depth + 1)
    return None


def _local(module: str, name: str) -> str | None:
    """What ``name`` means at the top of ``module``: its own def, or an import."""
    info = _modules()[module]
    if name in info.defs:
        return f"{module}.{name}" if module else name
    if name in info.aliases:
        source, attr = info.aliases[name]
        return f"{source}:" if attr is None else _object(source, attr)
    return None


def _target(module: str, expr: ast.AST) -> str | None:
    """What a name or dotted name in ``module`` means: a package object, a package module
    ("m:"), or None."""
    chain = []
    while isinstance(expr, ast.Attribute):
        chain.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    target = _local(module, expr.id)
    for attr in reversed(chain):
        if target is None or not target.endswith(":"):
            return target  # an attribute of a package object: the object is used
        target = _object(target[:-1], attr)
    return target


def _references(module: str, node: ast.AST) -> set[str]:
    """The package objects that ``node`` (code of ``module``) names, annotations aside."""
    found: set[str] = set()

    def visit(n: ast.AST) -> None:
        if isinstance(n, ast.arg):
            return  # an argument's name and annotation
        if isinstance(n, ast.AnnAssign):
            if n.value is not None:
                visit(n.value)
            return
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in [*n.decorator_list, n.args, *n.body]:
                visit(child)
            return
        if isinstance(n, ast.Name | ast.Attribute):
            target = _target(module, n)
            if target is not None and not target.endswith(":"):
                found.add(target)
            if isinstance(n, ast.Attribute):
                visit(n.value)
            return
        for child in ast.iter_child_nodes(n):
            visit(child)

    visit(node)
    return found


def _evaluated(module: str, node: ast.AST) -> set[str]:
    """The package objects that running ``node`` (module-level code) calls or reads an
    attribute of; naming one (``COMMANDS = {"x": f}``) needs no more than its stand-in."""
    found: set[str] = set()
    for n in ast.walk(node):
        used = (
            n.func if isinstance(n, ast.Call) else n.value if isinstance(n, ast.Attribute) else None
        )
        target = None if used is None else _target(module, used)
        if target is not None and not target.endswith(":"):
            found.add(target)
    return found


def _split(dotted: str) -> tuple[str, str]:
    module, _, name = dotted.rpartition(".")
    return module, name


@functools.cache
def _closure(roots: frozenset[str]) -> frozenset[str]:
    """``roots`` and every package object the code of those names, transitively."""
    done: set[str] = set()
    todo = list(roots)
    while todo:
        dotted = todo.pop()
        if dotted in done:
            continue
        module, name = _split(dotted)
        info = _modules().get(module)
        if info is None or name not in info.defs:
            raise ValueError(f"attn_course.{dotted} is no top-level function or class")
        done.add(dotted)
        todo += _references(module, info.defs[name]) - done
    return frozenset(done)


@functools.cache
def _import_time() -> frozenset[str]:
    """The package objects that the package's modules name outside their definitions (a
    module-level call or attribute is evaluated on import): a sandbox keeps them, or the
    import would fail. (A stand-in class keeps its bases: a stand-in base is a class too.)"""
    found: set[str] = set()
    for module, info in _modules().items():
        for node in info.tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue  # a stand-in keeps a class's bases: a stand-in base is a class too
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                continue  # run as a script only
            found |= _evaluated(module, node)
    return frozenset(found)


class WithheldAnswer(RuntimeError):
    """Raised by every use of a withheld answer in the grading sandbox."""

    def __init__(self, name: str, notebook: str):
        super().__init__(
            f"the course's attn_course.{name} is withheld while {notebook} is graded "
            "(a graded notebook keeps only the course code its own cells need): write your own"
        )


def _raising(name: str, args: str, qualified: str, notebook: str) -> str:
    return f"def {name}({args}):\n    raise _WithheldAnswer({qualified!r}, {notebook!r})\n"


def _stand_in(node: ast.FunctionDef | ast.ClassDef, module: str, notebook: str) -> str:
    """A definition of ``node``'s name whose every use raises WithheldAnswer."""
    qualified = f"{module}.{node.name}"
    head = "from attn_course.grading.checking.withheld import WithheldAnswer as _WithheldAnswer\n"
    if isinstance(node, ast.FunctionDef):
        return head + _raising(node.name, "*args, **kwargs", qualified, notebook)
    bases = [ast.unparse(b) for b in [*node.bases, *node.keywords]]
    methods = {"__init__"} | {m.name for m in node.body if isinstance(m, ast.FunctionDef)}
    body = "".join(
        "    " + line
        for m in sorted(methods)
        for line in _raising(m, "self, *args, **kwargs", qualified, notebook).splitlines(True)
    )
    return head + f"class {node.name}({', '.join(map(str, bases))}):\n{body}"


@functools.lru_cache(maxsize=128)
def _top_level(source: str) -> list[ast.stmt]:
    """The top-level statements of ``source``, parsed once per source (read, never changed):
    a module's stand-ins are written for every sandbox that withholds some of its names."""
    return ast.parse(source).body


def stand_in_source(source: str, module: str, names: set[str], notebook: str) -> str:
    """``source`` (of ``attn_course.<module>``) with the top-level definitions of ``names``
    replaced by stand-ins; ValueError if one of them is not defined there."""
    lines = source.splitlines(keepends=True)
    found = set()
    for node in reversed(_top_level(source)):
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in names:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines[first - 1 : node.end_lineno] = [_stand_in(node, module, notebook)]
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
        module, name = _split(dotted)
        by_module.setdefault(module, set()).add(name)
    pairs = [(str(folder / ("nothing" if "." not in h else "empty")), h) for h in HIDDEN]
    stand_ins = Path(tempfile.mkdtemp(dir=folder)) if by_module else folder
    stand_ins.chmod(0o755)
    relatives = []
    for module, names in sorted(by_module.items()):
        relative = _modules()[module].path
        source = (PACKAGE_DIR / relative).read_text(encoding="utf-8")
        stand_in = stand_ins / f"{module or '__init__'}.py"
        code = stand_in_source(source, module, names, withholding.notebook)
        stand_in.write_text(code, encoding="utf-8")
        stand_in.chmod(0o644)  # read by the sandbox's own user
        pairs.append((str(stand_in), str(relative)))
        relatives.append(str(relative))
    for hidden in [*HIDDEN, *relatives]:
        pairs += [(str(folder / "empty"), str(c)) for c in _compiled(Path(hidden))]
    return tuple(pairs)

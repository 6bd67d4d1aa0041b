"""The exercise checks: the package's reference passes, classic mistakes fail with fitting hints."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from answers import CORRECT, NOT_IN_NUMPY_HINTS, REFERENCE, WRONG
from support import verdict
from torch.nn.functional import scaled_dot_product_attention

from attn_course import attention
from attn_course.attention import merge_heads, split_heads
from attn_course.grading.checking import checks, expect  # noqa: F401  (checks registers the checks)
from attn_course.grading.checking.registry import CHECKS
from attn_course.grading.checking.result import Status
from attn_course.grading.checking.verdicts import run_check

NOTEBOOKS = [
    "00_numpy_attention",
    "01_causal_attention",
    "02_multihead_wrapper",
    "03_weight_split_mha",
    "04_stepwise_reshape",
    "05_transformer_blocks",
    "06_attention_cost",
    "07_bug_zoo",
    "08_trained_attention",
    "09_generation_kv_cache",
    "10_tiled_attention",
    "11_language_model",
]


def test_every_check_has_a_reference_answer():
    assert set(REFERENCE) == set(CHECKS)


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_each_notebook_has_three_checks(notebook):
    specs = [spec for spec in CHECKS.values() if spec.notebook == notebook]
    assert len(specs) >= 3
    assert all(0 < spec.time_limit <= 15 for spec in specs)


def test_no_check_belongs_to_an_unknown_notebook():
    assert {spec.notebook for spec in CHECKS.values()} <= set(NOTEBOOKS)


class _WatchedLock:
    """``expect.RNG_LOCK`` (in every module that holds it) that records grader-side use of
    torch's global RNG outside it.

    The grade command checks two notebooks at once in threads of one process: a
    ``fork_rng`` or ``manual_seed`` in one thread, even one that restores the state after,
    changes the dropout masks the other thread's reference draws under the lock (this made
    CI fail a correct solution once). ``agent.py`` is exempt: it runs in the learner's kernel.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.lock, self.depth, self.misuse = expect.RNG_LOCK, 0, []
        self.state = torch.get_rng_state()
        for module, name in [(torch, "manual_seed"), (torch, "set_rng_state")]:
            monkeypatch.setattr(module, name, self._watching(getattr(module, name)))
        monkeypatch.setattr(torch.random, "set_rng_state", torch.set_rng_state)
        for module in list(sys.modules.values()):  # every module that holds the lock
            if (
                module.__name__.startswith("attn_course")
                and vars(module).get("RNG_LOCK") is self.lock
            ):
                monkeypatch.setattr(module, "RNG_LOCK", self)

    def _watching(self, func):
        def watched(*args, **kwargs):
            self._expect_held(f"torch.{func.__name__}")
            return func(*args, **kwargs)

        return watched

    def _expect_held(self, what: str) -> None:
        stack = traceback.extract_stack()[:-2]
        if self.depth == 0 and not any(f.filename.endswith("agent.py") for f in stack):
            where = next(f for f in reversed(stack) if "attn_course" in f.filename)
            self.misuse.append(f"{what} at {Path(where.filename).name}:{where.lineno}")

    def __enter__(self):
        self.lock.acquire()
        if self.depth == 0 and not torch.equal(torch.get_rng_state(), self.state):
            self.misuse.append("the global RNG moved between two uses of the lock")
        self.depth += 1

    def __exit__(self, *exc_info):
        self.depth -= 1
        if self.depth == 0:
            self.state = torch.get_rng_state()
        self.lock.release()


@pytest.mark.parametrize("check_id", sorted(REFERENCE))
def test_reference_passes(check_id, monkeypatch):
    watch = _WatchedLock(monkeypatch)
    assert verdict(check_id, REFERENCE[check_id]) == "passed"
    assert torch.equal(torch.get_rng_state(), watch.state), "the check moved the global RNG"
    assert watch.misuse == [], "grader-side code used torch's global RNG without RNG_LOCK"


@pytest.mark.parametrize("wrong", WRONG, ids=[w.name for w in WRONG])
def test_wrong_implementation_fails_with_fitting_hint(wrong):
    hint = verdict(wrong.check_id, wrong.obj)
    assert hint != "passed"
    for word in wrong.hint_words:
        assert word.lower() in hint.lower(), hint


@pytest.mark.parametrize("name, check_id, obj", CORRECT, ids=[c[0] for c in CORRECT])
def test_correct_alternative_passes(name, check_id, obj):
    assert verdict(check_id, obj) == "passed"


@pytest.mark.parametrize(
    "wrong", [w for w in WRONG if w.check_id.startswith("numpy")], ids=lambda w: w.name
)
def test_numpy_hints_use_numpy_words(wrong):
    hint = verdict(wrong.check_id, wrong.obj)
    assert not any(word in hint for word in NOT_IN_NUMPY_HINTS), hint


@pytest.mark.slow  # every check once more (test_reference_passes runs them too)
def test_every_mistake_a_check_can_diagnose_has_a_hint(monkeypatch):
    """Run every check on its reference answer, recording the mistakes it compares against."""
    import importlib

    from attn_course.grading.checking import expect, shared_checks
    from attn_course.grading.checking.checks import nb10_tiled_attention as nb10
    from attn_course.grading.checking.checks import nb11_language_model as nb11
    from attn_course.grading.checking.hints import HINTS, NUMPY_HINTS

    seen: set[str] = set()
    catalogue_texts = set(HINTS.values()) | set(NUMPY_HINTS.values())
    original = expect.expect_close

    def recording(got, want, what, mistakes=None, hints=None):
        seen.update(mistakes or {})
        # A check may pick another catalogue entry for a name, never write its own text.
        assert set((hints or {}).values()) <= catalogue_texts, hints
        return original(got, want, what, mistakes, hints)

    modules = [expect, shared_checks] + [
        importlib.import_module(f"attn_course.grading.checking.checks.nb{nb}") for nb in NOTEBOOKS
    ]
    for module in modules:
        if hasattr(module, "expect_close"):
            monkeypatch.setattr(module, "expect_close", recording)
    for check_id, answer in REFERENCE.items():
        assert verdict(check_id, answer) == "passed"
    seen.update(nb10.SOFTMAX_MISTAKES, nb11.BPE_MISTAKES)  # compared without expect_close
    assert len(seen) > 60
    assert seen <= HINTS.keys() | NUMPY_HINTS.keys(), seen - HINTS.keys() - NUMPY_HINTS.keys()


def test_parameter_mismatch_gets_the_shared_module_advice_only_when_it_fits():
    class SharedHeads(attention.MultiHeadAttentionWrapper):
        def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
            super().__init__(d_in, d_out, context_length, dropout, num_heads, qkv_bias)
            self.heads = torch.nn.ModuleList([self.heads[0]] * num_heads)

    assert "[module] * n" in verdict("multi_head_wrapper", SharedHeads)
    assert "[module] * n" not in verdict("causal_attention", _Renamed)


@pytest.mark.parametrize("wrong", WRONG[:12], ids=[w.name for w in WRONG[:12]])
def test_same_object_same_verdict(wrong):
    assert verdict(wrong.check_id, wrong.obj) == verdict(wrong.check_id, wrong.obj)


def test_reference_class_verdict_is_stable_under_other_global_seeds():
    torch.manual_seed(0)
    first = verdict("multi_head_attention", attention.MultiHeadAttention)
    torch.manual_seed(999)
    assert verdict("multi_head_attention", attention.MultiHeadAttention) == first == "passed"


def test_lecture_numbers_hard_coded_fail():
    lecture_mask = attention.causal_mask(6)
    assert "wrong shape" in verdict("causal_mask", lambda num_tokens: lecture_mask)

    def lecture_only_attention(queries, keys, values, mask=None):
        """Right for 6 tokens of width 3, a fixed uniform answer otherwise."""
        num_keys = keys.shape[-2]
        weights = torch.full((*queries.shape[:-1], num_keys), 1.0 / num_keys)
        return weights @ values, weights

    assert verdict("scaled_dot_product_attention", lecture_only_attention) != "passed"


def test_class_with_other_creation_order_passes():
    class KeyFirst(attention.CausalAttention):
        """Creates W_key before W_query: other initial weights, same computation."""

        def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
            super().__init__(d_in, d_out, context_length, dropout, qkv_bias)
            self.W_key, self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias), self.W_key

    assert verdict("causal_attention", KeyFirst) == "passed"


class _Renamed(attention.CausalAttention):
    def __init__(self, *args):
        super().__init__(*args)
        self.W_q = self.W_query
        del self.W_query

    def forward(self, x):
        self.W_query = self.W_q
        return super().forward(x)


def test_renamed_parameters_get_a_naming_hint():
    hint = verdict("causal_attention", _Renamed)
    assert "W_query" in hint and "W_q" in hint


def test_instance_instead_of_class_gets_a_hint():
    assert "class itself" in verdict("causal_attention", attention.CausalAttention(3, 2, 6, 0.0))


def test_stub_raises_not_implemented():
    def stub(num_tokens):
        raise NotImplementedError("your code here")

    result = run_check(CHECKS["causal_mask"], stub)
    assert result.status == Status.NOT_ATTEMPTED
    assert result.message == "your code still raises NotImplementedError"


@pytest.mark.parametrize(
    "fused",
    [
        lambda *a, **k: F.scaled_dot_product_attention(*a, **k),
        lambda *a, **k: torch.nn.functional.scaled_dot_product_attention(*a, **k),
        lambda *a, **k: scaled_dot_product_attention(*a, **k),
    ],
    ids=["F.", "torch.nn.functional.", "from import"],
)
def test_sdpa_check_sees_the_fused_call_however_it_was_imported(fused):
    class Fused(attention.MultiHeadAttention):
        def forward(self, x):
            projections = (self.W_query, self.W_key, self.W_value)
            heads = [split_heads(m(x), self.num_heads) for m in projections]
            p = self.dropout.p if self.training else 0.0
            return self.out_proj(merge_heads(fused(*heads, dropout_p=p, is_causal=True)))

    assert verdict("sdpa_attention", Fused) == "passed"


def test_check_modules_import_downward_only():
    """Shared checks live in grading.checking.shared_checks: no check module imports another."""
    import ast
    from pathlib import Path

    from attn_course.grading.checking import checks as package

    for path in Path(package.__file__).parent.glob("nb*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                raise AssertionError(f"{path.name} imports the check module .{node.module}")


def test_a_long_wrong_answer_is_not_echoed_whole():
    answer = "the answer is 24 " * 1000  # a wall of text, or data smuggled out in a hint
    hint = verdict("causal_attention_parameters", answer)
    assert answer[:40] in hint and answer not in hint
    assert len(hint) < 300 and "…" in hint


def test_a_list_argument_is_compared_item_by_item():
    """A list of arrays (NumPy multi-head weights) left alone passes; one whose items the
    call replaced or changed is refused: list equality of arrays is ambiguous, so the list is
    compared item by item."""
    import numpy as np

    from attn_course.grading.checking.registry import CheckFailed

    weights = [np.ones((2, 2)), np.zeros((2, 2))]
    assert expect.call_pure(lambda ws: sum(float(w.sum()) for w in ws), weights) == 4.0

    def replace_first(ws):
        ws[0] = ws[0] * 2
        return 0

    with pytest.raises(CheckFailed, match="input list in place"):
        expect.call_pure(replace_first, [np.ones((2, 2)), np.zeros((2, 2))])

    def append(ws):
        ws.append(1)
        return 0

    with pytest.raises(CheckFailed, match="input list in place"):
        expect.call_pure(append, ["a", "b"])

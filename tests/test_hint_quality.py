"""benchmarks/hint_quality.py: how it sorts verdicts and counts them.

The library itself (``WRONG`` and ``CORRECT`` of ``tests/answers.py``) is held case by case in
``tests/test_checks.py``: every wrong answer fails with a hint holding all its declared words
(so every hint names its mistake and none misleads or passes), every right one passes. Running
the benchmark over the whole library here again would only repeat those verdicts.
"""

from __future__ import annotations

import hint_quality

from attn_course.attention import causal_mask


def test_measure_counts_each_kind_and_the_right_answers_that_fail(monkeypatch):
    def inverted(n):
        return ~causal_mask(n)

    def empty(n):
        return causal_mask(n) & False

    wrong = [
        hint_quality.Case("inverted", "causal_mask", inverted, ("invert",)),
        hint_quality.Case("empty, declared as a scale", "causal_mask", empty, ("sqrt",)),
        # the "mask inverted" hint names another mistake than the declared missing scale
        hint_quality.Case("inverted, declared as a scale", "causal_mask", inverted, ("sqrt",)),
        hint_quality.Case("right, declared wrong", "causal_mask", causal_mask, ("invert",)),
    ]
    right = [
        hint_quality.Case("right", "causal_mask", causal_mask, ()),
        hint_quality.Case("wrong, declared right", "causal_mask", empty, ()),
    ]
    monkeypatch.setattr(hint_quality, "library", lambda: (wrong, right))
    result = hint_quality.measure()
    kinds = {kind: [case.name for case, _ in cases] for kind, cases in result["kinds"].items()}
    assert kinds == {
        "named": ["inverted"],
        "generic": ["empty, declared as a scale"],
        "misleading": ["inverted, declared as a scale"],
        "passed": ["right, declared wrong"],
    }
    assert [case.name for case, _ in result["failed_right"]] == ["wrong, declared right"]
    assert result["right"] == 2

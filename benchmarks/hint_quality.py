"""How often a rejected wrong answer gets a hint that names its mistake, and how often one misleads.

Runs every wrong implementation of the answer tables through its check, as ``check()`` does
in a notebook (``verdicts.run_check``): ``WRONG`` of ``tests/answers.py``. Each wrong answer
declares the words its hint must contain. A verdict is

- named: failed, and the hint holds every declared word;
- generic: a Python error, or failed with a hint that names no mistake (a largest
  difference, a wrong shape, "recompute it");
- misleading: failed with a hint that names a mistake, but not this one;
- passed: the check let the wrong answer through.

The right-implementation library (``CORRECT``) must pass. Prints the counts and the share
named among the rejected; lists every misleading, generic and passed case.

    .venv/bin/python benchmarks/hint_quality.py
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

TESTS = Path(__file__).resolve().parents[1] / "tests"

# Phrases of the hints that name no mistake.
GENERIC = (
    "wrong values (largest difference",
    "wrong shape",
    "Recompute it step by step",
    "average or spread differs",
    "keep every (layer, head) above 0.5",
    "s = ",
)


@dataclass(frozen=True)
class Case:
    name: str
    check_id: str
    obj: object
    words: tuple[str, ...]


def library() -> tuple[list[Case], list[Case]]:
    """The wrong cases and the right ones (the right ones declare no words)."""
    sys.path.insert(0, str(TESTS))
    import answers

    wrong = [Case(w.name, w.check_id, w.obj, w.hint_words) for w in answers.WRONG]
    right = [Case(name, check_id, obj, ()) for name, check_id, obj in answers.CORRECT]
    return wrong, right


def classify(case: Case) -> tuple[str, str]:
    """(kind, the learner's message) for one wrong case."""
    from attn_course.grading.checking.registry import load_checks
    from attn_course.grading.checking.result import Status
    from attn_course.grading.checking.verdicts import run_check

    result = run_check(load_checks()[case.check_id], case.obj)
    message = result.message
    if result.status == Status.PASSED:
        return "passed", message
    if result.status != Status.FAILED:  # a Python error (its line may hold any word)
        return "generic", message
    if all(word.lower() in message.lower() for word in case.words):
        return "named", message
    if any(phrase in message for phrase in GENERIC):
        return "generic", message
    return "misleading", message


def measure() -> dict:
    """Counts of the four kinds, the cases of each, and the right answers that failed."""
    from attn_course.grading.checking.registry import load_checks
    from attn_course.grading.checking.result import Status
    from attn_course.grading.checking.verdicts import run_check

    wrong, right = library()
    kinds: dict[str, list[tuple[Case, str]]] = {
        k: [] for k in ("named", "generic", "misleading", "passed")
    }
    for case in wrong:
        kind, message = classify(case)
        kinds[kind].append((case, message))
    failed_right = [
        (case, result.message)
        for case in right
        if (result := run_check(load_checks()[case.check_id], case.obj)).status != Status.PASSED
    ]
    return {"kinds": kinds, "failed_right": failed_right, "right": len(right)}


def main() -> None:
    torch.set_num_threads(1)  # as the tests and the lecture notebooks run
    result = measure()
    kinds = result["kinds"]
    counts = Counter({k: len(v) for k, v in kinds.items()})
    rejected = counts["named"] + counts["generic"] + counts["misleading"]
    share = counts["named"] / rejected if rejected else 0.0
    for kind in ("misleading", "generic", "passed"):
        for case, message in kinds[kind]:
            print(f"{kind:10s} {case.check_id} / {case.name}: {message[:300]}")
    print()
    print(f"wrong answers              {sum(counts.values())}")
    print(f"rejected                   {rejected}")
    print(f"  hint names the mistake   {counts['named']} ({share:.1%})")
    print(f"  generic hint             {counts['generic']}")
    print(f"  misleading hint          {counts['misleading']}")
    print(f"wrong answers that passed  {counts['passed']}")
    print(f"right answers that failed  {len(result['failed_right'])} of {result['right']}")
    for case, message in result["failed_right"]:
        print(f"  {case.check_id} / {case.name}: {message[:300]}")


if __name__ == "__main__":
    main()

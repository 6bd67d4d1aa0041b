"""``check()`` in-process, with test-only checks that are registered here and removed after."""

from __future__ import annotations

import html
import json
import re
import time

import pytest
import torch

from attn_course.grading import CheckFailed, CheckResult, Status, check, register
from attn_course.grading.checking import api
from attn_course.grading.checking.registry import CHECKS
from attn_course.grading.checking.result import NotebookReport
from attn_course.grading.kernel.agent import ANSWERS
from attn_course.grading.kernel.context import OFFICIAL_ENV, OUTPUT_LIMIT

NOTEBOOK = "99_test_only"


@pytest.fixture
def checks():
    """Register the test-only checks for one test; unregister them afterwards."""

    @register("t_double", NOTEBOOK, time_limit=2.0)
    def check_double(func):
        got = func(torch.tensor([1.0, -2.0]))
        if not torch.equal(got, torch.tensor([2.0, -4.0])):
            raise CheckFailed("double every entry: multiply by 2, do not add 2")
        return "doubles every entry"

    @register("t_answer", NOTEBOOK)
    def check_answer(answer):
        if answer != 42:
            raise CheckFailed("count again")

    @register("t_quick", NOTEBOOK, time_limit=0.3)
    def check_quick(func):
        func()
        return "done"

    yield
    for check_id in ("t_double", "t_answer", "t_quick"):
        CHECKS.pop(check_id, None)


def times_two(x):
    return x * 2


def plus_two(x):
    return x + 2


def unfinished(x):
    raise NotImplementedError("your code here")


def calls_unfinished(x):
    return unfinished(x) * 2


def divides_by_zero(x):
    return helper_that_fails(x)


def helper_that_fails(x):
    return 1 / 0  # the learner's faulty line


def loops_forever():
    while True:
        pass


def loops_and_swallows_errors():
    while True:
        try:
            time.sleep(0.01)
        except Exception:
            pass


def loops_with_bare_except():
    while True:
        try:
            time.sleep(0.01)
        except:  # noqa: E722  (the learner's bare except swallows BaseException too)
            pass


def exits(x):
    raise SystemExit(3)


def chatty(x):
    print("z" * 5_000_000)
    return x * 2


def test_passed(checks, capsys):
    result = check("t_double", times_two)
    assert (result.status, result.message) == ("passed", "doubles every entry")
    assert capsys.readouterr().out == "✔ t_double: passed — doubles every entry\n"


def test_failed_shows_the_hint(checks, capsys):
    result = check("t_double", plus_two)
    assert result.status == "failed"
    assert result.message == "double every entry: multiply by 2, do not add 2"
    assert capsys.readouterr().out.strip() == f"✘ t_double: failed — {result.message}"


def test_passed_without_message(checks):
    assert check("t_answer", 42) == CheckResult("t_answer", "passed", "")


def test_ellipsis_is_not_attempted(checks, capsys):
    result = check("t_answer", ...)
    assert result.status == "not_attempted"
    assert capsys.readouterr().out.startswith("… t_answer: not attempted — ")


@pytest.mark.parametrize("func", [unfinished, calls_unfinished], ids=["direct", "deep"])
def test_not_implemented_anywhere_is_not_attempted(checks, func):
    assert check("t_double", func).status == "not_attempted"


def test_not_implemented_wrapped_by_the_check_is_not_attempted(checks):
    @register("t_wraps", NOTEBOOK)
    def check_wraps(func):
        try:
            func(1)
        except NotImplementedError as exc:
            raise CheckFailed("no answer yet") from exc

    try:
        assert check("t_wraps", unfinished).status == "not_attempted"
    finally:
        CHECKS.pop("t_wraps")


def test_error_points_at_the_learners_line(checks):
    result = check("t_double", divides_by_zero)
    assert result.status == "error"
    assert result.message.startswith("ZeroDivisionError: division by zero")
    assert "in helper_that_fails" in result.message
    assert "return 1 / 0  # the learner's faulty line" in result.message
    assert "test_grading_engine.py line" in result.message
    # Nothing of the grading machinery (api.py, verdicts.py, the check function) is shown.
    assert "api.py" not in result.message and "verdicts.py" not in result.message
    assert "check_double" not in result.message


def test_error_raised_inside_the_check_names_no_learner_line(checks):
    result = check("t_double", lambda x: "not a tensor")
    assert result.status == "error"
    assert result.message.startswith("TypeError")
    assert "is it the right kind of object?" in result.message


def test_infinite_loop_times_out(checks, capsys):
    start = time.perf_counter()
    result = check("t_quick", loops_forever)
    assert time.perf_counter() - start < 5
    assert result.status == "timeout"
    assert "0.3 s" in result.message
    assert capsys.readouterr().out.startswith("⏱ t_quick: timed out — ")


def test_time_limit_cannot_be_swallowed_by_except_exception(checks):
    assert check("t_quick", loops_and_swallows_errors).status == "timeout"


def test_time_limit_cannot_be_swallowed_by_a_bare_except(checks):
    start = time.perf_counter()
    assert check("t_quick", loops_with_bare_except).status == "timeout"
    assert time.perf_counter() - start < 5


def test_system_exit_in_the_learners_code_is_an_error(checks, capsys):
    result = check("t_double", exits)
    assert result.status == "error"
    assert "SystemExit(3)" in result.message
    assert capsys.readouterr().out.startswith("⚠ t_double: error — ")


def test_time_limit_restores_the_previous_alarm_handler(checks):
    import signal

    def handler(signum, frame):
        pass

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        check("t_quick", loops_forever)
        assert signal.getsignal(signal.SIGALRM) is handler
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_without_sigalrm_checks_run_without_a_time_limit(checks, monkeypatch):
    """Windows has no SIGALRM or setitimer: check() must still grade, just without a limit."""
    import signal

    for name in ("SIGALRM", "setitimer", "getitimer", "ITIMER_REAL"):
        monkeypatch.delattr(signal, name, raising=False)
    assert check("t_double", times_two).status == "passed"
    assert check("t_quick", lambda: time.sleep(0.5)).status == "passed"  # past its 0.3 s


def test_huge_prints_are_capped(checks, capsys):
    result = check("t_double", chatty)
    assert result.status == "passed"
    out = capsys.readouterr().out
    assert out.count("z") == OUTPUT_LIMIT
    assert f"{5_000_001 - OUTPUT_LIMIT:,} more characters of output hidden" in out
    assert out.rstrip().endswith("✔ t_double: passed — doubles every entry")
    assert len(out) < OUTPUT_LIMIT + 500


def test_unknown_id_lists_the_ids_of_that_notebook(checks):
    result = check("t_dubble", times_two)
    assert result.status == "error"
    assert "unknown exercise id 't_dubble'" in result.message
    assert "did you mean 't_double'?" in result.message
    assert f"{NOTEBOOK}: t_double, t_answer, t_quick" in result.message


def test_unknown_id_without_a_close_match_lists_every_notebook(checks):
    message = check("zzzzzzzz", times_two).message
    assert f"{NOTEBOOK}: t_double, t_answer, t_quick" in message


def test_checks_are_deterministic_and_keep_the_learners_rng(checks):
    @register("t_draw", NOTEBOOK)
    def check_draw(func):
        return f"{torch.rand(1).item():.6f}"

    try:
        torch.manual_seed(1)
        expected_next = torch.rand(1)
        torch.manual_seed(1)
        first = check("t_draw", None).message
        assert torch.equal(torch.rand(1), expected_next)  # the learner's stream is untouched
        torch.manual_seed(2)
        assert check("t_draw", None).message == first
    finally:
        CHECKS.pop("t_draw")


def test_under_the_grade_command_check_only_hands_the_answer_over(checks, monkeypatch, capsys):
    monkeypatch.setenv(OFFICIAL_ENV, "1")
    try:
        assert check("t_answer", 41) is None
        assert ANSWERS["t_answer"] == 41
        assert capsys.readouterr().out == ""  # no verdict is printed or computed here
    finally:
        ANSWERS.pop("t_answer", None)


def test_statuses_are_an_enum_of_strings():
    assert [s.value for s in Status] == ["passed", "failed", "not_attempted", "error", "timeout"]
    assert CheckResult("a", "passed", "").status is Status.PASSED


def test_reports_round_trip_through_json_and_bad_verdicts_are_errors():
    report = NotebookReport(
        "x.ipynb", "01_causal_attention", [CheckResult("a", "failed", "hint", True)]
    )
    data = json.loads(json.dumps(report.to_json()))
    assert NotebookReport.from_json(data) == report
    data["checks"][0]["status"] = "forged"
    with pytest.raises(ValueError, match="unreadable verdict"):
        NotebookReport.from_json(data)
    with pytest.raises(ValueError, match="unreadable verdict"):
        CheckResult.from_json("✔ a: passed")


def test_in_a_notebook_the_verdict_is_also_html_that_wraps_between_words(checks, monkeypatch):
    """JupyterLab breaks printed lines inside identifiers ("torch.⏎triu"); HTML does not."""
    shown = []
    monkeypatch.setattr(api, "get_ipython", lambda: object())
    monkeypatch.setattr(api, "display", lambda data, raw: shown.append(data))
    result = check("t_double", lambda x: x + 1)
    (data,) = shown
    assert data["text/plain"] == result.verdict
    assert "word-break: normal" in data["text/html"]
    assert html.unescape(re.sub("<[^>]+>", "", data["text/html"])) == result.verdict


@pytest.mark.parametrize("failures, started", [(0, True), (1, True), (2, False)])
def test_kernel_pool_tries_a_failed_kernel_start_once_more(monkeypatch, failures, started):
    from attn_course.grading.kernel import kernels

    attempts = []

    class FlakyKernel:
        def __init__(self, sandboxed=True, withholding=None):
            attempts.append(1)
            if len(attempts) <= failures:
                raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(kernels, "Kernel", FlakyKernel)
    pool = kernels.KernelPool(warm=1, notebooks=["01_causal_attention"])
    ((withholding, _),) = kernels.withheld.sandboxes("01_causal_attention")
    try:
        if started:
            assert isinstance(pool.get(withholding), FlakyKernel)
        else:
            with pytest.raises(RuntimeError, match="kernel_info"):
                pool.get(withholding)
    finally:
        pool.close()
    assert len(attempts) == min(failures + 1, kernels.START_ATTEMPTS)


def test_kernel_pool_starts_each_kernel_for_the_sandbox_it_will_be(monkeypatch):
    from attn_course.grading.checking import withheld
    from attn_course.grading.kernel import kernels

    started = []

    class FakeKernel:
        def __init__(self, sandboxed=True, withholding=None):
            started.append(withholding)
            self.withholding = withholding

        def shutdown(self):
            pass

    monkeypatch.setattr(kernels, "Kernel", FakeKernel)
    pool = kernels.KernelPool(warm=1, notebooks=["05_transformer_blocks", "01_causal_attention"])
    plan = [
        w
        for nb in ("05_transformer_blocks", "01_causal_attention")
        for w, _ in withheld.sandboxes(nb)
    ]
    extra = withheld.sandboxes("02_multihead_wrapper")[0][0]  # not in the plan
    try:
        assert len(plan) == 3 and plan[0].names != plan[1].names  # notebook 05 takes two
        for withholding in [plan[1], extra, plan[0], plan[2]]:  # out of the plan's order
            assert pool.get(withholding).withholding == withholding
    finally:
        pool.close()
    assert sorted(map(repr, started)) == sorted(map(repr, [*plan, extra]))


def test_a_learner_error_reads_the_same_local_or_remote():
    from attn_course.grading.checking.expect import learner_error
    from attn_course.grading.kernel import agent
    from attn_course.grading.kernel.remote import LearnerError

    def forward():
        raise RuntimeError("The size of tensor a (4) must match the size of tensor b (6)")

    try:
        forward()
    except RuntimeError as exc:
        local, sent = learner_error(exc), agent.describe_exception(exc)  # the kernel sends it
    remote = learner_error(LearnerError(sent["ename"], sent["message"], sent["not_implemented"]))
    assert remote == local
    assert local is not None and local.startswith("RuntimeError: The size of tensor a")
    assert "(in forward, test_grading_engine.py line" in local


def test_the_grade_command_imports_no_notebook_ui_and_no_schema_machinery():
    """The grade command starts its kernels while its own imports load: nbformat's schema
    validation (jsonschema, 1-2 s) and IPython's display stack are never among them."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "import attn_course.grading.classrun.cli, attn_course.grading.classrun.roster\n"
        "import attn_course.grading.classrun.runner\n"
        "import attn_course.grading.classrun.feedback\n"
        "print(sorted(m for m in ('nbformat', 'jsonschema', 'IPython') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_a_timeout_inside_a_checks_own_except_is_still_a_timeout():
    """The grader's session raises RemoteTimeout when the kernel's time runs out; checks
    catch the learner's errors with ``except Exception`` (to name the mistake), which must
    not turn the timeout into a failure that blames the learner's code (seen under load)."""
    from attn_course.grading.checking.registry import load_checks
    from attn_course.grading.checking.verdicts import run_check
    from attn_course.grading.kernel.remote import RemoteTimeout

    def out_of_time(*args, **kwargs):
        raise RemoteTimeout

    result = run_check(load_checks()["scaled_dot_product_attention"], out_of_time)
    assert result.status == Status.TIMEOUT, result.message


def test_planned_notebook_reads_the_id_ahead_and_plans_no_kernel_for_what_none_grades(tmp_path):
    from attn_course.grading.classrun.notebooks import planned_notebook
    from attn_course.tools.protocol import METADATA_KEY, NOTEBOOK_ID

    def notebook(name: str, stamp: str | None = None):
        metadata = {METADATA_KEY: {NOTEBOOK_ID: stamp}} if stamp else {}
        path = tmp_path / name
        path.write_text(json.dumps({"nbformat": 4, "cells": [], "metadata": metadata}))
        return path

    stamped = notebook("mine.ipynb", "05_transformer_blocks")
    assert planned_notebook(stamped) == "05_transformer_blocks"
    assert planned_notebook(notebook("03_weight_split_mha (1).ipynb")) == "03_weight_split_mha"
    assert planned_notebook(notebook("mine2.ipynb", "05_x")) is None  # no course notebook
    broken = tmp_path / "01_causal_attention (2).ipynb"
    broken.write_text("[" * 100_000)  # deeper than the JSON reader goes
    assert planned_notebook(broken) is None

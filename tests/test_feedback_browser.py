"""A student's feedback page (``grade --roster ... --feedback``) as a browser renders it.

The page is built by ``feedback.feedback_page`` from a result whose every learner string
tries to inject markup, and opened from disk in Debian's Chromium (the same browser and
arguments as tests/test_browser.py): it renders its verdicts, hints and code as text, runs
no script, loads nothing, and reads at a laptop's width. The screenshot lands in
artifacts/browser/feedback.png.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import sync_playwright
from support import CHROMIUM, CHROMIUM_ARGS, ROOT, VIEWPORT

from attn_course.grading.checking.result import CheckResult, NotebookReport, Status
from attn_course.grading.classrun.feedback import feedback_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (`make chromium`)"),
]

STEM = "04_stepwise_reshape"
SCRIPT = "<script>document.title = 'hacked'; alert(1)</script>"


def test_feedback_page_renders_learner_text_as_text(tmp_path):
    exercise = json.loads((ROOT / "exercises" / f"{STEM}.ipynb").read_text(encoding="utf-8"))
    exercise["cells"][3]["source"] = f"def split_heads(x, num_heads):\n    return '{SCRIPT}'"
    copy = tmp_path / f"{STEM}.ipynb"
    copy.write_text(json.dumps(exercise), encoding="utf-8")
    results = [
        CheckResult("split_heads", Status.FAILED, f"expected (2, 3) {SCRIPT}"),
        CheckResult("merge_heads", Status.PASSED, ""),
        CheckResult("split_shape", Status.NOT_ATTEMPTED, "replace `...` with your answer"),
    ]
    report = NotebookReport(f"{STEM}<img src=x onerror=alert(2)>.ipynb", STEM, results)
    student = {
        "student": "student007",
        "entry": f"Ada {SCRIPT}",
        "score": 1,
        "max_score": 3,
        "warnings": [f"notes{SCRIPT}.ipynb is not a course exercise notebook: not graded"],
        "notebooks": [report.to_json()],
    }
    page = tmp_path / "student007.html"
    page.write_text(feedback_page(student, {report.path: copy}), encoding="utf-8")

    dialogs: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            view = browser.new_page(viewport=VIEWPORT)
            view.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            view.on("request", lambda request: requests.append(request.url))
            view.goto(page.as_uri(), wait_until="load", timeout=30_000)
            title = view.title()
            heading = view.locator("h1").inner_text()
            verdicts = view.locator(".verdict").all_inner_texts()
            code = view.locator("pre").first.inner_text()
            hint = view.locator(".hint").first.inner_text()
            width = view.evaluate("document.documentElement.scrollWidth")
            artifacts = ROOT / "artifacts" / "browser"
            artifacts.mkdir(parents=True, exist_ok=True)
            view.screenshot(path=str(artifacts / "feedback.png"), full_page=True)
        finally:
            browser.close()
    assert dialogs == [] and title == f"Feedback: Ada {SCRIPT}"
    assert requests == [page.as_uri()]  # nothing else loaded
    assert heading == f"Feedback for Ada {SCRIPT}"
    assert verdicts == [
        "✘ split_heads: failed",
        "✔ merge_heads: passed",
        "… split_shape: not attempted",
    ]
    assert f"return '{SCRIPT}'" in code and hint == f"expected (2, 3) {SCRIPT}"
    assert width <= VIEWPORT["width"]

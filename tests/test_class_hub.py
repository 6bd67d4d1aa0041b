"""A class on a real JupyterHub, end to end, in Chromium (issue 27; README, "Running a class";
`make test-class` runs it, and `.ci/run` after `make test`).

The class server of ``classroom/`` on the loopback: JupyterHub from the class venv
(``make class-venv``), configurable-http-proxy from ``classroom/node_modules``
(``make class-proxy``), PAM logins of real Unix users made here with ``useradd`` under a
test-unique prefix (3 students, 1 instructor; removed afterwards), each student's server in
its own cgroup, nbgrader's exchange in a fresh class folder. Through the hub's login page and
JupyterLab's Assignments tab each student fetches exercise 01 and submits it: one right (and
twice), one wrong (their server stopped mid-exercise as the idle culler stops it, then
started again), one blank. The instructor collects, grades with the course's grader
(interrupted once and resumed) and releases feedback with ``classroom/teach.py``; each
student fetches and opens their own page. Then, as each student's Unix user: no other
student's home, submission or feedback can be read.

Needs root (useradd, PAM, setuid spawning); skipped otherwise, saying so.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import CHROMIUM, CHROMIUM_ARGS, ROOT, VIEWPORT

sys.path.insert(0, str(ROOT / "classroom"))
from limits import Hierarchy, StudentCgroup  # noqa: E402

CLASS_VENV = Path(os.environ.get("ATTN_CLASS_VENV", "/opt/attn-class/venv"))
PROXY = ROOT / "classroom" / "node_modules" / ".bin" / "configurable-http-proxy"
TEACH = ROOT / "classroom" / "teach.py"
ASSIGNMENT = "01_causal_attention"
ARTIFACTS = ROOT / "artifacts" / "class_hub"
START_S = 120
STEP_S = 90

pytestmark = [
    pytest.mark.slow,
    pytest.mark.browser,
    pytest.mark.skipif(
        not hasattr(os, "geteuid") or os.geteuid() != 0,
        reason="the class test makes Unix users (useradd) and logs them in through PAM: "
        "it runs as root only (`make test` as root, as CI does)",
    ),
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (make chromium)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(command: list[str], user: str | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``command`` as ``user`` (runuser: a login-less switch, the user's own groups)."""
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)


def _pids_with(marks: list[str]) -> set[int]:
    """PIDs whose environment holds one of ``marks``: what the hub started outside its process
    group (configurable-http-proxy and the idle culler run in sessions of their own)."""
    found, wanted = set(), [mark.encode() for mark in marks]
    for environ in Path("/proc").glob("[0-9]*/environ"):
        with contextlib.suppress(OSError):
            if set(environ.read_bytes().split(b"\0")) & set(wanted):
                found.add(int(environ.parent.name))
    return found


def _pids_of(uids: set[int]) -> set[int]:
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        with contextlib.suppress(OSError):
            line = next(x for x in status.read_text().splitlines() if x.startswith("Uid:"))
            if int(line.split()[1]) in uids:
                found.add(int(status.parent.name))
    return found


class Class:
    """The Unix users, the class folder and the hub of one test run."""

    def __init__(self) -> None:
        tag = f"ac{secrets.token_hex(3)}"
        self.group = f"{tag}_students"
        self.teacher = f"{tag}_teach"
        self.students = [f"{tag}_s{i}" for i in (1, 2, 3)]
        self.passwords = {u: secrets.token_urlsafe(12) for u in [self.teacher, *self.students]}
        self.folder = Path(tempfile.mkdtemp(prefix=f"attn-class-{tag}-", dir="/tmp"))
        self.folder.chmod(0o755)
        self.prefix = self.folder / "class"
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        self.hub_port = _free_port()
        self.hub: subprocess.Popen | None = None
        self.uids: set[int] = set()

    def make_users(self) -> None:
        subprocess.run(["groupadd", self.group], check=True)
        for user in [self.teacher, *self.students]:
            groups = ["-G", self.group] if user in self.students else []
            subprocess.run(
                ["useradd", "-m", "-K", "HOME_MODE=0700", "-s", "/bin/bash", *groups, user],
                check=True,
            )
            subprocess.run(["chpasswd"], input=f"{user}:{self.passwords[user]}\n", text=True,
                           check=True)  # fmt: skip
            self.uids.add(pwd.getpwnam(user).pw_uid)

    def teach(self, *args: str) -> subprocess.CompletedProcess:
        return _run([str(CLASS_VENV / "bin" / "python"), str(TEACH), *args], user=self.teacher,
                    cwd="/")  # fmt: skip

    def start_hub(self) -> float:
        python = str(CLASS_VENV / "bin" / "python")
        setup = _run(
            [python, str(TEACH), "setup", "--prefix", str(self.prefix)]
            + ["--instructor", self.teacher, "--group", self.group]
        )
        assert setup.returncode == 0, setup.stderr
        env = dict(
            os.environ,
            ATTN_CLASS_PREFIX=str(self.prefix),
            ATTN_CLASS_GROUP=self.group,
            ATTN_CLASS_INSTRUCTOR=self.teacher,
            ATTN_CLASS_URL=self.url,
            ATTN_CLASS_HUB_PORT=str(self.hub_port),
            ATTN_CLASS_PROXY_API=f"http://127.0.0.1:{_free_port()}",
            ATTN_CLASS_API_TOKEN=self.token,
            ATTN_CLASS_MEM="3G",
            # the page's JupyterLab object, for editing cells through its model (as test_browser)
            ATTN_CLASS_SINGLEUSER_ARGS="--LabApp.expose_app_in_browser=True",
        )
        start = time.monotonic()
        self.log = (self.folder / "hub.log").open("wb")
        self.hub = subprocess.Popen(
            [str(CLASS_VENV / "bin" / "python"), str(TEACH), "hub", "--prefix", str(self.prefix)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        while time.monotonic() < start + START_S:
            assert self.hub.poll() is None, (self.folder / "hub.log").read_text()[-3000:]
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{self.url}/hub/api/", timeout=2) as response:
                    if response.status == 200:
                        return time.monotonic() - start
            time.sleep(0.25)
        raise TimeoutError(f"the hub did not answer in {START_S} s")

    def api(self, path: str, method: str = "GET") -> dict | None:
        request = urllib.request.Request(
            f"{self.url}/hub/api{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
        return json.loads(body) if body else None

    def close(self) -> None:
        if self.hub is not None and self.hub.poll() is None:
            os.killpg(self.hub.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.hub.wait(timeout=20)
            if self.hub.poll() is None:
                os.killpg(self.hub.pid, signal.SIGKILL)
        # the proxy (it inherits the hub's environment) and the culler (it calls the hub's API)
        marks = [
            f"ATTN_CLASS_API_TOKEN={self.token}",
            f"JUPYTERHUB_API_URL=http://127.0.0.1:{self.hub_port}/hub/api",
        ]
        for pid in _pids_with(marks):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for _ in range(3):  # the students' servers and kernels, by PID
            for pid in _pids_of(self.uids):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
        with contextlib.suppress(OSError):
            shutil.copy(self.folder / "hub.log", ARTIFACTS / "hub.log")
        for user in [self.teacher, *self.students]:
            subprocess.run(["userdel", "-r", user], capture_output=True)
        subprocess.run(["groupdel", self.group], capture_output=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        # cgroups of the students' servers, if any are left
        for parent in ("memory", "cpu", "pids", "cpuacct"):
            for folder in Path("/sys/fs/cgroup", parent).glob("**/attn-class/*"):
                if folder.name in self.students or folder.name == self.teacher:
                    with contextlib.suppress(OSError):
                        folder.rmdir()


@pytest.fixture(scope="module")
def klass() -> Iterator[Class]:
    for needed, how in ((CLASS_VENV / "bin" / "jupyterhub", "make class-venv"),
                        (PROXY, "make class-proxy")):  # fmt: skip
        if not needed.exists():
            pytest.fail(f"{needed} is missing: `{how}` installs it (make test-class does)")
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    the_class = Class()
    try:
        the_class.make_users()
        the_class.hub_start_s = the_class.start_hub()
        yield the_class
    finally:
        the_class.close()


@pytest.fixture(scope="module")
def playwright_browser():
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="attn-class-chromium-"))
    env = dict(os.environ, HOME=str(home))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, env=env
        )
        yield browser
        browser.close()
    shutil.rmtree(home, ignore_errors=True)


# --- a student in the browser -------------------------------------------------------------


def _login(browser, klass: Class, user: str):
    """A fresh browser context (its own cookies), logged in through the hub's login page,
    on the user's JupyterLab once its server is up."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(STEP_S * 1000)
    page.goto(f"{klass.url}/hub/login")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", klass.passwords[user])
    page.click("input[type=submit], button[type=submit]")
    _wait_for_lab(page)
    return context, page


def _wait_for_lab(page) -> None:
    """Until JupyterLab has started, restored its layout (a restored tab can cover one opened
    before) and taken its splash screen down (it covers the page)."""
    page.wait_for_url(re.compile(r"/user/[^/]+/lab"), timeout=START_S * 1000)
    page.wait_for_function("() => window.jupyterapp", timeout=START_S * 1000)
    page.evaluate("() => window.jupyterapp.restored.then(() => true)")
    page.wait_for_function("() => !document.querySelector('#jupyterlab-splash')")


def _assignments(page):
    """The Assignments tab (nbgrader's assignment list), opened from its menu command."""
    page.evaluate("() => window.jupyterapp.commands.execute('nbgrader:open-assignment-list')")
    panel = page.locator("#assignment-list, .nbgrader-AssignmentList, [id*=assignment]").first
    page.get_by_text("Released assignments").first.wait_for()
    return panel


def _row_button(page, section: str, label: str):
    """The ``label`` button of the assignment's row in one section of the Assignments tab."""
    section_node = page.locator(f"#{section}:visible")  # a restored tab may hide another
    row = section_node.locator(".list_item", has_text=ASSIGNMENT).first
    return row.get_by_role("button", name=label)


def _fetch(page) -> None:
    _assignments(page)
    _row_button(page, "released_assignments_list", "Fetch").click()
    page.locator(
        "#fetched_assignments_list:visible .list_item", has_text=ASSIGNMENT
    ).first.wait_for()


def _answer(page, answers: dict[str, str]) -> None:
    """Open the fetched notebook, set the answer cells (by cell id) through JupyterLab's
    model, save it."""
    path = f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    page.evaluate(
        f"() => window.jupyterapp.commands.execute('docmanager:open', {{path: '{path}'}})"
    )
    page.wait_for_function(
        """(path) => { const w = window.jupyterapp.shell.currentWidget;
                       return w && w.context && w.context.path === path && w.context.isReady; }""",
        arg=path,
    )
    page.evaluate(
        """(answers) => {
          const panel = window.jupyterapp.shell.currentWidget;
          for (const cell of panel.content.widgets) {
            const source = answers[cell.model.id];
            if (source !== undefined) { cell.model.sharedModel.setSource(source); }
          }
        }""",
        answers,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty")


def _submit(page) -> None:
    _assignments(page)
    before = page.locator("#submitted_assignments_list:visible .list_item").count()
    _row_button(page, "fetched_assignments_list", "Submit").click()
    page.wait_for_function(
        "(n) => [...document.querySelectorAll('#submitted_assignments_list .list_item')]"
        ".filter((item) => item.checkVisibility()).length > n",
        arg=before,
    )


def _solution_answers() -> dict[str, str]:
    """The solution's source for every answer cell of the exercise (same cell ids)."""
    exercise = json.loads((ROOT / "exercises" / f"{ASSIGNMENT}.ipynb").read_text())
    solution = {c["id"]: c for c in json.loads((ROOT / "solutions" / f"{ASSIGNMENT}.ipynb")
                                               .read_text())["cells"]}  # fmt: skip
    answers = {}
    for cell in exercise["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and ("NotImplementedError" in source or "= ..." in source):
            answers[cell["id"]] = "".join(solution[cell["id"]]["source"])
    return answers


WRONG_MASK = (
    "def causal_mask(num_tokens):\n"
    "    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril(diagonal=-1)\n"
)


def test_a_class_on_a_real_jupyterhub(klass: Class, playwright_browser) -> None:
    timings = {"hub start": klass.hub_start_s}
    released = klass.teach("release", "01")
    assert released.returncode == 0, released.stderr
    missing = klass.teach("release", "99")
    assert missing.returncode == 2 and "there is no exercise '99'" in missing.stderr

    right, wrong, blank = klass.students
    pages = {}
    for student in klass.students:
        start = time.monotonic()
        pages[student] = _login(playwright_browser, klass, student)
        timings[f"{student}: login to JupyterLab"] = time.monotonic() - start
        _fetch(pages[student][1])
    answers = _solution_answers()
    mask_cell = next(i for i, s in answers.items() if "def causal_mask" in s)

    _answer(pages[right][1], answers)
    _submit(pages[right][1])
    _submit(pages[right][1])  # twice: the latest counts

    # The wrong answer is saved, then the server is stopped as the idle culler stops it
    # (the same API call); the student logs in again and finds the answer where it was.
    _answer(pages[wrong][1], {mask_cell: WRONG_MASK})
    klass.api(f"/users/{wrong}/server", method="DELETE")
    for _ in range(60):
        if not klass.api(f"/users/{wrong}")["servers"]:
            break
        time.sleep(0.5)
    page = pages[wrong][1]
    page.goto(f"{klass.url}/hub/home")
    assert "is stopped to free the machine" in page.inner_text("body")
    page.goto(f"{klass.url}/hub/spawn/{wrong}")
    _wait_for_lab(page)
    notebook = Path(pwd.getpwnam(wrong).pw_dir) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert "tril(diagonal=-1)" in notebook.read_text(), "the saved answer was lost"
    _submit(page)

    _submit(pages[blank][1])  # as fetched

    collected = klass.teach("collect", "01")
    assert collected.returncode == 0, collected.stderr
    assert f"{right} submitted 2 times" in collected.stdout, collected.stdout
    assert f"{blank} submitted the released notebook unchanged" in collected.stdout

    # Grading interrupted once the first student's results are written, then resumed.
    course = Path(pwd.getpwnam(klass.teacher).pw_dir) / "course"
    results = course / "grades" / ASSIGNMENT / "students"
    grading = subprocess.Popen(
        ["runuser", "-u", klass.teacher, "--", str(CLASS_VENV / "bin" / "python"), str(TEACH),
         "grade", "01"], cwd="/", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    start = time.monotonic()
    while grading.poll() is None and not (results.is_dir() and any(results.glob("*.json"))):
        assert time.monotonic() - start < 300, "no student graded in 300 s"
        time.sleep(0.2)
    interrupted = grading.poll() is None
    if interrupted:
        os.killpg(grading.pid, signal.SIGINT)
        grading.wait(timeout=60)
    resumed = klass.teach("grade", "01")
    timings["grading (after the interruption)"] = time.monotonic() - start
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    timings["grading interrupted and resumed (1 = yes)"] = float(interrupted)
    if interrupted:
        assert "already graded" in resumed.stderr, resumed.stderr

    status = klass.teach("status")
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line for line in status.stdout.splitlines()[3:] if line.strip()}
    assert "4/4" in rows[right] and "0/4" in rows[wrong] and "0/4" in rows[blank], status.stdout
    assert "graded [" in status.stdout and "3/3" in status.stdout, status.stdout
    (ARTIFACTS / "status.txt").write_text(status.stdout)

    feedback = klass.teach("feedback", "01")
    assert feedback.returncode == 0, feedback.stdout + feedback.stderr

    urls: dict[str, str] = {}
    expected = {right: ("passed", 4), wrong: ("failed", 1), blank: ("not attempted", 4)}
    for student, (verdict, count) in expected.items():
        context, page = pages[student]
        _assignments(page)
        page.locator("#refresh_assignments_list:visible").click()  # feedback is now available
        _row_button(page, "submitted_assignments_list", "Fetch Feedback").first.click()
        view = page.locator("#submitted_assignments_list:visible a", has_text="view feedback")
        view = view.first
        view.wait_for()
        view.click()  # the file browser goes to the feedback folder
        page.locator(".jp-DirListing-item", has_text=f"{ASSIGNMENT}.html").first.wait_for()
        home = Path(pwd.getpwnam(student).pw_dir)
        (html,) = home.glob(f"{ASSIGNMENT}/feedback/*/{ASSIGNMENT}.html")
        url = f"{klass.url}/user/{student}/files/{html.relative_to(home)}"
        feedback_page = context.new_page()
        feedback_page.goto(url)
        text = feedback_page.inner_text("body")
        feedback_page.screenshot(path=ARTIFACTS / f"feedback-{student}.png", full_page=True)
        assert student in text and text.count(verdict) >= count, text[:2000]
        assert not any(other in text for other in klass.students if other != student), text[:500]
        urls[student] = url
        feedback_page.close()
    # Another student's page, by its URL, in a student's own logged-in browser: refused.
    context, _ = pages[right]
    other_page = context.new_page()
    response = other_page.goto(urls[wrong])
    assert "tril(diagonal=-1)" not in other_page.content(), response.status
    other_page.close()

    # As each student's Unix user: nobody else's home, submission or feedback is readable.
    exchange = klass.prefix / "exchange" / "attn-course"
    for student in klass.students:
        for other in klass.students:
            if other != student:
                home = pwd.getpwnam(other).pw_dir
                assert _run(["ls", home], user=student).returncode != 0
                assert _run(["cat", f"{home}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"],
                            user=student).returncode != 0  # fmt: skip
        for folder in (exchange / "inbound", exchange / "feedback", course):
            assert _run(["ls", str(folder)], user=student).returncode != 0, folder
    # the culler runs as a hub service
    assert any(s["name"] == "idle-culler" for s in klass.api("/services").values())

    for context, _ in pages.values():
        context.close()
    hierarchy = Hierarchy.detect()
    used = [StudentCgroup(hierarchy, s).cpu_seconds() for s in klass.students]
    if None not in used:  # the servers and kernels: the hub reaps none of them at teardown
        timings["students' servers and kernels, CPU-s"] = sum(used)
    (ARTIFACTS / "timings.txt").write_text(
        "".join(f"{name:<45}{seconds:6.1f} s\n" for name, seconds in timings.items())
    )
    print("\n" + (ARTIFACTS / "timings.txt").read_text(), file=sys.stderr)

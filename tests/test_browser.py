"""The course in a real JupyterLab: open a notebook, run it, use its explorer.

nbval proves the stored outputs; this proves what a learner sees. It starts JupyterLab
with the course's own launcher (``python -m attn_course lab``, as ``make lab`` does, so with
the course's JupyterLab defaults) on a free port with a random token and a fresh user
settings folder, drives Debian's Chromium through Playwright at 1366 px wide with the file
browser open, runs the cells its explorers need through the UI (nbval runs every cell; the
expensive ones, training and timing tables, need not run twice), and checks what a learner
sees: no news pop-up over the notebook, the explorer's text at readable sizes, the example dropdown
showing its whole sentence, the status line following the example, and the heads slider
redrawing the heatmap grid with the new number of "head N" panels at every stop. It prints
the time from a key press on the slider to the new figure in the page.

Screenshots and timings land in artifacts/browser/. A watchdog kills everything this test
started if it runs past ``WATCHDOG_S``; every wait has its own, shorter limit.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import sync_playwright
from support import CHROMIUM, CHROMIUM_ARGS, ROOT, VIEWPORT

from attn_course.data import EXAMPLES, example

ARTIFACTS = ROOT / "artifacts" / "browser"
NOTEBOOKS = ["notebooks/03_weight_split_mha.ipynb", "notebooks/05_transformer_blocks.ipynb"]

WATCHDOG_S = 900  # the whole module: notebooks 03, 05, 08, 11 and the verdict
SERVER_START_S = 90
PAGE_LOAD_S = 180  # a kernel start once took over 90 s in CI while the other worker was busy
RUN_ALL_S = 180
REDRAW_S = 45

# The fresh user settings folder holds only what the test itself needs: never save (the
# notebooks under test are committed files that nbval reads at the same time) and every cell
# attached to the DOM so prompts and outputs can be inspected. Everything else, the news
# pop-up included, is what a learner gets from the launcher.
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
}
NEWS_QUESTION = "Would you like to get notified about official Jupyter news?"
NEWS_WAIT_S = 10  # JupyterLab asks within a second or two of start-up
MIN_LABEL_PX = 11  # token labels, titles, axis labels as rendered
MIN_NUMBER_PX = 10  # the numbers in the cells as rendered

_timings: dict[str, float] = {}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason=f"{CHROMIUM} is missing; `make test` installs Debian's chromium where it runs as "
        "root with apt-get, elsewhere the browser test is skipped",
    ),
]


# --- processes ------------------------------------------------------------------------


def _descendants(pid: int) -> set[int]:
    """PIDs of every process below ``pid``, read from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _kill(pids: set[int]) -> None:
    """SIGKILL each PID that still exists."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Watchdog:
    """Kills every process started below this one after ``seconds`` (server, kernels,
    Playwright's driver, Chromium), so a hung wait fails the test instead of the run."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._before = _descendants(os.getpid())
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        _kill(_descendants(os.getpid()) - self._before)

    def cancel(self) -> None:
        """Stop the timer."""
        self._timer.cancel()


# --- JupyterLab server --------------------------------------------------------------------


def _request(url: str, token: str, method: str = "GET", timeout: float = 5) -> int:
    """HTTP status of one request to the server, authenticated with the token."""
    req = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=timeout) as response:
        return response.status


class LabServer:
    """``python -m attn_course lab --headless`` in a throw-away Jupyter home."""

    def __init__(self, home: Path) -> None:
        self.token = secrets.token_hex(16)
        self.log_path = home / "server.log"
        dirs = {
            name: home / name
            for name in (
                "settings",
                "workspaces",
                "runtime",
                "config",
                "data",
                "ipython",
                "checkpoints",
            )
        }
        for folder in dirs.values():
            folder.mkdir()
        for plugin, values in LAB_SETTINGS.items():
            path = dirs["settings"] / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(
            os.environ,
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            IPYTHONDIR=str(dirs["ipython"]),
        )
        command = [
            sys.executable,
            "-m",
            "attn_course",
            "lab",
            "--headless",
            "--port=0",  # the OS picks a free port; the server reports it in jpserver-PID.json
            f"--token={self.token}",
            "--LabApp.expose_app_in_browser=True",
            # An absolute folder (os.path.join keeps it) instead of notebooks/.ipynb_checkpoints.
            f"--FileCheckpoints.checkpoint_dir={dirs['checkpoints']}",
        ]
        start = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        # The launcher exec()s jupyter, so the server keeps the PID we started.
        info_file = dirs["runtime"] / f"jpserver-{self.process.pid}.json"
        try:
            self.url = self._wait_until_up(info_file, start + SERVER_START_S)
        except BaseException:
            self.kill()
            raise
        _timings["server start"] = time.monotonic() - start

    def _wait_until_up(self, info_file: Path, deadline: float) -> str:
        """The server's base URL once it answers /api/status."""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited early:\n{self.log_path.read_text()}")
            try:
                url = json.loads(info_file.read_text())["url"].rstrip("/")
                if _request(f"{url}/api/status", self.token) == 200:
                    return url
            except (OSError, ValueError, KeyError):
                pass  # not written yet, or not listening yet
            time.sleep(0.25)
        raise TimeoutError(f"JupyterLab did not start in {SERVER_START_S} s")

    def stop(self) -> None:
        """Shut down through the API (kernels included); kill by PID if that fails."""
        try:
            _request(f"{self.url}/api/shutdown", self.token, method="POST")
            self.process.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()

    def kill(self) -> None:
        """SIGKILL the server and its kernels by PID."""
        _kill(_descendants(self.process.pid) | {self.process.pid})
        self.process.wait(timeout=10)


# --- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def watchdog() -> Iterator[Watchdog]:
    """Fails the module and prints its timings; screenshots of earlier runs are removed."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    dog = Watchdog(WATCHDOG_S)
    yield dog
    dog.cancel()
    report = "\n".join(f"{name:<45}{seconds:6.1f} s" for name, seconds in _timings.items())
    (ARTIFACTS / "timings.txt").write_text(report + "\n")
    print(f"\nbrowser test timings:\n{report}")
    assert not dog.fired, f"watchdog: the browser test ran past {WATCHDOG_S} s and was killed"


@pytest.fixture(scope="module")
def lab(watchdog: Watchdog, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()
    shutil.copy(server.log_path, ARTIFACTS / "server.log")


@pytest.fixture(scope="module")
def browser(watchdog: Watchdog, tmp_path_factory: pytest.TempPathFactory):
    """A headless Chromium with a fresh profile and HOME/XDG folders in a temp dir."""
    home = tmp_path_factory.mktemp("chromium")
    env = dict(os.environ, HOME=str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
        folder = home / name.lower()
        folder.mkdir(mode=0o700)
        env[name] = str(folder)
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            home / "profile",
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            env=env,
            viewport=VIEWPORT,
            timeout=PAGE_LOAD_S * 1000,
        )
        yield context
        with contextlib.suppress(PlaywrightError):  # already closed when the watchdog fired
            context.close()


# --- the page -------------------------------------------------------------------------

# Truthy once the notebook at `path` is the current tab with a connected, idle kernel
# (right after loading JupyterLab says idle while the kernel is still being attached).
KERNEL_READY_JS = """(path) => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.context || panel.context.path !== path || !panel.context.isReady) {
    return false;
  }
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle'
    && panel.sessionContext.kernelDisplayStatus === 'idle';
}"""

# Truthy once every non-empty code cell (of those indices, or all) has run and the kernel is
# idle again, or as soon as one of them not tagged raises-exception shows an error:
# {errors: ["Name: message", ...]}.
RUN_FINISHED_JS = """(indices) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const cells = (indices ? indices.map((i) => panel.content.widgets[i]) : panel.content.widgets)
    .filter((cell) => cell.model.type === 'code' && cell.model.sharedModel.getSource().trim());
  const errors = cells
    .filter((cell) => !(cell.model.getMetadata('tags') || []).includes('raises-exception'))
    .flatMap((cell) => cell.model.outputs.toJSON())
    .filter((output) => output.output_type === 'error')
    .map((output) => `${output.ename}: ${output.evalue}`);
  const done = cells.every((cell) => cell.model.executionCount !== null)
    && panel.sessionContext.session.kernel.status === 'idle';
  return errors.length || done ? {errors} : false;
}"""

# What the learner sees in one explorer: the "head N" titles of the SVG, all SVG labels,
# the status sentence and the error message (empty while hidden).
EXPLORER_STATE_JS = """(root) => {
  const text = (selector) => {
    const node = root.querySelector(selector);
    return node && node.checkVisibility() ? node.innerText.trim() : '';
  };
  const labels = [...root.querySelectorAll('.attn-explorer-figure svg text')]
    .map((node) => node.textContent.trim());
  return {
    heads: labels.filter((label) => /^head \\d+$/.test(label)).length,
    labels,
    status: text('.attn-explorer-status'),
    error: text('.attn-explorer-error'),
  };
}"""

# Truthy once the explorer answered the slider's value `heads`: `heads` panels, no error and
# a status "<heads> heads ...", or a new error message naming the number.
ANSWERED_JS = f"""({{root, heads, previousError}}) => {{
  const state = ({EXPLORER_STATE_JS})(root);
  const says = (text, pattern) => new RegExp(pattern).test(text);
  const drawn = state.heads === heads && !state.error;
  return (drawn && says(state.status, `\\\\b${{heads}} heads?\\\\b`))
    || (state.error !== previousError && says(state.error, `\\\\b${{heads}}\\\\b`));
}}"""

STATUS_RE = re.compile(r"(\d+) heads? × head_dim (\d+) = \S+ (\d+)")


@contextlib.contextmanager
def _timing(name: str) -> Iterator[None]:
    """Record the duration of the ``with`` block under ``name``."""
    start = time.monotonic()
    yield
    _timings[name] = time.monotonic() - start


def _open_notebook(page, lab: LabServer, notebook: str) -> None:
    """Show ``notebook`` on a fresh workspace, check that no news pop-up covers it, and wait
    for its kernel."""
    workspace = uuid.uuid4().hex  # nothing restored from an earlier layout
    url = f"{lab.url}/lab/workspaces/{workspace}/tree/{notebook}?token={lab.token}"
    page.goto(url, timeout=PAGE_LOAD_S * 1000)
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget",
                           timeout=PAGE_LOAD_S * 1000)  # fmt: skip
    with contextlib.suppress(PlaywrightTimeoutError):  # the good case: it never shows
        page.get_by_text(NEWS_QUESTION).first.wait_for(timeout=NEWS_WAIT_S * 1000)
        pytest.fail(f"the Jupyter news pop-up covers the notebook: {NEWS_QUESTION!r}")
    page.wait_for_function(KERNEL_READY_JS, arg=notebook, timeout=PAGE_LOAD_S * 1000, polling=250)


def _run_all(page) -> None:
    """Clear the stored outputs, run all cells from the command registry, wait for the end."""
    page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    _wait_for_the_run(page, None)


def _wait_for_the_run(page, cells: list[int] | None) -> None:
    """Wait until ``cells`` (indices; None: every cell) have run and the kernel is idle."""
    # Execution really started: a prompt turned from [ ] into [*] or [n].
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
            .some((prompt) => /\\[(\\*|\\d+)\\]/.test(prompt.textContent))""",
        timeout=30_000,
        polling=100,
    )
    result = page.wait_for_function(RUN_FINISHED_JS, arg=cells, timeout=RUN_ALL_S * 1000,
                                     polling=250)  # fmt: skip
    errors = result.json_value()["errors"]
    assert not errors, f"cells raised: {errors}"


def explorer_cells(notebook: str) -> list[int]:
    """The indices of the cells that the notebook's explorer cells need, in order: those cells
    and, going back, the last code cell before it that defines each name a needed cell reads
    (imports included).

    nbval runs every cell of every notebook; here the browser runs only what the widgets need,
    so a lecture's expensive cells (training, timing tables) do not run twice.
    """
    cells = nbformat.read(ROOT / notebook, as_version=4).cells
    needed: list[int] = []
    reads: set[str] = set()
    for index in reversed(range(len(cells))):
        cell = cells[index]
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
        tree = ast.parse(source)
        defines = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                   and isinstance(n.ctx, ast.Store)}  # fmt: skip
        defines |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        defines |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        defines |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
                    if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}  # fmt: skip
        tags = cell.metadata.get("tags", [])
        if ("explorer(" in source and "nbval-ignore-output" in tags) or defines & reads:
            needed.insert(0, index)
            loads = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                     and isinstance(n.ctx, ast.Load)}  # fmt: skip
            reads = (reads - defines) | (loads - defines)  # what it defines, it reads from itself
    return needed


def _run_explorer_cells(page, notebook: str) -> None:
    """Clear the stored outputs, run the cells the explorers need (``explorer_cells``) one after
    the other as a learner would with Shift+Enter's command, and wait for the end."""
    cells = explorer_cells(notebook)
    page.evaluate("window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate(
        """(cells) => { (async () => {
          const app = window.jupyterapp;
          const notebook = app.shell.currentWidget.content;
          for (const index of cells) {
            notebook.activeCellIndex = index;
            notebook.deselectAll();
            await app.commands.execute('notebook:run-cell');
          }
        })(); }""",
        cells,
    )
    _wait_for_the_run(page, cells)


# Arms the explorer `root`: the time of the next key press inside it, and of the first frame
# after its figure next changes (performance.now(), ms), land in window.attnKeyAt / attnFigureAt.
WATCH_REDRAW_JS = """(root) => {
  window.attnKeyAt = null;
  window.attnFigureAt = null;
  const figure = root.querySelector('.attn-explorer-figure');
  const observer = new MutationObserver(() => {
    observer.disconnect();
    requestAnimationFrame(() => { window.attnFigureAt = performance.now(); });
  });
  observer.observe(figure, {childList: true, subtree: true, characterData: true});
  root.addEventListener('keydown', () => { window.attnKeyAt = performance.now(); },
                        {capture: true, once: true});
}"""

# Rendered sizes (CSS px) of the SVG's texts: font-size times the scale the page shows it at.
TEXT_SIZES_JS = """(root) => {
  const svg = root.querySelector('.attn-explorer-figure svg');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const texts = [...svg.querySelectorAll('text')];
  const isNumber = (node) => /^[+-]?\\d*\\.\\d+$/.test(node.textContent.trim());
  const smallest = (nodes) => Math.min(...nodes.map(
    (node) => parseFloat(node.getAttribute('font-size')) * scale));
  return {scale, labels: smallest(texts.filter((n) => !isNumber(n))),
          numbers: smallest(texts.filter(isNumber))};
}"""

# The selected option's text width (canvas, the select's own font) against the room inside
# the <select> (its width less the padding, which holds the arrow).
DROPDOWN_FIT_JS = """(select) => {
  const style = getComputedStyle(select);
  const context = document.createElement('canvas').getContext('2d');
  context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const text = select.options[select.selectedIndex].text.replace(/\u00a0/g, " ");
  const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return {text, width: context.measureText(text).width, room};
}"""


class HeadsSlider:
    """The explorer's "heads" slider, moved with the keyboard on its handle."""

    def __init__(self, explorer) -> None:
        self.explorer = explorer
        slider = explorer.locator(".widget-slider").filter(
            has=explorer.page.locator(".widget-label", has_text=re.compile(r"^\s*heads\s*$"))
        )
        self.handle = slider.locator(".noUi-handle")
        self.readout = slider.locator(".widget-readout")
        self.key_to_figure_ms: list[float] = []

    @property
    def value(self) -> int:
        """The number the slider shows."""
        return int(self.readout.inner_text().strip())

    @property
    def at_top(self) -> bool:
        """Whether the handle sits at the slider's largest value."""
        now, top = (float(self.handle.get_attribute(a)) for a in ("aria-valuenow", "aria-valuemax"))
        return now >= top

    def press(self, key: str) -> dict:
        """Press ``key`` on the handle; the explorer's state once it has answered. A new
        figure's time from the key press is added to ``key_to_figure_ms``."""
        previous = self.explorer.evaluate(EXPLORER_STATE_JS)
        self.explorer.evaluate(WATCH_REDRAW_JS)
        self.handle.press(key)
        arg = {"root": self.explorer.element_handle(), "heads": self.value}
        arg["previousError"] = previous["error"]
        page = self.explorer.page
        page.wait_for_function(ANSWERED_JS, arg=arg, timeout=REDRAW_S * 1000, polling=100)
        state = self.explorer.evaluate(EXPLORER_STATE_JS)
        if state["heads"] != previous["heads"] and not state["error"]:
            page.wait_for_function("() => window.attnFigureAt !== null", timeout=REDRAW_S * 1000)
            self.key_to_figure_ms.append(
                page.evaluate("() => window.attnFigureAt - window.attnKeyAt")
            )
        return state


class JavaScriptErrors:
    """Uncaught exceptions and console errors of a page (none is allowed: none occurs)."""

    def __init__(self, page) -> None:
        self.messages: list[str] = []
        page.on("pageerror", lambda error: self.messages.append(f"uncaught: {error}"))
        page.on("console", self._console)

    def _console(self, message) -> None:
        if message.type == "error":
            self.messages.append(f"console error: {message.text} at {message.location}")


def _show_file_browser(page) -> int:
    """Open the file browser in the left area, as a learner has it; its width in px."""
    page.evaluate("window.jupyterapp.commands.execute('filebrowser:activate')")
    browser_panel = page.locator("#filebrowser")
    browser_panel.wait_for(state="visible", timeout=30_000)
    return round(browser_panel.bounding_box()["width"])


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_the_explorer_as_a_learner_sees_it(
    notebook: str, watchdog: Watchdog, lab: LabServer, browser
) -> None:
    if not (ROOT / notebook).exists():
        pytest.fail(f"{notebook} does not exist yet")
    stem = Path(notebook).stem
    page = browser.new_page()
    js_errors = JavaScriptErrors(page)
    try:
        with _timing(f"{stem}: page load"):
            _open_notebook(page, lab, notebook)
        file_browser_px = _show_file_browser(page)
        with _timing(f"{stem}: run the explorer's cells"):
            _run_explorer_cells(page, notebook)
        news = page.get_by_text(NEWS_QUESTION)
        assert not any(n.is_visible() for n in news.all()), "the Jupyter news pop-up showed late"

        explorer = page.locator(".attn-explorer").first
        figure = explorer.locator(".attn-explorer-figure")
        figure.locator("svg").wait_for(timeout=REDRAW_S * 1000)  # not "Loading widget..."
        explorer.scroll_into_view_if_needed()
        slider = HeadsSlider(explorer)

        before = explorer.evaluate(EXPLORER_STATE_JS)
        assert before["heads"] == slider.value and not before["error"], before
        examples = [set(example(name).tokens) for name in EXAMPLES]
        assert any(len(tokens & set(before["labels"])) >= 2 for tokens in examples), (
            f"no course example's tokens among the SVG's texts {before['labels']}"
        )
        figure_before = figure.screenshot()
        explorer.screenshot(path=ARTIFACTS / f"{stem}-before.png")

        # The status follows the example dropdown, which shows its longest sentence whole.
        select = explorer.locator(".widget-dropdown select").first
        longest = max(EXAMPLES.values(), key=len)
        other = next(s for s in EXAMPLES.values() if s != longest and s not in before["status"])
        after_example = before
        for sentence in (other, longest):  # the explorer may start on either
            status = after_example["status"]
            select.select_option(label=sentence)
            explorer.page.wait_for_function(
                "([root, text]) => root.querySelector('.attn-explorer-status').innerText"
                ".includes(text)",
                arg=[explorer.element_handle(), sentence],
                timeout=REDRAW_S * 1000,
            )
            after_example = explorer.evaluate(EXPLORER_STATE_JS)
            assert after_example["status"] != status, after_example["status"]
        fit = select.evaluate(DROPDOWN_FIT_JS)
        assert fit["text"] == longest and fit["width"] <= fit["room"], fit
        # Its first tokens are labels now (in 05 the last ones may be padding).
        assert set(example("journey").tokens[:3]) <= set(after_example["labels"])

        # Step up (down from the top) until the next drawable number of heads.
        key = "ArrowLeft" if slider.at_top else "ArrowRight"
        with _timing(f"{stem}: slider move -> redraw"):
            after = slider.press(key)
        while after["error"]:
            after = slider.press(key)
        explorer.screenshot(path=ARTIFACTS / f"{stem}-after.png")
        assert after["heads"] == slider.value != after_example["heads"], (before, after)
        assert after["status"] != after_example["status"], after["status"]
        assert figure.screenshot() != figure_before, "the heatmaps look the same as before"

        # Every number the slider offers is a valid combination: that many panels under a
        # status "h heads × head_dim d = width" with h·d = width.
        states = [slider.press("Home")]
        while not slider.at_top:
            states.append(slider.press("ArrowRight"))
        stops = int(float(slider.handle.get_attribute("aria-valuemax")) -
                    float(slider.handle.get_attribute("aria-valuemin"))) + 1  # fmt: skip
        assert len({state["heads"] for state in states if not state["error"]}) == stops, states
        for state in states:
            match = STATUS_RE.search(state["status"])
            assert match, f"the status does not read 'h heads × head_dim d = width': {state}"
            heads, head_dim, width = map(int, match.groups())
            assert state["heads"] == heads and heads * head_dim == width, state

        # At the most heads (the widest grid) the text is still readable, unscaled.
        explorer.screenshot(path=ARTIFACTS / f"{stem}-most-heads.png")
        sizes = explorer.evaluate(TEXT_SIZES_JS)
        times = sorted(slider.key_to_figure_ms)
        print(
            f"\n{stem}: file browser {file_browser_px} px, grid of {states[-1]['heads']} heads "
            f"shown at {sizes['scale']:.0%}: labels {sizes['labels']:.1f} px, numbers "
            f"{sizes['numbers']:.1f} px; key press -> new figure: median "
            f"{statistics.median(times):.0f} ms, max {times[-1]:.0f} ms over {len(times)} presses "
            f"(load average {os.getloadavg()[0]:.2f})"
        )
        _timings[f"{stem}: key press -> figure"] = statistics.median(times) / 1000
        assert sizes["labels"] >= MIN_LABEL_PX and sizes["numbers"] >= MIN_NUMBER_PX, sizes
    except Exception:
        if watchdog.fired:
            pytest.fail(f"watchdog: killed the server and Chromium after {WATCHDOG_S} s")
        page.screenshot(path=ARTIFACTS / f"{stem}-failure.png", full_page=True)
        raise
    finally:
        with contextlib.suppress(PlaywrightError):  # free the kernel for the next notebook
            page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
            page.close()
    assert not js_errors.messages, "\n".join(js_errors.messages)


# Truthy once the explorer `root`'s status line contains `text`.
STATUS_SAYS_JS = """([root, text]) => root.querySelector('.attn-explorer-status')
  .innerText.includes(text)"""


def _last_explorer(page):
    """The notebook's last explorer once its figure is drawn, scrolled into view: the
    explorer, its figure and the explorer's element handle."""
    explorer = page.locator(".attn-explorer").last
    figure = explorer.locator(".attn-explorer-figure")
    figure.locator("svg").wait_for(timeout=REDRAW_S * 1000)
    explorer.scroll_into_view_if_needed()
    return explorer, figure, explorer.element_handle()


def test_the_trained_model_explorer(watchdog: Watchdog, lab: LabServer, browser) -> None:
    """Notebook 08's explorer answers its head slider and a typed sequence."""
    notebook = "notebooks/08_trained_attention.ipynb"
    page = browser.new_page()
    js_errors = JavaScriptErrors(page)
    try:
        _open_notebook(page, lab, notebook)
        _run_explorer_cells(page, notebook)
        explorer, figure, root = _last_explorer(page)
        assert "induction, trained, L1 H0" in explorer.evaluate(EXPLORER_STATE_JS)["status"]
        head = explorer.locator(".widget-slider").filter(
            has=page.locator(".widget-label", has_text=re.compile(r"^\s*head\s*$"))
        )
        head.locator(".noUi-handle").press("ArrowRight")
        page.wait_for_function(STATUS_SAYS_JS, arg=[root, "L1 H1"], timeout=REDRAW_S * 1000)
        assert "induction: L1 H1" in explorer.evaluate(EXPLORER_STATE_JS)["labels"]  # title
        typed = explorer.locator(".widget-text input")
        typed.fill("5 17 3 9 30 14 2 9 30 14")
        typed.press("Enter")
        page.wait_for_function(
            "([root]) => !root.querySelector('.attn-explorer-status').innerText.includes('right')",
            arg=[root],
            timeout=REDRAW_S * 1000,
        )
        labels = explorer.evaluate(EXPLORER_STATE_JS)["labels"]
        assert "→ 30" in labels, labels  # after the second 9 the model predicts 30
        explorer.screenshot(path=ARTIFACTS / "08_trained_attention-typed.png")
    finally:
        with contextlib.suppress(PlaywrightError):
            page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
            page.close()
    assert not js_errors.messages, "\n".join(js_errors.messages)


def test_the_language_model_explorer(watchdog: Watchdog, lab: LabServer, browser) -> None:
    """Notebook 11's explorer: a typed line, the head slider, an unknown character."""
    notebook = "notebooks/11_language_model.ipynb"
    page = browser.new_page()
    js_errors = JavaScriptErrors(page)
    try:
        _open_notebook(page, lab, notebook)
        with _timing("11_language_model: run the explorer's cells"):
            _run_explorer_cells(page, notebook)
        explorer, figure, root = _last_explorer(page)
        start = explorer.evaluate(EXPLORER_STATE_JS)
        assert "Next character:" in start["status"] and not start["error"], start
        layer, head = map(int, re.search(r"L(\d+) H(\d+)", start["status"]).groups())

        # A typed line: its characters become the picture's labels, its length the status's.
        line = "JULIET:\nAy me!"
        typed = explorer.locator(".widget-textarea textarea")
        typed.fill(line)
        typed.press("Tab")  # the text box sends its value when it loses the focus
        page.wait_for_function(STATUS_SAYS_JS, arg=[root, f"on {len(line)} characters"],
                               timeout=REDRAW_S * 1000)  # fmt: skip
        labels = explorer.evaluate(EXPLORER_STATE_JS)["labels"]
        assert {"J", "↵", "y", "!"} <= set(labels), labels
        assert "↵" in labels and "␣" in labels, labels

        # The head slider redraws the figure with the next head.
        before = figure.inner_html()
        explorer.evaluate(WATCH_REDRAW_JS)
        slider = explorer.locator(".widget-slider").filter(
            has=page.locator(".widget-label", has_text=re.compile(r"^\s*head\s*$"))
        )
        key = "ArrowLeft" if head > 0 else "ArrowRight"
        slider.locator(".noUi-handle").press(key)
        new_head = head - 1 if head > 0 else head + 1
        page.wait_for_function(STATUS_SAYS_JS, arg=[root, f"L{layer} H{new_head} "],
                               timeout=REDRAW_S * 1000)  # fmt: skip
        page.wait_for_function("() => window.attnFigureAt !== null", timeout=REDRAW_S * 1000)
        key_to_figure = page.evaluate("() => window.attnFigureAt - window.attnKeyAt")
        assert f"layer {layer}, head {new_head}" in explorer.evaluate(EXPLORER_STATE_JS)["labels"]
        assert figure.inner_html() != before
        explorer.screenshot(path=ARTIFACTS / "11_language_model-typed.png")
        print(f"\n11_language_model: head key press -> new figure {key_to_figure:.0f} ms "
              f"(load average {os.getloadavg()[0]:.2f})")  # fmt: skip

        # A character the model does not know: the tokenizer's message, not a traceback.
        typed.fill("Café")
        typed.press("Tab")
        error = explorer.locator(".attn-explorer-error")
        error.wait_for(state="visible", timeout=REDRAW_S * 1000)
        assert "é" in error.inner_text() and "does not know" in error.inner_text()
        assert not page.locator(".jp-OutputArea-output .jp-RenderedText[data-mime-type="
                                "'application/vnd.jupyter.stderr']").count()  # fmt: skip
        explorer.screenshot(path=ARTIFACTS / "11_language_model-unknown.png")
    finally:
        with contextlib.suppress(PlaywrightError):
            page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
            page.close()
    assert not js_errors.messages, "\n".join(js_errors.messages)


# Words of the verdict `pre` that the browser broke across lines, and how many lines it has.
BROKEN_WORDS_JS = """(pre) => {
  const text = pre.firstChild;
  const broken = [];
  const tops = new Set();
  for (const word of text.data.matchAll(/\\S+/g)) {
    const range = document.createRange();
    range.setStart(text, word.index);
    range.setEnd(text, word.index + word[0].length);
    const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
    lines.forEach((top) => tops.add(top));
    if (lines.size > 1) broken.push(word[0]);
  }
  return {broken, lines: tops.size};
}"""


def test_a_failed_verdict_wraps_between_words(watchdog: Watchdog, lab: LabServer, browser) -> None:
    """JupyterLab breaks printed lines anywhere ("torch.⏎triu"); the verdict must not."""
    notebook = ARTIFACTS.relative_to(ROOT) / "verdict.ipynb"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    wrong = "lambda n: torch.tril(torch.ones(n, n, dtype=torch.bool), diagonal=-1)"
    cell = f"import torch\nfrom attn_course.grading import check\n_ = check('causal_mask', {wrong})"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, ROOT / notebook)
    page = browser.new_page()
    page.set_viewport_size({"width": 640, "height": 800})  # narrow: the verdict must wrap
    try:
        _open_notebook(page, lab, str(notebook))
        _run_all(page)
        verdict = page.locator(".jp-OutputArea-output pre.attn-verdict")
        verdict.wait_for(timeout=REDRAW_S * 1000)
        assert "torch.triu" in verdict.inner_text()
        layout = verdict.evaluate(BROKEN_WORDS_JS)
        verdict.screenshot(path=ARTIFACTS / "verdict.png")
        assert layout["lines"] > 1, "the page is too wide to test wrapping"
        assert not layout["broken"], f"words broken across lines: {layout['broken']}"
    finally:
        with contextlib.suppress(PlaywrightError):
            page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
            page.close()

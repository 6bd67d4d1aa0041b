"""The project's promises: one set of pins, a two-command README, CI running exactly the
README's test command, and clean ruff lint and formatting."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support import ROOT

# The environment of a plain `make`, even when this suite runs under `make PYTHON=... test`.
NO_PYTHON = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS", "MFLAGS")}
TEST_RUNNER = re.compile(r"\b(make|pytest|python[\d.]*|nbval|tox|nox|ruff)\b")


def _pip_pins_of_environment_yml() -> set[str]:
    """The ``name==version`` lines of environment.yml's ``pip:`` list (a tiny YAML subset)."""
    pins, in_pip = set(), False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        item = line.split("#", 1)[0].strip()
        if item == "- pip:":
            in_pip = True
        elif in_pip and item.startswith("- ") and "==" in item:
            pins.add(item[2:].strip())
    return pins


def _code_blocks(markdown: str) -> list[list[str]]:
    """The command lines (comments and blanks dropped) of each fenced code block."""
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", markdown, flags=re.M | re.S)
    return [
        [c for c in (line.split("#", 1)[0].strip() for line in b.splitlines()) if c] for b in blocks
    ]


def test_environment_yml_pins_equal_pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pyproject_pins = set(project["dependencies"]) | set(project["optional-dependencies"]["test"])
    assert all("==" in pin for pin in pyproject_pins), "pyproject.toml pins exact versions"
    assert _pip_pins_of_environment_yml() == pyproject_pins


def test_readme_gives_exactly_two_commands():
    blocks = _code_blocks((ROOT / "README.md").read_text())
    assert blocks, "README.md has no code block"
    assert blocks[0] == ["make lab", "make test"]


def test_ci_runs_the_readme_test_command_then_the_same_under_other_pythons():
    readme_test_command = _code_blocks((ROOT / "README.md").read_text())[0][1]
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    runners = [c for c in commands if TEST_RUNNER.search(c)]
    assert runners[0] == readme_test_command, "CI starts with exactly the README's command"
    again = [c for c in commands if c.startswith(f"{readme_test_command} ")]
    # the class on a real JupyterHub, right after the first run (README: `make test-class`)
    assert commands[commands.index(runners[0]) + 1] == "make test-class"
    other_python = 'PYTHON="$python" VENV="$venvs/venv-$version"'
    # the first run did the grader's kernels, the attacks and the browser, and ran nbval on
    # other code paths; the others run nbval on their own CPU kernels at another thread count,
    # and the tests marked rerun, which the first run leaves out
    once = """PYTEST_EXTRA='-m "(not slow and not browser) or rerun"'"""
    threads = "ATTN_COURSE_OTHER_MACHINE=ATTN_COURSE_OTHER_THREADS=1"
    assert again == [f"{readme_test_command} {other_python} {once} {threads}"]


@pytest.mark.slow  # runs make, which probes every installed Python
def test_make_finds_only_supported_pythons():
    def found(versions: str) -> str:
        command = ["make", "-s", "python", f"SUPPORTED_PYTHONS={versions}"]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=NO_PYTHON)
        return result.stdout.strip()

    assert found("2.0") == ""  # no such interpreter: empty, and the setup names the versions
    current = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert found(f"2.0 {current}").endswith(f"python{current}")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    make = subprocess.run(["make", "-s", "supported-pythons"], cwd=ROOT, capture_output=True)
    versions = make.stdout.decode().split()
    low, high = versions[0], versions[-1].split(".")
    assert project["requires-python"] == f">={low},<{high[0]}.{int(high[1]) + 1}"


def test_a_venv_made_for_another_checkout_is_installed_again(tmp_path):
    """.ci/run keeps its venvs in ~/.cache, shared by every checkout that runs it; their
    editable install points at one checkout. Another checkout's make marks the venv for a new
    install (its checkout file newer than the ready stamp); the same checkout's leaves it."""
    venv = tmp_path / "venv"
    venv.mkdir()
    checkout, ready = venv / ".checkout", venv / ".ready"

    def make_checkout() -> None:
        command = ["make", "-s", f"VENV={venv}", str(checkout)]
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True, env=NO_PYTHON)

    checkout.write_text("/elsewhere/attn-course\n")
    ready.touch()
    os.utime(checkout, (0, 0))  # made long before the stamp
    make_checkout()
    assert checkout.read_text() == f"{ROOT}\n"
    assert checkout.stat().st_mtime > ready.stat().st_mtime
    os.utime(checkout, (0, 0))
    make_checkout()  # the same checkout: nothing to install
    assert checkout.stat().st_mtime == 0


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff_is_clean(args):
    ruff = Path(sys.executable).parent / "ruff"
    result = subprocess.run(
        [str(ruff), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_command_names_a_module_with_a_main():
    """``__main__`` dispatches by module path: a moved module would fail only when run."""
    from attn_course.__main__ import COMMANDS

    for name, (module, _) in COMMANDS.items():
        assert callable(importlib.import_module(module).main), name


def test_the_attn_course_command_is_installed_and_lists_the_commands():
    """``attn-course`` (pyproject's console script) runs the same entry point as ``python -m``."""
    from attn_course.__main__ import COMMANDS

    script = Path(sys.executable).parent / "attn-course"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[0] for line in result.stdout.splitlines() if line.startswith("  ")]
    assert listed == list(COMMANDS)
    unknown = subprocess.run([str(script), "no-such-command"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "usage: attn-course COMMAND" in unknown.stdout

"""The course's JupyterLab launcher: the command line and the settings every learner gets."""

from __future__ import annotations

import pytest
from jupyterlab_server.settings_utils import _get_overrides
from support import ROOT

from attn_course.tools import lab


def test_the_launcher_points_jupyterlab_at_the_course_settings():
    command = lab.build_command(ROOT, port=0, token="t", headless=True)
    assert f"--LabApp.app_settings_dir={lab.APP_SETTINGS}" in command
    assert f"--ServerApp.root_dir={ROOT}" in command


def test_the_lab_opens_on_the_clone_it_runs_in_from_any_folder_of_it():
    assert lab.course_root(ROOT) == ROOT
    assert lab.course_root(ROOT / "exercises") == ROOT


def test_outside_a_clone_the_lab_says_where_the_notebooks_are(tmp_path):
    # an installed (non-editable) package has no notebooks beside it: no guess from __file__
    with pytest.raises(SystemExit, match="Run it inside your clone of the course repository"):
        lab.course_root(tmp_path)


def test_the_course_settings_turn_the_news_pop_up_off():
    # Read as JupyterLab reads them: the notification plugin never asks about news.
    overrides, error = _get_overrides(str(lab.APP_SETTINGS))
    assert not error
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"

"""The course's JupyterLab launcher: the command line and the settings every learner gets."""

from __future__ import annotations

from jupyterlab_server.settings_utils import _get_overrides

from attn_course import lab


def test_the_launcher_points_jupyterlab_at_the_course_settings():
    command = lab.build_command(port=0, token="t", headless=True)
    assert f"--LabApp.app_settings_dir={lab.APP_SETTINGS}" in command


def test_the_course_settings_turn_the_news_pop_up_off():
    # Read as JupyterLab reads them: the notification plugin never asks about news.
    overrides, error = _get_overrides(str(lab.APP_SETTINGS))
    assert not error
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"

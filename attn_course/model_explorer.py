"""The trained-model explorer (lecture 08): a ``widgets.Explorer`` over ``model_views``."""

from __future__ import annotations

from dataclasses import asdict

import ipywidgets as widgets
from matplotlib.figure import Figure

from .model_views import ExplorerSettings, HeadCanvas, describe, explore, figure_svg
from .tasks import TASKS
from .widgets import LABEL, Explorer, slider

__all__ = ["ModelExplorer", "model_explorer"]


class ModelExplorer(Explorer):
    """Controls for every ``ExplorerSettings`` field; the picture is ``model_views``' canvas."""

    def __init__(self, settings: ExplorerSettings):
        self.canvas = HeadCanvas(Figure())
        controls = {
            "task": widgets.Dropdown(options=sorted(TASKS), description="task", style=LABEL),
            "layer": slider("layer", 0, 1),
            "head": slider("head", 0, 3),
            "seed": slider("seed", 0, 999),
            "sequence": widgets.Text(
                description="tokens",
                placeholder="empty: sampled; or ids like 3 1 4 1 5",
                continuous_update=False,
                style=LABEL,
            ),
            "trained": widgets.Checkbox(description="trained"),
        }
        super().__init__(settings, controls)

    def render(self, settings: ExplorerSettings) -> tuple[str, tuple[str, ...]]:
        view = explore(settings)
        return figure_svg(self.canvas.draw(view)), (describe(view),)


def model_explorer(**settings) -> ModelExplorer:
    """An explorer of the trained models; keyword arguments are ``ExplorerSettings`` fields."""
    unknown = sorted(set(settings) - set(asdict(ExplorerSettings())))
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; see ExplorerSettings.")
    return ModelExplorer(ExplorerSettings(**settings))

"""The trained-model explorer (lecture 08): a ``widgets.Explorer`` over ``model_views``."""

from __future__ import annotations

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..model_views import HeadCanvas, ModelSettings, describe, figure_svg, model_picture
from ..tasks import TASKS
from .widgets import LABEL, Explorer, slider, starting_settings

__all__ = ["ModelExplorer", "model_explorer"]


class ModelExplorer(Explorer):
    """Controls for every ``ModelSettings`` field; the picture is ``model_views``' canvas."""

    def __init__(self, settings: ModelSettings, message: str = ""):
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
        super().__init__(settings, controls, message)

    def render(self, settings: ModelSettings) -> tuple[str, tuple[str, ...]]:
        view = model_picture(settings)
        return figure_svg(self.canvas.draw(view)), (describe(view),)


def model_explorer(**settings) -> ModelExplorer:
    """An explorer of the trained models; keyword arguments are the starting
    ``ModelSettings``. An unknown keyword or a setting the model cannot show (a layer or
    head it lacks) starts from the defaults and shows why in the explorer."""
    return ModelExplorer(*starting_settings(ModelSettings, settings, check=model_picture))

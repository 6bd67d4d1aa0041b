"""The trained-model explorer (lecture 08): a thin ipywidgets layer over ``model_views``."""

from __future__ import annotations

import html
from dataclasses import asdict, replace

import ipywidgets as widgets
from matplotlib.figure import Figure

from .model_views import ExplorerSettings, HeadCanvas, describe, explore, figure_svg
from .tasks import TASKS

__all__ = ["ModelExplorer", "model_explorer"]


class ModelExplorer(widgets.VBox):
    """Controls for every ``ExplorerSettings`` field, a status line, an error line, a picture."""

    def __init__(self, settings: ExplorerSettings):
        self.controls = {
            "task": widgets.Dropdown(options=sorted(TASKS), value=settings.task,
                                     description="task"),
            "layer": widgets.IntSlider(settings.layer, 0, 1, description="layer",
                                       continuous_update=False),
            "head": widgets.IntSlider(settings.head, 0, 3, description="head",
                                      continuous_update=False),
            "seed": widgets.IntSlider(settings.seed, 0, 999, description="seed",
                                      continuous_update=False),
            "sequence": widgets.Text(settings.sequence, description="tokens",
                                     placeholder="empty: sampled; or ids like 3 1 4 1 5",
                                     continuous_update=False),
            "trained": widgets.Checkbox(settings.trained, description="trained"),
        }  # fmt: skip
        self.settings = settings
        self.canvas = HeadCanvas(Figure())
        self.figure = widgets.HTML()
        self.figure.add_class("attn-explorer-figure")
        self.status = widgets.HTML()
        self.status.add_class("attn-explorer-status")
        self.error = widgets.HTML(layout=widgets.Layout(display="none"))
        self.error.add_class("attn-explorer-error")
        row = widgets.HBox(
            list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap")
        )
        super().__init__([row, self.status, self.error, self.figure])
        self.add_class("attn-explorer")
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.redraw(settings)

    def _on_change(self, _change: dict) -> None:
        self.redraw(replace(self.settings, **{k: c.value for k, c in self.controls.items()}))

    def redraw(self, settings: ExplorerSettings) -> bool:
        """Show ``settings``; on ValueError show the reason, keep the picture, return False."""
        try:
            view = explore(settings)
        except ValueError as error:
            self.error.value = f"<b>That does not work:</b> {html.escape(str(error))}"
            self.error.layout.display = None
            return False
        self.settings = settings
        self.figure.value = figure_svg(self.canvas.draw(view))
        self.status.value = html.escape(describe(view))
        self.error.value = ""
        self.error.layout.display = "none"
        return True


def model_explorer(**settings) -> ModelExplorer:
    """An explorer of the trained models; keyword arguments are ``ExplorerSettings`` fields."""
    unknown = sorted(set(settings) - set(asdict(ExplorerSettings())))
    if unknown:
        raise ValueError(f"unknown setting(s) {unknown}; see ExplorerSettings.")
    return ModelExplorer(ExplorerSettings(**settings))

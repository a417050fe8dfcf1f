"""The explorer's heatmap on a canvas: a Streamlit v2 component fed the float32 map
(views/token_canvas.py), with exact hover, drag-to-zoom and double-click for the whole map;
Plotly's figure of the same map is 1.5 MB at 512 tokens. It mounts in the page, under
`.st-key-<key> [data-attnviz-map]`; with `on_click`, a click on a cell comes back as the "click"
trigger value {"i": row, "j": column}.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

import streamlit as st

from ...views import token_canvas
from ...views.spec import HeatmapSpec
from .. import charts, plot_theme
from ..coldstart.preload import SAFE_SELECTOR
from ..state import t

AFTER_WAIT_MS = 10_000  # the element `after` names is not in the page by then: the map is drawn anyway

CSS = (
    ".attnviz-map{position:relative;width:100%;user-select:none}"
    ".attnviz-map canvas{display:block;cursor:crosshair}"
    ".attnviz-map-tip{position:absolute;display:none;pointer-events:none;white-space:pre;z-index:2;"
    "font:12px 'Source Sans',sans-serif;padding:4px 8px;border-radius:4px;"
    "background:var(--st-background-color,#fff);color:var(--st-text-color,#333);"
    "border:1px solid var(--st-border-color,#ccc)}"
    ".attnviz-map-box{position:absolute;display:none;pointer-events:none;"
    "border:1px solid var(--st-primary-color,#ff4b4b);background:rgba(128,128,128,.15)}"
)


def module_js(name: str) -> str:
    """A canvas chart's module: canvas_common.js, then the chart's own file `name`."""
    folder = resources.files(__package__)
    return "\n".join(folder.joinpath(f).read_text("utf-8") for f in ("canvas_common.js", name))


def waiting(after: str | None) -> tuple[str, int] | None:
    """What a canvas chart's first draw waits for: the element `after` (a plain selector of
    ours) at most AFTER_WAIT_MS, or nothing."""
    if after is None:
        return None
    if not SAFE_SELECTOR.fullmatch(after):
        raise ValueError("not a plain selector")
    return after, AFTER_WAIT_MS


@cache
def _component() -> Any:
    js = module_js("token_canvas.js")
    return st.components.v2.component("attnviz_token_map", js=js, css=CSS, isolate_styles=False)


@cache
def palette() -> dict[str, dict[str, str]]:
    """The chart look's heading, label and background colours, light and dark (plot_theme)."""
    colours = {mode: plot_theme.palette(mode) for mode in plot_theme.MODES}
    return {mode: {"heading": p["heading"], "label": p["gray70"], "background": p["bg"]} for mode, p in colours.items()}


def token_map(
    spec: HeatmapSpec,
    key: str,
    *,
    after: str | None = None,
    on_click: Callable[[], None] | None = None,
    mark: tuple[int, int] | None = None,
    hint: str | None = None,
) -> None:
    """One map (`views.spec.heatmap_spec`) on the canvas, the PNG and SVG buttons under it; no
    plotly figure is made. The first draw waits for the element `after` (the explorer's sentence
    box), since Streamlit loads the text area's code lazily and the component's could come first
    (tests/test_browser_cold_start.py). `on_click`: called when a cell is clicked, its cell in
    st.session_state[key]["click"]; `mark`: the (row, column) cell outlined; `hint`: what the map
    tells screen readers, how to zoom by default."""
    words = t("map.zoom_hint") if hint is None else hint
    data = token_canvas.map_payload(
        spec, palette=palette(), hint=words, after=waiting(after), click=on_click is not None, mark=mark
    )
    _component()(key=key, data=data, on_click_change=on_click)  # None: no trigger registered
    charts.image_buttons(spec.height, key)

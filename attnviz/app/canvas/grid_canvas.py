"""The explorer's all-heads grid on a canvas: a Streamlit v2 component fed the mosaic
(views/grid_canvas.py), so the explorer's first screen needs no Plotly code. It mounts in the
page, under `.st-key-<key> [data-attnviz-grid]`; a click comes back as the "click" trigger value
{"layer": l, "head": h}, read by `heads_off.grid_pick`.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import streamlit as st

from ...result import Attention
from ...views import grid_canvas
from .. import charts, heads_off
from ..state import lang, t
from .token_canvas import CSS, module_js, palette, waiting


@cache
def _component() -> Any:
    css = CSS + ".attnviz-grid canvas{cursor:default}"  # the map's look, with no crosshair
    return st.components.v2.component(
        "attnviz_head_grid", js=module_js("grid_canvas.js"), css=css, isolate_styles=False
    )


def head_grid(
    att: Attention,
    focus: tuple[int, int] | None,
    thumb: int,
    off: tuple[tuple[int, int], ...],
    key: str,
    *,
    after: str | None = None,
) -> None:
    """`views.model_view`'s picture (`thumb` px thumbnails, `focus` outlined, `off` crossed out)
    on the canvas, the PNG and SVG buttons under it; `after` as in token_canvas.token_map."""
    data = grid_canvas.grid_payload(
        att,
        focus=focus,
        thumb=thumb,
        off=off,
        palette=palette(),
        hint=t("fig.note_click_head"),
        lang=lang(),
        after=waiting(after),
    )
    _component()(key=key, data=data, on_click_change=partial(heads_off.grid_pick, key, att.n_layers, att.n_heads))
    charts.image_buttons(grid_canvas.grid_height(att.n_layers), key)

"""The explorer's all-heads grid on a canvas: a Streamlit v2 component fed the mosaic.

As a Plotly chart, the only one on the explorer's first screen, it made the browser fetch and
compile Plotly's 4.7 MB chart module. This draws the same picture (views/grid_canvas.py) from its
bytes, in the page, not in an iframe (`isolate_styles=False`): the PNG and SVG buttons under it
and the tests find it under its key, `.st-key-<key> [data-attnviz-grid]`. A click on a head
comes back as the component's "click" trigger value, {"layer": l, "head": h}, which
`heads_off.grid_pick` reads in the rerun the click starts (a trigger holds for that one run).
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

__all__ = ["head_grid"]

GRID_CSS = CSS + ".attnviz-grid canvas{cursor:default}"


@cache
def _component() -> Any:
    return st.components.v2.component(
        "attnviz_head_grid", js=module_js("grid_canvas.js"), css=GRID_CSS, isolate_styles=False
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
    """Every layer x head of `att` (`views.model_view`'s picture, `thumb` px thumbnails, `focus`
    outlined, `off` crossed out, a decoder's groups outlined) on the canvas; a click focuses a
    head or switches it (heads_off.grid_pick). Under it the PNG and SVG buttons. `after`: what
    its first draw waits for (token_canvas.token_map)."""
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
    name = "attnviz-" + key.removeprefix("chart_").replace("_", "-")
    charts.image_buttons(grid_canvas.grid_height(att.n_layers), key, name, charts.page_caption())

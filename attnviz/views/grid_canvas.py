"""The explorer's all-heads grid as the bytes the app's canvas (app/canvas/grid_canvas.js) draws
from, so its first screen loads no Plotly: the picture `model_view` + `ablation.mark_off` +
`decoder.mark_groups` draw, in `token_canvas.pack`'s format under b"AVG1". Hover lines are plain
text (tokens as they are: the canvas writes them as text, never as markup).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import FOCUS_COLOR, Json
from .ablation import OFF_COLOR
from .decoder import group_marks
from .grid import cell_hovers, grid_height, mosaic
from .token_canvas import pack, unpack, waits_for

MAGIC = b"AVG1"


def grid_payload(
    att: Attention,
    *,
    focus: tuple[int, int] | None = None,
    thumb: int = 32,
    off: Iterable[tuple[int, int]] = (),
    palette: dict[str, dict[str, str]],
    hint: str = "",
    lang: str = DEFAULT_LANGUAGE,
    after: tuple[str, int] | None = None,
) -> bytes:
    """The canvas message for every layer x head of `att`; `palette`, `after`: as
    `token_canvas.map_payload`'s; `hint`: what a click does, for screen readers."""
    n_layers, n_heads = att.n_layers, att.n_heads
    trace, size, gap, title = mosaic(att, focus, thumb, lang)
    head: Json = {
        "shape": list(trace["z"].shape),
        "layers": n_layers,
        "heads": n_heads,
        "thumb": size,
        "gap": gap,
        "title": title,
        "notes": [t("fig.note_click_head", lang)],
        "xtitle": t("fig.head", lang),
        "ytitle": t("fig.layer", lang),
        "bar": trace["colorbar"]["title"]["text"],
        "scale": [[float(p), str(c)] for p, c in trace["colorscale"]],
        "zmin": float(trace["zmin"]),
        "zmax": float(trace["zmax"]),
        "hover": hover_lines(att, lang),
        "focus": None if focus is None else [int(focus[0]), int(focus[1])],
        "focus_colour": FOCUS_COLOR,
        "off": [list(h) for h in sorted({(int(a), int(b)) for a, b in off})],
        "off_colour": OFF_COLOR,
        "height": grid_height(n_layers),
        "palette": palette,
        "hint": hint,
        "after": waits_for(after),
    } | group_marks(att, lang=lang)
    return pack(MAGIC, head, trace["z"])


def hover_lines(att: Attention, lang: str = DEFAULT_LANGUAGE) -> list[list[str]]:
    """Per head, layer by layer (`model_view`'s hover order): its hover's lines as plain text, the
    key token as it is (escaped in `cell_hovers`, so a token is never a line break, and read back)."""
    return [[html.unescape(line) for line in text.split("<br>")] for text in cell_hovers(att, lang)]


def read(data: bytes) -> tuple[dict[str, Any], np.ndarray]:
    """The header and the (rows, cols) float32 mosaic of a `grid_payload` (NaN between thumbnails)."""
    return unpack(data, MAGIC, "all-heads grid")

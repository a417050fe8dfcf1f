"""The explorer's all-heads grid as the bytes the app's canvas (app/canvas/grid_canvas.js) draws
from, so its first screen loads no Plotly: the picture `model_view` + `ablation.mark_off` +
`decoder.mark_groups` draw, in `token_canvas.pack`'s format under b"AVG1". Hover lines are plain
text (tokens as they are: the canvas writes them as text, never as markup).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import FOCUS_COLOR, Json, head_label
from .ablation import OFF_COLOR
from .decoder import group_marks
from .grid import grid_height, mosaic, top_keys
from .token_canvas import pack, unpack, waits_for

MAGIC = b"AVG1"
_TOKEN = "\0"  # where the hover's token goes: filled after the lines are split, so a token is never a line break


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
    z = np.asarray(trace["z"], dtype=np.float32)
    head: Json = {
        "shape": list(z.shape),
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
    return pack(MAGIC, head, z)


def hover_lines(att: Attention, lang: str = DEFAULT_LANGUAGE) -> list[list[str]]:
    """Per head, layer by layer (`model_view`'s hover order): `fig.hover_model_cell`'s lines as
    plain text, the key token the head looks at most on average as it is."""
    out = []
    for layer, head, k, w in top_keys(att):
        words = t(
            "fig.hover_model_cell", lang, head=head_label(layer, head, lang=lang), token=_TOKEN, i=k, w=f"{w:.2f}"
        )
        out.append([line.replace(_TOKEN, str(att.keys[k])) for line in words.split("<br>")])
    return out


def read(data: bytes) -> tuple[dict[str, Any], np.ndarray]:
    """The header and the (rows, cols) float32 mosaic of a `grid_payload` (NaN between thumbnails)."""
    return unpack(data, MAGIC, "all-heads grid")

"""A one-head token map as the bytes the app's canvas draws from (issue 24.1).

At 512 tokens Plotly's heatmap cost the browser about 0.3 s a new sentence: its 1.5 MB figure
parsed, copied through JSON twice by Streamlit's chart element, then drawn by plotly.js. The
app's canvas component (attnviz/app/token_canvas.js) takes the float32 weights as they are, one
pixel a cell, and reads its hover from the same array. `payload` turns the heatmap figure that
`views.heatmap` made into that message, so both show the same numbers, title and words:

    b"AVM1" | uint32 header length | UTF-8 JSON header | zero padding to 4 | float32 rows x cols

all little-endian. The header carries the tokens as they are (the canvas writes them as text,
never as markup), the titles, the colour scale and range, the hover lines with {q}, {k} and {w}
for the query token, the key token and the weight, and the light and dark colours. `read` is the
inverse, for tests and tools.
"""

from __future__ import annotations

import html
import json
import re
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ._base import Json

__all__ = ["MAGIC", "payload", "read"]

MAGIC = b"AVM1"
_NOTE = re.compile(r"<br><sup>(.*?)</sup>$", re.S)
_TAG = re.compile(r"<[^>]*>")
_PLACEHOLDERS = {"%{y}": "{q}", "%{x}": "{k}", "%{z:.6f}": "{w}", "<extra></extra>": ""}


def _plain(text: str | None) -> str:
    """Plotly text (our own titles: markup tags, escaped entities) as the words a canvas writes."""
    return html.unescape(_TAG.sub("", text or ""))


def _title(text: str | None) -> tuple[str, str | None]:
    """A figure title and its small-print note (`layout_title`'s "<br><sup>note</sup>")."""
    found = _NOTE.search(text or "")
    if found is None:
        return _plain(text), None
    return _plain((text or "")[: found.start()]), _plain(found.group(1))


def _hover(template: str | None) -> list[str]:
    """The heatmap's hovertemplate as lines with {q}, {k} and {w} where Plotly's fields were."""
    text = template or ""
    for field, mark in _PLACEHOLDERS.items():
        text = text.replace(field, mark)
    return [_plain(line) for line in text.split("<br>")]


def payload(
    fig: go.Figure, rows: Sequence[str], cols: Sequence[str], palette: dict[str, dict[str, str]], hint: str = ""
) -> bytes:
    """The canvas message for `fig`, a one-heatmap figure of `views.heatmap`; `rows` and `cols`
    are the tokens down the side and across (bare, as the visitor's text has them); `palette`:
    the light and dark colours ({"light": {"heading", "label", "background"}, "dark": ...});
    `hint`: how to zoom, for screen readers."""
    trace = fig.data[0]
    z = np.ascontiguousarray(trace.z, dtype="<f4")
    if z.shape != (len(rows), len(cols)):
        raise ValueError(f"the map is {z.shape}, its tokens give ({len(rows)}, {len(cols)})")
    title, note = _title(fig.layout.title.text)
    fixed = not trace.zauto and trace.zmin is not None and trace.zmax is not None
    head: Json = {
        "shape": list(z.shape),
        "rows": [str(r) for r in rows],
        "cols": [str(c) for c in cols],
        "title": title,
        "note": note,
        "xtitle": _plain(fig.layout.xaxis.title.text),
        "ytitle": _plain(fig.layout.yaxis.title.text),
        "bar": _plain(trace.colorbar.title.text),
        "hover": _hover(trace.hovertemplate),
        "scale": [[float(p), str(c)] for p, c in trace.colorscale],
        "zmin": float(trace.zmin) if fixed else None,
        "zmax": float(trace.zmax) if fixed else None,
        "height": int(fig.layout.height or 460),
        "palette": palette,
        "hint": hint,
    }
    text = json.dumps(head, ensure_ascii=False).encode("utf-8")
    start = 8 + len(text)
    return MAGIC + struct.pack("<I", len(text)) + text + b"\0" * (-start % 4) + z.tobytes()


def read(data: bytes) -> tuple[dict[str, Any], np.ndarray]:
    """The header and the (rows, cols) float32 map of a `payload`."""
    if data[:4] != MAGIC:
        raise ValueError("not a token map payload")
    (length,) = struct.unpack("<I", data[4:8])
    head = json.loads(data[8 : 8 + length].decode("utf-8"))
    start = 8 + length + (-(8 + length) % 4)
    rows, cols = head["shape"]
    z = np.frombuffer(data, dtype="<f4", count=rows * cols, offset=start).reshape(rows, cols)
    return head, z

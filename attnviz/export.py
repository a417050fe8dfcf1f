"""Exports: figures as self-contained HTML (Plotly JS inlined, works offline) or PNG/SVG where a
static engine exists, and the numbers as CSV / NPZ / JSON, each bundled with the settings that
produced them (text, model, layer, head, options).

Everything a visitor typed is hostile here, and every export is opened later, somewhere else:

- HTML: the settings travel as JSON in ``<script type="application/json" id="attnviz-settings">``
  with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\u003c`` etc., so no text can close
  the element or open a comment; read them back with ``settings_from_html`` or, in the page,
  ``JSON.parse(document.getElementById("attnviz-settings").textContent)``. Plotly escapes ``<``,
  ``>`` and ``/`` in the figure's own JSON. A Content-Security-Policy lets only the page's own
  scripts run (by SHA-256 hash) and forbids every network request.
- CSV: every line goes through ``csv.writer``; a text cell that a spreadsheet would read as a
  formula gets a leading ``'`` (see ``csv_cell``; undo with ``csv_uncell``).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .result import Attention

__all__ = [
    "CSV_FORMULA_CHARS",
    "SETTINGS_ELEMENT_ID",
    "ExportUnavailable",
    "attention_json",
    "attention_npz",
    "csv_cell",
    "csv_uncell",
    "figure_html",
    "figure_image",
    "head_csv",
    "read_head_csv",
    "script_json",
    "settings_from_html",
]

SETTINGS_ELEMENT_ID = "attnviz-settings"
# OWASP CSV injection (and ASVS 1.2.10): a cell starting with one of these is a formula to a
# spreadsheet (tab, CR, LF and NUL because some strip them before looking).
CSV_FORMULA_CHARS = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
CSV_HEADER_CELL = "query \\ key"


class ExportUnavailable(RuntimeError):
    """No static image engine (kaleido and a Chrome) is installed here."""


# --- HTML -------------------------------------------------------------------------------------

# JSON that can sit inside any <script> element: no "<" (so no "</script>", "<!--", "<script"),
# no ">" ("-->", "]]>"), no "&", and no line separators (which old JS parsers treat as newlines).
_SCRIPT_JSON = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})
_SETTINGS_BLOCK = re.compile(
    r'<script type="application/json" id="' + SETTINGS_ELEMENT_ID + r'">(.*?)</script>', re.DOTALL
)
# plotly's own inline scripts; their text is JSON-escaped by plotly (no "<" from any data)
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
_WEBGL_TRACES = frozenset(
    {"scattergl", "splom", "parcoords", "scatter3d", "surface", "mesh3d", "cone", "streamtube", "volume", "isosurface"}
)


def script_json(value: Any) -> str:
    """`value` as JSON text safe inside an HTML <script> element of any type."""
    return json.dumps(value, ensure_ascii=False, default=_jsonable).translate(_SCRIPT_JSON)


def figure_html(fig: go.Figure, settings: Mapping[str, Any] | None = None) -> str:
    """A complete HTML page with plotly.js inlined: opens with no network at all.

    `settings` ride as JSON in <script type="application/json" id="attnviz-settings"> (never in a
    comment or a script that runs). A Content-Security-Policy allows exactly the page's own
    scripts (by hash; eval too only for WebGL traces, which need it), no network and no plugins,
    so even markup that slipped in could not run.
    """
    div = fig.to_html(include_plotlyjs=True, full_html=False, config={"displaylogo": False})
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode("ascii") + "'"
        for s in _INLINE_SCRIPT.findall(div)
    )
    if any(getattr(trace, "type", "") in _WEBGL_TRACES for trace in fig.data):
        hashes += " 'unsafe-eval'"  # regl compiles WebGL draw calls with new Function()
    csp = (
        f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
        "font-src data:; base-uri 'none'; form-action 'none'"
    )
    block = ""
    if settings:
        block = f'<script type="application/json" id="{SETTINGS_ELEMENT_ID}">{script_json(dict(settings))}</script>\n'
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta charset="utf-8" />\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}" />\n'
        "<title>attnviz</title>\n"
        f"{block}"
        "<style>html, body {height: 100%;}</style>\n"
        f"</head>\n<body>\n{div}\n</body>\n</html>\n"
    )


def settings_from_html(html: str) -> dict[str, Any] | None:
    """The settings a `figure_html` page carries, or None if it has none."""
    m = _SETTINGS_BLOCK.search(html)
    if m is None:
        return None
    value = json.loads(m.group(1))
    return value if isinstance(value, dict) else None


def figure_image(fig: go.Figure, fmt: str = "png", scale: float = 2.0) -> bytes:
    """PNG or SVG bytes through kaleido; ExportUnavailable with a readable reason if absent."""
    if fmt not in ("png", "svg"):
        raise ValueError("image format must be 'png' or 'svg'")
    try:
        import kaleido  # noqa: F401
    except ImportError as exc:
        raise ExportUnavailable(
            "PNG/SVG export needs the kaleido package (pip install kaleido) and a Chrome/Chromium; "
            "the HTML export works everywhere"
        ) from exc
    try:
        return bytes(fig.to_image(format=fmt, scale=scale))
    except Exception as exc:  # kaleido present but no browser it can drive
        raise ExportUnavailable(f"static image export failed here ({str(exc).splitlines()[0][:160]})") from exc


# --- CSV --------------------------------------------------------------------------------------


def csv_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: a leading ' when it would start a formula.

    The rule is reversible: ' is added when the text, after any leading 's, starts with one of
    CSV_FORMULA_CHARS; `csv_uncell` strips exactly one ' in that same case.
    """
    return "'" + text if text.lstrip("'").startswith(CSV_FORMULA_CHARS) else text


def csv_uncell(cell: str) -> str:
    """The text `csv_cell` was given."""
    if cell.startswith("'") and cell.lstrip("'").startswith(CSV_FORMULA_CHARS):
        return cell[1:]
    return cell


def head_csv(att: Attention, layer: int, head: int | None, settings: Mapping[str, Any] | None = None) -> str:
    """The focused map as CSV (RFC 4180, written by csv.writer).

    Shape: first the settings, one two-cell row each: ``# key``, value (strings as they are,
    other values as JSON: ``2``, ``true``, ``{"merge_words": false}``); then a header row
    ``query \\ key``, key tokens...; then one row per query token: the token, then n numbers.
    Text cells (keys, string values, tokens) pass through `csv_cell`; numbers are plain numbers.
    Read it back with `read_head_csv`.
    """
    m = att.head(layer, head)
    out = io.StringIO()
    w = csv.writer(out)
    for key, value in _settings(att, settings, layer=layer, head=head).items():
        cell = csv_cell(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=_jsonable)
        w.writerow([csv_cell(f"# {key}"), cell])
    w.writerow([CSV_HEADER_CELL, *map(csv_cell, att.tokens)])
    for tok, row in zip(att.tokens, m, strict=True):
        w.writerow([csv_cell(tok), *(f"{x:.6g}" for x in row)])
    return out.getvalue()


def read_head_csv(text: str) -> tuple[dict[str, str], list[str], np.ndarray]:
    """(settings as text, tokens, (n, n) float64 matrix) from a `head_csv` export, un-escaped."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    start = next(i for i, r in enumerate(rows) if r and r[0] == CSV_HEADER_CELL)
    settings = {csv_uncell(r[0])[2:]: csv_uncell(r[1]) for r in rows[:start]}
    tokens = [csv_uncell(c) for c in rows[start][1:]]
    body = rows[start + 1 :]
    matrix = np.array([[float(x) for x in r[1:]] for r in body], dtype=np.float64).reshape(len(body), len(tokens))
    return settings, tokens, matrix


def attention_npz(att: Attention, settings: Mapping[str, Any] | None = None) -> bytes:
    """weights (layers, heads, n, n) float32, tokens, special, and settings as a JSON string."""
    buf = io.BytesIO()
    np.savez_compressed(
        buf,
        weights=att.weights,
        tokens=np.array(att.tokens, dtype=str),
        special=att.special,
        settings=np.array(json.dumps(_settings(att, settings), ensure_ascii=False)),
    )
    return buf.getvalue()


def attention_json(att: Attention, settings: Mapping[str, Any] | None = None) -> str:
    """The CLI's JSON shape plus the settings."""
    return json.dumps(
        {
            "settings": _settings(att, settings),
            "model": att.model,
            "device": att.device,
            "tokens": att.tokens,
            "truncated": att.truncated,
            "weights": att.weights.round(6).tolist(),
        },
        ensure_ascii=False,
    )


def _settings(att: Attention, settings: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"text": att.text, "model": att.model, "device": att.device, "truncated": att.truncated}
    base.update(extra)
    base.update(settings or {})
    return base


def _jsonable(value: Any) -> Any:
    """json.dumps fallback: numpy scalars and arrays as numbers and lists, anything else as text."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)

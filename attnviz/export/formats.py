"""Exports: figures as offline HTML or PNG/SVG, the numbers as CSV / NPZ / JSON, each with the
settings that produced them. Everything a visitor typed is hostile here.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import i18n
from ..result import Attention
from .csv_cells import CSV_FORMULA_CHARS, CSV_FORMULA_LOOKALIKES, csv_cell, csv_uncell
from .json_numbers import SIGNIFICANT_DIGITS, json_numbers

if TYPE_CHECKING:  # plotly is imported by the HTML and image exports only: --json and CSV need none
    import plotly.graph_objects as go

__all__ = [
    "CSV_FORMULA_CHARS",
    "CSV_FORMULA_LOOKALIKES",
    "PRECISION",
    "SETTINGS_ELEMENT_ID",
    "ExportUnavailable",
    "attention_json",
    "attention_npz",
    "csv_cell",
    "csv_uncell",
    "figure_html",
    "figure_image",
    "head_csv",
    "json_numbers",
    "read_head_csv",
    "script_json",
    "settings_from_html",
    "weights_json",
]

PRECISION = f"{SIGNIFICANT_DIGITS} significant digits"
SETTINGS_ELEMENT_ID = "attnviz-settings"
CSV_HEADER_CELL = "query \\ key"


class ExportUnavailable(RuntimeError):
    """No static image engine (kaleido and a Chrome) is installed here."""


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
    return _utf8(json.dumps(value, ensure_ascii=False, default=_jsonable)).decode("utf-8").translate(_SCRIPT_JSON)


# The all-heads grid (views.model_view: layout.meta.thumb, cells carry customdata [layer, head])
# offline: a click on a head zooms on its map, a click on the same head zooms back out.
_GRID_CLICK_JS = """(() => {
  const gd = document.getElementById('{plot_id}');
  const meta = gd && gd.layout && gd.layout.meta;
  if (!meta || meta.thumb === undefined) return;
  const home = {x: gd.layout.xaxis.range.slice(), y: gd.layout.yaxis.range.slice()};
  let focused = null;
  gd.on('plotly_click', (event) => {
    const point = event.points.find((p) => Array.isArray(p.customdata));
    if (!point) return;
    const [layer, head] = point.customdata, key = layer + '.' + head;
    focused = focused === key ? null : key;
    Plotly.relayout(gd, focused === null ? {'xaxis.range': home.x, 'yaxis.range': home.y}
      : {'xaxis.range': [head - 0.5, head + 0.5], 'yaxis.range': [layer + 0.5, layer - 0.5]});
  });
})();"""  # run by plotly after the plot is drawn (to_html's post_script), inside its own script
TITLE_CHARS = 80


def figure_html(fig: go.Figure, settings: Mapping[str, Any] | None = None, *, lang: str = i18n.DEFAULT_LANGUAGE) -> str:
    """A complete HTML page with plotly.js inlined: opens with no network at all.

    The model and the sentence are in the title and under the plot; the settings are shown
    folded and ride as `script_json` in <script type="application/json" id="attnviz-settings">.
    A Content-Security-Policy allows only the page's own scripts (by hash; eval too for WebGL
    traces), no network and no plugins. An all-heads grid zooms on a clicked head.
    """
    import plotly.io as pio

    from ..views._base import one_line
    from ..views.charts import captioned, slide_caption

    settings = dict(settings or {})
    text, model = (_shown(settings.get(k)) for k in ("text", "model"))
    # the page's title, plain text: "attnviz · model · sentence" (the sentence cut to TITLE_CHARS)
    parts = ["attnviz", " ".join(model.split()) if model else None, one_line(text, TITLE_CHARS) if text else None]
    title = " · ".join(p for p in parts if p is not None)
    shown = captioned(fig, slide_caption(text or None, model or None))
    # Streamlit's template's colours are placeholders ("#000001"...) only Streamlit's page resolves
    if "streamlit" in pio.templates and shown.layout.template == pio.templates["streamlit"]:
        shown.update_layout(template=pio.templates["plotly"])
    grid = isinstance(fig.layout.meta, dict) and "thumb" in fig.layout.meta
    div = shown.to_html(
        include_plotlyjs=True,
        full_html=False,
        config={"displaylogo": False},
        post_script=_GRID_CLICK_JS if grid else None,
    )
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
    block = shown_settings = ""
    if settings:
        block = f'<script type="application/json" id="{SETTINGS_ELEMENT_ID}">{script_json(settings)}</script>\n'
        listed = html.escape(_shown(json.dumps(settings, ensure_ascii=False, indent=1, default=_jsonable)))
        summary = html.escape(i18n.t("slides.settings", lang))
        shown_settings = (
            f'<details class="attnviz-settings"><summary>{summary}</summary><pre>{listed}</pre></details>\n'
        )
    return (
        "<!DOCTYPE html>\n<html>\n<head>\n"
        '<meta charset="utf-8" />\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}" />\n'
        f"<title>{html.escape(title)}</title>\n"
        f"{block}"
        "<style>html, body {height: 100%;} pre {white-space: pre-wrap;}</style>\n"
        f"</head>\n<body>\n{div}\n{shown_settings}</body>\n</html>\n"
    )


def _shown(value: object) -> str:
    """A value as text a page can show: a lone surrogate (undecodable input) as its escape."""
    return "" if value is None else str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def settings_from_html(html: str) -> dict[str, Any] | None:
    """The settings a `figure_html` page carries, or None if it has none."""
    m = _SETTINGS_BLOCK.search(html)
    if m is None:
        return None
    value = json.loads(m.group(1))
    return value if isinstance(value, dict) else None


def figure_image(fig: go.Figure, fmt: str = "png") -> bytes:
    """PNG or SVG bytes through kaleido at twice the figure's size; ExportUnavailable with a readable reason if absent."""
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
        return bytes(fig.to_image(format=fmt, scale=2.0))
    except Exception as exc:  # kaleido present but no browser it can drive
        raise ExportUnavailable(f"static image export failed here ({str(exc).splitlines()[0][:160]})") from exc


def head_csv(att: Attention, layer: int, head: int | None, settings: Mapping[str, Any] | None = None) -> str:
    """The focused map as CSV (RFC 4180, written by csv.writer).

    Shape: the settings, one row each (``# key``, value: strings as they are, others as JSON);
    a header row ``query \\ key``, key tokens...; one row per query token: the token, n numbers.
    Text cells pass through `csv_cell`. Read it back with `read_head_csv`.
    """
    m = att.head(layer, head)
    out = io.StringIO()
    w = csv.writer(out)
    for key, value in _settings(att, settings, layer=layer, head=head).items():
        cell = csv_cell(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=_jsonable)
        w.writerow([csv_cell(f"# {key}"), cell])
    w.writerow([CSV_HEADER_CELL, *map(csv_cell, att.keys)])
    for tok, row in zip(att.tokens, m, strict=True):
        w.writerow([csv_cell(tok), *(f"{x:.6g}" for x in row)])
    return out.getvalue()


def read_head_csv(text: str) -> tuple[dict[str, str], list[str], np.ndarray]:
    """(settings as text, tokens, (n, n) float64 matrix) from a `head_csv` export, un-escaped."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    start = next((i for i, r in enumerate(rows) if r and r[0] == CSV_HEADER_CELL), None)
    if start is None:
        raise ValueError(f"not an attnviz head CSV: no row starts with {CSV_HEADER_CELL!r}")
    settings = {csv_uncell(r[0])[2:]: csv_uncell(r[1]) for r in rows[:start]}
    tokens = [csv_uncell(c) for c in rows[start][1:]]
    body = rows[start + 1 :]
    matrix = np.array([[float(x) for x in r[1:]] for r in body], dtype=np.float64).reshape(len(body), len(tokens))
    return settings, tokens, matrix


def attention_npz(att: Attention, settings: Mapping[str, Any] | None = None) -> bytes:
    """weights (layers, heads, n, n) float32, tokens, special, and settings as a JSON string."""
    buf = io.BytesIO()
    arrays: dict[str, np.ndarray] = {"weights": att.weights, "tokens": np.array(att.tokens, dtype=str)}
    if att.cross:  # cross-attention: the columns' own tokens
        arrays["key_tokens"] = np.array(att.keys, dtype=str)
    arrays["special"] = att.special
    arrays["settings"] = np.array(json.dumps(_settings(att, settings), ensure_ascii=False, default=_jsonable))
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def attention_json(
    att: Attention, settings: Mapping[str, Any] | None = None, *, layer: int | None = None, head: int | None = None
) -> str:
    """`weights_json` with the settings, as text."""
    extra = {key: value for key, value in (("layer", layer), ("head", head)) if value is not None}
    return weights_json(att, layer=layer, head=head, settings=_settings(att, settings, **extra)).decode("utf-8")


def weights_json(
    att: Attention, *, layer: int | None = None, head: int | None = None, settings: Mapping[str, Any] | None = None
) -> bytes:
    """UTF-8 JSON: {["settings",] "model", "device", "tokens", "truncated", ["layer", ["head",]]
    "precision", "weights"}. weights is nested layers x heads x n x n; with `layer`, heads x n x n;
    with `layer` and `head`, n x n. Numbers carry at most 6 significant digits (PRECISION)."""
    if head is not None and layer is None:
        raise ValueError("a head needs a layer")
    doc: dict[str, Any] = {} if settings is None else {"settings": dict(settings)}
    doc.update(model=att.model, device=att.device, tokens=att.tokens, truncated=att.truncated)
    if att.cross:  # cross-attention: the columns are these tokens, not `tokens`
        doc["key_tokens"] = att.keys
    weights = att.weights
    if layer is not None:
        if not 0 <= layer < att.n_layers:
            raise ValueError(f"layer {layer} is out of range: valid layers are 0..{att.n_layers - 1}")
        doc["layer"] = layer
        weights = weights[layer]
        if head is not None:
            if not 0 <= head < att.n_heads:
                raise ValueError(f"head {head} is out of range: valid heads are 0..{att.n_heads - 1}")
            doc["head"] = head
            weights = weights[head]
    doc["precision"] = PRECISION
    head_text = json.dumps(doc, ensure_ascii=False, default=_jsonable)
    return _utf8(head_text[:-1]) + b', "weights": ' + json_numbers(weights) + b"}"


def _settings(att: Attention, settings: Mapping[str, Any] | None, **extra: Any) -> dict[str, Any]:
    base = {"text": att.text, "model": att.model, "device": att.device, "truncated": att.truncated}
    return base | extra | dict(settings or {})


def _utf8(json_text: str) -> bytes:
    """JSON text as UTF-8; a lone surrogate (undecodable input) becomes its escape \\udXXX."""
    return json_text.encode("utf-8", "backslashreplace")


def _jsonable(value: Any) -> Any:
    """json.dumps fallback: numpy scalars and arrays as numbers and lists, anything else as text."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    return str(value)

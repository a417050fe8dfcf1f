"""Exports: figures as self-contained HTML (Plotly JS inlined, works offline) or PNG/SVG where a
static engine exists, and the numbers as CSV / NPZ / JSON, each bundled with the settings that
produced them (text, model, layer, head, options)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .result import Attention

__all__ = [
    "ExportUnavailable",
    "attention_json",
    "attention_npz",
    "figure_html",
    "figure_image",
    "head_csv",
]


class ExportUnavailable(RuntimeError):
    """No static image engine (kaleido and a Chrome) is installed here."""


def figure_html(fig: go.Figure, settings: Mapping[str, Any] | None = None) -> str:
    """A complete HTML page with plotly.js inlined: opens with no network at all."""
    html = fig.to_html(include_plotlyjs=True, full_html=True, config={"displaylogo": False})
    if settings:
        # settings as an HTML comment (escaped so text cannot close it) for provenance
        note = json.dumps(dict(settings), ensure_ascii=False).replace("--", "- -")
        html = html.replace("<head>", f"<head>\n<!-- attnviz settings: {note} -->", 1)
    return html


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


def head_csv(att: Attention, layer: int, head: int | None, settings: Mapping[str, Any] | None = None) -> str:
    """The focused map as CSV: a header row of key tokens, one row per query token.
    Settings come first as '# key: value' comment lines."""
    m = att.head(layer, head)
    out = io.StringIO()
    for key, value in _settings(att, settings, layer=layer, head=head).items():
        out.write(f"# {key}: {json.dumps(value, ensure_ascii=False)}\n")
    w = csv.writer(out)
    w.writerow(["query \\ key", *att.tokens])
    for tok, row in zip(att.tokens, m, strict=True):
        w.writerow([tok, *(f"{x:.6g}" for x in row)])
    return out.getvalue()


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

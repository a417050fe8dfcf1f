"""Exports in the page: every figure as offline HTML (and PNG/SVG where an engine exists), the
numbers as CSV, NPZ and JSON, each with the settings that produced it. Bytes are built only
when a button is clicked."""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from .. import __version__, export
from ..result import Attention
from .state import Ctx, t

__all__ = ["figure_downloads", "image_export_note", "number_downloads", "run_settings"]

_IMAGE_PROBLEM: list[str | None] = []  # checked once per process
_IMAGE_LOCK = threading.Lock()


def image_export_problem() -> str | None:
    """None if PNG/SVG export works in this process, else why not (checked once)."""
    with _IMAGE_LOCK:
        if not _IMAGE_PROBLEM:
            try:
                export.figure_image(go.Figure(), "svg")
            except export.ExportUnavailable as exc:
                _IMAGE_PROBLEM.append(str(exc))
            except Exception as exc:
                _IMAGE_PROBLEM.append(type(exc).__name__)
            else:
                _IMAGE_PROBLEM.append(None)
        return _IMAGE_PROBLEM[0]


def run_settings(context: Ctx, att: Attention, **extra: Any) -> dict[str, Any]:
    """What produced a result, bundled into every export."""
    return {
        "text": att.text,
        "model": att.model,
        "device": att.device,
        "max_tokens": context.max_tokens,
        "attnviz": __version__,
        **extra,
    }


def figure_downloads(fig: go.Figure, name: str, settings: dict[str, Any]) -> None:
    """HTML (offline, plotly.js inlined) for every view, PNG/SVG where an engine exists."""
    problem = image_export_problem()
    cols = st.columns(3 if problem is None else 1)
    cols[0].download_button(
        t("export.html"),
        data=lambda: export.figure_html(fig, settings),
        file_name=f"attnviz-{name}.html",
        mime="text/html",
        key=f"dl_{name}_html",
        on_click="ignore",
        icon=":material/download:",
    )
    if problem is None:
        for col, fmt, mime in ((cols[1], "png", "image/png"), (cols[2], "svg", "image/svg+xml")):
            col.download_button(
                fmt.upper(),
                data=partial(export.figure_image, fig, fmt),
                file_name=f"attnviz-{name}.{fmt}",
                mime=mime,
                key=f"dl_{name}_{fmt}",
                on_click="ignore",
                icon=":material/image:",
            )


def image_export_note() -> None:
    problem = image_export_problem()
    if problem is not None:
        # the reason in the page's words, without the install commands of export.py's message
        st.caption(t("export.no_image", reason=t("export.no_engine")))


def number_downloads(att: Attention, layer: int, head: int | None, settings: dict[str, Any]) -> None:
    """The focused head as CSV, the whole attention as NPZ and JSON, each with its settings."""
    files: tuple[tuple[str, Callable[[], str | bytes], str, str, str], ...] = (
        ("export.csv", partial(export.head_csv, att, layer, head, settings), "attnviz-head.csv", "text/csv", "dl_csv"),
        ("export.npz", partial(export.attention_npz, att, settings), "attnviz-attention.npz", "application/octet-stream", "dl_npz"),
        ("export.json", partial(export.attention_json, att, settings), "attnviz-attention.json", "application/json", "dl_json"),
    )  # fmt: skip
    for col, (label, data, file_name, mime, key) in zip(st.columns(len(files)), files, strict=True):
        col.download_button(
            t(label), data=data, file_name=file_name, mime=mime, key=key, on_click="ignore", icon=":material/download:"
        )

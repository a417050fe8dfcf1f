"""Exports in the page: every figure as offline HTML, the numbers as CSV, NPZ and JSON, each
with the settings and switches that produced it; bytes are built only when a button is clicked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from .. import __version__, export
from ..result import Attention
from .state import Ctx, lang, t


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


# The switches every export records, with their value when the page did not set them.
SWITCHES: dict[str, Any] = {"heads_off": [], "hide_sinks": False, "hide_special": False, "merge_words": False}


def with_switches(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` with every switch named (`SWITCHES`): an export says all heads were on."""
    return {**SWITCHES, **settings}


def figure_downloads(fig: go.Figure | Callable[[], go.Figure], name: str, settings: dict[str, Any]) -> None:
    """Offline HTML (plotly.js inlined, sentence, model and settings in it) of a view; `fig` may
    be a function, then called only once the visitor asks for the file."""
    language = lang()
    st.download_button(
        t("export.html"),
        data=lambda: export.figure_html(fig() if callable(fig) else fig, with_switches(settings), lang=language),
        file_name=f"attnviz-{name}.html",
        mime="text/html",
        key=f"dl_{name}_html",
        on_click="ignore",
        icon=":material/download:",
    )


def number_downloads(got: Callable[[], Attention], layer: int, head: int | None, settings: dict[str, Any]) -> None:
    """The focused head as CSV, the whole attention as NPZ and JSON, each with its settings.
    `got()` gives the attention on a click: the buttons outlive the page run (until the session's
    next run or its end), and what they hold stays in memory that long (app/again.py)."""
    settings = with_switches(settings)
    files: tuple[tuple[str, Callable[[], str | bytes], str, str, str], ...] = (
        ("export.csv", lambda: export.head_csv(got(), layer, head, settings), "attnviz-head.csv", "text/csv", "dl_csv"),
        ("export.npz", lambda: export.attention_npz(got(), settings), "attnviz-attention.npz", "application/octet-stream", "dl_npz"),
        ("export.json", lambda: export.attention_json(got(), settings), "attnviz-attention.json", "application/json", "dl_json"),
    )  # fmt: skip
    for col, (label, data, file_name, mime, key) in zip(st.columns(len(files)), files, strict=True):
        col.download_button(
            t(label), data=data, file_name=file_name, mime=mime, key=key, on_click="ignore", icon=":material/download:"
        )

"""Plotly charts in the page, and what a click on one does.

Callbacks live here, not in a page: Streamlit keeps a chart widget's metadata, callback
included, for the rest of the session, and a chart's widget id changes with its figure. A
callback defined in a page script would pin that run's globals (a 512-token attention is
75 MB, plus its figures) for every figure ever drawn in the session."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.elements.plotly_chart import PlotlyState

from .. import views
from ..models import EMBEDDED_MODEL
from . import nav, urls
from .state import SENTENCE, Ctx, set_sentence

__all__ = ["chart", "focus_from_chart", "highlight_from_chart", "open_in_explorer", "sync_url"]

CONFIG = {"displaylogo": False}


def chart(fig: go.Figure, key: str, **kwargs: Any) -> PlotlyState | DeltaGenerator:
    """A figure across the column's width (its words are already in the visitor's language)."""
    return st.plotly_chart(fig, width="stretch", key=key, config=CONFIG, **kwargs)


def focus_from_chart(chart_key: str) -> None:
    """on_select callback: focus the explorer on the head clicked in chart `chart_key`."""
    pick = views.model_view_pick(st.session_state.get(chart_key))
    if pick is not None:
        st.session_state["layer"], st.session_state["head"] = pick


def highlight_from_chart(chart_key: str) -> None:
    """on_select callback: highlight the token clicked in chart `chart_key`."""
    token = views.token_pick(st.session_state.get(chart_key))
    if token is not None:
        st.session_state["highlight"] = token


def _params(context: Ctx, on_explorer: bool) -> dict[str, str | None]:
    session = st.session_state
    layer, head = (session.get("layer"), session.get("head")) if on_explorer else (None, None)
    return urls.url_params(session.get(SENTENCE, ""), context.model, EMBEDDED_MODEL, context.lang, layer, head)


def sync_url(context: Ctx, on_explorer: bool) -> None:
    """Write the sentence, model, language and (on the explorer) layer/head into the URL, so a
    view can be shared; only what changed is written."""
    qp = st.query_params
    for k, v in _params(context, on_explorer).items():
        if v is None:
            if k in qp:
                del qp[k]
        elif qp.get(k) != v:
            qp[k] = v


def open_in_explorer(context: Ctx, layer: int, head: int, sentence: str | None = None) -> None:
    """Focus the explorer on one head (from a click on another page), with a shareable URL."""
    session = st.session_state
    session["layer"], session["head"] = int(layer), int(head)
    if sentence is not None:
        set_sentence(sentence)
    params = {k: v for k, v in _params(context, on_explorer=True).items() if v is not None}
    st.switch_page(nav.alias(context.lang), query_params=params)

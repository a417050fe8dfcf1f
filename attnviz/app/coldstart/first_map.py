"""A cold server's first map without torch: the focused head's map from the embedded MiniLM in
numpy (models/minilm_numpy.py), drawn right after the sentence box, so the first chart does not
wait for the explorer's sections to import torch. `clear` empties it once the explorer's own map
is drawn in the same run; `drop` frees the numpy weights once the torch model is loaded.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

import streamlit as st

from ...models.minilm_numpy import NumpyMiniLM
from ...models.names import EMBEDDED_MODEL
from ...models.tokens import TextRefused, check_text
from ...result import Attention
from ...views.spec import heatmap_spec
from ..canvas import token_canvas
from ..state import MEAN, SENTENCE_TEXT_AREA, Ctx, t
from ..streamlit_adapter import run_cursors

LOG = logging.getLogger("attnviz")
KEY = "chart_first_map"  # the map's component key (the explorer's own is chart_heatmap)
SLOT = "_first_map_slot"  # session state: (the run's cursors, the slot) while it shows
_MODEL: list[NumpyMiniLM] = []
_LOCK = threading.Lock()
_DROPPED = threading.Event()


def drop() -> None:
    """The torch model is in the registry: the numpy weights go, and no first map is drawn again."""
    with _LOCK:
        _DROPPED.set()
        _MODEL.clear()


def _cold() -> bool:
    """Nothing has imported torch yet, and the torch model was never in the registry."""
    return "torch" not in sys.modules and not _DROPPED.is_set()


def _answer(context: Ctx, text: str) -> Attention | None:
    """The numpy answer as the explorer would show it; None where the page's own run says
    something first (a refused or cut text)."""
    try:
        clean = check_text(text, context.settings.max_chars)
    except TextRefused:
        return None
    with _LOCK:
        if _DROPPED.is_set():
            return None
        if not _MODEL:
            _MODEL.append(NumpyMiniLM())
        model = _MODEL[0]
    att = model.attend(clean, context.max_tokens, limit=context.settings.max_tokens)
    if att.truncated:
        return None
    if st.session_state.get("hide_special", False):
        att = att.without_special()
    return att.merge_words() if st.session_state.get("merge_words", False) else att


def draw(context: Ctx, text: str | None) -> bool:
    """The first map on a cold server with the embedded model; whether it drew one (failures
    are only logged)."""
    st.session_state.pop(SLOT, None)
    if not _cold() or text is None or context.model != EMBEDDED_MODEL or context.device not in ("auto", "cpu"):
        return False
    try:
        att = _answer(context, text)
    except Exception as exc:  # a first look is never worth a traceback
        LOG.warning("attnviz: first map failed: %s: %.300s", type(exc).__name__, exc)
        return False
    if att is None:
        return False
    # the layer and head the explorer's selectboxes will show, clamped as widgets.layer_head clamps them
    layer, head = st.session_state.get("layer"), st.session_state.get("head")
    layer = min(max(layer, 0), att.n_layers - 1) if isinstance(layer, int) else 0
    head = None if head == MEAN else (head if isinstance(head, int) and 0 <= head < att.n_heads else 0)
    slot = st.empty()
    with slot.container(key="first_map"):
        st.caption(t("firstmap.note"))
        zmax = 1.0 if st.session_state.get("color_range", "fixed") == "fixed" else None
        left, _right = st.columns(2, gap="large")  # where and how wide the explorer's own map comes
        with left:
            spec = heatmap_spec(att, layer, head, zmax=zmax, lang=context.lang)
            token_canvas.token_map(spec, KEY, after=SENTENCE_TEXT_AREA)
    st.session_state[SLOT] = (run_cursors(), slot)
    return True


def clear() -> None:
    """Empty this run's first map, if it drew one."""
    cursors_now = run_cursors()
    held: Any = None if cursors_now is None else st.session_state.pop(SLOT, None)
    if held is not None and held[0] is cursors_now:
        held[1].empty()  # the slot

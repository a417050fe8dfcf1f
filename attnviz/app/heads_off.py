"""The heads a visitor has switched off, and the clicks that change them: one set per session, for
one model, in plain session keys (a widget's key is dropped on a page that does not draw it),
shared by the explorer and the Explain page.
"""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from .. import views
from ..models import HeadMode
from . import state, urls

OFF = "heads_off"  # sorted [[layer, head], ...]
OFF_MODEL = "heads_off_model"  # the model the set belongs to: another model starts with all heads on
MODE = state.ABLATION_MODE  # "zero" | "mean"
CLICK = state.ABLATION_CLICK  # bool
MODES: tuple[HeadMode, ...] = ("zero", "mean")


def _own(model: str) -> set[tuple[int, int]]:
    """The heads switched off, the set made `model`'s: another model starts with all heads on; the
    set a shared link brought belongs to the first model that reads it (urls.LINK_OWNER)."""
    session = st.session_state
    if session.get(OFF_MODEL) == urls.LINK_OWNER:
        session[OFF_MODEL] = model
    elif session.get(OFF_MODEL) != model:
        session[OFF], session[OFF_MODEL] = [], model
    return {(int(a), int(b)) for a, b in session.get(OFF, [])}


def current(model: str, n_layers: int, n_heads: int) -> tuple[tuple[int, int], ...]:
    """The heads switched off for `model` (none after a change of model), within its shape
    (heads outside it, from a link, are dropped from the set, and so from the link)."""
    heads = _own(model)
    kept = tuple(sorted((a, b) for a, b in heads if 0 <= a < n_layers and 0 <= b < n_heads))
    if len(kept) != len(heads):
        st.session_state[OFF] = [list(h) for h in kept]
    return kept


def toggle(model: str, layer: int, head: int) -> None:
    """Switch (layer, head) of `model` off, or back on if it is off."""
    heads = _own(model) ^ {(int(layer), int(head))}
    st.session_state[OFF] = [list(h) for h in sorted(heads)]


def replace_with(model: str, heads: list[tuple[int, int]]) -> None:
    """Switch exactly `heads` of `model` off (the pruning curve's "switch off the k least")."""
    st.session_state[OFF], st.session_state[OFF_MODEL] = [list(h) for h in sorted(set(heads))], model


def clear() -> None:
    st.session_state[OFF] = []


def mode() -> HeadMode:
    return "mean" if st.session_state.get(MODE) == "mean" else "zero"


def grid_pick(chart_key: str, n_layers: int, n_heads: int) -> None:
    """on_click_change of the all-heads grid: switch the clicked head off or on when the visitor
    asked for that, otherwise focus it. The trigger value {"layer": l, "head": h} comes from the
    browser, so it is taken only as two ints inside the model."""
    state = st.session_state.get(chart_key)
    click = state.get("click") if isinstance(state, Mapping) else None
    if not isinstance(click, Mapping):
        return
    layer, head = click.get("layer"), click.get("head")
    if not (type(layer) is int and type(head) is int and 0 <= layer < n_layers and 0 <= head < n_heads):
        return
    session = st.session_state
    if session.get(CLICK) and isinstance(session.get(OFF_MODEL), str):
        toggle(session[OFF_MODEL], layer, head)
    else:
        session["layer"], session["head"] = layer, head  # as charts.focus_from_chart


def toggle_from_chart(chart_key: str, model: str) -> None:
    """on_select of a head importance grid: switch the clicked head off or back on."""
    pick = views.model_view_pick(st.session_state.get(chart_key))
    if pick is not None:
        toggle(model, *pick)

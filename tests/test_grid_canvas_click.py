"""A click in the explorer's canvas grid (app/canvas/grid_canvas.py): the browser sends the component's
"click" trigger value {"layer": l, "head": h}; `heads_off.grid_pick` focuses that head, or switches
it off or on in the heads-off click mode, and takes nothing else (a raw websocket client can send
any JSON). The client guard lets a registered component's trigger through, and only that."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest

from attnviz.app.server import client_guard


def _pick(state: object, click_mode: bool) -> None:
    import streamlit as st

    from attnviz.app import heads_off

    session = st.session_state
    if "layer" not in session:
        session["layer"], session["head"] = 0, 0
        session[heads_off.OFF], session[heads_off.OFF_MODEL] = [], "minilm"
    session[heads_off.CLICK] = click_mode
    session["chart_grid"] = state
    heads_off.grid_pick("chart_grid", 6, 12)


def _run(state: Any, click_mode: bool = False) -> AppTest:
    at = AppTest.from_function(_pick, args=(state, click_mode), default_timeout=30)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_click_focuses_the_head() -> None:
    at = _run({"click": {"layer": 3, "head": 5}})
    assert (at.session_state["layer"], at.session_state["head"]) == (3, 5)
    assert at.session_state["heads_off"] == []


def test_in_the_heads_off_mode_a_click_switches_the_head_off_and_on() -> None:
    at = _run({"click": {"layer": 2, "head": 7}}, click_mode=True)
    assert at.session_state["heads_off"] == [[2, 7]] and (at.session_state["layer"], at.session_state["head"]) == (0, 0)
    at.run()  # the same click again: back on
    assert at.session_state["heads_off"] == []


@pytest.mark.parametrize(
    "state",
    [
        None,
        "click",
        {"click": None},
        {"click": [3, 5]},
        {"click": {"layer": 6, "head": 0}},  # past the last layer
        {"click": {"layer": 0, "head": 12}},
        {"click": {"layer": -1, "head": 0}},
        {"click": {"layer": True, "head": 1}},  # a bool is not a layer
        {"click": {"layer": 1.0, "head": 1}},
        {"click": {"layer": "1", "head": "1"}},
        {"click": {"layer": 10**40, "head": 0}},
        {"click": {"head": 1}},
    ],
)
@pytest.mark.parametrize("click_mode", [False, True])
def test_anything_else_a_client_sends_changes_nothing(state: Any, click_mode: bool) -> None:
    at = _run(state, click_mode)
    assert (at.session_state["layer"], at.session_state["head"]) == (0, 0)
    assert at.session_state["heads_off"] == []


def _session(registered: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(_new_widget_state=SimpleNamespace(widget_metadata=registered))


def test_the_guard_keeps_a_registered_components_trigger_and_no_other_internal_key() -> None:
    trigger = "$$STREAMLIT_INTERNAL_KEY_$$ID-0123456789abcdef0123456789abcdef-chart_grid__events"
    meta = SimpleNamespace(value_type="json_trigger_value", deserializer=lambda v: v)
    sent = WidgetState(id=trigger, json_trigger_value='{"event": "click", "value": {"layer": 1, "head": 2}}')
    assert client_guard._well_formed(_session({trigger: meta}), sent)
    assert not client_guard._well_formed(_session({}), sent)  # no such component in this session
    wrong_field = WidgetState(id=trigger, string_value="click")
    assert not client_guard._well_formed(_session({trigger: meta}), wrong_field)
    other = WidgetState(id="$$STREAMLIT_INTERNAL_KEY_something", json_trigger_value="{}")
    assert not client_guard._well_formed(_session({other.id: meta}), other)
    long = WidgetState(id=trigger + "x" * client_guard.MAX_ID_CHARS, json_trigger_value="{}")
    assert not client_guard._well_formed(_session({long.id: meta}), long)


def test_the_grids_html_download_is_the_plotly_figure_of_the_same_picture() -> None:
    from attnviz import export, views
    from attnviz.app.sections.explorer import grid_figure
    from attnviz.views import decoder as decoder_views
    from attnviz.views.ablation import mark_off

    from .test_decoder_app_views import causal

    att = causal(3, 6, 9, kv=2)
    fig = grid_figure(lambda: att, (1, 2), 32, ((0, 4),), "en")  # made only when the visitor asks for the file
    want = decoder_views.mark_groups(mark_off(views.model_view(att, focus=(1, 2), lang="en"), [(0, 4)]), att)
    assert fig.to_json() == want.to_json()
    assert "<html" in export.figure_html(fig, {"text": "t", "model": "toy"}).lower()

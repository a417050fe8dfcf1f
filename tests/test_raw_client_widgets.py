"""A client that leaves out widget states (issue 26.8): a raw websocket client opens the Training
lab, goes to another page (the lab's widget states are dropped), then clicks Train sending only
the button's trigger. It used to crash its own click with
`KeyError 'train_task'` and a traceback in the server log; now the callback reads defaults and
the log has no traceback."""

from __future__ import annotations

import time

import pytest

from .browser import LogFrom, server_log, wait_healthy

pytestmark = pytest.mark.slow


def _rerun(ws: object, widgets: list[object] | None = None, page: str = "training") -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    msg.rerun_script.page_name = page
    msg.rerun_script.query_string = ""
    for widget in widgets or []:
        msg.rerun_script.widget_states.widgets.append(widget)  # type: ignore[arg-type]
    ws.send(msg.SerializeToString())  # type: ignore[attr-defined]


def _until_finished(ws: object, deadline: float) -> list[object]:
    """Every delta of one script run, until the server says it finished."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    deltas = []
    while time.monotonic() < deadline:
        msg = ForwardMsg()
        msg.ParseFromString(ws.recv(timeout=max(0.1, deadline - time.monotonic())))  # type: ignore[attr-defined]
        if msg.WhichOneof("type") == "delta":
            deltas.append(msg.delta)
        if msg.WhichOneof("type") == "script_finished" and msg.script_finished != msg.FINISHED_EARLY_FOR_RERUN:
            return deltas
    raise AssertionError("the script run did not finish in time")


@pytest.mark.browser  # a real `streamlit run` server (tests/test_markers.py)
def test_a_train_click_without_the_other_widget_states_is_no_crash(_shared_server: str) -> None:
    """On the worker's shared server (tests/conftest.py), its log read from where it stood."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState
    from websockets.sync.client import connect

    url = _shared_server
    log = LogFrom(server_log(url))
    with connect(url.replace("http://", "ws://") + "/_stcore/stream", subprotocols=["streamlit"]) as ws:  # type: ignore[list-item]
        _rerun(ws)
        deltas = _until_finished(ws, time.monotonic() + 180)
        button = next(
            d.new_element.button.id for d in deltas
            if d.new_element.WhichOneof("type") == "button" and d.new_element.button.id.endswith("train_start")
        )  # fmt: skip
        _rerun(ws, page="explorer")  # another page: the lab's widget states are dropped
        deltas += _until_finished(ws, time.monotonic() + 180)
        _rerun(ws, [WidgetState(id=button, trigger_value=True)])  # only the click, no other state
        after = _until_finished(ws, time.monotonic() + 180)
    assert not any(d.new_element.WhichOneof("type") == "exception" for d in deltas + after)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text and "KeyError" not in text, text[-2000:]
    wait_healthy(url, timeout=30)  # the server is still up

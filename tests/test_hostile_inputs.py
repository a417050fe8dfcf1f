"""No traceback from any client message, well-formed or not (issue 26, item 7): a raw websocket
client sends every widget of every page values of every wrong type, values of the right type that
no browser sends (indexes past the end, NaN, unknown options), ids nobody registered, frames that
are not protobuf, and the other BackMsg kinds with odd contents. The server log stays free of
tracebacks, no run ends in an exception, and the session then analyses a sentence as usual
(attnviz/app/server/client_guard.py). No browser: the messages are what a script sends."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from .browser import LogFrom, server_log

pytestmark = [pytest.mark.slow, pytest.mark.browser]  # a real `streamlit run` server (tests/test_markers.py)

PAGES = ["", "explain", "lab", "caveats", "corpus", "training"]
TRIGGERS = {"trigger_value", "string_trigger_value", "json_trigger_value"}
BUTTONS = {"button", "download_button", "form_submit_button"}
RUN_S = 120.0


def _state(wid: str, field: str, value: Any) -> Any:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    s = WidgetState()
    s.id = wid
    if field in ("double_array_value", "int_array_value", "string_array_value"):
        getattr(s, field).data.extend(value)
    elif field in ("string_trigger_value", "chat_input_value", "arrow_value"):
        getattr(s, field).data = value
    elif field == "file_uploader_state_value":
        f = s.file_uploader_state_value.uploaded_file_info.add()
        f.file_id, f.name, f.size = "../../etc/passwd", "<script>.txt", 5
    else:
        setattr(s, field, value)
    return s


# one value a field: wrong for most widgets, and for the rest a value no browser sends
VALUES: list[tuple[str, Any]] = [
    ("bool_value", True),
    ("double_value", math.nan),
    ("double_value", -1e308),
    ("int_value", 2**62),
    ("int_value", -1),
    ("string_value", "zz\u202e<b>"),
    ("json_value", "{not json"),
    ("json_value", '{"selection": {"points": [{"x": 1e308, "y": null}]}}'),
    ("bytes_value", b"\xff\x00"),
    ("trigger_value", True),
    ("string_trigger_value", "x"),
    ("json_trigger_value", "[1,"),
    ("arrow_value", b"not arrow"),
    ("double_array_value", [math.nan, 1e9, -1e9]),
    ("int_array_value", [99999, -1]),
    ("string_array_value", ["no such option", ""]),
    ("file_uploader_state_value", None),
    ("chat_input_value", "hi"),
]


class Client:
    """A raw websocket client: one Streamlit session."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self._connection = connect(ws_url, subprotocols=["streamlit"], max_size=None)  # type: ignore[list-item]
        self.ws = self._connection.__enter__()

    def send_raw(self, data: bytes) -> None:
        self.ws.send(data)

    def send(self, msg: Any) -> None:
        self.ws.send(msg.SerializeToString())

    def rerun(self, page: str, query: str = "", states: list[Any] | None = None) -> list[Any]:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = page
        msg.rerun_script.widget_states.widgets.extend(states or [])
        self.send(msg)
        return self.until_finished()

    def until_finished(self) -> list[Any]:
        """ForwardMsgs up to the end of the run (a deadline, not a sleep)."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        out: list[Any] = []
        end = time.monotonic() + RUN_S
        while time.monotonic() < end:
            m = ForwardMsg()
            m.ParseFromString(self.ws.recv(timeout=max(0.1, end - time.monotonic())))
            out.append(m)
            if m.WhichOneof("type") == "script_finished":
                return out
        raise AssertionError("the run did not finish")

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


def elements(msgs: list[Any]) -> Iterator[tuple[str, Any]]:
    for m in msgs:
        if m.WhichOneof("type") == "delta" and m.delta.WhichOneof("type") == "new_element":
            kind = m.delta.new_element.WhichOneof("type")
            yield kind, getattr(m.delta.new_element, kind)


def _widgets(msgs: list[Any]) -> dict[str, str]:
    return {e.id: kind for kind, e in elements(msgs) if getattr(e, "id", "")}


def _exceptions(msgs: list[Any]) -> list[str]:
    return [e.message for kind, e in elements(msgs) if kind == "exception"]


@pytest.fixture(scope="module")
def served(_shared_server: str) -> tuple[str, LogFrom]:
    """The worker's shared server (tests/conftest.py; the settings this module needs), and its
    log from here on: what this module's messages made it write."""
    return _shared_server, LogFrom(server_log(_shared_server))


def _tracebacks(log: LogFrom) -> list[str]:
    text = log.read_text(errors="replace")
    return [text[max(0, m.start() - 200) : m.start() + 1500] for m in re.finditer("Traceback", text)]


def _works(url: str, words: str) -> None:
    """A fresh session analyses a sentence: its tokens come back in the explorer's page."""
    c = Client(url)
    try:
        msgs = c.rerun("", query="text=" + words.replace(" ", "+"))
        assert not _exceptions(msgs)
        assert all(w.encode() in b"".join(m.SerializeToString() for m in msgs) for w in words.split())
    finally:
        c.close()


@pytest.mark.parametrize("page", PAGES, ids=[p or "explorer" for p in PAGES])
def test_widget_states_of_any_type_end_no_run_in_a_traceback(served: tuple[str, LogFrom], page: str) -> None:
    url, log = served
    c = Client(url)
    try:
        first = c.rerun(page, query="text=hello+world")
        assert not _exceptions(first)
        widgets = _widgets(first)
        assert widgets, "the page drew no widget"
        ids = [*widgets, "$$ID-00000000000000000000000000000000-unknown", "", "x" * 5000]
        for field, value in VALUES:
            states = [
                _state(wid, field, value)
                for wid in ids
                if not (field in TRIGGERS and widgets.get(wid) in BUTTONS)  # a click of every button
            ]
            msgs = c.rerun(page, query="text=hello+world", states=states)
            assert not _exceptions(msgs), (page, field, value)
            assert not _tracebacks(log), (page, field, _tracebacks(log)[0])
        again = c.rerun(page, query="text=hello+world")
        assert not _exceptions(again) and _widgets(again)  # checkboxes set True may open more
    finally:
        c.close()
    _works(url, f"still working after page {page or 'explorer'}")


def test_frames_that_are_not_backmsgs_and_odd_requests_leave_no_traceback(served: tuple[str, LogFrom]) -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    url, log = served
    forward = ForwardMsg()
    forward.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    frames = [b"\xff" * 64, b"\x0a\xff\xff\xff\xff\x0f", b"", forward.SerializeToString(), bytes(range(256))]
    for frame in frames:  # each closes its socket (a protocol error); nothing else happens
        c = Client(url)
        c.send_raw(frame)
        c.close()
    odd: list[BackMsg] = []
    for build in (
        lambda m: m.file_urls_request.file_names.extend(["../../x", "<script>", "\0" * 300]),
        lambda m: setattr(m.file_urls_request, "session_id", "not mine"),
        lambda m: setattr(m.backend_operation_request, "request_id", "x" * 3000),
        lambda m: setattr(m, "set_run_on_save", True),
        lambda m: setattr(m, "stop_script", True),
        lambda m: setattr(m, "load_git_info", True),
        lambda m: setattr(m, "app_heartbeat", True),
        lambda m: setattr(m.rerun_script, "page_script_hash", "../../../etc/passwd"),
        lambda m: setattr(m.rerun_script, "fragment_id", "no-such-fragment"),
        lambda m: setattr(m.rerun_script, "query_string", "%ff%fe&&==&text=%00%ud800&layer=" + "9" * 4000),
        lambda m: setattr(m.rerun_script.context_info, "timezone", "Mars/Phobos"),
        lambda m: setattr(m.rerun_script.context_info, "locale", "\u202e" * 1000),
    ):
        msg = BackMsg()
        build(msg)
        odd.append(msg)
    c = Client(url)
    try:
        c.rerun("", query="text=hello")
        for msg in odd:
            c.send(msg)
        msgs = c.rerun("", query="text=after+odd+messages")
        assert not _exceptions(msgs)
    finally:
        c.close()
    assert not _tracebacks(log), _tracebacks(log)[0]
    _works(url, "still working after odd frames")

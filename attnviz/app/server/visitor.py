"""Telling visitors apart, so that a visitor's sessions share one budget and one fair share.

A visitor is, behind a trusted proxy (`ATTNVIZ_TRUST_PROXY=1`), the client address the proxy
appended last to `X-Forwarded-For` (or `X-Real-Ip`); else the random token in the
`attnviz_visitor` cookie, which a session's first run sets with a one-line same-origin script,
and which Streamlit hands to `st.context.cookies` in every later tab. A client that keeps no
cookies is a new visitor each session, which the fair queues bound: a new visitor goes ahead
only of those who have spent more.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
from collections.abc import Iterator

import streamlit as st

from ...config import Settings
from ...models import gate
from ..state import t
from ..streamlit_adapter import DeltaGenerator, before_each_message, script_run, session_id, stop_check
from . import budget

COOKIE = "attnviz_visitor"
MAX_AGE_S = 30 * 24 * 3600
TOKEN = re.compile(r"[0-9a-f]{32}")
ADDRESS = re.compile(r"[0-9A-Fa-f.:]{2,45}")  # an IPv4 or IPv6 address, nothing else kept


def _script_visitor() -> str | None:
    """The gate's resolver: the visitor of the script run on this thread, if any."""
    run = script_run(quiet=True)
    return None if run is None else budget.visitor_of(run.session_id)


def _proxy_address() -> str | None:
    headers = st.context.headers
    forwarded = [a.strip() for v in headers.get_all("X-Forwarded-For") for a in v.split(",") if a.strip()]
    for candidate in (forwarded[-1] if forwarded else None, headers.get("X-Real-Ip"), st.context.ip_address):
        if candidate and ADDRESS.fullmatch(candidate):
            return candidate
    return None


def identify(settings: Settings) -> str:
    """Once a run, in app.py: which visitor this session is; the memory budget for the gate."""
    gate.configure(memory_mb=settings.memory_mb)
    session = session_id()
    session_state = st.session_state
    if settings.trust_proxy and (address := _proxy_address()) is not None:
        key = f"ip:{address}"
    else:
        cookie = st.context.cookies.get(COOKIE)
        if isinstance(cookie, str) and TOKEN.fullmatch(cookie):
            key = f"c:{cookie}"
        else:
            token = session_state.setdefault("_visitor_token", secrets.token_hex(16))
            key = f"c:{token}"
            if not session_state.get("_visitor_cookie_sent"):
                session_state["_visitor_cookie_sent"] = True
                # the token is 32 hex digits of ours: nothing of the visitor's reaches the script
                st.sidebar.html(
                    f"<script>document.cookie='{COOKIE}={token}; path=/; max-age={MAX_AGE_S}; SameSite=Lax'</script>",
                    unsafe_allow_javascript=True,
                )
    budget.bind(session, key)
    return key


def visitor() -> str:
    """This session's visitor."""
    return budget.visitor_of(session_id())


@contextlib.contextmanager
def turn() -> Iterator[None]:
    """Around a page run (app.py): the run waits its turn (budget.page_turn: a few page runs at
    once server-wide, at most budget.PER_VISITOR_RUNS of one visitor, who has cost the server
    least first) with a line that says so (a newer rerun of the tab ends the wait: the line is a
    Streamlit call, where Streamlit stops a superseded run); once going, each thing it sends to
    the browser is a checkpoint where it pauses for a visitor who has cost the server less."""
    note: list[DeltaGenerator] = []
    who = visitor()

    def waiting() -> None:
        if not note:
            note.append(st.empty())
        if budget.PAGE_RUNS.of(who) >= budget.PER_VISITOR_RUNS:
            note[0].caption(t("fair.other_tabs", n=budget.PER_VISITOR_RUNS))
        else:
            note[0].caption(t("flood.page_wait"))

    with budget.page_turn(who, waiting) as held:
        for line in note:
            line.empty()
        with _checkpoints(held):
            yield


def aside() -> contextlib.AbstractContextManager[None]:
    """Heavy work of this script run (budget.aside): out of the page runs while it waits in the
    heavy queue and goes; a rerun request ends the wait to go on after it."""
    return budget.aside(stop_check())


@contextlib.contextmanager
def _checkpoints(held: budget.Turn) -> Iterator[None]:
    """Each message this run's thread sends (Streamlit's own yield points, where a rerun request
    stops a run) first passes `held.checkpoint()`; while paused there, the session's rerun or
    stop requests still end the run (Streamlit's `yield_check`)."""
    me, stops = threading.get_ident(), stop_check()

    def checkpoint() -> None:
        if threading.get_ident() == me:
            held.checkpoint(stops)

    with before_each_message(checkpoint):
        yield


gate.configure(resolver=_script_visitor)

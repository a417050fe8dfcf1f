"""One link keeps the whole view (issue 23, item 5), in the app through AppTest: a link with heads
switched off, hidden sinks, a token pair, a colour range and hidden specials restores each of
them; values past their bounds are clamped and written back into the link in the same run; the
sidebar's copy box holds the link; an old link (text, model, lang, layer, head) opens as before
with nothing said. Pure parts: tests/test_share_links.py; a real browser: test_browser_share.py."""

from __future__ import annotations

import urllib.parse
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.app import copy_link

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 240
TEXT = "The animal didn't cross the street because it was too tired."

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _query(at: AppTest) -> dict[str, str]:
    return {k: (v[0] if isinstance(v, list) else v) for k, v in ((k, at.query_params[k]) for k in at.query_params)}


def _link(at: AppTest) -> str:
    """The link the sidebar's copy box shows (app/copy_link.py)."""
    links = [link for e in at.sidebar.get("bidi_component") if (link := copy_link.link_of(e)) is not None]
    assert links, "no share link in the sidebar"
    return links[-1]


def _said(at: AppTest) -> str:
    return " ".join(str(e.value) for e in [*at.error, *at.warning, *at.info, *at.markdown, *at.caption])


def test_a_link_restores_the_whole_view_clamps_and_writes_back() -> None:
    at = _app(text=TEXT, off="1.3_0.2_9.9", sinks="1", q="40", k="2", range="auto", special="1", thr="7", hl="3")
    session = at.session_state
    assert session["heads_off"] == [[0, 2], [1, 3]]  # 9.9 is outside MiniLM's 6 x 12: dropped
    assert at.toggle(key="sinks_toggle").value is True
    assert at.checkbox(key="hide_special").value is True
    assert at.radio(key="color_range").value == "auto"
    assert at.toggle(key="focus_open").value is True
    assert at.selectbox(key="focus_key").value == 2 and at.selectbox(key="focus_query").value == 0  # 40: clamped
    assert at.selectbox(key="highlight").value == 3
    assert at.slider(key="threshold").value == 1.0
    assert at.button(key="abl_all_on").disabled is False  # heads are off: "all back on" is live
    q = _query(at)
    assert (q["off"], q["sinks"], q["q"], q["k"], q["range"], q["special"], q["thr"], q["hl"]) == (
        "0.2_1.3", "1", "0", "2", "auto", "1", "1", "3"
    )  # fmt: skip
    assert i18n.t("links.removed", "en", names="off") not in _said(at)  # a clamp is not a refusal
    box = _link(at)
    shared = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(box).query))
    assert shared == q  # the copy box holds the link as the URL now says it


def test_an_old_link_opens_as_before_with_nothing_said() -> None:
    at = _app(text="dog bites man", lang="en", layer="2", head="mean")
    assert at.text_area(key="sentence_input").value == "dog bites man"
    assert at.selectbox(key="layer").value == 2 and at.selectbox(key="head").value == -1
    assert at.session_state["heads_off"] == [] and at.toggle(key="sinks_toggle").value is False
    assert at.button(key="abl_all_on").disabled is True
    assert i18n.t("links.removed", "en", names="").split(":")[0] not in _said(at)
    q = _query(at)
    # nothing written for the switches left at their defaults (the highlighted token is a choice
    # the page makes for the sentence, and may be written)
    assert set(q) - {"hl"} == {"text", "lang", "layer", "head"}


def test_a_view_changed_on_the_page_is_written_into_the_link() -> None:
    at = _app(text=TEXT)
    at.toggle(key="sinks_toggle").set_value(True)
    at.radio(key="color_range").set_value("auto")
    at.run()
    assert not at.exception
    q = _query(at)
    assert q.get("sinks") == "1" and q.get("range") == "auto"
    assert "sinks=1" in _link(at)

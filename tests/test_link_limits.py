"""Link limits measured on what the visitor typed (attnviz/app/server/client_guard.py bounded_query and
attnviz/app/urls.py): a text of at most ATTNVIZ_MAX_CHARS characters reaches the page however the
browser percent-encoded it (`%20` for a space, nine characters for a Chinese one, twelve for an
emoji), a longer one is refused with its length, an empty one as empty, and every value the page
drops is named with why. The pure parts go through Streamlit's own query parser with the guard
installed; the app through AppTest, with the query written as a browser writes it."""

from __future__ import annotations

import types
import urllib.parse
from pathlib import Path

import pytest
from streamlit.runtime.state import query_params as st_query_params
from streamlit.testing.v1 import AppTest, local_script_runner

from attnviz import i18n
from attnviz.app import link_refusals, urls
from attnviz.app.server import client_guard
from attnviz.config import DEFAULT_MAX_CHARS, settings_from_env

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 240
# 49,000 characters of English: as a browser writes it (a space as %20) 66,xxx in the URL
ENGLISH = ("The animal didn't cross the street because it was too tired. " * 800)[:49_000]
CHINESE = ("动物没有过马路，因为它太累了。" * 500)[:7_500]  # 67,500 characters percent-encoded


@pytest.fixture(autouse=True)
def _guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's settings, and the guard installed before the first run reads a query (app.py
    installs it on its first run, after Streamlit has read that run's query)."""
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    client_guard.install(settings_from_env({}))


def _as_streamlit_reads(query: str) -> dict[str, str]:
    """The query as the page reads it: Streamlit's parser, behind the patched sanitiser."""
    return {k: v[-1] for k, v in st_query_params._parse_query_string(query).items()}


def _browser_query(**params: str) -> str:
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote)  # a space as %20, as browsers write it


def test_a_49000_character_english_text_with_percent20_spaces_is_kept_whole() -> None:
    query = _browser_query(text=ENGLISH, lang="en")
    assert len(query) > client_guard.QUERY_PARAM_MAX  # what the 64 KB cap on the raw value refused
    params = _as_streamlit_reads(query)
    assert params == {"text": ENGLISH, "lang": "en"}
    link = urls.parse_link(params, DEFAULT_MAX_CHARS)
    assert (link.text, link.problems) == (ENGLISH, ())


def test_chinese_and_emoji_texts_of_the_longest_allowed_length_are_kept_whole() -> None:
    longest_chinese = ("猫" * DEFAULT_MAX_CHARS)[:DEFAULT_MAX_CHARS]  # 450,000 characters in the URL
    emoji = "😀 %&+=" * (DEFAULT_MAX_CHARS // 6)  # an emoji is 12 characters, and what parse_qs splits on
    for text in (CHINESE, longest_chinese, emoji):
        params = _as_streamlit_reads(_browser_query(text=text, layer="3"))
        assert params == {"text": text, "layer": "3"}
        assert urls.parse_link(params, DEFAULT_MAX_CHARS).text == text


def test_a_text_over_the_limit_is_refused_with_its_length_and_an_empty_one_as_empty() -> None:
    for length in (DEFAULT_MAX_CHARS + 1, 300_000):  # kept raw and measured by the page; cut by the guard
        params = _as_streamlit_reads(_browser_query(text="猫" * length))
        link = urls.parse_link(params, DEFAULT_MAX_CHARS)
        assert (link.text, link.problems, link.text_chars) == (None, ("text",), length)
        said = link_refusals.text_refusal(link, DEFAULT_MAX_CHARS, "en")
        assert said == i18n.t("links.text_long", "en", n=f"{length:,}", limit=f"{DEFAULT_MAX_CHARS:,}")
        assert f"{length:,}" in link_refusals.text_refusal(link, DEFAULT_MAX_CHARS, "zh")
    for empty in ("", "   "):
        link = urls.parse_link(_as_streamlit_reads(_browser_query(text=empty)), DEFAULT_MAX_CHARS)
        assert (link.text, link.problems, link.text_chars) == (None, ("text",), 0)
        assert link_refusals.text_refusal(link, DEFAULT_MAX_CHARS, "zh") == i18n.t("links.text_empty", "zh")


def test_what_a_hostile_url_leaves_the_server_is_bounded() -> None:
    huge = "%E7%8C%AB" * 400_000  # 3.6 M characters: 400,000 typed
    query = f"text={huge}&off={huge}&junk=1&{'k' * 90_000}={huge}"
    kept = client_guard.bounded_query(query)
    assert len(kept) < 200
    params = _as_streamlit_reads(query)
    assert urls.cut_length(params["text"]) == urls.cut_length(params["off"]) == 400_000
    # several values each under the per-value cap but over Streamlit's whole-query limit (which
    # drops every parameter, the text too): the others are cut, the text kept
    many = "&".join(f"junk{i}={'x' * 60_000}" for i in range(9))
    query = _browser_query(text=CHINESE) + "&" + many
    assert len(query) > client_guard.QUERY_MAX
    kept = client_guard.bounded_query(query)
    assert len(kept) <= client_guard.QUERY_MAX
    assert _as_streamlit_reads(query)["text"] == CHINESE
    # more parameters than Streamlit reads (it drops them all): the link's own are kept
    query = "&".join([*(f"j{i}=1" for i in range(client_guard.FIELDS_MAX)), "text=dog", "layer=2", "text=cat"])
    params = _as_streamlit_reads(query)
    assert (params["text"], params["layer"], len(params)) == ("cat", "2", client_guard.FIELDS_MAX)


def test_the_http_server_reads_a_request_for_the_longest_allowed_link() -> None:
    """uvicorn makes each connection's h11 parser with h11_impl's limit (16 KiB before: a page
    request with a link over it was answered 400 Invalid HTTP request)."""
    import h11
    from uvicorn.protocols.http import h11_impl

    query = _browser_query(text="😀" * DEFAULT_MAX_CHARS, off="1.2_" * 1000, lang="zh")
    head = f"GET /?{query} HTTP/1.1\r\nHost: 127.0.0.1:8501\r\nUser-Agent: {'x' * 400}\r\n\r\n"
    conn = h11.Connection(h11.SERVER, h11_impl.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE)
    data = head.encode()
    for start in range(0, len(data), 64 * 1024):  # as the socket delivers it: uvicorn parses each piece
        conn.receive_data(data[start : start + 64 * 1024])
        event = conn.next_event()
    assert isinstance(event, h11.Request) and event.target == f"/?{query}".encode()
    assert client_guard.head_max(DEFAULT_MAX_CHARS) < 1 << 20  # what one connection may make it hold


def test_every_value_the_page_drops_is_named_with_why() -> None:
    params = _as_streamlit_reads(
        _browser_query(off="1.2_" * 20_750, layer="1234", head="x", lang="fr", sinks="2", q="3", junk="1")
    )
    link = urls.parse_link(params, DEFAULT_MAX_CHARS)
    unused = urls.unused_params(params, link)
    assert unused == ["off", "layer", "head", "lang", "sinks", "q", "junk"]
    said = link_refusals.removed_names(params, unused, "en")
    assert said.split("; ") == [
        "off (83,000 characters, at most 4,096)",
        "layer (not a whole number of at most 3 digits)",
        "head (neither mean nor a whole number of at most 3 digits)",
        "lang (not one of en, zh)",
        "sinks (not 1 or 0)",
        "q (q and k only come together)",
        i18n.t("links.others", "en", n=1),
    ]
    assert link_refusals.removed_names(params, unused, "zh").startswith("off（83,000 个字符，最多 4,096 个）；")
    many = {"off": "_".join(f"{i // 10}.{i % 10}" for i in range(600))}  # 600 heads in 2,899 characters
    assert link_refusals.removed_names(many, ["off"], "en") == "off (600 heads, at most 512)"


# --- the app, through AppTest ---------------------------------------------------------------


@pytest.fixture
def browser_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest writes its query with urlencode's default (a space as '+'); a browser writes %20."""
    shim = types.SimpleNamespace(
        urlencode=lambda q, doseq=False: urllib.parse.urlencode(q, doseq=doseq, quote_via=urllib.parse.quote)
    )
    monkeypatch.setattr(local_script_runner, "parse", shim)


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _errors(at: AppTest) -> str:
    return " ".join(str(e.value) for e in at.error)


@pytest.mark.slow
@pytest.mark.usefixtures("browser_encoding")
def test_the_app_opens_a_49000_character_english_text_from_a_link() -> None:
    at = _app(text=ENGLISH)
    assert at.text_area(key="sentence_input").value == ENGLISH
    assert _errors(at) == ""


@pytest.mark.slow
@pytest.mark.usefixtures("browser_encoding")
def test_the_app_opens_a_7500_character_chinese_text_from_a_link() -> None:
    at = _app(text=CHINESE)
    assert at.text_area(key="sentence_input").value == CHINESE
    assert _errors(at) == ""


@pytest.mark.slow
def test_the_app_says_how_long_a_refused_text_was_and_names_an_oversize_off() -> None:
    at = _app(text="x" * (DEFAULT_MAX_CHARS + 1), off="1.2_" * 20_750, sinks="1")
    said = _errors(at)
    assert i18n.t("links.text_long", "en", n="50,001", limit="50,000") in said, said[:500]
    names = i18n.t("links.why_long", "en", name="off", n="83,000", limit="4,096")
    assert i18n.t("links.removed", "en", names=names) in said, said[:500]
    assert at.toggle(key="sinks_toggle").value is True  # the rest of the link still holds
    assert "off" not in at.query_params and "x" * 500 not in str(at.query_params.get("text"))  # the shown sentence's


@pytest.mark.slow
def test_the_app_says_an_empty_text_is_empty() -> None:
    at = _app(text="  ")
    said = _errors(at)
    assert i18n.t("links.text_empty", "en") in said, said[:500]
    assert "characters" not in said

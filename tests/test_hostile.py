"""What a hostile (or just fast) visitor did to the public demo, replayed in a real browser and
over a raw websocket (issue 10): a crafted link, a fast page switch, a client that clears the
server's caches, a model baked into the image. (Every page reached by its typed URL:
tests/test_load.py's cold start, with tests/test_offline.py's check.)"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz import i18n
from attnviz.app import nav

from .browser import ARTIFACTS, streamlit_server
from .test_browser import FIRST_LOAD_MS, SEPARATOR, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

URL_PATHS = {p.name: p.heading_key for p in nav.PAGES}  # every page, by its typed URL


@pytest.fixture(scope="module")
def served(chromium: Any, _shared_server: str) -> tuple[str, Path]:
    """The shared app server (tests/conftest.py) and its log (read: how often it loaded a model).
    The test that needs other settings (a baked model) starts its own."""
    return _shared_server, ARTIFACTS / f"streamlit-{_shared_server.rsplit(':', 1)[1]}.log"


@pytest.fixture
def session(chromium: Any, served: tuple[str, Path]) -> Iterator[Session]:
    yield from _session(chromium, served[0])


def _title_is(s: Session, key: str) -> None:
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want", arg=i18n.t(key, "en"), timeout=FIRST_LOAD_MS
    )


def test_a_crafted_link_shows_the_page_not_an_error_screen(session: Session) -> None:
    s = session
    s.open({"layer": "²", "head": "①", "text": "dog bites man"})
    assert s.layer_head_widgets() == ("0", "0")
    assert s.page.locator('[data-testid="stException"]').count() == 0
    assert "bites" in s.tokens_text()


# True once the server has started the run that Ctrl+Enter asked for (or already drawn it).
RUN_STARTED_JS = """(want) => {
  const app = document.querySelector('[data-testid="stApp"]');
  const c = document.querySelector('.st-key-tokens code');
  return (!!app && app.dataset.testScriptState === 'running') || (!!c && c.innerText.trim() === want);
}"""


def test_a_fast_page_switch_never_loses_the_sentence(session: Session, minilm: attnviz.PretrainedModel) -> None:
    """Ctrl+Enter, then a click on another page while the run it started is still going, four
    times over (explorer to caveats, to the explorer, to the lab, to the explorer): every page
    shows the sentence just typed (it used to show "The sentence is empty" or an older one).
    Each switch of the cycle once: twice over took a minute and a half of the suite and met the
    same pages in the same order.

    The click waits until the server has started that run: a click in the few milliseconds
    before (faster than a hand moves) loses the edit inside Streamlit itself, where the page
    change carries only app.py's widgets and the server merges it into the pending Ctrl+Enter
    rerun, newer widget states winning (docs/RELIABILITY.md, hole 8)."""
    s = session
    s.open()
    pages = ["caveats", "explorer", "lab", "explorer"]
    for i in range(len(pages)):
        text = f"fast switch number {i} keeps its words"
        tokens = list(minilm.encode(text).tokens)
        box = s.page.locator(".st-key-sentence_input textarea")
        box.fill(text)
        box.press("Control+Enter")
        s.page.wait_for_function(RUN_STARTED_JS, arg=SEPARATOR.join(tokens), polling=5)
        target = pages[i % len(pages)]
        s.go_to_page(target)  # waits for the new page's title, not the old page between two runs
        _title_is(s, URL_PATHS[target])
        s.wait_tokens(tokens)
        s.wait_idle()
        assert s.page.locator(".st-key-sentence_input textarea").input_value() == text, (i, target)
        assert s.page.get_by_text(i18n.t("err.empty", "en")).count() == 0, (i, target)
    assert not s.crashed


def _clear_caches(url: str) -> None:
    """What any client can send: a BackMsg with clear_cache set, over a raw websocket."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from websockets.sync.client import connect

    msg = BackMsg()
    msg.clear_cache = True
    with connect(url.replace("http://", "ws://") + "/_stcore/stream", subprotocols=["streamlit"]) as ws:  # type: ignore[list-item]
        ws.send(msg.SerializeToString())
        ws.send(msg.SerializeToString())


def _loads(log: Path) -> int:
    return len(re.findall(r"attnviz: loaded model 'minilm'", log.read_text(errors="replace")))


def test_a_client_clearing_the_caches_costs_nothing(
    chromium: Any, served: tuple[str, Path], minilm: attnviz.PretrainedModel
) -> None:
    """Streamlit accepts `clear_cache` from every client. It used to drop the models that carry
    the forward-pass limit (six explanations then ran at once, 2.9 GB); now models, results and
    limits live outside Streamlit's caches, so the message changes nothing."""
    url, log = served
    for s in _session(chromium, url):
        s.open()
        loads = _loads(log)
        assert loads >= 1
        _clear_caches(url)
        _clear_caches(url)
        text = "after the caches were cleared twice"
        s.submit(text, list(minilm.encode(text).tokens))
        assert _loads(log) == loads, "clear_cache made the server load the model again"
        assert s.tokens_text() == SEPARATOR.join(minilm.encode(text).tokens)
        assert not s.crashed


def test_a_model_baked_into_the_image_is_offered_by_name(chromium: Any, tmp_path: Path) -> None:
    """The image bakes models in with EXTRA_MODELS and sets ATTNVIZ_EXTRA_MODELS: they must be in
    the model list (they were only in a settings property no page read). A tiny local BERT folder
    stands in for a baked hub model."""
    from .tiny_models import build

    folder = build("bert", tmp_path / "tiny-bert")
    label = i18n.t("model.baked", "en", name=str(folder))
    with streamlit_server(env={"ATTNVIZ_EXTRA_MODELS": str(folder)}, args=["--server.fileWatcherType=none"]) as (
        url,
        _proc,
    ):
        for s in _session(chromium, url):
            s.open()
            s.page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
            option = s.page.get_by_role("option", name=label)
            option.wait_for(timeout=FIRST_LOAD_MS)
            option.click()
            s.page.wait_for_function(  # the all-heads grid now has the tiny model's 2 layers
                "() => { const m = document.querySelector('.st-key-view_grid [data-attnviz-grid][data-drawn]');"
                " return !!m && m.__attnvizMap.head.layers === 2; }",
                timeout=FIRST_LOAD_MS,
            )
            s.wait_idle()
            assert s.page.locator('[data-testid="stAlert"]').filter(has_text="could not").count() == 0
            layer_box = s.page.locator(".st-key-controls [data-testid='stSelectbox']").first
            layer_box.click()
            assert s.page.get_by_role("option").all_inner_texts() == ["0", "1"]  # the tiny model's 2 layers
            assert not s.crashed

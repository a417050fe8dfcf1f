"""The explorer's long mode through AppTest (no browser): past the in-memory limit the page says
so with an estimate, runs on request, and its overview, tiles and rows equal attend_long's and
eager attention's; within the limit, or with a model that reads no further, the explorer is as
before."""

from __future__ import annotations

import gc
import threading
import time
import weakref
from collections.abc import Iterator

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n
from attnviz.long import attend_long

from .test_app import APP, TIMEOUT, _array, _chart, _drawn, _messages, _ok
from .test_long import long_text

pytestmark = pytest.mark.slow

TEXT = long_text(30)  # about 330 MiniLM tokens: past a 64-token memory limit, within MiniLM's 512


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A 64-token in-memory limit. The app's registry keeps models process-wide, loaded with the
    deployment's limit: the ones loaded here under 64 are dropped afterwards, so later tests in
    this process get models with the usual limit."""
    from attnviz.app.server.registry import REGISTRY

    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_LONG_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATTNVIZ_MAX_TOKENS", "64")
    before = set(REGISTRY.models)
    yield
    with REGISTRY.lock:
        for key in set(REGISTRY.models) - before:
            del REGISTRY.models[key]


def _long_app(text: str = TEXT) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    return _ok(at.text_area(key="sentence_input").set_value(text).run())


def test_past_the_limit_the_long_mode_estimates_runs_and_draws_exact_maps(minilm: attnviz.PretrainedModel) -> None:
    at = _long_app()
    assert i18n.t("long.title", "en") in [h.value for h in at.subheader]
    estimate = next(i for i in _messages(at, "info") if "full maps of every head would take" in i)
    assert "past the 64 tokens kept in memory" in estimate
    assert not _drawn(at)  # nothing drawn before it is asked for; the ordinary views stop
    _ok(at.button(key="long_run").click().run())
    long = attend_long(minilm, TEXT, max_tokens=512)
    eager = minilm.attend(TEXT).weights
    np.testing.assert_allclose(_array(_chart(at, "long_overview")["data"][0]["z"]), long.overview(0, 0, 64), atol=1e-6)
    np.testing.assert_allclose(_array(_chart(at, "long_tile")["data"][0]["z"]), eager[0, 0, :64, :64], atol=1e-5)
    at.selectbox(key="long_layer").set_value(3)
    at.selectbox(key="long_head").set_value(7)
    _ok(at.number_input(key="long_tile_row").set_value(128).run())
    _ok(at.number_input(key="long_tile_col").set_value(100).run())
    np.testing.assert_allclose(
        _array(_chart(at, "long_tile")["data"][0]["z"]), eager[3, 7, 128:192, 100:164], atol=1e-5
    )
    _ok(at.number_input(key="long_token").set_value(200).run())
    np.testing.assert_allclose(_array(_chart(at, "long_row")["data"][0]["y"]), eager[3, 7, 200], atol=1e-5)
    np.testing.assert_allclose(
        _array(_chart(at, "long_received")["data"][0]["y"]), eager[3, 7].sum(0), atol=1e-4, rtol=1e-5
    )
    _ok(at.checkbox(key="long_distance").check().run())
    assert len(_chart(at, "long_distance_fig")["data"]) == long.heads


def _views(at: AppTest) -> tuple[int, int]:
    """The explorer's ordinary views: its heatmap and its grid (canvases, app/*_canvas.py)."""
    heatmaps = sum(e.proto.id.endswith("-chart_heatmap") for e in at.get("bidi_component"))
    return heatmaps, sum(e.proto.id.endswith("-chart_grid") for e in at.get("bidi_component"))


def test_within_the_limit_the_explorer_is_unchanged() -> None:
    at = _long_app("The animal didn't cross the street because it was tired.")
    assert i18n.t("long.title", "en") not in [h.value for h in at.subheader]
    assert _views(at) == (1, 1)


def test_a_model_that_reads_no_further_keeps_the_ordinary_views(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_MAX_TOKENS", "512")
    at = _long_app(long_text(60))  # about 660 tokens: MiniLM reads 512
    assert any("reads at most 512" in i for i in _messages(at, "info"))
    assert _views(at) == (1, 1)


def test_a_closed_tabs_long_result_is_released_within_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long result (about 200 MB for SmolLM2 at 2,048 tokens) is kept while its session lives
    and freed once the session is seen gone (app/server/sessions.py), not held for the two
    minutes Streamlit keeps a closed tab's state: the LongAttention itself is collected."""
    from attnviz.app.sections import long as long_section
    from attnviz.app.server import sessions

    monkeypatch.setattr(sessions, "GRACE_S", 0.2)
    gone: list[bool] = []
    old = sessions.set_alive(lambda _session: not gone)
    try:
        at = _long_app()
        _ok(at.button(key="long_run").click().run())
        result = weakref.ref(at.session_state[long_section.STATE]["long"])
        pause = threading.Event()
        pause.wait(4 * sessions.GRACE_S + 2 * sessions.CHECK_S)  # past the grace: a live tab keeps it
        gc.collect()
        assert result() is not None and sessions.watched() >= 1
        gone.append(True)  # the tab closes
        deadline = time.monotonic() + 10
        while result() is not None:
            assert time.monotonic() < deadline, "the long result outlived its session by 10 s"
            pause.wait(0.05)
            gc.collect()
        assert at.session_state[long_section.STATE] == {}  # what a reconnecting tab finds: no result
    finally:
        sessions.set_alive(old)
        sessions.clear()

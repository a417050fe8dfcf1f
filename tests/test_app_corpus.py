"""The Corpus page through AppTest: a bundled corpus run in the background, its statistics and
spread on the page equal to the files the run wrote, a typical sentence opening in the
explorer, a run that goes on across page switches, cancel and resume, the atlas, demo caps and
both languages. Runs are small (a few dozen lines) so the file stays near a minute."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import corpus, i18n
from attnviz.app.server import corpus_jobs as jobs

from .test_app import _array, _chart
from .test_flood_aside import heavy_slots_held

APP = str(Path(__file__).resolve().parent / "app_entry.py")
PAGE = "../pages/corpus.py"
SESSION = "test session id"  # AppTest's session id, the key of its corpus job
TIMEOUT = 180

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_TOKENS", "ATTNVIZ_CORPUS_SENTENCES"):
        monkeypatch.delenv(key, raising=False)
    yield
    jobs.discard(SESSION)


def _page(lang: str = "en") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    return _ok(at.switch_page(PAGE).run())


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _start(at: AppTest, source: str, limit: int) -> None:
    at.radio(key="corpus_source").set_value(source).run()
    at.number_input(key="corpus_limit").set_value(limit).run()
    _ok(at.button(key="corpus_run").click().run())


def _wait() -> jobs.Job:
    deadline = time.monotonic() + TIMEOUT
    while True:
        job = jobs.get(SESSION)
        assert job is not None, "no corpus job was started"
        if not job.active:
            return job
        assert time.monotonic() < deadline, "the corpus run did not finish"
        time.sleep(0.2)


def _messages(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in at.get(kind)]


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_the_page_opens_in_both_languages(lang: str) -> None:
    at = _page(lang)
    assert at.title[0].value == i18n.t("corpus.title", lang)
    assert at.radio(key="corpus_source").options == [
        i18n.t(f"corpus.src_{s}", lang) for s in ("en", "zh", "both", "upload")
    ]
    assert at.button(key="corpus_run").label == i18n.t("corpus.run", lang)


def test_a_bundled_run_shows_what_the_run_wrote() -> None:
    at = _page()
    _start(at, "zh", 24)
    job = _wait()
    assert job.state == "done", job.error
    _ok(at.run())
    result = corpus.load(str(job.out))
    assert result.analysed == 24 and result.report["settings"]["max_tokens"] == 128
    fig = _chart(at, "chart_corpus")
    np.testing.assert_allclose(_array(fig["data"][0]["z"]), result.grid("entropy_rel"))
    cell = fig["data"][0]["text"][2][5]
    assert cell == f"{result.grid('entropy_rel')[2, 5]:.2f}<br>±{result.grid('entropy_rel', 'std')[2, 5]:.2f}"
    _ok(at.selectbox(key="corpus_stat").set_value("prev").run())
    fig = _chart(at, "chart_corpus")
    np.testing.assert_allclose(_array(fig["data"][0]["z"]), result.grid("prev"))
    near, far = result.typical("prev", 0, 0, 5)
    for side, rows in (("near", near), ("far", far)):
        labels = [b.label for b in at.button if b.key and b.key.startswith(f"corpus_{side}_")]
        assert labels == [f"{r['value']:.3f} · {r['text']}" for r in rows]  # Chinese: nothing to escape
    assert any("24" in m for m in _messages(at, "markdown"))


def test_a_typical_sentence_opens_in_the_explorer_at_its_head() -> None:
    at = _page()
    _start(at, "en", 20)
    assert _wait().state == "done"
    _ok(at.run())
    at.selectbox(key="corpus_layer").set_value(3).run()
    _ok(at.selectbox(key="corpus_head").set_value(7).run())
    button = next(b for b in at.button if b.key == "corpus_far_0")
    text = button.label.split(" · ", 1)[1]
    _ok(button.click().run())
    assert at.session_state["sentence"] == text.replace("\\", "")  # the label escapes Markdown
    assert (at.session_state["layer"], at.session_state["head"]) == (3, 7)
    assert at.title[0].value == i18n.t("explorer.title", "en")


def test_the_run_goes_on_while_the_visitor_is_on_other_pages() -> None:
    at = _page()
    _start(at, "both", 150)
    first = jobs.get(SESSION)
    assert first is not None and first.active
    _ok(at.switch_page("../pages/explorer.py").run())
    _ok(at.switch_page(PAGE).run())
    job = _wait()
    assert job is first and job.state == "done"
    _ok(at.run())
    assert corpus.load(str(job.out)).report["lines_read"] == 150


def test_cancel_keeps_the_shards_and_resume_finishes_the_same_run(
    tmp_path: Path, minilm: attnviz.PretrainedModel
) -> None:
    at = _page()
    _start(at, "both", 160)
    deadline = time.monotonic() + TIMEOUT
    while not list((jobs.get(SESSION).out / "shards").glob("part-*.parquet")):  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    jobs.cancel(SESSION)
    job = _wait()
    assert job.state == "cancelled"
    kept = sorted(p.name for p in (job.out / "shards").glob("part-*.parquet"))
    assert kept and len(kept) < 3  # 160 lines: shards of 64, 64 and 32
    _ok(at.run())
    assert i18n.t("corpus.cancelled", "en") in _messages(at, "error")[0]
    _ok(at.button(key="corpus_resume").click().run())
    job = _wait()
    assert job.state == "done" and job.runner is None  # a finished job leaves the model to the registry
    report = json.loads((job.out / "report.json").read_text())
    fresh = corpus.run(job.input, tmp_path / "fresh", minilm, max_tokens=128, limit=160, shard_size=jobs.SHARD_SIZE)
    assert report == fresh.report


def test_the_atlas_draws_the_heads_queries_and_keys(minilm: attnviz.PretrainedModel) -> None:
    at = _page()
    _start(at, "en", 16)
    job = _wait()
    _ok(at.run())
    at.number_input(key="corpus_atlas_points").set_value(400).run()
    _ok(at.button(key="corpus_atlas_draw").click().run())
    fig: dict[str, Any] = _chart(at, "chart_atlas")
    assert [t["type"] for t in fig["data"]] == ["scattergl", "scattergl"]
    texts = [str(t) for t in corpus.load(str(job.out)).sentences(["text"]).column("text").to_pylist()][:100]
    expected = corpus.atlas(minilm, texts, 0, 0, max_points=400, max_tokens=128)
    m = expected.n_tokens
    np.testing.assert_allclose(_array(fig["data"][0]["x"]), expected.xy[:m, 0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_array(fig["data"][1]["y"]), expected.xy[m:, 1], rtol=1e-4, atol=1e-4)
    assert fig["data"][0]["customdata"][0] == [0]


def test_an_upload_that_is_not_there_is_a_message() -> None:
    at = _page()
    at.radio(key="corpus_source").set_value("upload").run()
    _ok(at.button(key="corpus_run").click().run())
    assert _messages(at, "error") == [i18n.t("corpus.no_upload", "en")]
    assert jobs.get(SESSION) is None


def test_demo_mode_caps_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_DEMO", "1")
    at = _page()
    assert at.number_input(key="corpus_limit").max == 500 and at.number_input(key="corpus_limit").value == 500
    at.radio(key="corpus_source").set_value("upload").run()
    assert "2 MB" in _ok(at).get("file_uploader")[0].label


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_a_run_waiting_in_the_heavy_queue_shows_its_place(lang: str) -> None:
    """Two other visitors' heavy work holds both places: the run waits in the server's queue and
    the page says where it stands (issue 24.3: the heavy load test's corpus tabs waited minutes
    under a bare 'Analysing ... 0 of 24 lines'); once they end it runs to its end."""
    at = _page(lang)  # its model loaded first: a model build is heavy work too (e5-small in zh)
    with heavy_slots_held(TIMEOUT):
        _start(at, "en", 24)
        job = jobs.get(SESSION)
        assert job is not None
        deadline = time.monotonic() + TIMEOUT
        while job.place != 1:
            assert time.monotonic() < deadline, f"the run never waited in the queue: {job.state} {job.error}"
            time.sleep(0.05)
        _ok(at.run())
        assert i18n.t("fair.queued", lang, place=1) in [c.value for c in at.caption]
        assert job.progress is None  # nothing analysed while it waits
    job = _wait()
    assert job.state == "done" and job.place == 0, job.error
    _ok(at.run())
    assert i18n.t("fair.queued", lang, place=1) not in [c.value for c in at.caption]

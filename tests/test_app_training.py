"""The Training lab through AppTest (no browser): train a few steps in the background, see the
curves, the snapshots and the scores; Stop keeps the model; the model opens in the explorer for
this session only; demo limits; both languages; bad text is a message."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.app.server import session_models, training_jobs
from attnviz.app.widgets import escape_md

from .app_runs import forget_training_runs
from .test_app import _array, _chart, _heatmap_z, _literals, _messages, _ok, _tokens_shown
from .test_flood_aside import heavy_slots_held

APP = str(Path(__file__).resolve().parent / "app_entry.py")
PAGE = "../pages/training.py"
TIMEOUT = 180

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_TRAIN_MAX_STEPS", "ATTNVIZ_BUDGET_S"):
        monkeypatch.delenv(key, raising=False)
    yield
    # AppTest gives every session the same id: forget this test's runs and models, so that no
    # other test (here or in test_app.py) finds them in its model list
    forget_training_runs()


def _training_page(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    _ok(at.run())
    return _ok(at.switch_page(PAGE).run())


def _train(at: AppTest, task: str, steps: int) -> AppTest:
    _ok(at.selectbox(key="train_task").set_value(task).run())
    _ok(at.number_input(key="train_steps").set_value(steps).run())
    return _ok(at.button(key="train_start").click().run())


def _wait(at: AppTest, kind: str = "success", timeout: float = 120) -> AppTest:
    """Rerun (as the page's polling does) until a status message of `kind` shows."""
    deadline = time.monotonic() + timeout
    while not at.get(kind):
        assert time.monotonic() < deadline, "training did not finish"
        time.sleep(0.3)
        _ok(at.run())
    return at


def _job(at: AppTest) -> training_jobs.Job:
    """The job of the AppTest session: the newest one (tests here run one session at a time)."""
    jobs = list(training_jobs._JOBS.values())
    assert jobs
    return jobs[-1]


def test_train_a_few_steps_and_see_curves_snapshots_and_scores() -> None:
    at = _train(_training_page(), "copy", 30)
    _wait(at)
    run = _job(at).run
    assert run is not None and run.step == 30
    curves = _chart(at, "chart_train_curves")
    np.testing.assert_allclose(_array(curves["data"][0]["x"]), [s for s, _, _ in run.history])
    grid = _chart(at, "chart_train_grid")
    assert [f["name"] for f in grid["frames"]] == [str(s.step) for s in run.snapshots]
    np.testing.assert_allclose(_array(grid["data"][0]["z"]), run.snapshots[-1].attention.weights[0, 0], atol=1e-6)
    scores = _chart(at, "chart_train_scores")
    assert len(scores["data"]) == 2 * 4  # diagonal and previous, four heads each
    assert "30" in _messages(at, "success")[0]


def test_the_trained_model_opens_in_the_explorer_for_this_session_only() -> None:
    at = _train(_training_page(), "induction", 20)
    _wait(at)
    job = _job(at)
    assert job.model_name is not None and job.run is not None
    label = i18n.t("train.model_label", "en", task=i18n.t("train.task.induction", "en"), layers=2, heads=2, step=20)
    assert label in at.sidebar.selectbox(key="model_choice").options
    _ok(at.button(key="train_open").click().run())
    assert at.title[0].value == i18n.t("explorer.title", "en")
    probe = job.run.probe.text
    assert at.text_area(key="sentence_input").value == probe
    att = job.run.model.attend(probe)
    assert _tokens_shown(at) == att.tokens
    layer, head = int(at.selectbox(key="layer").value), int(at.selectbox(key="head").value)
    np.testing.assert_allclose(_heatmap_z(at), att.weights[layer, head], atol=1e-5)
    assert at.sidebar.selectbox(key="model_choice").value == job.model_name
    # the explain page runs on it; what needs a BERT layer says it does not apply, nothing breaks
    _ok(at.switch_page("../pages/explain.py").run())
    assert i18n.t("explain.unsupported", "en") in " ".join(_messages(at, "error"))
    assert _tokens_shown(at) == att.tokens
    _ok(at.switch_page("../pages/caveats.py").run())
    # a visitor handed a trained model's name that is not theirs gets a message and the embedded
    # model (AppTest gives every session one id, so "not theirs" is a name never registered here)
    other = AppTest.from_file(APP, default_timeout=TIMEOUT)
    other.query_params.update({"model": "trained:induction-00000000", "text": probe})
    _ok(other.run())
    assert any(escape_md(i18n.t("train.gone", "en")) in m for m in _messages(other, "error"))
    assert other.title[0].value == i18n.t("explorer.title", "en")
    assert session_models.get(job.model_name, session="someone else") is None


def test_stop_keeps_what_was_learned() -> None:
    at = _train(_training_page(), "induction", 20_000)
    deadline = time.monotonic() + 60
    while _job(at).run is None or _job(at).run.step < 20:  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    _ok(at.run())
    _ok(at.button(key="train_stop").click().run())
    _wait(at, "info")
    run = _job(at).run
    assert run is not None and run.stopped and 20 <= run.step < 20_000
    assert run.snapshots[-1].step == run.step
    stopped = i18n.t(
        "train.stopped", "en", step=f"{run.step:,}", total="20,000", accuracy=f"{run.snapshots[-1].accuracy:.1%}"
    )
    assert stopped in _messages(at, "info")
    assert at.button(key="train_open")  # the stopped model can still be opened


def test_a_demo_deployment_caps_the_controls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_DEMO", "1")
    at = _training_page()
    assert at.number_input(key="train_steps").max == 2000
    assert at.number_input(key="train_layers").max == 2
    assert max(at.selectbox(key="train_d_model").options, key=int) == "64"
    assert "2,000" in " ".join(c.value for c in at.caption)


def test_too_short_a_text_is_a_message_not_a_traceback() -> None:
    at = _training_page()
    _ok(at.selectbox(key="train_task").set_value("text").run())
    _ok(at.text_area(key="train_text").set_value("too short").run())
    _ok(at.button(key="train_start").click().run())
    assert any("too short to learn from" in m for m in _messages(at, "error"))


def test_hostile_text_trains_and_stays_text() -> None:
    """Every character of a pasted text is a token: markup in it must reach the maps as text."""
    at = _training_page()
    _ok(at.selectbox(key="train_task").set_value("text").run())
    _ok(at.text_area(key="train_text").set_value("<script>alert(1)</script> $x^2$ :red[danger] <s> & " * 2).run())
    _train(at, "text", 10)
    _wait(at)
    keys = _chart(at, "chart_train_grid")["data"][0]["y"]  # category names, what hover shows
    assert keys[:4] == ["&lt;s&gt; (0)", "&lt; (1)", "s (2)", "c (3)"] and "<" not in "".join(keys)
    assert any(c.startswith(i18n.t("train.probe", "en", text="<script>")) for c in _literals(at))


def test_the_page_speaks_chinese() -> None:
    at = _training_page(lang="zh")
    assert at.title[0].value == i18n.t("train.title", "zh")
    assert at.button(key="train_start").label == "开始训练"
    _ok(at.selectbox(key="train_task").set_value("text").run())
    assert at.text_area(key="train_text").value == i18n.t("train.default_text", "zh")
    _train(at, "text", 20)
    _wait(at)
    grid = _chart(at, "chart_train_grid")
    assert "探针输入上的每一个头" in grid["layout"]["title"]["text"]


def test_a_run_waiting_in_the_heavy_queue_shows_its_place() -> None:
    """A run waits in one queue, the server's heavy-work queue (two other visitors' explanations
    or corpus runs hold both places): the page says where it stands instead of a bare 'Step 0',
    and the run trains once they end."""
    at = _training_page()
    with heavy_slots_held(TIMEOUT):
        at = _train(at, "copy", 30)
        job = _job(at)
        deadline = time.monotonic() + TIMEOUT
        while job.place != 1:
            assert time.monotonic() < deadline, "the run never waited in the heavy queue"
            time.sleep(0.05)
        _ok(at.run())
        assert i18n.t("train.queued", "en", place=1) in [i.value for i in at.info]
        assert job.run is not None and job.run.step == 0
    _wait(at)
    assert job.run is not None and job.run.step == 30 and job.place == 0
    assert i18n.t("train.queued", "en", place=1) not in [i.value for i in at.info]

"""Every number a page states is computed from the value its figure or table shows: the long
mode's share of the weight (the table's first row over the tokens, in enough digits never to read
0 % for a share that is not zero), the seq2seq snapshot slider's label (the step of the map under
it), the loss axis of a training run that ended (its last step, not the steps asked for), and the
truncation notice (Raise Max tokens only where the sidebar can give more)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.app.server import training_jobs
from attnviz.long import figures
from attnviz.models.tokens import DEFAULT_MAX_TOKENS

from .app_runs import forget_training_runs
from .test_app import APP, TIMEOUT, _chart, _messages, _ok
from .test_long import long_text

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The usual limits; the models loaded under another limit and the training runs made here are
    forgotten afterwards (AppTest gives every session one id: test_app_training.py's reason)."""
    from attnviz.app.server.registry import REGISTRY

    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS",
                "ATTNVIZ_LONG_TOKENS", "ATTNVIZ_TRAIN_MAX_STEPS", "ATTNVIZ_BUDGET_S"):  # fmt: skip
        monkeypatch.delenv(key, raising=False)
    before = set(REGISTRY.models)
    yield
    forget_training_runs()
    with REGISTRY.lock:
        for key in set(REGISTRY.models) - before:
            del REGISTRY.models[key]


def _page(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    _ok(at.run())
    return _ok(at.switch_page(page).run()) if page else at


def _percent_digits(shown: str) -> int:
    return len(shown.rstrip("%").partition(".")[2])


def test_a_small_share_is_stated_in_enough_digits_never_as_zero() -> None:
    assert figures.percent(11.80 / 3025) == "0.39%"  # the teacher's 3,025-token text: ".0%" said "0%"
    assert figures.percent(0.0004) == "0.040%" and figures.percent(0.3) == "30%" and figures.percent(0.0) == "0%"
    for share in (1e-6, 3e-5, 0.002, 0.04, 0.2, 0.999):
        shown = figures.percent(share)
        assert float(shown.rstrip("%").replace(",", "")) > 0
        assert abs(float(shown.rstrip("%")) / 100 - share) <= 0.05 * share  # two significant digits at least


def test_the_long_modes_share_is_the_tables_weight_over_the_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_MAX_TOKENS", "64")  # past 64 tokens the long mode takes over
    at = _page()
    _ok(at.text_area(key="sentence_input").set_value(long_text(30)).run())
    _ok(at.button(key="long_run").click().run())
    table = at.dataframe[-1].value  # the sinks' table: the last of the long mode (its rows' table comes first)
    n = int(re.search(r"([\d,]+) tokens give out", _captions(at)).group(1).replace(",", ""))  # type: ignore[union-attr]
    weight = float(table.iloc[0, 2])
    caption = next(c for c in _captions(at).split("\n") if "the token read most receives" in c)
    stated = re.search(r"receives ([\d,.]+) of it \(([\d.,]+%)\)", caption)
    assert stated is not None, caption
    assert stated.group(1) == f"{weight:,.2f}"
    assert stated.group(2) == figures.percent(weight / n) and float(stated.group(2).rstrip("%")) > 0


def _captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def _snapshot_label(at: AppTest) -> str:
    """What the snapshot slider shows beside its thumb (a select_slider shows its option's label)."""
    for element in at.get("select_slider"):
        if getattr(element, "key", None) == "s2s_snapshot":
            return str(element.format_func(element.value))
    for element in at.get("slider"):  # a plain slider shows its value
        if getattr(element, "key", None) == "s2s_snapshot":
            return str(element.value)
    raise AssertionError("no snapshot slider")


def test_the_seq2seq_slider_names_the_step_of_the_map_under_it() -> None:
    at = _page("../pages/training.py")
    at.number_input(key="s2s_steps").set_value(60)
    _ok(at.button(key="s2s_start").click().run())
    for _ in range(2):  # the last snapshot, then the first
        title = _chart(at, "chart_s2s_cross")["layout"]["title"]["text"]
        step = re.search(r"step ([\d,]+)", title)
        assert step is not None, title
        assert _snapshot_label(at) == step.group(1)
        _ok(at.select_slider(key="s2s_snapshot").set_value(0).run())
    assert _snapshot_label(at) != f"{60:,}"


def test_the_loss_axis_of_a_stopped_run_ends_at_its_last_step() -> None:
    at = _page("../pages/training.py")
    _ok(at.selectbox(key="train_task").set_value("induction").run())
    _ok(at.number_input(key="train_steps").set_value(20_000).run())
    _ok(at.button(key="train_start").click().run())
    job = list(training_jobs._JOBS.values())[-1]
    deadline = time.monotonic() + 60
    while job.run is None or job.run.step < 20:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    _ok(at.run())
    _ok(at.button(key="train_stop").click().run())
    deadline = time.monotonic() + 120
    while not at.get("info") or not job.finished:
        assert time.monotonic() < deadline, "the run did not stop"
        time.sleep(0.3)
        _ok(at.run())
    run = job.run
    assert run is not None and run.stopped and run.step < 20_000
    assert any(f"Stopped at step {run.step:,}" in m for m in _messages(at, "info"))
    axis = _chart(at, "chart_train_curves")["layout"]["xaxis"]
    assert axis["range"][1] == run.step


LONG = long_text(60)  # about 650 MiniLM tokens: past the 512 MiniLM reads


def _warnings(at: AppTest) -> list[str]:
    return _messages(at, "warning")


def test_a_cut_text_is_told_to_raise_max_tokens_only_where_the_sidebar_can() -> None:
    at = _page()
    _ok(at.text_area(key="sentence_input").set_value(LONG).run())
    raise_it = i18n.t("notice.truncated", "en", kept="X", total="Y").split("tokens. ")[1]
    cut = [w for w in _warnings(at) if w.startswith("Input truncated")]
    assert len(cut) == 1 and raise_it not in cut[0]  # 512 is what MiniLM reads: no limit left to raise
    assert f"the most MiniLM-L6 (English) reads here ({DEFAULT_MAX_TOKENS})" in cut[0]
    assert "reads at most" not in " ".join(_messages(at, "info")) or raise_it not in " ".join(cut)
    _ok(at.sidebar.number_input(key="max_tokens").set_value(100).run())
    cut = [w for w in _warnings(at) if w.startswith("Input truncated")]
    assert len(cut) == 1 and raise_it in cut[0] and "first 100 of" in cut[0]  # 100 of 512: it can be raised

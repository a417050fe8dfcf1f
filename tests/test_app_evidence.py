"""The evidence pieces of the app through AppTest (tests/app_entry.py runs app.py): the
explorer's hide-sinks switch and its caveat, the Explain page's contribution maps and
faithfulness scoreboard, and the Caveats page's sink heads and average scoreboard; in English
and Chinese, with the numbers the package computes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain, i18n

from .test_app import _array, _chart, _grid, _heatmap_z, _literals, _ok

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 300
SHORT = "dog bites man"  # five tokens: every explanation is quick

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in (
        "ATTNVIZ_DEMO",
        "ATTNVIZ_ALLOWED_MODELS",
        "ATTNVIZ_MAX_CHARS",
        "ATTNVIZ_MAX_TOKENS",
        "ATTNVIZ_EXPLAIN_TOKENS",
    ):
        monkeypatch.delenv(key, raising=False)


def _app(page: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    if page is not None:
        at.switch_page(f"../pages/{page}.py").run()
    return _ok(at)


def _markdown(at: AppTest) -> str:
    return "\n".join(str(m.value) for m in at.markdown) + "\n".join(str(c.value) for c in at.caption)


def _table(at: AppTest, column_key: str, lang: str = "en") -> Any:
    """The table with a column headed by catalogue entry `column_key` (AppTest does not expose a
    dataframe's widget key)."""
    heading = i18n.t(column_key, lang)
    for frame in at.dataframe:
        if heading in frame.value.columns:
            return frame.value
    raise AssertionError(f"no table with a column {heading!r}")


# --- explorer: hide sinks -------------------------------------------------------------------------


def test_hide_sinks_removes_the_sink_columns_from_the_views(minilm: attnviz.PretrainedModel, tired) -> None:
    at = _app()
    assert at.toggle(key="sinks_toggle").value is False
    np.testing.assert_allclose(_heatmap_z(at), tired.head(0, 0), atol=1e-5)
    columns = explain.sink_scores(tired, norms=explain.norm_weights(minilm, tired.text)).parking()
    assert [tired.tokens[k] for k in columns] == ["[CLS]"]
    hidden, removed = explain.hide_sinks(tired, columns)
    assert "Sinks: `[CLS]`" in _markdown(at)
    _ok(at.toggle(key="sinks_toggle").set_value(True).run())
    z = _heatmap_z(at)
    np.testing.assert_allclose(z, hidden.head(0, 0), atol=1e-5)
    assert np.allclose(z[:, columns], 0) and np.allclose(z.sum(1), 1, atol=1e-4)
    assert f"removed {removed[0, 0]:.0%}" in _markdown(at)
    grid, mosaic = _grid(at)  # the all-heads mosaic follows: thumbnail (0, 0) is the hidden map
    size = grid["thumb"]
    np.testing.assert_allclose(mosaic[:size, :size], hidden.weights[0, 0], atol=1e-5)
    _ok(at.selectbox(key="head").set_value(-1).run())  # the mean of heads: the share is the mean of theirs
    assert f"removed {removed[0].mean():.0%}" in _markdown(at)


def test_hide_sinks_survives_a_visit_to_another_page() -> None:
    at = _app()
    _ok(at.toggle(key="sinks_toggle").set_value(True).run())
    _ok(at.switch_page("../pages/lab.py").run())
    _ok(at.switch_page("../pages/explorer.py").run())
    assert at.toggle(key="sinks_toggle").value is True


def test_the_sink_caveat_names_a_head_and_its_value_length(minilm: attnviz.PretrainedModel, tired) -> None:
    at = _app()
    text = _markdown(at)
    scores = explain.sink_scores(tired, norms=explain.norm_weights(minilm, tired.text))
    layer, head = np.unravel_index(int(np.where(scores.is_sink, scores.share, -1).argmax()), scores.share.shape)
    assert f"In layer {layer}, head {head} sends {scores.share[layer, head]:.0%}" in text
    assert re.search(r"value vector is [0-9.]+× as long", text)


# --- explain: contributions and the scoreboard ----------------------------------------------------


def test_contribution_maps_show_the_package_numbers(minilm: attnviz.PretrainedModel) -> None:
    at = _app("explain", text=SHORT)
    for method in ("globenc", "alti", "value_zeroing"):
        _ok(at.selectbox(key="cx_method").set_value(method).run())
        z = _array(_chart(at, "chart_contributions")["data"][0]["z"])
        np.testing.assert_allclose(z, explain.contributions(minilm, SHORT, method).rolled, atol=1e-5)
    _ok(at.radio(key="cx_view").set_value("layer").run())
    layer = at.selectbox(key="x_layer").value
    z = _array(_chart(at, "chart_contributions")["data"][0]["z"])
    np.testing.assert_allclose(z, explain.contributions(minilm, SHORT, "value_zeroing").per_layer[layer], atol=1e-5)


def test_the_scoreboard_table_curves_and_best_method(minilm: attnviz.PretrainedModel) -> None:
    at = _app("explain", text=SHORT)
    board = explain.faithfulness(minilm, SHORT, None)
    table = _table(at, "fx.col_kendall")
    assert len(table) == len(board.rows)
    cells = list(table.iloc[:, 1])  # shown with three decimals; a missing value as "—", never None
    assert cells[-1] == "—" and "None" not in map(str, table.to_numpy().ravel())
    spearman = np.array([float(c) for c in cells[:-1]])
    expected = np.array([r.spearman for r in board.rows])
    np.testing.assert_allclose(spearman, expected[:-1].round(3), atol=1e-3)
    curves = _chart(at, "chart_deletion")["data"]
    assert len(curves) == len(board.rows)
    np.testing.assert_allclose(_array(curves[0]["y"]), board.rows[0].curve, atol=1e-5)
    best = i18n.t(f"method.{board.best}", "en")
    assert f"Best for this sentence: {best}" in _markdown(at) or f"Closest to the model here: {best}" in _markdown(at)
    assert "These numbers are themselves debated" in _markdown(at)
    assert _chart(at, "chart_layer_agreement")["data"]
    _ok(at.radio(key="fx_output").set_value("token").run())  # the token picked above
    query = at.selectbox(key="x_query").value
    token_board = explain.faithfulness(minilm, SHORT, query)
    curves = _chart(at, "chart_deletion")["data"]
    np.testing.assert_allclose(_array(curves[0]["y"]), token_board.rows[0].curve, atol=1e-5)


def test_long_input_is_scored_on_the_deployments_limit_with_a_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_EXPLAIN_TOKENS", "8")
    at = _app("explain")  # the default sentence has 15 tokens
    infos = [str(i.value) for i in at.info]
    assert any("Scored on the first 8 of 15 tokens" in i for i in infos), infos
    assert i18n.t("cx.cut", "en", kept=8, total=15) in infos  # the closed-form maps too
    assert _array(_chart(at, "chart_contributions")["data"][0]["z"]).shape == (8, 8)
    _ok(at.selectbox(key="cx_method").set_value("value_zeroing").run())
    assert any("first 8 of 15 tokens" in str(i.value) for i in at.info)
    assert _array(_chart(at, "chart_contributions")["data"][0]["z"]).shape == (8, 8)


# --- caveats ----------------------------------------------------------------------------------------


def test_caveats_show_the_sink_heads_and_the_average_scoreboard(tired: attnviz.Attention) -> None:
    at = _app("caveats")
    sinks = _table(at, "sinks.col_heads")
    scores = explain.sink_scores(tired)
    assert list(sinks.iloc[:, 0]) == [tired.tokens[k] for k in scores.columns]
    kinds = dict(zip(sinks.iloc[:, 0], sinks.iloc[:, -1], strict=True))
    assert kinds["[CLS]"] == i18n.t("sinks.kind_parked", "en") and kinds["animal"] == i18n.t("sinks.kind_focus", "en")
    average = json.loads(
        (Path(__file__).resolve().parents[1] / "assets" / "faithfulness_average.json").read_text("utf-8")
    )
    table = _table(at, "fx.col_best")
    assert len(table) == len(average["rows"])
    assert not any("bench_faithfulness.py" in c for c in _literals(at))  # developer text stays off (issue 23.8)


# --- Chinese --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["explorer", "explain", "caveats"])
def test_every_evidence_piece_speaks_chinese(page: str) -> None:
    at = _app(page, lang="zh", text="春天山上有花。")
    assert not at.error, [e.value for e in at.error]
    text = _markdown(at)
    words = {
        "explorer": ["汇聚点"],
        "explain": ["整层贡献", "忠实度记分板", "这些数字本身也有争议"],
        "caveats": ["50 个句子上的平均记分板"],
    }[page]
    shown = text + " ".join(str(s.value) for s in at.subheader) + " ".join(str(t.label) for t in at.toggle)
    for word in words:
        assert word in shown, (page, word)
    for key in ("chart_deletion", "chart_contributions"):
        if page == "explain":
            fig = json.dumps(_chart(at, key)["layout"], ensure_ascii=False)
            assert re.search(r"[\u4e00-\u9fff]", fig) and "traced back" not in fig and "Deletion" not in fig

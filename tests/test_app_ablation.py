"""Switching heads off in the app (AppTest, no browser): the explorer's switch draws the
switched model in its views and gives the effect numbers; the Explain page's head importance,
its rank agreement and the pruning curve; languages, a cap on long texts, other models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain, i18n

from .test_app import APP, TIMEOUT, TIRED, _array, _chart, _grid, _heatmap_z, _messages, _ok

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("ATTNVIZ_EXPLAIN_TOKENS", raising=False)


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    return _ok(at.run())


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_switching_the_focused_head_off_redraws_later_layers(tired: attnviz.Attention) -> None:
    at = _app(layer="2", head="3")
    toggle = at.button(key="abl_toggle")
    assert toggle.label == "Switch off layer 2, head 3"
    assert i18n.t("abl.sentence_distance", "en") not in _metrics(at)
    _ok(toggle.click().run())
    assert at.session_state["heads_off"] == [[2, 3]]
    assert at.button(key="abl_toggle").label == "Switch layer 2, head 3 back on"

    switched = explain.ablate(attnviz.load_model("minilm", device="cpu"), TIRED, [(2, 3)])
    metrics = _metrics(at)
    assert float(metrics[i18n.t("abl.sentence_distance", "en")]) == pytest.approx(switched.sentence_distance, abs=1e-4)
    np.testing.assert_allclose(_heatmap_z(at), tired.weights[2, 3], atol=1e-6)  # its own layer: unchanged
    _ok(at.selectbox(key="layer").set_value(4).run())
    z = _heatmap_z(at)
    np.testing.assert_allclose(z, switched.attention.weights[4, 3], atol=1e-5)
    assert np.abs(z - tired.weights[4, 3]).max() > 1e-3
    # the effect below the views: per-token distances and how much each head's map changed
    bars = _array(_chart(at, "chart_abl_tokens")["data"][0]["y"])
    np.testing.assert_allclose(bars, switched.token_distance, atol=1e-5)
    change = _array(_chart(at, "chart_abl_change")["data"][0]["z"])
    np.testing.assert_allclose(change[:3], 0.0, atol=1e-6)
    assert (change[3:] > 0).all()
    assert _grid(at)[0]["off"] == [[2, 3]]  # the cross on (2, 3), in the canvas grid (app/canvas/grid_canvas.py)

    _ok(at.button(key="abl_all_on").click().run())
    assert at.session_state["heads_off"] == []
    np.testing.assert_allclose(_heatmap_z(at), tired.weights[4, 3], atol=1e-5)
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("-chart_abl_change")]


def test_moving_the_focus_does_not_rerun_the_switched_model(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[tuple[int, int], ...]] = []
    original = explain.ablate

    def counting(*args: object, **kwargs: object) -> explain.Ablation:
        result = original(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(result.heads)
        return result

    monkeypatch.setattr(explain, "ablate", counting)
    at = _app(layer="1", head="0", text="dog bites man again and again")
    _ok(at.button(key="abl_toggle").click().run())
    assert calls == [((1, 0),)]
    for layer in (3, 5, 0):
        _ok(at.selectbox(key="layer").set_value(layer).run())
    _ok(at.radio(key="_abl_mode").set_value("mean").run())
    assert calls == [((1, 0),), ((1, 0),)]  # a new mode is a new run; focus changes are not


def test_the_switch_speaks_chinese() -> None:
    at = _app(layer="1", head="2", lang="zh")
    assert at.button(key="abl_toggle").label == "关闭层 1 的头 2"  # the selects' layer 1, head 2
    _ok(at.button(key="abl_toggle").click().run())
    assert i18n.t("abl.sentence_distance", "zh") in _metrics(at)
    assert at.radio(key="_abl_mode").options == ["零", "它在各位置上的平均"]


def test_head_importance_on_the_explain_page(minilm: attnviz.PretrainedModel) -> None:
    at = _app()
    _ok(at.switch_page("../pages/explain.py").run())
    imp = explain.head_importance(minilm, TIRED)
    grid = _chart(at, "chart_abl_importance")
    np.testing.assert_allclose(_array(grid["data"][0]["z"]), imp.effect, atol=1e-6)
    metrics = _metrics(at)
    assert metrics[i18n.t("abl.kendall", "en")] == f"{imp.kendall:.2f}"
    curve = _chart(at, "chart_abl_curve")
    assert len(curve["data"]) == 3 and curve["data"][0]["x"][-1] == 72
    _ok(at.radio(key="x_importance").set_value("gradient").run())
    np.testing.assert_allclose(_array(_chart(at, "chart_abl_importance")["data"][0]["z"]), imp.gradient, atol=1e-6)
    assert not at.error, _messages(at, "error")

    # the curve's point: switch off the k least important heads, then see that model explored
    _ok(at.slider(key="x_abl_k").set_value(5).run())
    _ok(at.radio(key="x_abl_k_order").set_value("gradient").run())
    _ok(at.button(key="abl_apply_k").click().run())
    least = sorted(imp.ranking("gradient")[:5])
    assert at.session_state["heads_off"] == [list(h) for h in least]
    _ok(at.switch_page("../pages/explorer.py").run())
    switched = explain.ablate(minilm, TIRED, least)
    distance = float(_metrics(at)[i18n.t("abl.sentence_distance", "en")])
    assert distance == pytest.approx(switched.sentence_distance, abs=1e-4)


def test_a_long_text_is_capped_with_a_notice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_EXPLAIN_TOKENS", "10")
    at = _app()
    _ok(at.switch_page("../pages/explain.py").run())
    n = attnviz.load_model("minilm", device="cpu").attend(TIRED).n
    assert i18n.t("abl.capped", "en", n=n, limit=10) in _messages(at, "info")
    z = _array(_chart(at, "chart_abl_importance")["data"][0]["z"])
    fitted = attnviz.load_model("minilm", device="cpu").fit(TIRED, 512)
    want = explain.head_importance(attnviz.load_model("minilm", device="cpu"), fitted, max_tokens=10)
    np.testing.assert_allclose(z, want.effect, atol=1e-6)


def test_a_model_without_layer_parts_says_so_and_keeps_working(tmp_path: Path) -> None:
    from tests.tiny_models import build

    folder = build("gpt2", tmp_path / "gpt2")
    at = _app()
    at.selectbox(key="model_choice").set_value("__custom__").run()
    _ok(at.text_input(key="model_id").set_value(str(folder)).run())
    assert i18n.t("abl.unsupported", "en") in [c.value for c in at.caption]
    assert not at.error, _messages(at, "error")
    assert not [b for b in at.button if b.key == "abl_toggle"]


def test_another_model_starts_with_every_head_on(tmp_path: Path) -> None:
    from tests.tiny_models import build

    folder = build("bert", tmp_path / "bert")
    at = _app(layer="5", head="11")
    _ok(at.button(key="abl_toggle").click().run())
    assert at.session_state["heads_off"] == [[5, 11]]
    at.selectbox(key="model_choice").set_value("__custom__").run()
    _ok(at.text_input(key="model_id").set_value(str(folder)).run())
    assert at.session_state["heads_off"] == []
    assert i18n.t("abl.none_off", "en") in [c.value for c in at.caption]

"""The lab, sentence pairs and cross-attention aware of the sidebar's model: the lab says it runs
MiniLM (its from-scratch encoder carries MiniLM's weights) with one click to choose MiniLM, and
shows the unknown-token notice where MiniLM cannot read the sentence; sentence pairs and
cross-attention run the chosen model, or say why they cannot with one click to MiniLM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz import explain, i18n, lab
from attnviz.app.widgets import escape_md

from .test_app import _array, _chart, _messages, _ok, _open_lab
from .test_model_aware import SHORT, _app
from .tiny_llama import build_llama

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama"))


def test_the_lab_with_e5_and_chinese_says_it_runs_minilm_and_shows_the_unknown_notice() -> None:
    at = _app(lang="zh")
    assert at.session_state["model_choice"] == "e5-small"
    _ok(at.switch_page("../pages/lab.py").run())
    label = escape_md(i18n.t("model.e5", "zh"))
    assert i18n.t("aware.lab_needs_minilm", "zh", model=label) in _messages(at, "info")
    unknown = [w for w in _messages(at, "warning") if w.startswith("13 个词元中有 9 个")]
    assert unknown and "动物没过马路它累了" in unknown[0]  # the notice names the characters MiniLM lost
    _ok(at.button(key="lab_use_minilm").click().run())
    assert at.session_state["model_choice"] == "minilm"
    assert not [i for i in _messages(at, "info") if i.startswith(i18n.t("aware.lab_needs_minilm", "zh", model="")[:6])]
    _ok(at.button(key="lab_english").click().run())  # one click to a sentence MiniLM reads
    assert at.session_state["sentence"] == i18n.examples("en")["default"]
    assert not [w for w in _messages(at, "warning") if "个词元中有" in w]


def test_sentence_pairs_and_cross_attention_run_the_chosen_model() -> None:
    e5 = attnviz.load_model("e5-small", device="cpu")
    at = _app(model=None, text=SHORT)
    at.selectbox(key="model_choice").set_value("e5-small").run()
    _open_lab(at, "lab_pairs_open", "lab_cross_open")
    _ok(at.switch_page("../pages/lab.py").run())
    a, b = at.text_area(key="pairs_a").value, at.text_area(key="pairs_b").value
    pair = e5.attend(a, pair=b)
    across = explain.across_share(explain.pair_blocks(pair))
    layer, head = np.unravel_index(int(np.argmax(across)), across.shape)
    z = _array(_chart(at, "chart_pairs_head")["data"][0]["z"])
    np.testing.assert_allclose(z, pair.weights[layer, head], atol=1e-5)
    assert _array(_chart(at, "chart_pairs_grid")["data"][0]["z"]).shape == (12, 12)  # e5's 12 x 12, not MiniLM's 6 x 12
    y = at.text_input(key="cross_y").value
    cross = lab.cross_attention(e5, SHORT, y)
    lay, hd = at.session_state["lab_layer"], at.session_state["lab_head"]
    np.testing.assert_allclose(_array(_chart(at, "chart_cross_lab")["data"][0]["z"]), cross.weights[lay, hd], atol=1e-5)
    _ok(at.toggle(key="cross_same").set_value(True).run())  # Y = X: e5's own self-attention
    assert any(s.startswith("With Y = X the cross-attention maps equal") for s in _messages(at, "success"))


def test_pairs_and_cross_attention_with_a_decoder_say_why_and_offer_minilm(folder: Path) -> None:
    at = _app(str(folder), text=SHORT)
    _open_lab(at, "lab_pairs_open", "lab_cross_open")
    _ok(at.switch_page("../pages/lab.py").run())
    infos = _messages(at, "info")
    assert [i for i in infos if "does not read sentence pairs: that needs an encoder" in i]
    assert [i for i in infos if i.startswith(i18n.t("aware.cross_needs_layers", "en", model="")[:40])]
    assert not [e for e in _messages(at, "error") if "sentence pairs" in e]
    _ok(at.button(key="pairs_use_minilm").click().run())
    assert at.session_state["model_choice"] == "minilm"

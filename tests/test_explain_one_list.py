"""One token list on the Explain page (AppTest, no browser): with SmolLM2 on a Chinese sentence,
the page lists, counts and picks the same merged characters as the explorer, sums each bar over
a character's byte pieces, draws maps over characters and shows no byte piece's own label."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz import explain, i18n
from attnviz.app import literal
from attnviz.views.evidence import method_label

from .smollm2_model import smollm2
from .test_app import APP, _array, _chart, _ok

TIMEOUT = 300
SENTENCE = "灯塔很亮。"  # 5 characters, 11 tokens of SmolLM2: 灯 and 塔 in 3 byte pieces, 很 and 亮 in 2
PIECE = "\u2039"  # '‹', the mark of a byte piece's own label in att.tokens ('‹灯 1/3›')

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _token_list(at: AppTest) -> tuple[str, list[str]]:
    """The token list's HTML body and its tokens (the first literal element of the page)."""
    body = next(h.proto.body for h in at.get("html") if literal.text_of(h.proto.body) is not None)
    return body, str(literal.text_of(body)).split(" · ")


def _everything(at: AppTest) -> str:
    """All a visitor reads or hovers: messages, widgets and their options, tables, the charts'
    specs and the HTML elements (the token lists' hover titles included)."""
    parts: list[str] = []
    for kind in ("error", "warning", "info", "success", "subheader", "markdown", "caption", "metric"):
        parts += [str(e.value) for e in at.get(kind)]
    for widget in (*at.radio, *at.selectbox, *at.text_input):
        parts += [str(widget.label), *map(str, getattr(widget, "options", [])), str(widget.value)]
    for frame in at.dataframe:
        parts += [*map(str, frame.value.columns), frame.value.to_string()]
    parts += [e.proto.spec for e in at.get("plotly_chart")]
    parts += [e.proto.body for e in at.get("html")]
    return "\n".join(parts)


def _series(bars: dict[str, Any], name: str) -> np.ndarray:
    return _array(next(trace["y"] for trace in bars["data"] if trace["name"] == name))


def test_smollm2s_explain_page_lists_picks_and_scores_the_explorers_characters() -> None:
    raw = smollm2().attend(SENTENCE)
    groups = raw.character_groups()
    assert raw.n == 11 and len(groups) == 5  # the sentence cuts characters into pieces
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(text=SENTENCE, model="smollm2", lang="zh")
    _ok(at.run())
    _, explorer = _token_list(at)  # the explorer's list, the one every page should show
    assert explorer == list(SENTENCE)
    _ok(at.switch_page("../pages/explain.py").run())

    body, shown = _token_list(at)
    assert shown == explorer
    captions = [c.value for c in at.caption]
    assert i18n.t("tokens.label", "zh", n=len(explorer)) in captions
    assert i18n.t("decoder.byte_pieces", "zh") in captions
    assert body.count("<span title=") == sum(len(g) > 1 for g in groups)  # each cut character: its pieces
    picker = at.selectbox(key="x_query")
    assert picker.options == [f"{j}: {token}" for j, token in enumerate(explorer)]
    assert PIECE not in _everything(at)

    # a bar is the hand sum, over the character's pieces, of the model's per-piece scores for the
    # picked character read at its last piece
    query, layer = groups[int(picker.value)][-1], int(at.selectbox(key="x_layer").value)
    bars = _chart(at, "chart_explain_bars")
    expected = {
        i18n.t("explain.raw", "zh", layer=layer): raw.head(layer)[query],
        i18n.t("explain.rollout", "zh"): explain.rollout(raw)[query],
    }
    for name, per_piece in expected.items():
        by_hand = [sum(float(per_piece[i]) for i in g) for g in groups]
        np.testing.assert_allclose(_series(bars, name), by_hand, rtol=1e-5, atol=1e-7)
    assert bars["layout"]["xaxis"]["ticktext"] == explorer

    # the contribution map is over the characters, rows still summing to 1
    z = _array(_chart(at, "chart_contributions")["data"][0]["z"])
    assert z.shape == (len(explorer), len(explorer))
    np.testing.assert_allclose(z.sum(-1), 1.0, atol=1e-4)
    # a decoder is not offered GlobEnc (it reads post-LN encoders only)
    labels = at.selectbox(key="cx_method").options
    assert method_label("globenc", "zh") not in labels and method_label("alti", "zh") in labels

    # another character picked: its last piece is read, and the bars follow
    _ok(picker.set_value(1).run())
    bars = _chart(at, "chart_explain_bars")
    rollout = explain.rollout(raw)[groups[1][-1]]
    np.testing.assert_allclose(
        _series(bars, i18n.t("explain.rollout", "zh")), [rollout[g].sum() for g in groups], rtol=1e-5, atol=1e-7
    )
    # the scoreboard on the token after it names that token by the same number (1), not the
    # model's position of the character's last piece (5)
    _ok(at.radio(key="fx_output").set_value("token").run())
    title = str(_chart(at, "chart_deletion")["layout"]["title"]["text"]).replace("<br>", "")
    assert i18n.t("aware.fig_next_after", "zh", token="", i=1).strip() in title, title

    # GlobEnc picked for an encoder falls back to the first method when the model is a decoder
    _ok(at.sidebar.selectbox(key="model_choice").set_value("minilm").run())
    _ok(at.selectbox(key="cx_method").set_value("globenc").run())
    assert _chart(at, "chart_contributions")["data"]
    _ok(at.sidebar.selectbox(key="model_choice").set_value("smollm2").run())
    assert at.selectbox(key="cx_method").value == explain.CONTRIBUTION_METHODS[0]
    z = _array(_chart(at, "chart_contributions")["data"][0]["z"])
    np.testing.assert_allclose(z.sum(-1), 1.0, atol=1e-4)

"""The token maps' margins made room for on the server (attnviz/views/margins.py): estimates
that bound the label widths, long labels shortened and still escaped, automargin off on the
maps the explorer draws, and Streamlit's look (which turns automargin on) not undoing it. What
chromium draws with them: tests/test_margins_browser.py."""

from __future__ import annotations

import html

import numpy as np
import pytest

from attnviz import views
from attnviz.app import plot_theme
from attnviz.result import Attention
from attnviz.views import margins
from attnviz.views._base import escape


def _att(tokens: list[str], layers: int = 2, heads: int = 3) -> Attention:
    n = len(tokens)
    w = np.random.default_rng(0).random((layers, heads, n, n)).astype(np.float32)
    return Attention(tokens=tokens, weights=w / w.sum(-1, keepdims=True), model="test")


def test_label_width_counts_wide_characters_as_one_em_and_entities_as_one_character() -> None:
    assert margins.label_px("猫狗") == pytest.approx(2 * 12)
    assert margins.label_px("&lt;") == margins.label_px("x")  # Plotly shows "<": one character
    assert margins.label_px("abc", size=10) == pytest.approx(3 * 0.62 * 10)


@pytest.mark.parametrize("word", ["<script>alert(1)</script>", "a" * 60, "&amp;" * 30, "注意力" * 20])
def test_a_long_label_is_shortened_to_fit_with_an_ellipsis_and_stays_escaped(word: str) -> None:
    shown = escape(word)
    cut = margins._shortened(shown, margins.MAX_LABEL_PX)
    assert cut.endswith("…") and margins.label_px(cut) <= margins.MAX_LABEL_PX
    assert word.startswith(html.unescape(cut[:-1]))
    assert "<" not in cut and ">" not in cut  # escaped again after the cut
    assert margins._shortened(escape("short"), margins.MAX_LABEL_PX) == "short"


def test_margins_hold_the_widest_label_and_the_titles() -> None:
    layout = {
        "xaxis": {"ticktext": ["a", "bb", "ccc" * 4], "title": {"text": "key"}},
        "yaxis": {"ticktext": ["WWWWWWWW"], "title": {"text": "query"}},
        "margin": {"t": 90},
    }
    out = margins.fit_margins(layout)
    assert out["xaxis"]["automargin"] is False and out["yaxis"]["automargin"] is False
    assert out["margin"]["t"] == 90  # other margins kept
    assert out["margin"]["l"] >= margins.label_px("WWWWWWWW") + margins.TITLE_ROOM_PX["y"]
    assert out["xaxis"]["tickangle"] == 0  # three short labels sit side by side
    assert out["margin"]["b"] >= margins.TITLE_ROOM_PX["x"]
    assert layout["xaxis"].get("automargin") is None  # the caller's dict is not edited
    many = margins.fit_margins(layout | {"xaxis": {"ticktext": ["token"] * 40, "title": {"text": "key"}}})
    assert many["xaxis"]["tickangle"] == 90  # forty do not: upright, the margin as deep as the longest
    assert many["margin"]["b"] >= margins.label_px("token") + margins.TITLE_ROOM_PX["x"]
    untitled = margins.fit_margins({"xaxis": {"tickvals": [0, 1]}, "yaxis": {"tickvals": [0]}})
    assert untitled["margin"]["l"] < margins.TITLE_ROOM_PX["y"]


def test_the_explorers_maps_send_no_automargin_even_in_streamlits_look() -> None:
    att = _att(["[CLS]", "the", "antidisestablishmentarianism", "cat", "[SEP]"])
    for fig in (views.heatmap(att, 1, 2), views.model_view(att), views.layer_head_grid(np.ones((2, 3)))):
        for mode in plot_theme.MODES:
            spec = plot_theme.for_browser(fig, mode, ()).to_dict()
            for name in ("xaxis", "yaxis"):
                assert spec["layout"][name]["automargin"] is False, (fig.layout.title.text, name)
            assert spec["layout"]["margin"]["l"] > 0 and spec["layout"]["margin"]["b"] > 0
    labels = views.heatmap(att, 0, 0).layout.xaxis.ticktext
    assert labels[2].endswith("…") and "antidisestablishmentarianism".startswith(labels[2][:-1])

"""Figures laid out for a 390 px phone as well as a desktop, without a browser: the sparse
patterns stand two to a row with titles wrapped to half a phone's plot width (four side by side
ran their titles together), and `margins.wrapped` breaks a title into lines that fit, keeping
every character. What chromium draws: tests/test_browser_overflow.py."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

import attnviz
from attnviz import explain, views
from attnviz.i18n import t
from attnviz.lab.flash import flash_attention
from attnviz.lab.sparse import KINDS, sparse_mask
from attnviz.result import Attention
from attnviz.views import margins
from attnviz.views._base import BAR_ROOM_PX
from attnviz.views.flash import random_example, result_pair, tile_grid
from attnviz.views.sparse import FIGURE_TITLE_PX, PANEL_TITLE_PX, pattern_maps

TEXTS = [
    "a window of the nearest tokens",
    "BigBird: window + global + random",
    "每个查询可以看哪些键，每个查询可以看哪些键（15 个词元）",
    "x &lt;script&gt; antidisestablishmentarianism y",
]


@pytest.mark.parametrize("text", TEXTS)
def test_wrapped_lines_fit_and_keep_every_character(text: str) -> None:
    lines = margins.wrapped(text, 140, 11).split("<br>")
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    for line in lines:
        assert line == line.strip()
        assert margins.label_px(line, 11) <= 140 or " " not in line  # only a lone long word runs over


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sparse_maps_stand_two_to_a_row_with_titles_that_fit_half_a_phone(lang: str) -> None:
    n = 15
    masks = {kind: sparse_mask(n, kind, window=2, global_tokens=2, dilation=2, random_keys=2, seed=0) for kind in KINDS}
    layout = pattern_maps(masks, [f"w{i}" for i in range(n)], lang=lang).to_plotly_json()["layout"]
    xs = [layout[k]["domain"] for k in layout if re.fullmatch(r"xaxis\d*", k)]
    ys = [layout[k]["domain"] for k in layout if re.fullmatch(r"yaxis\d*", k)]
    assert len({tuple(d) for d in xs}) == min(2, len(KINDS))  # two columns
    assert len({tuple(d) for d in ys}) == -(-len(KINDS) // 2)  # as many rows as it takes
    for i, a in enumerate(xs):
        for b in xs[i + 1 :]:
            assert a == b or a[1] <= b[0] or b[1] <= a[0]  # columns apart
    for note in layout["annotations"]:
        kind_lines = note["text"].split("<br>")[:-1]  # the pattern's name, wrapped; then the count
        assert all(margins.label_px(line, 11) <= PANEL_TITLE_PX for line in kind_lines), note["text"]
    title = layout["title"]["text"].split("<br><sup>")[0]
    assert all(margins.label_px(line, margins.TITLE_FONT_PX) <= FIGURE_TITLE_PX for line in title.split("<br>")), title
    assert t("sparse_fig.maps_title", lang, n=n).replace(" ", "") == title.replace("<br>", "").replace(" ", "")
    np.testing.assert_array_equal(np.asarray(pattern_maps(masks).data[0].z, dtype=bool), masks[KINDS[0]])


def _attention(layers: int, heads: int, n: int, seed: int = 0) -> Attention:
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, n, n)).astype(np.float32)
    return Attention([f"tok{i}" for i in range(n)], w / w.sum(-1, keepdims=True), "toy")


def _square_figures(lang: str) -> dict[str, go.Figure]:
    att = _attention(6, 12, 15)
    result = flash_attention(*random_example(10, 8, seed=0), block=4)
    scores = np.random.default_rng(0).standard_normal((10, 10))
    return {
        "heatmap": views.heatmap(att, 2, 3, lang=lang),
        "grid": views.model_view(att, focus=(1, 4), lang=lang),
        "tiles": tile_grid(result, scores, 2, [f"w{i}" for i in range(10)], lang=lang),
    }


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_square_maps_colour_bar_lies_under_it_centred_on_its_domain(lang: str) -> None:
    """A square map is centred in its domain at any width; a bar at the domain's right edge stood
    85-500 px from it on a wide screen. Lying along the bottom, centred on the domain, it is under
    the map at every width, in a bottom margin that keeps room for it under the axis labels."""
    for name, fig in _square_figures(lang).items():
        layout = fig.to_plotly_json()["layout"]
        for trace in fig.to_plotly_json()["data"]:
            if trace["type"] != "heatmap" or trace.get("showscale") is False:
                continue
            bar = trace["colorbar"]
            x = layout["xaxis" + trace.get("xaxis", "x")[1:]]
            centre = sum(x.get("domain", [0, 1])) / 2
            assert (bar["orientation"], bar["yref"], bar["y"], bar["yanchor"]) == ("h", "container", 0, "bottom"), name
            assert bar["x"] == pytest.approx(centre) and bar["xanchor"] == "center", name
            # centred on a phone's plot (358 px chart less the left margin), the bar and its title stay in the chart
            assert bar["lenmode"] == "pixels" and bar["len"] <= 358 - layout["margin"].get("l", 0), name
            assert layout["margin"]["b"] >= BAR_ROOM_PX + 40, name  # labels, axis title, then the bar


@pytest.mark.parametrize(("layers", "heads"), [(6, 12), (30, 9), (2, 2)])
def test_the_grid_is_as_tall_as_its_square_cells_at_any_width(layers: int, heads: int) -> None:
    """The height the page gives the all-heads grid at a plot width W is its margins plus W times
    layers / heads: a phone's 6 x 12 grid was 80 px of cells in a 540 px figure."""
    fig = views.model_view(_attention(layers, heads, 7))
    layout = fig.to_plotly_json()["layout"]
    data = [tr.to_plotly_json() for tr in fig.data]
    fit = margins.square_fit(layout, data)
    assert fit is not None
    tb, lr, k = fit
    assert tb == layout["margin"].get("t", 100) + layout["margin"]["b"]
    assert lr == layout["margin"]["l"] + layout["margin"].get("r", 0)
    assert k == pytest.approx(layers / heads)
    # a standing colour bar pushes the right margin after a draw: the height is not known here
    standing = [tr | {"colorbar": {"orientation": "v"}} if tr["type"] == "heatmap" else tr for tr in data]
    assert margins.square_fit(layout, standing) is None
    assert margins.square_fit(views.layer_head_grid(np.ones((2, 3))).to_plotly_json()["layout"], data) is None


TITLES = [
    ("Agreement with leave-one-out,<br>layer by layer (the sentence embedding)", "a note that runs on " * 6),
    ("与逐个删除词元的一致程度（1 = 顺序相同）每个输出从哪里来（回溯到输入词元）", "第 i 行 = 输出位置 i " * 5),
    ("x &lt;script&gt; antidisestablishmentarianism y", None),
]


@pytest.mark.parametrize(("title", "note"), TITLES)
def test_a_pinned_title_fits_a_phone_line_by_line_and_keeps_every_character(title: str, note: str | None) -> None:
    spec, px = margins.top_title(title, note)
    text = spec["text"]
    head = text.partition("<br><sup>")[0]
    lines = head.split("<br>")
    notes = re.findall(r"<sup>(.*?)</sup>", text)
    assert all(
        margins.label_px(line, margins.TITLE_FONT_PX) <= margins.PHONE_TITLE_PX or " " not in line for line in lines
    )
    assert "".join(lines).replace(" ", "") == title.replace("<br>", "").replace(" ", "")
    assert "".join(notes).replace(" ", "") == (note or "").replace(" ", "")
    assert (spec["yref"], spec["y"], spec["yanchor"]) == ("container", 1, "top")
    assert px >= 2 * margins.TITLE_PAD_PX + 14 * (len(lines) + len(notes))  # room for every line drawn


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_subplot_titles_wrap_to_their_map_and_the_top_margin_holds_them_under_the_title(lang: str) -> None:
    result = flash_attention(*random_example(10, 8, seed=0), block=4)
    fig = result_pair(result.output, result.output, lang=lang)
    layout = fig.to_plotly_json()["layout"]
    _, title_px = margins.top_title(layout["title"]["text"].split("<br><sup>")[0])
    for note in layout["annotations"]:
        lines = note["text"].split("<br>")
        assert all(margins.label_px(line) <= 130 or " " not in line for line in lines), note["text"]
        assert layout["margin"]["t"] >= title_px + 14 * len(lines)


def test_token_labels_stand_upright_where_they_cannot_sit_side_by_side_in_a_narrow_plot() -> None:
    """plotly.js chose the angle after measuring the labels in a fallback font: level labels that
    then overlapped (the lesson's token bars at 1920 px, the lab's step matrices at 1366 px)."""
    long = [f"token{i}" for i in range(15)]
    bars = views.token_bars(long, {"a": np.ones(15)})
    assert bars.layout.xaxis.tickangle in (90, -90)
    scores = views.matrix(np.zeros((15, 15)), long, long)
    assert scores.layout.xaxis.tickangle in (90, -90)
    short = ["a", "b", "c"]
    assert views.token_bars(short, {"a": np.ones(3)}).layout.xaxis.tickangle == 0
    assert margins.stand_upright(long) and not margins.stand_upright(short)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_scoreboards_figures_keep_their_words_apart_on_a_phone(minilm: attnviz.PretrainedModel, lang: str) -> None:
    """The layer agreement's two panel titles ran into each other on a 390 px phone, where the
    methods' names and a standing colour bar left each panel about 80 px; the deletion curves'
    legend, laid across under the plot, ran over the x axis's title."""
    board = explain.faithfulness(minilm, "dog bites man", steps=3, random_orders=1)
    agreement = views.layer_agreement(board, lang=lang).to_plotly_json()
    names = agreement["data"][0]["y"]
    panel_px = 0.47 * (358 - max(margins.label_px(name) for name in names) - 24) - 8
    layout = agreement["layout"]
    title = layout["title"]["text"].split("<br>")
    sup = sum(line.startswith("<sup>") for line in title)
    title_px = 10 + 21 * (len(title) - sup) + 13 * sup - 7  # as chromium draws it: 10 px pad, 21 a line, 13 a note's
    for note in layout["annotations"]:
        lines = note["text"].split("<br>")
        assert all(margins.label_px(line) <= max(panel_px, 48) for line in lines), note["text"]
        assert note["xanchor"] == "center" and layout["margin"]["t"] >= title_px + 14 * len(lines)
    assert [tr["colorbar"]["orientation"] for tr in agreement["data"] if tr["showscale"]] == ["h"]
    curves = views.deletion_curves(board, lang=lang).to_plotly_json()
    legend, bottom = curves["layout"]["legend"], curves["layout"]["margin"]["b"]
    assert (legend["orientation"], legend["yref"], legend["y"]) == ("v", "container", 0)
    assert bottom >= 60 + 18 * len(curves["data"])  # the axis title, then a row a method

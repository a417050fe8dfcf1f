"""The corpus views (attnviz/views/corpus.py): the grid of a statistic with its spread and the
query-key atlas carry the numbers given, escape every token and sentence, speak the language
asked for, stay valid Plotly, and a click on either reads back what it should."""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attnviz import views

from .test_views import decode

HOSTILE = ["[CLS]", "<script>alert(1)</script>", "&amp;", "$x^2$", "[SEP]"]
TEXTS = ["<img src=x onerror=alert(1)> " + "long " * 30, "plain"]


def _grid(lang: str = "en") -> go.Figure:
    rng = np.random.default_rng(0)
    mean, std = rng.random((3, 4)), rng.random((3, 4)) / 10
    return views.corpus_grid(mean, std, minimum=mean - 0.5, maximum=mean + 0.5, count=1234, title="t", lang=lang)


def _atlas(colour_by: str = "kind", lang: str = "en", m: int = 5) -> tuple[go.Figure, np.ndarray]:
    xy = np.arange(4 * m, dtype=np.float32).reshape(2 * m, 2)
    is_key = np.repeat([False, True], m)
    row = np.tile([0, 0, 0, 1, 1][:m], 2)
    relative = np.tile(np.linspace(0, 1, m, dtype=np.float32), 2)
    fig = views.query_key_atlas(
        xy, is_key, row, relative, HOSTILE[:m], TEXTS, layer=2, head=3, colour_by=colour_by, lang=lang
    )
    return fig, xy


def test_grid_cells_carry_mean_and_spread_and_stay_clickable() -> None:
    rng = np.random.default_rng(0)
    mean, std = rng.random((3, 4)), rng.random((3, 4)) / 10
    fig = _grid()
    heat, pick = fig.data
    np.testing.assert_array_equal(np.asarray(heat.z), mean)
    assert heat.text[1][2] == f"{mean[1, 2]:.2f}<br>±{std[1, 2]:.2f}"
    assert pick.customdata[4 * 1 + 2] == [1, 2]
    assert f"{mean[1, 2]:.3f} ± {std[1, 2]:.3f}" in pick.hovertext[6] and "1,234 sentences" in pick.hovertext[6]
    event = {"selection": {"points": [{"customdata": [1, 2]}]}}
    assert views.model_view_pick(event) == (1, 2)
    with pytest.raises(ValueError):
        views.corpus_grid(mean, std[:2])


def test_atlas_points_are_the_coordinates_given_queries_then_keys() -> None:
    fig, xy = _atlas()
    queries, keys = fig.data
    assert (queries.type, keys.type) == ("scattergl", "scattergl")
    np.testing.assert_array_equal(np.asarray(queries.x), xy[:5, 0])
    np.testing.assert_array_equal(np.asarray(keys.y), xy[5:, 1])
    assert [c[0] for c in keys.customdata] == [0, 0, 0, 1, 1]
    sent = json.loads(fig.to_json())["data"]
    assert isinstance(sent[0]["x"], dict) and decode(sent[0]["x"]).dtype == np.float32  # typed arrays
    assert sent[0]["customdata"] == [[0], [0], [0], [1], [1]]  # plain lists: click events keep them
    assert views.atlas_pick({"selection": {"points": [{"customdata": [1]}]}}) == 1
    assert views.atlas_pick({"selection": {"points": [{"customdata": [1, 2]}]}}) is None


def test_atlas_escapes_tokens_and_sentences_and_shortens_sentences() -> None:
    fig, _ = _atlas()
    spec = fig.to_json()
    assert "<script>" not in spec and "<img" not in spec
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in fig.data[0].text
    assert fig.data[0].text[2] == "&amp;amp;"
    assert all(len(h) <= 80 for h in fig.data[0].hovertext)


def test_atlas_by_position_colours_by_the_relative_position() -> None:
    fig, _ = _atlas("position")
    np.testing.assert_allclose(np.asarray(fig.data[1].marker.color), np.linspace(0, 1, 5))
    assert fig.data[0].marker.showscale and not fig.data[1].marker.showscale
    with pytest.raises(ValueError):
        _atlas("size")


@pytest.mark.parametrize("build", [_grid, lambda lang: _atlas("position", lang)[0]])
def test_chinese_figures_carry_no_english_words(build: object) -> None:
    fig = build("zh")  # type: ignore[operator]
    words = json.dumps(
        [fig.layout.title.text, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text]
        + [getattr(t, "name", "") or "" for t in fig.data]
        + [getattr(t, "hovertemplate", "") or "" for t in fig.data]
        + (list(fig.data[-1].hovertext or []) if fig.data[-1].type == "scatter" else []),  # atlas hover: the texts
        ensure_ascii=False,
    )
    words = re.sub(r"<[^>]+>|%\{[^}]+\}|&[a-z]+;|[Ll]ayer|PCA|t-SNE|UMAP", " ", words)  # markup, fields, names
    english = [w for w in re.findall(r"[A-Za-z]{3,}", words) if w not in ("script", "alert", "img", "src", "onerror")]
    assert english == [], english


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", ["grid", "atlas_kind", "atlas_position"])
def test_corpus_views_are_valid_plotly_that_validation_leaves_unchanged(name: str, lang: str) -> None:
    fig = {"grid": lambda: _grid(lang), "atlas_kind": lambda: _atlas("kind", lang)[0]}.get(
        name, lambda: _atlas("position", lang)[0]
    )()
    spec = json.loads(pio.to_json(fig))
    assert json.loads(pio.to_json(go.Figure(spec))) == spec


def test_twenty_thousand_points_stay_a_few_megabytes() -> None:
    m = 10_000
    rng = np.random.default_rng(1)
    texts = ["a sentence of about forty characters ok" for _ in range(500)]
    fig = views.query_key_atlas(
        rng.normal(size=(2 * m, 2)).astype(np.float32),
        np.repeat([False, True], m),
        np.tile(np.arange(m) % 500, 2),
        np.tile(rng.random(m).astype(np.float32), 2),
        ["token"] * m,
        texts,
        layer=0,
        head=0,
    )
    assert len(fig.to_json()) < 4e6  # about 3 MB at 20k points: coordinates as float32, hover as text

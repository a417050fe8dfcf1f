"""The decoder's marks on the views (attnviz/views/decoder.py): the all-heads grid of a model
with grouped heads outlines each key/value group and names every head's key/value head, the
heatmap says which heads share its keys, SmolLM2's 270-head grid at 128 tokens stays inside
the 1.5 MB payload budget, and the next-word and logit lens tables hold tokens as data."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go

from attnviz import views
from attnviz.explain.logit_lens import LogitLens
from attnviz.nextword import NextToken
from attnviz.result import Attention
from attnviz.views import decoder as dv


def causal(layers: int, heads: int, n: int, kv: int | None, seed: int = 0) -> Attention:
    """Random causal attention (rows sum to 1) with `kv` key/value heads."""
    rng = np.random.default_rng(seed)
    w = rng.random((layers, heads, n, n)).astype(np.float32) * np.tril(np.ones((n, n), dtype=np.float32))
    w /= w.sum(-1, keepdims=True)
    groups = None if kv is None else np.arange(heads) // (heads // kv)
    return Attention([f"t{i}" for i in range(n)], w, "toy", causal=True, kv_heads=groups)


def test_the_grid_outlines_each_group_and_names_its_key_value_head() -> None:
    att = causal(4, 9, 12, kv=3)
    assert dv.groups(att) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    fig = dv.mark_groups(views.model_view(att, focus=(1, 4)), att, lang="en")
    rects = [s for s in fig.layout.shapes if s.type == "rect" and s.line.width == 2]
    assert [(s.x0, s.x1) for s in rects] == [(-0.48, 2.48), (2.52, 5.48), (5.52, 8.48)]
    assert all((s.y0, s.y1) == (-0.5, 3.5) for s in rects)
    assert len({s.line.color for s in rects}) == 3
    assert len(fig.layout.shapes) == 4  # the focus outline is kept
    assert ["kv 0" in tick for tick in fig.layout.xaxis.ticktext] == [True] * 3 + [False] * 6
    assert "kv 2" in fig.layout.xaxis.ticktext[8] and "9 query heads share 3" in fig.layout.title.text
    go.Figure(json.loads(fig.to_json()))  # still a valid figure
    zh = dv.mark_groups(views.model_view(att), att, lang="zh")
    assert "共用" in zh.layout.title.text


def test_a_model_whose_heads_have_their_own_keys_is_left_alone() -> None:
    for att in (causal(2, 4, 6, kv=None), causal(2, 4, 6, kv=4)):
        before = views.model_view(att).to_json()
        assert dv.groups(att) == [] and dv.mark_groups(views.model_view(att), att).to_json() == before
        assert views.heatmap_spec(att, 0, 1).note is None
        assert views.heatmap(att, 0, 1).layout.title.text == views.heatmap_spec(att, 0, 1).title  # no note


def test_the_heatmap_names_the_heads_sharing_its_keys() -> None:
    att = causal(2, 9, 6, kv=3)
    title = views.heatmap(att, 1, 4, lang="en").layout.title.text
    assert "key/value head 1" in title and "heads 3, 5" in title
    assert (
        views.heatmap(att, 1, None).layout.title.text == views.heatmap_spec(att, 1, None).title
    )  # the mean: every group


def test_smollm2s_270_heads_at_128_tokens_fit_the_payload_budget() -> None:
    att = causal(30, 9, 128, kv=3)
    thumb = dv.grid_thumb(att)
    assert thumb == 16 and dv.grid_thumb(causal(1, 1, 4, kv=None)) == 32
    assert dv.grid_thumb(causal(6, 12, 4, kv=None)) == 32  # MiniLM's 72 heads keep their 32 x 32
    fig = dv.mark_groups(views.model_view(att, focus=(0, 0), thumb=thumb), att)
    assert len(fig.to_json()) <= 1.5e6


def test_tables_hold_tokens_as_data_with_spaces_made_visible() -> None:
    rows = dv.next_rows([NextToken(" Paris", 0.75, " Paris"), NextToken("<b>x</b>", 0.25, "<b>x</b>")], lang="en")
    assert rows == [
        {"rank": 1, "next token": "\u2423Paris", "probability": 0.75},
        {"rank": 2, "next token": "<b>x</b>", "probability": 0.25},
    ]
    lens = LogitLens(
        tokens=[["a", "\n"], [" b", ""]],
        probs=np.array([[0.5, 0.25], [0.125, 0.0625]], dtype=np.float32),
        ids=np.zeros((2, 2), dtype=np.int64),
        position=0,
        token="x",
    )
    table = dv.lens_rows(lens, lang="en")
    assert table == [
        {"layer": "0", "rank 1": "a (50.0%)", "rank 2": "\\n (25.0%)"},
        {"layer": "1", "rank 1": "\u2423b (12.5%)", "rank 2": "\u2423 (6.2%)"},
    ]
    assert list(dv.lens_rows(lens, lang="zh")[0]) == ["层", "名次 1", "名次 2"]

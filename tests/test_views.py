"""attnviz.views: figures carry exactly the numbers they claim, stay small, and stay clickable."""

from __future__ import annotations

import ast
import base64
import importlib
import importlib.util
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import attnviz
from attnviz import Attention, views
from attnviz.i18n import t as catalogue_text
from attnviz.views._base import tick_step
from attnviz.views.pick import PICK_TRACE

ROOT = Path(__file__).resolve().parents[1]


def make_att(weights: np.ndarray, tokens: list[str] | None = None, special: list[bool] | None = None) -> Attention:
    w = np.asarray(weights, dtype=np.float32)
    n = w.shape[-1]
    return Attention(
        tokens=tokens or [f"t{i}" for i in range(n)],
        weights=w,
        model="hand-made",
        special=np.array(special if special is not None else [False] * n),
    )


def random_att(layers: int, heads: int, n: int, seed: int = 0) -> Attention:
    w = np.random.default_rng(seed).random((layers, heads, n, n)) + 0.05
    return make_att(w / w.sum(-1, keepdims=True))


def decode(spec: object) -> np.ndarray:
    """A plotly typed-array spec {"dtype", "bdata", "shape"} from to_json, back to numpy."""
    assert isinstance(spec, dict), f"expected a base64 typed array, got {type(spec).__name__}"
    out = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"])
    shape = spec.get("shape")
    return out.reshape([int(s) for s in str(shape).split(",")]) if shape else out


def trace(fig: go.Figure, name: str) -> go.BaseTraceType:
    (found,) = [t for t in fig.data if t.name == name]
    return found


def head_lines(fig: go.Figure) -> list[tuple[int, int, int, float]]:
    """(head, query, key, opacity) of every line the head view draws."""
    out = []
    for t in fig.data:
        if t.mode != "lines":
            continue
        head = int(t.name.split()[-1])
        x, y = np.asarray(t.x, dtype=float), np.asarray(t.y, dtype=float)
        assert np.isnan(x[2::3]).all() and np.isnan(y[2::3]).all()  # segments broken by NaN
        assert (x[0::3] == 0).all() and (x[1::3] == 1).all()
        out += [(head, int(q), int(k), t.opacity) for q, k in zip(y[0::3], y[1::3], strict=True)]
    return out


def streamlit_point(fig: go.Figure, index: int) -> dict:
    """A selected point the way Streamlit reports it (seen in a real click on `streamlit run`)."""
    pick = trace(fig, PICK_TRACE)
    curve = list(fig.data).index(pick)
    return {
        "curve_number": curve,
        "point_number": index,
        "point_index": index,
        "x": pick.x[index],
        "y": pick.y[index],
        "customdata": list(pick.customdata[index]),
        "hovertext": pick.hovertext[index],
    }


# --- heatmap ---------------------------------------------------------------------------------


def test_heatmap_z_is_the_head_and_ticks_are_the_tokens_duplicates_kept(tired: Attention) -> None:
    fig = views.heatmap(tired, layer=3, head=5)
    (hm,) = fig.data
    assert np.array_equal(hm.z, tired.head(3, 5))
    assert hm.z.dtype == np.float32
    assert tired.tokens.count("the") == 2
    assert list(fig.layout.xaxis.ticktext) == tired.tokens
    assert list(fig.layout.yaxis.ticktext) == tired.tokens
    assert len(set(hm.x)) == tired.n and list(hm.x) == list(hm.y)  # unique keys: no merged rows
    assert list(fig.layout.yaxis.tickvals) == list(hm.y)
    assert fig.layout.yaxis.autorange == "reversed"  # query 0 on top
    for word in ("query", "key", "weight %{z"):
        assert word in hm.hovertemplate


def test_heatmap_serialises_z_as_exact_float32_typed_array(tired: Attention) -> None:
    z = json.loads(views.heatmap(tired, 1, 2).to_json())["data"][0]["z"]
    assert z["dtype"] == "f4"
    assert np.array_equal(decode(z), tired.head(1, 2))


def test_heatmap_mean_of_heads_and_colour_range(tired: Attention) -> None:
    fig = views.heatmap(tired, layer=4, head=None)
    assert np.array_equal(fig.data[0].z, tired.weights[4].mean(axis=0))
    assert fig.data[0].zauto is True
    assert "mean of 12 heads" in fig.layout.title.text
    fixed = views.heatmap(tired, 4, 0, zmax=0.5, title="mine").data[0]
    assert (fixed.zmin, fixed.zmax, fixed.zauto) == (0.0, 0.5, False)


def test_heatmap_out_of_range_head_raises(tired: Attention) -> None:
    with pytest.raises(IndexError):
        views.heatmap(tired, layer=0, head=12)


def test_long_token_axes_are_thinned_but_keep_every_row() -> None:
    att = random_att(1, 1, 200)
    fig = views.heatmap(att)
    ticks = list(fig.layout.xaxis.ticktext)
    assert len(ticks) <= views.MAX_TICK_LABELS // 2 + 1
    step = tick_step(200)
    assert ticks == att.tokens[::step]
    assert len(fig.data[0].x) == 200


def test_markup_like_tokens_are_escaped() -> None:
    att = make_att(np.full((1, 1, 3, 3), 1 / 3), tokens=["<s>", "a&b", "</s>"])
    assert list(views.heatmap(att).layout.xaxis.ticktext) == ["&lt;s&gt;", "a&amp;b", "&lt;/s&gt;"]


# --- model view and picking ------------------------------------------------------------------


def thumbnail(fig: go.Figure, layer: int, head: int) -> np.ndarray:
    t, gap = fig.layout.meta["thumb"], fig.layout.meta["gap"]
    z = fig.data[0].z
    return z[layer * (t + gap) : layer * (t + gap) + t, head * (t + gap) : head * (t + gap) + t]


def test_model_view_is_one_mosaic_of_block_means() -> None:
    att = random_att(2, 3, 64)
    fig = views.model_view(att, thumb=16)
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 1  # one image for all heads, never layers x heads heatmaps
    assert fig.layout.meta["thumb"] == 16
    for layer in range(2):
        for head in range(3):
            expected = att.weights[layer, head].reshape(16, 4, 16, 4).mean(axis=(1, 3))
            np.testing.assert_allclose(thumbnail(fig, layer, head), expected, rtol=1e-6, atol=1e-7)
    gap = fig.layout.meta["gap"]
    assert np.isnan(fig.data[0].z[16 : 16 + gap]).all()  # rows between layers are empty


def test_model_view_uneven_blocks_average_their_own_tokens() -> None:
    att = random_att(1, 2, 50)
    fig = views.model_view(att, thumb=16)
    starts = (np.arange(16) * 50) // 16
    bounds = [*starts.tolist(), 50]
    m = att.weights[0, 1]
    expected = np.array(
        [[m[bounds[i] : bounds[i + 1], bounds[j] : bounds[j + 1]].mean() for j in range(16)] for i in range(16)]
    )
    np.testing.assert_allclose(thumbnail(fig, 0, 1), expected, rtol=1e-5)


def test_model_view_keeps_small_maps_whole(tired: Attention) -> None:
    fig = views.model_view(tired)
    assert fig.layout.meta["thumb"] == tired.n
    assert np.array_equal(thumbnail(fig, 5, 11), tired.weights[5, 11])


def test_model_view_has_one_clickable_marker_per_head(tired: Attention) -> None:
    fig = views.model_view(tired, focus=(2, 3))
    pick = trace(fig, PICK_TRACE)
    assert pick.type == "scatter"
    cells = [tuple(c) for c in pick.customdata]
    assert sorted(cells) == [(layer, head) for layer in range(6) for head in range(12)]
    assert all(x == h and y == layer for (layer, h), x, y in zip(cells, pick.x, pick.y, strict=True))
    (outline,) = fig.layout.shapes
    assert (outline.x0, outline.x1, outline.y0, outline.y1) == (2.5, 3.5, 1.5, 2.5)
    # customdata must reach the browser as JSON lists: a typed array is lost in click events
    sent = json.loads(fig.to_json())["data"][list(fig.data).index(pick)]["customdata"]
    assert sent[0] == [0, 0] and len(sent) == 72


def test_model_view_rejects_a_focus_outside_the_grid(tired: Attention) -> None:
    with pytest.raises(IndexError):
        views.model_view(tired, focus=(6, 0))


def test_model_view_pick_round_trips_every_marker(tired: Attention) -> None:
    fig = views.model_view(tired)
    for index in (0, 17, 71):
        point = streamlit_point(fig, index)
        assert views.model_view_pick([point]) == tuple(point["customdata"])
    point = streamlit_point(fig, 17)
    selection = {"points": [point], "point_indices": [17], "box": [], "lasso": []}
    assert views.model_view_pick(selection) == (1, 5)
    assert views.model_view_pick({"selection": selection}) == (1, 5)


def test_model_view_pick_ignores_what_is_not_a_cell() -> None:
    assert views.model_view_pick([]) is None
    assert views.model_view_pick(None) is None
    assert views.model_view_pick([{"curve_number": 0, "x": 1, "y": 2, "z": 0.3}]) is None
    assert views.model_view_pick([{"customdata": [True, 2]}]) is None
    assert views.model_view_pick([{"customdata": [1.5, 2]}]) is None
    assert views.model_view_pick([{"customdata": [3]}, {"customdata": [2, 4]}]) == (2, 4)
    # a typed array that went through JSON.stringify arrives as an object
    assert views.model_view_pick([{"customdata": {"0": 1, "1": 2}}]) == (1, 2)


def test_layer_head_grid_labels_cells_and_is_pickable() -> None:
    values = np.arange(12, dtype=float).reshape(3, 4)
    labels = np.array([[f"v{v:g}" for v in row] for row in values])
    fig = views.layer_head_grid(values, title="grid", labels=labels, zmin=0, zmax=11)
    hm = fig.data[0]
    assert np.array_equal(hm.z, values)
    assert [list(r) for r in hm.text] == labels.tolist()
    assert (hm.zmin, hm.zmax) == (0, 11)
    point = streamlit_point(fig, 6)
    assert views.model_view_pick([point]) == (1, 2)
    assert "v6" in point["hovertext"]
    with pytest.raises(ValueError):
        views.layer_head_grid(values, labels=labels[:2])


# --- head view -------------------------------------------------------------------------------


def test_head_view_draws_every_link_of_every_head_when_small() -> None:
    att = random_att(1, 2, 6)
    fig = views.head_view(att)
    lines = head_lines(fig)
    assert sorted((h, q, k) for h, q, k, _ in lines) == [
        (h, q, k) for h in range(2) for q in range(6) for k in range(6)
    ]
    assert "strongest" not in fig.layout.title.text
    # opacity grows with the weight
    by_weight = sorted(lines, key=lambda line: att.weights[0, line[0], line[1], line[2]])
    opacities = [line[3] for line in by_weight]
    assert opacities == sorted(opacities)
    assert len({t.line.color for t in fig.data if t.mode == "lines"}) == 2


def test_head_view_highlight_shows_only_that_query() -> None:
    att = random_att(2, 3, 7)
    fig = views.head_view(att, layer=1, heads=[0, 2], highlight=4)
    lines = head_lines(fig)
    assert {q for _, q, _, _ in lines} == {4}
    assert sorted((h, k) for h, _, k, _ in lines) == [(h, k) for h in (0, 2) for k in range(7)]
    assert "(4)" in fig.layout.title.text


def test_head_view_keeps_the_top_k_per_query_and_says_so() -> None:
    att = random_att(1, 2, 6)
    fig = views.head_view(att, max_links=24)  # 2 heads x 6 queries x 2 keys
    lines = head_lines(fig)
    assert len(lines) == 24
    for h in range(2):
        for q in range(6):
            top2 = set(np.argsort(-att.weights[0, h, q])[:2].tolist())
            assert {k for hh, qq, k, _ in lines if (hh, qq) == (h, q)} == top2
    assert "only the 2 strongest of 6 links per query token" in fig.layout.title.text


def test_head_view_caps_large_inputs_by_default() -> None:
    att = random_att(1, 12, 100)
    fig = views.head_view(att)
    assert len(head_lines(fig)) <= views.DEFAULT_MAX_LINKS
    assert "strongest" in fig.layout.title.text


def test_head_view_leaves_out_invisible_links() -> None:
    w = np.full((1, 1, 3, 3), 0.005, dtype=np.float32)
    w[0, 0, :, 0] = 0.99
    lines = head_lines(views.head_view(make_att(w)))
    assert sorted((q, k) for _, q, k, _ in lines) == [(0, 0), (1, 0), (2, 0)]


def test_token_markers_are_pickable_and_not_mistaken_for_cells() -> None:
    fig = views.head_view(random_att(1, 2, 5))
    query = trace(fig, "query")
    point = {"curve_number": list(fig.data).index(query), "point_index": 3, "customdata": list(query.customdata[3])}
    assert views.token_pick([point]) == 3
    assert views.model_view_pick([point]) is None
    nodes = trace(views.graph_view(random_att(1, 1, 5)), "tokens")
    assert views.token_pick({"points": [{"customdata": list(nodes.customdata[4])}]}) == 4


# --- graph view ------------------------------------------------------------------------------

KNOWN = np.array(
    [
        [0.50, 0.30, 0.15, 0.05],
        [0.05, 0.05, 0.80, 0.10],
        [0.25, 0.25, 0.25, 0.25],
        [0.00, 0.90, 0.00, 0.10],
    ],
    dtype=np.float32,
)


def graph_edges(fig: go.Figure) -> list[tuple[int, int]]:
    return [tuple(c) for c in trace(fig, "edges").customdata]


def test_graph_view_edges_are_exactly_the_weights_above_threshold() -> None:
    att = make_att(KNOWN[None, None], tokens=["a", "b", "a", "c"])
    fig = views.graph_view(att, threshold=0.1)
    expected = {(i, j) for i in range(4) for j in range(4) if KNOWN[i, j] > 0.1}
    assert set(graph_edges(fig)) == expected and len(graph_edges(fig)) == len(expected)
    assert (0, 0) in expected  # the self-loop is an edge too
    weights = [KNOWN[i, j] for i, j in graph_edges(fig)]
    assert weights == sorted(weights, reverse=True)  # strongest first
    assert "b (1) → a (2): 0.8000" in trace(fig, "edges").hovertext


def test_graph_view_caps_edges_strongest_first_and_says_so() -> None:
    att = make_att(KNOWN[None, None])
    fig = views.graph_view(att, threshold=0.1, max_edges=2)
    assert graph_edges(fig) == [(3, 1), (1, 2)]
    assert "strongest 2 of 9 edges" in fig.layout.title.text


def test_graph_view_mean_of_heads_and_empty_graph() -> None:
    w = np.stack([KNOWN, KNOWN.T / KNOWN.T.sum(-1, keepdims=True)])[None]
    att = make_att(w)
    mean = w[0].mean(0)
    fig = views.graph_view(att, head=None, threshold=0.2)
    assert set(graph_edges(fig)) == {(i, j) for i in range(4) for j in range(4) if mean[i, j] > 0.2}
    empty = views.graph_view(att, head=0, threshold=0.95)
    assert graph_edges(empty) == [] and "no weight above" in empty.layout.title.text


def test_graph_view_line_widths_grow_with_weight() -> None:
    fig = views.graph_view(make_att(KNOWN[None, None]), threshold=0.0)
    widths = [t.line.width for t in fig.data if t.mode == "lines"]
    assert widths == sorted(widths) and len(widths) == len(set(widths))


# --- token focus and bars --------------------------------------------------------------------


def test_token_focus_ranks_heads_and_tops_with_the_argmax(tired: Attention) -> None:
    it, animal = tired.tokens.index("it"), tired.tokens.index("animal")
    fig = views.token_focus(tired, it, animal)
    (bar,) = fig.data
    values = np.asarray(bar.x)
    assert len(values) == 72
    assert np.all(np.diff(values) <= 0)
    flat = tired.weights[:, :, it, animal]
    layer, head = np.unravel_index(flat.argmax(), flat.shape)
    assert bar.y[0] == views.head_label(int(layer), int(head)) == f"layer {layer}, head {head}"
    assert tuple(bar.customdata[0]) == (layer, head)
    assert values[0] == flat.max()
    assert fig.layout.yaxis.autorange == "reversed"  # first bar drawn at the top
    assert len(views.token_focus(tired, it, animal, top=5).data[0].x) == 5


def test_token_bars_one_series_each_over_repeated_tokens() -> None:
    tokens = ["the", "cat", "the"]
    series = {"raw": np.array([0.2, 0.5, 0.3]), "rollout": np.array([0.1, 0.1, 0.8])}
    fig = views.token_bars(tokens, series, title="why", highlight=1)
    assert [t.name for t in fig.data] == ["raw", "rollout"]
    for t, values in zip(fig.data, series.values(), strict=True):
        assert len(set(t.x)) == 3 and np.array_equal(t.y, values)
    assert list(fig.layout.xaxis.ticktext) == tokens
    assert len(fig.layout.shapes) == 1
    with pytest.raises(ValueError):
        views.token_bars(tokens, {"bad": np.zeros(2)})


# --- lab matrix and cost ---------------------------------------------------------------------


def test_matrix_shows_minus_inf_for_masked_cells() -> None:
    scores = np.array([[1.234, -np.inf, -1e9], [0.5, -0.25, -np.inf]])
    fig = views.matrix(scores, ["the", "the"], ["k0", "k1", "k2"], fmt=".1f")
    hm = fig.data[0]
    assert [list(r) for r in hm.text] == [["1.2", "", ""], ["0.5", "-0.2", ""]]
    assert np.isnan(hm.z[0, 1]) and np.isnan(hm.z[0, 2]) and hm.z[1, 1] == -0.25
    masked = trace(fig, "masked")
    cells = {(hm.y.index(y), hm.x.index(x)) for x, y in zip(masked.x, masked.y, strict=True)}
    assert cells == {(0, 1), (0, 2), (1, 2)}
    assert set(masked.text) == {"-inf"}
    assert len(set(hm.y)) == 2  # the repeated row label is still two rows
    assert hm.zmid == 0  # negative values: a diverging scale centred on zero


def test_cost_sweep_draws_an_n_squared_reference() -> None:
    rows = [{"n": n, "forward_s": 1e-4 * n, "figures_s": 1e-6 * n * n, "mb": 3e-4 * n * n} for n in (64, 16, 32)]
    fig = views.cost_sweep(rows)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    refs = [t for t in fig.data if t.name == "∝ n²"]
    assert len(refs) == 2
    for ref in refs:
        x, y = np.asarray(ref.x), np.asarray(ref.y)
        assert list(x) == [16, 32, 64]
        np.testing.assert_allclose(y / x**2, y[-1] / x[-1] ** 2)


# --- budgets and boundaries ------------------------------------------------------------------


def explorer_json_mb(att: Attention) -> float:
    figures = [
        views.heatmap(att, 2, 3),
        views.model_view(att, focus=(2, 3)),
        views.head_view(att, 2),
        views.graph_view(att, 2, 3),
    ]
    return sum(len(fig.to_json()) for fig in figures) / 1e6


@pytest.mark.parametrize(("n", "budget_mb"), [(16, 0.3), (512, 5.0)])
def test_explorer_figures_fit_the_json_budget(minilm: attnviz.PretrainedModel, n: int, budget_mb: float) -> None:
    att = minilm.attend("The animal didn't cross the street because it was tired. " * 50, max_tokens=n)
    assert att.n == n
    assert explorer_json_mb(att) <= budget_mb


def test_views_never_import_streamlit() -> None:
    code = "import sys, attnviz.views; assert 'streamlit' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_benchmark_smoke_run_writes_its_table(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("bench_views", ROOT / "bench" / "bench_views.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "table.md"
    assert bench.main(["--sizes", "16", "--skip-bertviz", "--out", str(out)]) == 0
    text = out.read_text()
    assert "--sizes 16 --skip-bertviz" in text
    assert "| 16 |" in text and "ok <= 0.3 MB" in text


def test_figure_notes_and_legends_follow_the_language(tired: Attention) -> None:
    """The words views.py writes itself (notes under titles, legend entries) come from the
    catalogues, so a Chinese page shows no English subtitle."""
    capped = views.head_view(tired, 0, max_links=10, lang="zh")
    assert "每个查询词元只画出最强的" in capped.layout.title.text
    assert views.head_view(tired, 0, max_links=10).layout.title.text.count("strongest") == 1  # English default
    graph = views.graph_view(tired, 0, 0, threshold=0.99, lang="zh")
    assert "请调低阈值" in graph.layout.title.text
    focus = views.token_focus(tired, 10, 2, top=5, lang="zh")
    assert "72 个头中的前 5 个" in focus.layout.title.text
    assert any(
        trace.name == "头 3" for trace in views.head_view(tired, 0, lang="zh").data
    )  # head 3, the pickers' index


# --- words: every word on a figure comes from the catalogue, in the language asked for ------

ZH_TOKENS = ["[CLS]", "猫", "坐", "在", "垫子", "上", "猫", "。", "[SEP]"]
HOSTILE = ["[CLS]", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "&", "a&lt;b", "<s>", "[SEP]"]
# where Plotly shows strings: x/y and tick values of category axes are labels too
WORD_KEYS = {"text", "name", "hovertemplate", "hovertext", "ticktext", "x", "y", "tickvals", "categoryarray"}


def att_of(tokens: list[str], layers: int = 2, heads: int = 3, seed: int = 0) -> Attention:
    n = len(tokens)
    w = np.random.default_rng(seed).random((layers, heads, n, n)) + 0.05
    w[..., 1] += 1.0  # token 1 draws the most attention: it lands in the model view's hover too
    return make_att(w / w.sum(-1, keepdims=True), tokens=tokens, special=[t.startswith("[") for t in tokens])


def every_view(att: Attention, lang: str) -> dict[str, go.Figure]:
    """Each public view once or more, covering the branches that write different words."""
    n = att.n
    rows = [{"n": 16, "forward_s": 0.01, "figures_s": 0.02, "mb": 0.1}, {"n": 32, "forward_s": 0.03, "mb": 0.4}]
    scores = np.where(np.tri(n, dtype=bool), np.arange(n * n, dtype=float).reshape(n, n), -np.inf)
    return {
        "heatmap": views.heatmap(att, 1, 2, lang=lang),
        "heatmap_mean": views.heatmap(att, 0, None, zmax=1.0, lang=lang),
        "matrix": views.matrix(scores, att.tokens, att.tokens, lang=lang),
        "model_view": views.model_view(att, focus=(1, 2), lang=lang),
        "model_view_shrunk": views.model_view(att, thumb=4, lang=lang),
        "layer_head_grid": views.layer_head_grid(att.weights[:, :, 0, 0], labels=[["猫"] * 3] * 2, lang=lang),
        "head_view": views.head_view(att, 1, lang=lang),
        "head_view_some": views.head_view(att, 1, heads=[0, 2], highlight=3, lang=lang),
        "head_view_one_capped": views.head_view(att, 0, heads=[1], max_links=10, lang=lang),
        "graph_view": views.graph_view(att, 1, 0, threshold=0.05, lang=lang),
        "graph_view_mean_capped": views.graph_view(att, 0, None, threshold=0.0, max_edges=3, lang=lang),
        "graph_view_empty": views.graph_view(att, 0, 0, threshold=0.99, lang=lang),
        "token_focus": views.token_focus(att, 3, 1, lang=lang),
        "token_focus_top": views.token_focus(att, 3, 1, top=2, lang=lang),
        "token_bars": views.token_bars(att.tokens, {"注意力": att.weights[0, 0, 3]}, highlight=3, lang=lang),
        "cost_sweep": views.cost_sweep(rows, lang=lang),
    }


def shown_strings(fig: go.Figure) -> list[str]:
    """Every string a visitor can see: titles, axis, colour-bar and legend titles, trace names,
    annotations, cell and label text, hovertemplates, hover text, tick text and category labels."""
    out: list[str] = []

    def walk(node: object, key: str = "") -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in WORD_KEYS:
            out.append(node)

    spec = json.loads(fig.to_json())
    spec["layout"].pop("template", None)  # plotly's theme, no words
    walk(spec)
    return out


def english_words(text: str, tokens: list[str]) -> list[str]:
    """Latin words of two or more letters left once tokens, Plotly fields (%{y:.4f}), markup
    (<br>, <sup>, <extra></extra>, &amp;) and "[CLS]"-style tokens are taken out. "MB" is a unit."""
    for tok in sorted({views_escape(token) for token in tokens}, key=len, reverse=True):
        text = text.replace(tok, " ")
    text = re.sub(r"%\{[^}]*\}|<[^<>]*>|&[a-z]+;|\[[A-Z]+\]", " ", text)
    return [w for w in re.findall(r"[A-Za-z]{2,}", text) if w != "MB"]


def views_escape(token: str) -> str:
    return token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@pytest.mark.parametrize("name", list(every_view(att_of(ZH_TOKENS), "en")))
def test_a_chinese_figure_has_no_english_word_left(name: str) -> None:
    fig = every_view(att_of(ZH_TOKENS), "zh")[name]
    strings = shown_strings(fig)
    assert any(re.search(r"[\u4e00-\u9fff]", s) for s in strings)
    left = {s: english_words(s, ZH_TOKENS) for s in strings}
    assert {s: words for s, words in left.items() if words} == {}


@pytest.mark.parametrize("name", list(every_view(att_of(ZH_TOKENS), "en")))
def test_the_english_figure_is_english(name: str) -> None:
    strings = shown_strings(every_view(att_of(ZH_TOKENS), "en")[name])
    assert not [s for s in strings if re.search(r"[\u4e00-\u9fff]", s.replace("注意力", "")) and not any(t in s for t in ZH_TOKENS)]  # fmt: skip


def test_language_changes_the_words_and_nothing_else() -> None:
    """A Chinese figure carries exactly the English figure's data, axes, sizes and clickable
    customdata: only the strings where words are shown differ."""
    att = att_of(ZH_TOKENS)
    en, zh = every_view(att, "en"), every_view(att, "zh")

    def without_words(node: object, key: str = "") -> object:
        if isinstance(node, dict):
            return {k: without_words(v, k) for k, v in node.items() if k != "template"}
        if isinstance(node, list):
            return [without_words(v, key) for v in node]
        return "<words>" if isinstance(node, str) and key in WORD_KEYS else node

    for name in en:
        a, b = (without_words(json.loads(fig[name].to_json())) for fig in (en, zh))
        assert a == b, name


def test_head_labels_and_titles_follow_the_language(tired: Attention) -> None:
    assert views.head_label(2, 5) == "layer 2, head 5"
    assert views.head_label(2, 5, lang="zh") == "层 2，头 5"  # the index, as in English and the pickers
    assert views.heatmap(tired, 2, 5, lang="zh").layout.title.text == "层 2，头 5"
    assert views.heatmap(tired, 2, None, lang="zh").layout.title.text == "层 2，12 个头的平均"
    assert views.heatmap(tired, 2, 5, title="mine", lang="zh").layout.title.text == "mine"
    hm = views.heatmap(tired, 2, 5, lang="zh")
    assert (hm.layout.xaxis.title.text, hm.layout.yaxis.title.text) == ("键（被关注）", "查询（发出关注）")
    assert hm.data[0].hovertemplate == "查询 %{y}<br>键 %{x}<br>权重 %{z:.6f}<extra></extra>"
    grid = views.model_view(tired, lang="zh")
    assert (grid.layout.xaxis.title.text, grid.layout.yaxis.title.text) == ("头", "层")
    assert grid.data[0].colorbar.title.text == "平均权重"
    assert "点击以聚焦" in trace(grid, "点选").hovertext[0]
    assert views.graph_view(tired, 1, 2, lang="zh").layout.legend.title.text == "边的权重"


def test_a_title_override_keeps_the_note_under_it(tired: Attention) -> None:
    for fig in (
        views.head_view(tired, 0, max_links=10, title="mine"),
        views.graph_view(tired, 0, 0, title="mine"),
        views.token_focus(tired, 10, 2, title="mine"),
        views.model_view(tired, title="mine"),
    ):
        heading, note = fig.layout.title.text.split("<br>", 1)
        assert heading == "mine" and note.startswith("<sup>")
    assert views.cost_sweep([{"n": 16, "mb": 1.0}, {"n": 32, "mb": 4.0}], title="mine").layout.title.text == "mine"


def test_every_view_takes_lang_as_a_keyword_defaulting_to_english() -> None:
    builders = [getattr(views, name) for name in views.__all__ if callable(getattr(views, name))]
    builders = [b for b in builders if b not in (views.model_view_pick, views.token_pick, views.atlas_pick)]
    builders = [b for b in builders if b not in (views.HeatmapSpec, views.heatmap_figure)]  # words: the spec's
    assert len(builders) == 23  # + the evidence views (tests/test_views_evidence.py) and three of the training lab
    for build in builders:
        lang = inspect.signature(build).parameters["lang"]
        assert (lang.kind, lang.default) == (inspect.Parameter.KEYWORD_ONLY, "en"), build.__name__


# --- hostile tokens --------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_tokens_are_escaped_wherever_they_land(lang: str) -> None:
    att = att_of(HOSTILE)
    figs = every_view(att, lang)
    for name, fig in figs.items():
        for s in shown_strings(fig):
            assert "<script" not in s.lower() and "<img" not in s.lower() and "<s>" not in s, (name, s)
            assert re.fullmatch(r"([^&]|&(amp|lt|gt);)*", s), (name, s)  # every & starts an entity
    script, img = views_escape(HOSTILE[1]), views_escape(HOSTILE[2])
    assert script == "&lt;script&gt;alert(1)&lt;/script&gt;"
    hm = figs["heatmap"]
    assert f"{script} (1)" in hm.layout.xaxis.categoryarray and "&amp;" in hm.layout.xaxis.ticktext
    # a label too long for the margin is shortened on the axis (views/margins.py), still escaped
    for ticks, whole in ((hm.layout.xaxis.ticktext, script), (hm.layout.yaxis.ticktext, img)):
        assert any(label == whole or (label.endswith("…") and whole.startswith(label[:-1])) for label in ticks)
    assert f"{script} (1)" in hm.data[0].y  # what %{y} shows on hover
    assert "a&amp;lt;b" in hm.layout.xaxis.ticktext  # an entity typed by the visitor stays text
    assert any(script in h for h in trace(figs["model_view"], catalogue_text("fig.pick", lang)).hovertext)
    head = figs["head_view"]
    assert any(img in h for h in trace(head, catalogue_text("fig.query", lang)).hovertext)
    assert any(img in h for h in trace(head, catalogue_text("fig.key", lang)).hovertext)
    assert script in trace(head, catalogue_text("fig.query", lang)).text
    graph = figs["graph_view"]
    assert any(script in h for h in trace(graph, catalogue_text("fig.tokens", lang)).hovertext)
    assert any(script in h for h in trace(graph, catalogue_text("fig.edges", lang)).hovertext)
    assert script in figs["token_focus"].layout.title.text
    assert img in figs["matrix"].layout.xaxis.ticktext and "&amp;" in figs["token_bars"].layout.xaxis.ticktext


# --- purity ----------------------------------------------------------------------------------


def test_no_views_module_imports_streamlit() -> None:
    """Statically (no import of streamlit anywhere in attnviz/views/) and at run time (importing
    every views module leaves streamlit unloaded)."""
    files = sorted((ROOT / "attnviz" / "views").glob("*.py"))
    assert len(files) >= 7
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            assert not [n for n in names if n.split(".")[0] == "streamlit"], path.name
    modules = ", ".join(f"attnviz.views.{p.stem}" for p in files if p.stem != "__init__")
    code = f"import sys, {modules}; assert not [m for m in sys.modules if m.split('.')[0] == 'streamlit']"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# --- the fast path builds valid Plotly -------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", list(every_view(att_of(ZH_TOKENS), "en")))
def test_every_view_is_valid_plotly_that_validation_leaves_unchanged(name: str, lang: str) -> None:
    """Views skip plotly's validators (views._base.figure); a validating go.Figure must accept
    what they send, property by property, and change nothing (no coerced colour scale, no
    dropped key)."""
    fig = every_view(att_of(HOSTILE), lang)[name]
    spec = json.loads(pio.to_json(fig))
    validated = go.Figure(spec)  # raises ValueError on any invalid property or value
    assert json.loads(pio.to_json(validated)) == spec


def test_float_arrays_still_travel_as_base64_typed_arrays() -> None:
    att = random_att(2, 3, 40)
    sent = {
        "heatmap": json.loads(views.heatmap(att).to_json())["data"][0]["z"],
        "mosaic": json.loads(views.model_view(att, thumb=8).to_json())["data"][0]["z"],
        "head lines": json.loads(views.head_view(att).to_json())["data"][0]["y"],
        "arrows": json.loads(views.graph_view(att, threshold=0.02).to_json())["data"][-2]["x"],
    }
    assert {name: spec["dtype"] for name, spec in sent.items()} == dict.fromkeys(sent, "f4")
    assert np.array_equal(decode(sent["heatmap"]), att.head(0, 0))


def test_fast_figures_validate_what_the_caller_edits_later(tired: Attention) -> None:
    """Only the views' own dicts skip validation: later edits behave as on any Figure."""
    fig = views.heatmap(tired, 1, 2)
    fig.update_layout(title_text="edited")
    fig.update_xaxes(title_text="x")
    assert (fig.layout.title.text, fig.layout.xaxis.title.text) == ("edited", "x")
    assert json.loads(fig.to_json())["layout"]["title"]["text"] == "edited"
    fig.update_traces(colorscale="RdBu_r")  # a plotly.py name plotly.js lacks: expanded to a list
    assert fig.data[0].colorscale[0] == (0.0, "rgb(5,48,97)")
    for bad in ({"titel": "typo"}, {"height": "tall"}, {"legend_title_font_size": "big"}):
        with pytest.raises(ValueError):
            fig.update_layout(**bad)
    with pytest.raises(ValueError):
        views.head_view(tired, 0).update_traces(line_color="notacolour", selector={"mode": "lines"})


def test_figures_do_not_alias_the_callers_arrays(tired: Attention) -> None:
    before = tired.weights.copy()
    views.heatmap(tired, 1, 2).data[0].z[0, 0] = 5.0
    assert np.array_equal(tired.weights, before)


def test_every_views_module_is_reachable_by_its_dotted_name() -> None:
    """No module is named like a function the package re-exports, which would shadow it."""
    for path in sorted((ROOT / "attnviz" / "views").glob("*.py")):
        if path.stem != "__init__":
            module = importlib.import_module(f"attnviz.views.{path.stem}")
            assert getattr(views, path.stem, module) is module, path.stem

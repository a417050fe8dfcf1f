"""The lab's FlashAttention walk (issue 22.2): the step figures outline exactly the tiles the
record processed, the difference shown against plain attention is the computed one (< 1e-6), and
the lab page shows the walk and the recorded SDPA-vs-eager table without an exception."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from attnviz.app.sections.flash import bench_rows
from attnviz.lab.flash import flash_attention
from attnviz.views.flash import plain_attention, random_example, result_pair, step_rows, tile_grid

from .test_app import _app, _array, _chart, _lab, _ok


def _tiles(fig: dict[str, Any], name: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(query block, key block) of each shape called `name`, back in index form."""
    return [
        ((round(s["y0"] + 0.5), round(s["y1"] + 0.5)), (round(s["x0"] + 0.5), round(s["x1"] + 0.5)))
        for s in fig["layout"]["shapes"]
        if s["name"] == name
    ]


@pytest.mark.parametrize(("n", "block", "causal"), [(10, 4, False), (10, 3, True), (7, 2, False), (5, 6, True)])
def test_each_step_outlines_its_recorded_tile_and_shades_the_ones_before(n: int, block: int, causal: bool) -> None:
    q, k, v = random_example(n, 8, seed=n)
    result = flash_attention(q, k, v, block=block, causal=causal)
    scores = (q.astype(np.float64) @ k.T.astype(np.float64)) / math.sqrt(8)
    assert len(result.steps) == math.ceil(n / block) ** 2
    for step, s in enumerate(result.steps):
        fig = tile_grid(result, scores, step).to_dict()
        assert _tiles(fig, "current") == [(s.queries, s.keys)]
        assert _tiles(fig, "done") == [(d.queries, d.keys) for d in result.steps[:step]]
        rows = step_rows(result, step)
        assert [int(r["query"]) for r in rows] == list(range(*s.queries))
        assert [float(r["rescale"]) for r in rows] == pytest.approx(list(s.rescale), abs=1e-4)
    with pytest.raises(ValueError):
        tile_grid(result, scores, len(result.steps))


@pytest.mark.parametrize("causal", [False, True])
def test_the_difference_shown_is_the_computed_one_and_float_small(causal: bool) -> None:
    q, k, v = random_example(11, 8, seed=3)
    result = flash_attention(q, k, v, block=4, causal=causal)
    plain = plain_attention(q, k, v, causal=causal)
    diff = float(np.abs(result.output - plain).max())
    assert 0 < diff < 1e-6  # float32 plain against the float64 tiles: float precision, not identical
    title = result_pair(result.output, plain).to_dict()["layout"]["title"]["text"]
    assert f"{diff:.1e}" in title


def test_the_recorded_bench_rows_are_there_and_eager_grows_more() -> None:
    got = bench_rows()
    assert got is not None
    _, rows = got
    assert [r["n"] for r in rows] == sorted(r["n"] for r in rows) and len(rows) >= 2
    assert rows[-1]["eager_mb"] > rows[-1]["sdpa_mb"]


@pytest.mark.slow
def test_the_lab_page_walks_the_tiles_and_matches_plain_attention() -> None:
    at = _ok(_app())
    at = _lab(at, "lab_flash_open")
    assert any(e.label.startswith("FlashAttention") for e in at.expander)
    said = [c.value for c in at.caption if "from-scratch model" in c.value or "seeded random" in c.value]
    assert len(said) == 1, said  # the page says which example it walks
    _ok(at.selectbox(key="flash_block").set_value(2).run())
    grid = _chart(at, "chart_flash_tiles")
    n = int(_array(grid["data"][0]["z"]).shape[0])
    per_row = math.ceil(n / 2)
    _ok(at.slider(key="flash_step").set_value(per_row + 3).run())  # 1-based: second query block, third key block
    grid = _chart(at, "chart_flash_tiles")
    assert _tiles(grid, "current") == [((2, min(4, n)), (4, min(6, n)))]
    assert len(_tiles(grid, "done")) == per_row + 2
    result = _chart(at, "chart_flash_result")
    tiled, plain = (_array(d["z"]) for d in result["data"])
    diff = float(np.abs(tiled - plain).max())
    shown = next(m.value for m in at.metric if m.label.startswith("max |"))
    assert shown == f"{diff:.1e}" and diff < 1e-6
    assert any(c.value for c in at.caption if "not measured live" in c.value)


@pytest.mark.slow
def test_a_short_sentence_walks_the_scratch_models_own_queries_keys_and_values() -> None:
    at = _ok(_app())
    at = _lab(at, "lab_flash_open")
    _ok(at.text_area(key="sentence_input").set_value("The cat sat.").run())
    said = [c.value for c in at.caption if "from-scratch model" in c.value]
    assert len(said) == 1 and "seeded random" not in " ".join(c.value for c in at.caption), said
    n = int(_array(_chart(at, "chart_flash_tiles")["data"][0]["z"]).shape[0])
    assert n <= 12 and f"{n} tokens" in said[0]
    tiled, plain = (_array(d["z"]) for d in _chart(at, "chart_flash_result")["data"])
    diff = float(np.abs(tiled - plain).max())
    assert next(m.value for m in at.metric if m.label.startswith("max |")) == f"{diff:.1e}" and diff < 1e-6


@pytest.mark.slow
def test_one_tile_for_the_whole_sentence_is_one_step_and_no_error() -> None:
    at = _ok(_app())
    at = _lab(at, "lab_flash_open")
    _ok(at.text_area(key="sentence_input").set_value("Hi.").run())
    _ok(at.selectbox(key="flash_block").set_value(6).run())  # 4 tokens: one tile, one step
    assert not [w for w in at.slider if w.key == "flash_step"]  # Streamlit refuses a slider from 1 to 1
    tiled, plain = (_array(d["z"]) for d in _chart(at, "chart_flash_result")["data"])
    assert float(np.abs(tiled - plain).max()) < 1e-6


@pytest.mark.slow
def test_the_walk_speaks_chinese() -> None:
    at = _ok(_app())
    _ok(at.radio(key="lang").set_value("zh").run())
    at = _lab(at, "lab_flash_open")
    assert any(e.label.startswith("FlashAttention：") for e in at.expander)
    grid = _chart(at, "chart_flash_tiles")["layout"]
    assert (grid["xaxis"]["title"]["text"], grid["yaxis"]["title"]["text"]) == ("键", "查询")
    assert any("并非在页面中实时测量" in c.value for c in at.caption)
    assert any(m.label.startswith("最大 |") for m in at.metric)

"""The training views (attnviz/views/training.py): each figure carries exactly the numbers it
was given, the snapshot grid's frames and slider follow the snapshots, words follow the
language, and tokens are escaped."""

from __future__ import annotations

import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz import views
from attnviz.result import Attention
from attnviz.views.grid import block_mean
from attnviz.views.training import MAX_CURVE_POINTS, MAX_FRAMES

from .test_views import english_words, shown_strings

TOKENS = ["<s>", "t01", "t02", "t03", "t01", "t02", "t03"]
HOSTILE = ["<s>", "<script>alert(1)</script>", "&", "a&lt;b", "猫"]


def causal_maps(steps: int, layers: int = 2, heads: int = 2, n: int = 7, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        w = np.tril(rng.random((layers, heads, n, n)) + 0.01)
        out.append((w / w.sum(-1, keepdims=True)).astype(np.float32))
    return out


def snapshots(count: int, tokens: list[str] = TOKENS, **kw: int) -> list[Attention]:
    return [
        Attention(tokens=tokens, weights=w, model="m", causal=True) for w in causal_maps(count, n=len(tokens), **kw)
    ]


def test_curves_carry_the_history_and_the_held_out_points() -> None:
    history = np.column_stack([np.arange(1, 51), np.linspace(3, 0.1, 50), np.linspace(0, 1, 50)])
    held_out = [(0, 3.5, 0.0), (25, 1.0, 0.6), (50, 0.1, 1.0)]
    fig = views.training_curves(history, held_out, total_steps=200)
    loss, acc, eval_loss, eval_acc = fig.data
    np.testing.assert_array_equal(loss.x, history[:, 0])
    np.testing.assert_array_equal(loss.y, history[:, 1])
    np.testing.assert_array_equal(acc.y, history[:, 2])
    assert (loss.yaxis, acc.yaxis) == ("y", "y2")
    assert list(eval_loss.y) == [3.5, 1.0, 0.1] and list(eval_acc.x) == [0, 25, 50]
    assert list(fig.layout.xaxis.range) == [0, 200]  # the curve grows towards the end of the run


def test_long_curves_are_averaged_in_blocks() -> None:
    k = 2 * MAX_CURVE_POINTS  # pairs of steps: each point is the mean of two
    history = np.column_stack([np.arange(1, k + 1), np.arange(k, dtype=float), np.zeros(k)])
    y = np.asarray(views.training_curves(history).data[0].y)
    np.testing.assert_allclose(y, 2 * np.arange(MAX_CURVE_POINTS) + 0.5)


def test_snapshot_grid_has_a_frame_a_snapshot_and_a_slider_over_the_steps() -> None:
    snaps = snapshots(5)
    steps = [0, 10, 20, 30, 40]
    fig = views.snapshot_grid(snaps, steps)
    assert [f.name for f in fig.frames] == ["0", "10", "20", "30", "40"]
    for frame, snap in zip(fig.frames, snaps, strict=True):
        for k, trace in enumerate(frame.data):
            layer, head = divmod(k, 2)
            np.testing.assert_array_equal(np.asarray(trace.z), snap.weights[layer, head])
    slider = fig.layout.sliders[0]
    assert [s.label for s in slider.steps] == ["0", "10", "20", "30", "40"] and slider.active == 4
    assert [list(s.args[0]) for s in slider.steps] == [["0"], ["10"], ["20"], ["30"], ["40"]]
    for k, trace in enumerate(fig.data):  # what is drawn first: the active (last) snapshot
        np.testing.assert_array_equal(np.asarray(trace.z), snaps[-1].weights[divmod(k, 2)])
    play, pause = fig.layout.updatemenus[0].buttons
    assert play.args[0] is None and list(pause.args[0]) == [None]  # all frames from here; stop
    assert fig.layout.meta["steps"] == steps
    go.Figure(json.loads(fig.to_json()))  # the plain dicts and frames are valid Plotly


def test_snapshot_grid_thins_frames_keeps_the_active_one_and_shrinks_large_maps() -> None:
    snaps = snapshots(100)
    fig = views.snapshot_grid(snaps, list(range(0, 1000, 10)), active=37)
    names = [f.name for f in fig.frames]
    assert len(names) <= MAX_FRAMES + 1 and names[0] == "0" and names[-1] == "990" and "370" in names
    assert fig.layout.sliders[0].steps[fig.layout.sliders[0].active].label == "370"
    tokens = [f"x{i}" for i in range(60)]
    big = snapshots(2, tokens=tokens, layers=4, heads=4)
    fig = views.snapshot_grid(big, [0, 1])
    assert fig.layout.meta["shrunk"]
    z = np.asarray(fig.frames[1].data[5].z)
    np.testing.assert_allclose(z, block_mean(big[1].weights, z.shape[0])[1, 1], rtol=1e-6)
    assert z.size * 16 <= 8192


def test_head_score_curves_draw_each_head_of_each_score() -> None:
    steps = [0, 10, 20]
    scores = {
        "previous": np.random.default_rng(0).random((3, 2, 2)),
        "induction": np.random.default_rng(1).random((3, 2, 2)),
    }
    fig = views.head_score_curves(steps, scores)
    assert len(fig.data) == 8
    for k, trace in enumerate(fig.data):
        name, (layer, head) = list(scores)[k // 4], divmod(k % 4, 2)
        np.testing.assert_array_equal(np.asarray(trace.y), scores[name][:, layer, head])
        assert trace.name == views.head_label(layer, head)
    with pytest.raises(ValueError, match="expected"):
        views.head_score_curves(steps, {"previous": np.zeros((2, 2, 2))})


def every_training_view(lang: str, tokens: list[str]) -> dict[str, go.Figure]:
    snaps = snapshots(3, tokens=tokens)
    return {
        "curves": views.training_curves([(1, 2.0, 0.1), (2, 1.0, 0.5)], [(0, 3.0, 0.0)], total_steps=10, lang=lang),
        "grid": views.snapshot_grid(snaps, [0, 5, 10], lang=lang),
        "scores": views.head_score_curves(
            [0, 5, 10],
            {"previous": np.zeros((3, 2, 2)), "induction": np.ones((3, 2, 2)), "diagonal": np.ones((3, 2, 2))},
            lang=lang,
        ),
    }


@pytest.mark.parametrize("name", ["curves", "grid", "scores"])
def test_a_chinese_training_figure_has_no_english_word_left(name: str) -> None:
    tokens = ["<s>", "注", "意", "力", "。"]
    strings = shown_strings(every_training_view("zh", tokens)[name])
    assert any(re.search(r"[\u4e00-\u9fff]", s) for s in strings)
    left = {s: english_words(s, tokens) for s in strings}
    assert {s: words for s, words in left.items() if words} == {}


def test_tokens_are_escaped_on_the_grid() -> None:
    fig = every_training_view("en", HOSTILE)["grid"]
    for s in shown_strings(fig):
        assert "<script" not in s.lower() and "<s>" not in s, s
        assert re.fullmatch(r"([^&]|&(amp|lt|gt);)*", s), s
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in fig.layout.xaxis.ticktext
    assert "a&amp;lt;b" in fig.layout.yaxis.ticktext

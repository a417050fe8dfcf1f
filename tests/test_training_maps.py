"""The Training lab's snapshot maps are squares with readable labels (issue 23.7: they had been
squashed into wide rectangles with unreadable ticks); while a run trains the page sends the
latest maps alone."""

from __future__ import annotations

import pytest

from attnviz import views
from attnviz.views.training import BOTTOM_PX, MIN_TICK_PX, TOP_PX, panel_px, tick_every

from .test_training_views import TOKENS, snapshots

PAGE_W = 1000  # the chart's width on a 1400 px wide page with the sidebar open
MARGIN_LR = 160  # Plotly's default left + right margins


def _boxes(fig: object, L: int, H: int, width: int = PAGE_W) -> list[tuple[float, float]]:
    """Each map's box in pixels (width, height) for a chart `width` px wide."""
    layout = fig.layout  # type: ignore[attr-defined]
    plot_w, plot_h = width - MARGIN_LR, layout.height - layout.margin.t - layout.margin.b
    out = []
    for k in range(1, L * H + 1):
        ax, ay = layout[f"xaxis{'' if k == 1 else k}"], layout[f"yaxis{'' if k == 1 else k}"]
        out.append(((ax.domain[1] - ax.domain[0]) * plot_w, (ay.domain[1] - ay.domain[0]) * plot_h))
    return out


@pytest.mark.parametrize(("L", "H"), [(1, 1), (2, 2), (2, 4), (4, 2), (3, 1)])
def test_each_map_is_a_square_that_fills_its_box(L: int, H: int) -> None:
    fig = views.snapshot_grid(snapshots(3, layers=L, heads=H), [0, 10, 20])
    for k in range(1, L * H + 1):
        ay = fig.layout[f"yaxis{'' if k == 1 else k}"]
        assert ay.scaleanchor == ("x" if k == 1 else f"x{k}") and ay.scaleratio == 1  # drawn square at any width
    assert fig.layout.margin.t == TOP_PX and fig.layout.margin.b == BOTTOM_PX
    for w, h in _boxes(fig, L, H):
        # the box is about as tall as it is wide, so the square leaves little empty space; the
        # old grid gave 2 x 2 maps boxes of 403 x 176 px
        assert 0.85 <= w / h <= 1.3, (w, h)
        assert min(w, h) >= 150


def test_many_heads_stay_square_and_tall_enough() -> None:
    fig = views.snapshot_grid(snapshots(2, layers=2, heads=8), [0, 5])
    assert all(fig.layout[f"yaxis{'' if k == 1 else k}"].scaleanchor for k in range(1, 17))
    assert fig.layout.meta["side"] == panel_px(8) >= 150


def test_tick_labels_never_overlap() -> None:
    for n, side in ((7, 380), (29, 380), (29, 165), (64, 150)):
        every = tick_every(n, side)
        assert side / n * every >= MIN_TICK_PX  # the pixels between two shown labels
        assert every == 1 or side / n * (every - 1) < MIN_TICK_PX  # and no more thinning than needed
    fig = views.snapshot_grid(snapshots(2), [0, 5])
    assert list(fig.layout.xaxis.ticktext) == [t.replace("<", "&lt;").replace(">", "&gt;") for t in TOKENS]
    assert fig.layout.xaxis.tickfont.size >= 10


def test_a_live_grid_is_the_latest_maps_alone() -> None:
    snaps = snapshots(30)
    steps = list(range(0, 300, 10))
    live = views.snapshot_grid(snaps, steps, animate=False)
    full = views.snapshot_grid(snaps, steps)
    assert not live.frames and not live.layout.sliders and not live.layout.updatemenus
    assert live.layout.meta["steps"] == [290] and len(live.data) == len(full.data) == 4
    assert list(live.data[0].z[-1]) == list(full.data[0].z[-1])
    assert len(live.to_json()) * 5 < len(full.to_json())  # what the browser redraws every poll

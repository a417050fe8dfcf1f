"""The token maps' margins, set on the server instead of by plotly.js's automargin redraws
(attnviz/views/margins.py), as chromium draws them: every tick label and axis title of the
all-heads grid (Plotly's on the lesson page; the explorer's is a canvas, app/canvas/grid_canvas.py) lies
inside its chart, outside the plot area, and clear of the other axis parts; a word too long for the margin is shortened with an ellipsis on the axis; and
plotly.js runs no automargin on those axes; the heatmap's canvas shortens the long word too. Checked with whole words merged (one long label)
in English, and with the default sentence in Chinese. The estimates themselves:
tests/test_margins.py."""

from __future__ import annotations

import urllib.parse
from typing import Any

import pytest

from .test_browser import FIRST_LOAD_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LONG_WORD = "antidisestablishmentarianism"
CHARTS = ("lesson_chart_all_heads",)  # the explorer's heatmap and grid are canvases that lay out their own labels

# Boxes in page pixels: each chart's svg, its plot area, tick labels and axis titles.
GEOMETRY_JS = """(key) => {
  const gd = document.querySelector(`.st-key-${key} .js-plotly-plot`);
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const boxes = (sel) => [...gd.querySelectorAll(sel)].filter((el) => el.textContent.trim()).map(box);
  return {
    svg: box(gd.querySelector('.main-svg')),
    plot: box(gd.querySelector('.cartesianlayer .subplot.xy .bg') || gd.querySelector('.nsewdrag')),
    xticks: boxes('.xtick text'), yticks: boxes('.ytick text'),
    xtitle: boxes('.g-xtitle text'), ytitle: boxes('.g-ytitle text'),
    xlabels: [...gd.querySelectorAll('.xtick text')].map((el) => el.textContent),
    automargin: [gd._fullLayout.xaxis.automargin, gd._fullLayout.yaxis.automargin],
  };
}"""

SLACK = 1.5  # px: text boxes are measured with sub-pixel rounding


def _inside(inner: list[float], outer: list[float]) -> bool:
    return (
        inner[0] >= outer[0] - SLACK
        and inner[1] >= outer[1] - SLACK
        and inner[2] <= outer[2] + SLACK
        and inner[3] <= outer[3] + SLACK
    )


def _check(g: dict[str, Any], key: str) -> None:
    svg, plot = g["svg"], g["plot"]
    assert g["automargin"] == [False, False], key
    assert g["xticks"] and g["yticks"] and g["xtitle"] and g["ytitle"], key
    for part in ("xticks", "yticks", "xtitle", "ytitle"):
        for b in g[part]:
            assert _inside(b, svg), (key, part, b, svg)  # nothing cut off at the chart's edge
    assert all(b[1] >= plot[3] - SLACK for b in g["xticks"]), (key, "x labels below the plot")
    assert all(b[2] <= plot[0] + SLACK for b in g["yticks"]), (key, "y labels left of the plot")
    lowest_tick = max(b[3] for b in g["xticks"])
    assert min(b[1] for b in g["xtitle"]) >= lowest_tick - SLACK, (key, "x title clear of its labels")
    leftmost_tick = min(b[0] for b in g["yticks"])
    assert max(b[2] for b in g["ytitle"]) <= leftmost_tick + SLACK, (key, "y title clear of its labels")


@pytest.mark.parametrize(
    ("query", "long_label"),
    [
        ({"text": f"The {LONG_WORD} debate was tired.", "merge": "1"}, True),
        ({"lang": "zh"}, False),
    ],
    ids=["long-word-en", "default-zh"],
)
def test_tick_labels_and_titles_fit_the_margins_set_on_the_server(
    session: Session, query: dict[str, str], long_label: bool
) -> None:
    s = session
    s.open(query)
    if long_label:
        labels = s.svg_texts("view_heatmap")  # the canvas shortens by the text's measured width
        cut = [label for label in labels if label.endswith("…")]
        assert cut and LONG_WORD.startswith(cut[0][:-1]) and len(cut[0]) < len(LONG_WORD), labels
    s.shot(f"margins-{'-'.join(sorted(query))}", key="view_heatmap")
    s.page.goto(f"{s.url}/lesson?" + urllib.parse.urlencode({k: v for k, v in query.items() if k == "lang"}))
    for key in CHARTS:
        s.page.locator(f".st-key-{key} .js-plotly-plot .xtick text").first.wait_for(timeout=FIRST_LOAD_MS)
        g = s.page.evaluate(GEOMETRY_JS, key)
        _check(g, key)
    assert not s.dialogs and not s.crashed

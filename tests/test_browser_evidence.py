"""The evidence pieces in a real browser (Debian's chromium against `streamlit run app.py`, as in
tests/test_browser.py): the hide-sinks switch changes the heatmap drawn, and the Explain
page draws the scoreboard's table, its deletion curves and the layer-by-layer agreement."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz import explain, i18n

from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHORT = "dog bites man"

# The map drawn in container `key`: the canvas map's float32 rows (app/canvas/token_canvas.py), or the
# z matrix Plotly drew (its full data, after rendering).
HEATMAP_Z_JS = """(key) => {
  const m = document.querySelector('.st-key-' + key + ' [data-attnviz-map][data-drawn]');
  if (m) { const {z, rows, cols} = m.__attnvizMap;
    return Array.from({length: rows}, (_, i) => Array.from(z.subarray(i * cols, (i + 1) * cols))); }
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const hm = gd && gd._fullData && gd._fullData.find(t => t.type === 'heatmap');
  return hm ? Array.from(hm.z, row => Array.from(row)) : null;
}"""

# Traces Plotly drew in the chart of container `key`: [name, number of points].
TRACES_JS = """(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  return gd && gd._fullData && gd.querySelector('.main-svg')
    ? gd._fullData.map(t => [t.name || '', (t.y || t.z || []).length]) : null;
}"""


def _drawn_z(s: Session, key: str) -> np.ndarray:
    z = s.page.evaluate(HEATMAP_Z_JS, key)
    assert z is not None, f"no heatmap drawn in {key}"
    return np.array(z, dtype=float)


def test_hide_sinks_changes_the_drawn_heatmap(session: Session, minilm: attnviz.PretrainedModel) -> None:
    s = session
    s.open()
    tired = minilm.attend(i18n.examples("en")["default"])
    columns = explain.sink_scores(tired, norms=explain.norm_weights(minilm, tired.text)).parking()
    before = _drawn_z(s, "view_heatmap")
    np.testing.assert_allclose(before, tired.head(0, 0), atol=1e-4)
    assert (before[:, columns] > 0).all()

    s.page.locator(".st-key-sinks_toggle label").click()
    s.page.wait_for_function(
        f"([key, col]) => {{ const z = ({HEATMAP_Z_JS})(key); return !!z && z.every(row => row[col] === 0); }}",
        arg=["view_heatmap", int(columns[0])],
        timeout=WAIT_MS,
    )
    s.wait_views()
    after = _drawn_z(s, "view_heatmap")
    hidden, removed = explain.hide_sinks(tired, columns)
    np.testing.assert_allclose(after, hidden.head(0, 0), atol=1e-4)
    np.testing.assert_allclose(after.sum(1), 1.0, atol=1e-3)
    shown = s.page.locator(".st-key-sinks").inner_text()
    assert "Hidden:" in shown and f"removed {removed[0, 0]:.0%}" in shown
    assert "[CLS]" in s.svg_texts("view_heatmap")  # the token stays on the axis: only its column is empty
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0
    s.shot("hide-sinks", key="view_heatmap")


def test_the_scoreboard_draws_its_table_curves_and_best_method(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    s.open()
    s.submit(SHORT, list(minilm.encode(SHORT).tokens))
    s.go_to_page("explain")
    s.page.wait_for_function(
        "(key) => { const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');"
        " return !!gd && !!gd.querySelector('.main-svg') && !!gd._fullLayout; }",
        arg="explain_scoreboard",
        timeout=FIRST_LOAD_MS,
    )
    s.wait_idle(FIRST_LOAD_MS)
    board = explain.faithfulness(minilm, SHORT, None)
    traces = s.page.evaluate(TRACES_JS, "chart_deletion")
    assert traces is not None and len(traces) == len(board.rows)
    for row, (name, points) in zip(board.rows, traces, strict=True):
        assert name.startswith(i18n.t(f"method.{row.method}", "en")), (row.method, name)
        assert f"AOPC {row.aopc:.3f}" in name and points == len(board.removed)
    legend = " ".join(s.svg_texts("chart_deletion"))
    assert "GlobEnc" in legend and "random order" in legend
    container = s.page.locator(".st-key-explain_scoreboard")
    table = container.locator('[data-testid="stDataFrame"]')
    table.first.wait_for(timeout=FIRST_LOAD_MS)  # the grid is drawn after the curves; CI once read it before
    assert table.count() == 1  # the table beside the curves
    text = container.inner_text()
    best = i18n.t(f"method.{board.best}", "en")
    assert f"Best for this sentence: {best}" in text or f"Closest to the model here: {best}" in text
    assert "These numbers are themselves debated" in text
    agreement = s.page.evaluate(TRACES_JS, "chart_layer_agreement")
    assert agreement is not None and [rows for _, rows in agreement] == [len(explain.CONTRIBUTION_METHODS)] * 2
    s.page.locator(".st-key-explain_contributions .js-plotly-plot .main-svg").first.wait_for(timeout=FIRST_LOAD_MS)
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0
    s.shot("scoreboard", key="explain_scoreboard")

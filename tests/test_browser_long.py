"""The explorer's long mode in a real browser: a text of several thousand tokens pasted into the
box (a tiny local Llama that reads 4,096), the long mode run, the overview drawn; a click on one
of its cells opens that tile at full resolution, equal to the exact tile."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.long import attend_long, block_edges

from .test_browser import WAIT_MS, Session
from .test_long import build_llama, long_text

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DRAWN_JS = """(key) => { const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  return !!gd && !!gd.querySelector('.main-svg') && !!gd._fullLayout; }"""
# Where to click for the overview cell whose block starts at (row, col).
CELL_JS = """(gd, [row, col]) => {
  const L = gd._fullLayout, box = gd.getBoundingClientRect();
  return {px: box.left + L.xaxis._offset + L.xaxis.l2p(col), py: box.top + L.yaxis._offset + L.yaxis.l2p(row)};
}"""
TILE_Z_JS = """() => { const gd = document.querySelector('.st-key-long_tile_box .js-plotly-plot');
  return gd.calcdata[0][0].z.map(row => Array.from(row)); }"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("tiny-llama-browser"), positions=4096)


def test_a_long_text_shows_its_overview_and_a_click_opens_a_tile(session: Session, folder: Path) -> None:
    model = attnviz.load_model(str(folder), "cpu", max_tokens=4096)
    text = long_text(140)
    long = attend_long(model, text, max_tokens=4096)
    assert 2_000 < long.n < 4_096 and not long.truncated  # several thousand tokens, all read
    session.open({"model": str(folder)})
    session.type_sentence(text)
    run = session.page.locator(".st-key-long_run button")
    run.wait_for(timeout=WAIT_MS)
    run.click()
    session.page.wait_for_function(DRAWN_JS, arg="long_overview_box", timeout=WAIT_MS)
    session.wait_idle()
    edges = block_edges(long.n, 64)
    row, col = int(edges[45]), int(edges[20])  # a cell below the diagonal: causal keys it may read
    grid = session.page.locator(".st-key-long_overview_box .js-plotly-plot")
    grid.scroll_into_view_if_needed()
    spot = grid.evaluate(CELL_JS, [row, col])
    session.page.mouse.click(spot["px"], spot["py"])
    title = f"queries {row}-{row + 63}, keys {col}-{col + 63} at full resolution"
    try:
        session.page.locator(".st-key-long_tile_box .gtitle").filter(has_text=title).first.wait_for(timeout=WAIT_MS)
    finally:
        session.shot("long-tile", key="long_tile_box")
    session.wait_idle()
    drawn = np.array(session.page.evaluate(TILE_Z_JS), dtype=np.float64)
    np.testing.assert_allclose(drawn, long.tile(0, 0, range(row, row + 64), range(col, col + 64)), atol=1e-5)
    assert not session.dialogs and not session.crashed

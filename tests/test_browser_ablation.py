"""Switching heads off in a real browser: a click on a head in the all-heads grid switches it
off, a later layer's heatmap is redrawn from the switched model and the effect numbers appear;
"switch all back on" brings the original maps back."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz import explain, i18n

from .test_browser import GRID_CELL_JS, WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXT = "Quiet owls watch sleepy mice under the moon."

# The heatmap of the focused head as drawn: the canvas map's float32 rows (app/canvas/token_canvas.py).
HEATMAP_Z_JS = """() => {
  const m = document.querySelector('.st-key-view_heatmap [data-attnviz-map][data-drawn]');
  if (!m || m.closest('[data-stale="true"]')) return null;
  const {z, rows, cols} = m.__attnvizMap;
  return Array.from({length: rows}, (_, i) => Array.from(z.subarray(i * cols, (i + 1) * cols)));
}"""


def _drawn_z(s: Session) -> np.ndarray:
    return np.array(s.page.evaluate(HEATMAP_Z_JS), dtype=np.float64)


def _wait_z(s: Session, want: np.ndarray) -> None:
    """Wait until the drawn heatmap is `want` (within float32 noise)."""
    s.page.wait_for_function(
        f"""(want) => {{ const z = ({HEATMAP_Z_JS})();
          return !!z && z.length === want.length
            && z.every((row, i) => want[i].every((v, j) => Math.abs(row[j] - v) < 1e-4));
        }}""",
        arg=want.tolist(),
        timeout=WAIT_MS,
    )


def test_a_head_clicked_off_in_the_grid_changes_a_later_layer(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    later, clicked = (4, 3), (1, 3)
    s.open({"text": TEXT, "layer": str(later[0]), "head": str(later[1])})
    original = minilm.attend(TEXT)
    switched = explain.ablate(minilm, TEXT, [clicked])
    np.testing.assert_allclose(_drawn_z(s), original.weights[later], atol=1e-4)
    assert s.page.locator(".st-key-abl_numbers").count() == 0

    s.page.locator(".st-key-_abl_click label").click()  # clicks in the grid now switch heads
    s.wait_idle()
    s.page.locator(".st-key-view_grid [data-attnviz-grid]").scroll_into_view_if_needed()
    spot = s.page.evaluate(GRID_CELL_JS, list(clicked))  # the canvas grid's cell (app/canvas/grid_canvas.js)
    s.page.mouse.move(spot["px"], spot["py"])
    s.page.mouse.click(spot["px"], spot["py"])

    s.page.locator(".st-key-abl_numbers").wait_for(state="visible", timeout=WAIT_MS)
    _wait_z(s, switched.attention.weights[later])
    s.wait_views()
    assert np.abs(_drawn_z(s) - original.weights[later]).max() > 1e-3  # the later layer changed
    numbers = s.page.locator(".st-key-abl_numbers").inner_text()
    assert i18n.t("abl.sentence_distance", "en") in numbers
    assert f"{switched.sentence_distance:.4f}" in numbers
    off_list = s.page.locator(".st-key-abl_off_list").inner_text()
    assert i18n.t("fig.layer_head", "en", layer=clicked[0], head=clicked[1]) in off_list
    crosses = s.page.evaluate(
        "() => document.querySelector('.st-key-view_grid [data-attnviz-grid][data-drawn]').__attnvizMap.head.off"
    )
    assert crosses == [list(clicked)]  # the head crossed out
    s.page.locator(".st-key-abl_effect").first.wait_for(state="visible", timeout=WAIT_MS)
    s.shot("ablation-off", key="view_grid")

    s.page.locator(".st-key-abl_all_on button").click()
    s.page.locator(".st-key-abl_numbers").wait_for(state="detached", timeout=WAIT_MS)
    _wait_z(s, original.weights[later])
    s.wait_views()
    assert s.layer_head_widgets() == (str(later[0]), str(later[1]))  # the clicks never moved the focus
    assert not s.dialogs and not s.crashed

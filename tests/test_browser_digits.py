"""The digits ViT on the Training page in a real browser: train a short run and see the image with
each head's class-token map over the 8 x 8 pixels and the rollout."""

from __future__ import annotations

import pytest

from attnviz import i18n

from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The drawn panels' shapes and the patch maps' sums (null until the chart is drawn).
PANELS_JS = """() => {
  const plot = document.querySelector('.st-key-digits_maps .js-plotly-plot');
  if (!plot || !plot._fullData || plot._fullData.length < 2) return null;
  return Array.from(plot._fullData, (t) => {
    const rows = Array.from(t.z, (r) => Array.from(r));
    return {rows: rows.length, cols: rows[0].length, sum: rows.flat().reduce((a, b) => a + b, 0)};
  });
}"""


def test_train_digits_and_see_patch_maps_over_the_digit(session: Session) -> None:
    s = session
    s.page.goto(f"{s.url}/training")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want",
        arg=i18n.t("train.title", "en"),
        timeout=FIRST_LOAD_MS,
    )
    s.wait_idle(FIRST_LOAD_MS)
    box = s.page.locator(".st-key-digits_steps input")
    box.wait_for(timeout=WAIT_MS)
    box.fill("60")
    box.press("Enter")
    s.wait_idle()
    s.page.locator(".st-key-digits_start button").first.click()
    panels = list(s.page.wait_for_function(f"() => ({PANELS_JS})()", timeout=FIRST_LOAD_MS).json_value())
    assert len(panels) == 6  # the image, four heads, the rollout
    assert all(p["rows"] == 8 and p["cols"] == 8 for p in panels)
    for head in panels[1:5]:  # 16 patches of 4 equal pixels share at most all of [CLS]'s attention
        assert 0 < head["sum"] <= 4 + 1e-4
    s.page.get_by_text("after 60 steps").first.wait_for(timeout=WAIT_MS)
    s.shot("digits-patch-maps", key="digits_maps")

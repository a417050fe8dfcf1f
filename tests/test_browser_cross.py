"""The encoder-decoder on the Training page in a real browser: train the reverse task and see
the cross-attention map draw the anti-diagonal (each output reads the mirrored source token)."""

from __future__ import annotations

import pytest

from attnviz import i18n

from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# The drawn cross-attention map's row-wise argmax (null until the chart is drawn).
ARGMAX_JS = """() => {
  const plot = document.querySelector('.st-key-s2s_cross .js-plotly-plot');
  if (!plot || !plot._fullData || !plot._fullData.length) return null;
  const z = plot._fullData[0].z;
  if (!z || !z.length) return null;
  return Array.from(z, (row) => { const r = Array.from(row); return r.indexOf(Math.max(...r)); });
}"""


def test_train_reverse_and_see_the_anti_diagonal(session: Session) -> None:
    s = session
    s.page.goto(f"{s.url}/training")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want",
        arg=i18n.t("train.title", "en"),
        timeout=FIRST_LOAD_MS,
    )
    s.wait_idle(FIRST_LOAD_MS)
    start = s.page.locator(".st-key-s2s_start button").first
    start.wait_for(timeout=WAIT_MS)
    start.click()  # reverse is the first task, 100 steps by default
    handle = s.page.wait_for_function(f"() => ({ARGMAX_JS})()", timeout=FIRST_LOAD_MS)
    rows = list(handle.json_value())
    assert rows == list(range(len(rows)))[::-1] and len(rows) == 8  # the anti-diagonal
    s.page.get_by_text("After 100 steps").first.wait_for(timeout=WAIT_MS)
    s.shot("cross-seq2seq-reverse", key="s2s_cross")

"""A cold server and a long text in a real browser (issue 24): the page frame and the sentence
box come before the first chart, even when the box's code comes late (the first map waits for
the box: app/coldstart/first_map.py), while the model loads once, in the warm-up thread, and the
browser fetches Streamlit's chart code meanwhile (app/coldstart/warmup.py); what sits
below the fold (the token focus) is computed and sent only when opened; the hide-sinks switch,
which needs a second forward pass, is filled in after the views. Order and content only,
nothing timed (bench/bench_browser.py measures)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from attnviz import i18n

from .browser import server_log, streamlit_server
from .test_browser import WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(chromium: Any) -> Iterator[str]:
    """A server of this module's own, not the shared one: its first visitor is this module's first test."""
    with streamlit_server(args=["--server.fileWatcherType=none"]) as (url, _proc):
        yield url


# First appearance of the sentence box and of a drawn chart (Plotly's or a canvas chart's), in the
# order the page shows them.
ORDER_JS = """
(() => {
  const seen = window.__order = [];
  const probes = {
    box: () => document.querySelector('.st-key-sentence_input textarea'),
    chart: () => document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg,'
      + ' [data-attnviz-map][data-drawn]'),
  };
  const check = () => {
    for (const [name, probe] of Object.entries(probes)) if (!seen.includes(name) && probe()) seen.push(name);
  };
  // a canvas map is marked drawn by an attribute, after its element came: watch that too
  new MutationObserver(check).observe(
    document, {childList: true, subtree: true, attributes: true, attributeFilter: ['data-drawn']});
  check();
})();
"""


CHART_CODE_JS = """() => performance.getEntriesByType('resource')
  .filter(e => /\\/static\\/js\\/PlotlyChart\\.[^/]*\\.js$/.test(e.name)).map(e => e.startTime)"""


def _chart_count(s: Session, key: str) -> int:
    return int(s.page.locator(f".st-key-{key} .js-plotly-plot").count())


# How long the browser is kept from the text area's code: Streamlit loads each widget's code
# when it first shows one, and on a busy server (CI's two test workers) the text area's came
# after the first map's component code; held back, it always does.
TEXT_AREA_LATE_S = 2.5


def _late(route: Any) -> None:
    time.sleep(TEXT_AREA_LATE_S)
    route.continue_()


def test_a_cold_server_shows_the_sentence_box_first_and_loads_the_model_once(chromium: Any, server: str) -> None:
    """The module's server is fresh: this is its first visitor."""
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1000}, locale="en-US")
    try:
        ctx.add_init_script(ORDER_JS)
        ctx.route("**/static/js/TextArea.*.js", _late)
        page = ctx.new_page()
        s = Session(page, server)
        s.open()  # waits for the views shown, drawn
        assert page.evaluate("() => window.__order") == ["box", "chart"]
        late = page.evaluate(
            "() => performance.getEntriesByType('resource').filter(e => /TextArea/.test(e.name)).length"
        )
        assert late == 1  # the route matched Streamlit's file: the box's code did come late
        s.page.locator(".st-key-view_grid [data-attnviz-grid][data-drawn]").wait_for()  # the grid: a canvas
        # no Plotly chart on the explorer's first screen, so the browser never asks for its chart code
        assert page.evaluate(CHART_CODE_JS) == []
        log_file = server_log(server)
        log = log_file.read_text(encoding="utf-8", errors="replace")
        assert log.count("loaded model 'minilm'") == 1, log[-2000:]  # the warm-up's load, reused by the page
        assert "warm-up load failed" not in log
        # the heap of the imports and the model, out of every later run's collection (app/coldstart/heap.py)
        for point in ("the figure imports", "the first model"):
            deadline = time.monotonic() + 60  # the warm-up thread's own first pass may still run
            while f"heap settled after {point}" not in log and time.monotonic() < deadline:
                time.sleep(0.2)
                log = log_file.read_text(encoding="utf-8", errors="replace")
            assert log.count(f"heap settled after {point}") == 1, log[-2000:]
    finally:
        ctx.close()


def test_token_focus_is_drawn_only_when_opened(session: Session) -> None:
    s = session
    s.open()
    assert _chart_count(s, "token_focus") == 0  # below the fold and closed: not computed, not sent
    assert s.page.locator(".st-key-focus_query").count() == 0
    s.page.locator(".st-key-focus_open label").click()
    s.page.locator(".st-key-token_focus .js-plotly-plot .main-svg").first.wait_for(state="visible", timeout=WAIT_MS)
    s.wait_views()
    assert s.page.locator(".st-key-focus_query").count() == 1
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0


def test_the_sinks_switch_drawn_after_the_views_keeps_its_place_under_them(session: Session) -> None:
    s = session
    s.open()  # idle: the whole run is over
    shown = s.page.locator(".st-key-sinks").inner_text()
    assert i18n.t("sinks.toggle", "en") in shown and "[CLS]" in shown
    order = s.page.evaluate(
        "() => { const all = [...document.querySelectorAll('.st-key-sinks, .st-key-view_heatmap')];"
        " return all.map(e => e.classList.contains('st-key-sinks') ? 'sinks' : 'views'); }"
    )
    # filled in after the views are sent, into its place under them: the pictures come first (issue 23.4)
    assert order == ["views", "sinks"]

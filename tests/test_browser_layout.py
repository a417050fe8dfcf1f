"""What a student sees on a 1400 x 900 screen and on a 390 px phone (issue 23.4 and 23.8): the
explorer's first screen shows a picture and the heads-off switch (after Michel et al.) comes after
the views; no label is cut with an ellipsis in English or Chinese; on a phone the head view's
legend does not cover its tokens; opening a trained model keeps the Chinese interface. Caveats,
Corpus and Training open on a picture at 1400 x 1000 and on a phone, before their controls and
papers; on a phone every Explain title fits (wrapped where needed) and covers no plot, in both
languages. Every measurement waits for the element first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .test_browser import DRAWN_COUNT_JS, FIRST_LOAD_MS, WAIT_MS, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Text cut by the page's CSS (an ellipsis or hidden overflow on a text-only element) that is on
# screen, and Plotly titles that run past their figure's edge.
CUT_JS = """() => {
  const cut = [...document.querySelectorAll('[data-testid="stMain"] *, [data-testid="stSidebar"] *')]
    .filter(el => el instanceof HTMLElement).filter(el => {
      const s = getComputedStyle(el), r = el.getBoundingClientRect();
      const clips = s.textOverflow === 'ellipsis' || s.overflowX === 'hidden' || s.overflowX === 'clip';
      return clips && el.children.length === 0 && el.innerText.trim() && r.width > 0 && r.right > 0
        && el.scrollWidth > el.clientWidth + 1;
    }).map(el => el.innerText.trim());
  for (const gd of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    const svg = gd.querySelector('.main-svg');
    if (!svg) continue;
    const edge = svg.getBoundingClientRect();
    for (const title of gd.querySelectorAll('.gtitle')) {
      const r = title.getBoundingClientRect();
      if (r.width > 0 && (r.left < edge.left - 1 || r.right > edge.right + 1)) cut.push('title: ' + title.textContent);
    }
  }
  return cut;
}"""

# Plotly titles that reach into the plot area (a title wrapped into more lines than its top
# margin holds) or above the figure.
OVER_JS = """() => {
  const over = [];
  for (const gd of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    const svg = gd.querySelector('.main-svg'), size = gd._fullLayout && gd._fullLayout._size;
    if (!svg || !size) continue;
    const top = svg.getBoundingClientRect().top;
    for (const title of gd.querySelectorAll('.gtitle')) {
      const r = title.getBoundingClientRect();
      if (r.height > 0 && (r.bottom > top + size.t + 2 || r.top < top - 1)) over.push(title.textContent);
    }
  }
  return over;
}"""

TOP_JS = """(sel) => { const el = document.querySelector(sel); return el ? el.getBoundingClientRect().top : null; }"""

# Boxes of the head view's legend and of its token labels, in page pixels.
LEGEND_JS = """() => {
  const gd = document.querySelector('.st-key-view_head .js-plotly-plot');
  const legend = gd && gd.querySelector('.legend');
  if (!legend) return null;
  const box = r => ({left: r.left, right: r.right, top: r.top, bottom: r.bottom});
  const tokens = [...gd.querySelectorAll('.scatterlayer .textpoint text')].filter(t => t.textContent.trim());
  return {legend: box(legend.getBoundingClientRect()), tokens: tokens.map(t => box(t.getBoundingClientRect()))};
}"""


@pytest.fixture
def wide(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, viewport={"width": 1400, "height": 900})


@pytest.fixture
def phone(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, viewport={"width": 390, "height": 844})


def _cut(s: Session) -> list[str]:
    return list(s.page.evaluate(CUT_JS))


def _over(s: Session) -> list[str]:
    return list(s.page.evaluate(OVER_JS))


# Each page's first picture, and what must come after it: its controls or its papers.
PICTURE_FIRST = {
    "caveats": ".st-key-caveat_weight",
    "corpus": '[data-testid="stMain"] [data-testid="stRadio"]',
    "training": ".st-key-train_controls",
}


@pytest.fixture
def screen(chromium: Any, server: str, request: pytest.FixtureRequest) -> Iterator[Session]:
    width, height = request.param
    yield from _session(chromium, server, viewport={"width": width, "height": height})


@pytest.mark.parametrize(("screen", "lang"), [((1400, 1000), "en"), ((390, 844), "zh"), ((390, 844), "en")],
                         indirect=["screen"])  # fmt: skip
def test_caveats_corpus_and_training_open_on_a_picture(screen: Session, lang: str) -> None:
    s = screen
    height = s.page.viewport_size["height"]
    for page, after in PICTURE_FIRST.items():
        s.page.goto(f"{s.url}/{page}?lang={lang}")
        s.page.locator(f".st-key-picture_{page} .js-plotly-plot .main-svg").first.wait_for(timeout=FIRST_LOAD_MS)
        s.page.locator(after).first.wait_for()
        s.wait_idle(FIRST_LOAD_MS)
        picture = s.page.evaluate(TOP_JS, f".st-key-picture_{page} .js-plotly-plot")
        later = s.page.evaluate(TOP_JS, after)
        assert picture is not None and picture < height - 200, (page, picture)  # most of it on the first screen
        assert later is not None and later > picture, (page, later, picture)
        assert _cut(s) == [] and _over(s) == [], page
        s.shot(f"layout-{page}-{height}-{lang}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_on_a_phone_every_explain_title_fits_and_covers_no_plot(phone: Session, lang: str) -> None:
    s = phone
    s.page.goto(f"{s.url}/explain?lang={lang}")
    s.page.locator(".st-key-pair_result .js-plotly-plot .main-svg").first.wait_for(timeout=FIRST_LOAD_MS)
    s.wait_idle(FIRST_LOAD_MS)
    # bars, contributions, deletion, layer agreement, statistics, heads, pruning curve, pair
    s.page.wait_for_function(f"() => ({DRAWN_COUNT_JS})() >= 8", timeout=WAIT_MS)
    assert _cut(s) == []
    assert _over(s) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_first_screen_shows_a_picture_before_the_switches_and_no_label_is_cut(wide: Session, lang: str) -> None:
    s = wide
    s.open({"lang": lang})
    s.page.locator(".st-key-ablation").first.wait_for()
    heatmap = s.page.evaluate(TOP_JS, ".st-key-view_heatmap [data-attnviz-map]")
    switches = s.page.evaluate(TOP_JS, ".st-key-ablation")
    assert heatmap is not None and heatmap < 900  # a picture starts on the first screen
    assert switches is not None and switches > heatmap  # the paper's switch comes after it
    s.shot(f"layout-explorer-{lang}")
    assert _cut(s) == []
    s.page.goto(f"{s.url}/lab?lang={lang}")
    s.page.locator(".st-key-lab_compare_note").first.wait_for(timeout=FIRST_LOAD_MS)
    s.wait_idle()
    assert _cut(s) == []


def test_on_a_phone_the_head_view_legend_leaves_the_tokens_alone(phone: Session) -> None:
    s = phone
    s.open()
    s.open_views()
    s.page.locator(".st-key-view_head .js-plotly-plot .legend").first.wait_for(timeout=WAIT_MS)
    boxes = s.page.evaluate(LEGEND_JS)
    assert boxes is not None and boxes["tokens"]
    legend = boxes["legend"]

    def overlaps(t: dict[str, float]) -> bool:
        return not (
            t["right"] <= legend["left"]
            or t["left"] >= legend["right"]
            or t["bottom"] <= legend["top"]
            or t["top"] >= legend["bottom"]
        )

    assert [t for t in boxes["tokens"] if overlaps(t)] == []
    s.shot("layout-head-view-phone", key="view_head")
    assert _cut(s) == []  # no label and no figure title cut on a phone either


def test_opening_a_trained_model_keeps_the_chinese_interface(wide: Session) -> None:
    s = wide
    s.page.goto(f"{s.url}/training?lang=zh")
    s.page.locator(".st-key-train_start button").first.wait_for(timeout=FIRST_LOAD_MS)
    s.wait_idle(FIRST_LOAD_MS)
    s.page.locator(".st-key-train_start button").first.click()
    s.page.locator(".st-key-train_stop button").first.wait_for()
    s.page.wait_for_function(
        "() => !!document.querySelector('.st-key-train_curves .js-plotly-plot')?._fullData", timeout=WAIT_MS
    )
    s.page.locator(".st-key-train_stop button").first.click()
    s.page.locator(".st-key-train_open button").first.wait_for()
    s.wait_idle()
    s.page.locator(".st-key-train_open button").first.click()
    s.page.wait_for_function("() => location.search.includes('model=trained')", timeout=WAIT_MS)
    s.wait_idle()
    assert "lang=zh" in s.page.url
    s.page.wait_for_function(
        "() => [...document.querySelectorAll('h1')].some(h => h.innerText.trim() === '注意力浏览器')", timeout=WAIT_MS
    )
    assert s.page.locator('[data-testid="stException"]').count() == 0

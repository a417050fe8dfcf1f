"""Every page fits its screen (390 px phone, 1366 and 1920 px desktops) in English and Chinese,
as chromium lays it out: no block wider than its box unless it is meant to scroll, no table
past the screen's right edge outside a scroller, no text box (the token box, Markdown) over a
chart, no chart toolbar over a heading, no Plotly title or tick label cut or overlapping another,
square maps' colour bars beside their map or lying under it, and on a phone the first picture on
the first screen and the lesson's all-heads grid in a figure no taller than what it draws. The explorer is also
checked at 512 tokens (the token box scrolls in its own bounded box).

Cost: one browser; a phone context and a desktop one; each page visited once per language and
context (the desktop one at 1366 px, then the same page resized to 1920 px); the 512-token
sentence on the explorer only. Screenshots go to test-artifacts/overflow-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from attnviz import i18n

from .browser import ARTIFACTS
from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ("explorer", "lesson", "lab", "explain", "caveats", "corpus", "training")
LAB_OPEN = ("lab_sparse_open", "lab_flash_open")  # the lab's sections with tables and subplot titles
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1366, "height": 900}
WIDE = {"width": 1920, "height": 1080}
TITLES = {"training": "train"}  # catalogue prefixes that are not the page's name
# What each page draws last of its first screen: the page is whole once it is there.
READY = {
    "explorer": ".st-key-view_grid [data-attnviz-map][data-drawn]",
    "lesson": ".st-key-lesson_chart_all_heads .js-plotly-plot .main-svg",
    "lab": ".st-key-lab_compare_note",
    "explain": ".st-key-pair_result .js-plotly-plot .main-svg",
    "caveats": ".st-key-picture_caveats .js-plotly-plot .main-svg",
    "corpus": ".st-key-picture_corpus .js-plotly-plot .main-svg",
    "training": ".st-key-picture_training .js-plotly-plot .main-svg",
}
LONG = " ".join(["The tired animal did not cross the wide street"] * 80)  # past 512 tokens: cut to 512

# Every chart drawn (Plotly's with its layout, the canvas maps with their drawn mark) and sized to
# its box, and the script idle.
SETTLED_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.dataset.testScriptState !== 'notRunning' || document.querySelector('[data-stale="true"]')
      || document.querySelector('[data-testid="stSpinner"]')) return false;
  for (const gd of document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot')) {
    const svg = gd.querySelector('.main-svg');
    if (!svg || !gd._fullLayout || Math.abs(svg.getBoundingClientRect().width - gd.clientWidth) > 2) return false;
  }
  return [...document.querySelectorAll('[data-testid="stMain"] [data-attnviz-map]')].every(m => m.dataset.drawn !== undefined);
}"""

# What does not fit, as readable strings (empty: all fits). See the module's doc.
PROBLEMS_JS = r"""() => {
  const out = [], W = window.innerWidth, main = document.querySelector('[data-testid="stMain"]');
  const name = (el) => key(el) + (el.dataset.testid || el.className && String(el.className).split(' ')[0] || el.tagName)
    + ' "' + (el.innerText || el.textContent || '').trim().slice(0, 40).replace(/\s+/g, ' ') + '"';
  const key = (el) => { for (let p = el; p && p !== main; p = p.parentElement) {
    const k = [...p.classList].find(c => c.startsWith('st-key-')); if (k) return '[' + k.slice(7) + '] '; } return ''; };
  const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const scrolls = (s) => s.overflowX === 'auto' || s.overflowX === 'scroll';
  const scroller = (el) => { for (let p = el.parentElement; p && p !== main; p = p.parentElement)
    if (scrolls(getComputedStyle(p))) return p; return null; };
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  // the box of what an element's text paints: its lines, cut where a box it is in clips them
  const textBox = (el) => { const range = document.createRange(); range.selectNodeContents(el);
    let r = range.getBoundingClientRect(), box = {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    for (let p = el; p && p !== main; p = p.parentElement) {
      if (getComputedStyle(p).overflowY === 'visible') continue;
      const c = p.getBoundingClientRect();
      box = {left: Math.max(box.left, c.left), right: Math.min(box.right, c.right), top: Math.max(box.top, c.top), bottom: Math.min(box.bottom, c.bottom)};
    }
    return {...box, height: Math.max(0, box.bottom - box.top), width: Math.max(0, box.right - box.left)}; };
  // what makes a box wider shows past its right edge, outside the charts and the tables (which scroll
  // inside) and outside any box inside it that scrolls sideways (what is past its edge is cut there)
  const inScroller = (d, el) => { for (let p = d.parentElement; p && p !== el; p = p.parentElement)
    if (scrolls(getComputedStyle(p))) return true; return false; };
  const sticksOut = (el) => { const edge = el.getBoundingClientRect().right;
    return [...el.querySelectorAll('*')].some(d => !d.closest('.js-plotly-plot, [data-attnviz-map], [data-testid="stDataFrame"]')
      && shown(d) && d.getBoundingClientRect().right > edge + 1 && !inScroller(d, el)); };
  // 1. blocks wider than their box that are not meant to scroll (the charts' insides aside)
  for (const el of main.querySelectorAll('*')) {
    if (!(el instanceof HTMLElement) || el.closest('.js-plotly-plot, [data-attnviz-map], [data-testid="stDataFrame"]')) continue;
    const s = getComputedStyle(el);
    if (s.display.startsWith('inline') || s.display === 'contents' || !shown(el) || scrolls(s)) continue;
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 4 && sticksOut(el)) out.push('wider than its box: ' + name(el) + ` ${el.scrollWidth} > ${el.clientWidth}`);
  }
  // 2. anything past the screen's right edge outside a scroller that ends on screen
  for (const el of main.querySelectorAll('[data-testid="stElementContainer"], [data-testid="stDataFrame"], table, .js-plotly-plot, [data-attnviz-map]')) {
    if (!shown(el)) continue;
    const r = el.getBoundingClientRect(), p = scroller(el);
    const edge = p ? Math.min(p.getBoundingClientRect().right, W) : W;
    if (r.right > edge + 1 && !(p && p.getBoundingClientRect().right <= W + 1)) out.push('past the right edge: ' + name(el) + ` ${Math.round(r.right)} > ${W}`);
  }
  if (document.documentElement.scrollWidth > W + 1) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${W}`);
  // 3. text boxes over charts
  const charts = [...main.querySelectorAll('.js-plotly-plot .main-svg:first-of-type, [data-attnviz-map] canvas')].filter(shown)
    .map(el => ({el, r: el.getBoundingClientRect()}));
  const texts = [...main.querySelectorAll('.st-key-tokens pre, [data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')]
    .filter(el => shown(el) && !el.closest('.js-plotly-plot, [data-attnviz-map]'));
  for (const el of texts) {
    const r = textBox(el);
    for (const c of charts) if (r.height > 0 && meet(r, c.r)) out.push('text over a chart: ' + name(el));
  }
  // 4. chart toolbars over headings
  const heads = [...main.querySelectorAll('h1, h2, h3, h4, h5, h6, summary')].filter(shown).map(textBox);
  for (const bar of main.querySelectorAll('[data-testid="stElementToolbar"], .modebar-container')) {
    const r = bar.getBoundingClientRect();
    if (r.width > 0 && heads.some(h => meet(r, h))) out.push('toolbar over a heading: ' + name(bar.closest('[data-testid="stElementContainer"]') || bar));
  }
  // 5. Plotly: titles inside the figure; tick labels of one axis apart; a square map's colour bar beside it
  for (const gd of main.querySelectorAll('.js-plotly-plot')) {
    const svg = gd.querySelector('.main-svg'), L = gd._fullLayout;
    if (!svg || !L || !shown(svg)) continue;
    const edge = svg.getBoundingClientRect();
    for (const t of gd.querySelectorAll('.gtitle, .annotation-text-g text, .g-xtitle text, .g-ytitle text')) {
      const r = t.getBoundingClientRect();
      if (r.width > 0 && t.textContent.trim() && (r.left < edge.left - 1 || r.right > edge.right + 1 || r.top < edge.top - 1 || r.bottom > edge.bottom + 1))
        out.push('text past its figure: ' + key(gd) + t.textContent.slice(0, 40));
    }
    const titles = [...gd.querySelectorAll('.annotation-text-g text, .gtitle')].filter(t => t.textContent.trim())
      .map(t => ({t: t.textContent, r: t.getBoundingClientRect()}));
    for (let i = 0; i < titles.length; i++) for (let j = i + 1; j < titles.length; j++)
      if (meet(titles[i].r, titles[j].r)) out.push('titles overlap: ' + key(gd) + titles[i].t.slice(0, 30) + ' / ' + titles[j].t.slice(0, 30));
    // along its axis a label takes its width, or its ink's height (0.8 em) where it stands upright
    for (const axis of gd.querySelectorAll('.xaxislayer-above, .yaxislayer-above')) {
      const across = axis.classList.contains('xaxislayer-above');
      const ticks = [...axis.querySelectorAll('.xtick text, .ytick text')].filter(t => t.textContent.trim() && shown(t)).map(t => {
        const r = t.getBoundingClientRect(), em = parseFloat(getComputedStyle(t).fontSize);
        const upright = /rotate\((-?9|27)0/.test(t.getAttribute('transform') || '');
        return {t: t.textContent, at: across ? (r.left + r.right) / 2 : (r.top + r.bottom) / 2,
                size: across && !upright ? r.width : 0.8 * em};
      }).sort((a, b) => a.at - b.at);
      for (let i = 1; i < ticks.length; i++) if (ticks[i].at - ticks[i - 1].at < (ticks[i].size + ticks[i - 1].size) / 2 - 1)
        out.push('tick labels overlap: ' + key(gd) + ticks[i - 1].t + ' / ' + ticks[i].t);
    }
    for (const trace of gd._fullData || []) {
      if (trace.type !== 'heatmap' || !trace.showscale || !trace._module) continue;
      const ya = L[(trace.yaxis || 'y').replace('y', 'yaxis')], xa = L[(trace.xaxis || 'x').replace('x', 'xaxis')];
      if (!ya || !xa || !(ya.scaleanchor || xa.scaleanchor)) continue;
      const bar = gd.querySelector('.colorbar'), plot = svg.getBoundingClientRect();
      if (!bar) continue;
      const b = bar.getBoundingClientRect(), left = plot.left + xa._offset, right = left + xa._length;
      if (trace.colorbar && trace.colorbar.orientation === 'h') {  // lying under the map: across it, near its foot
        const centre = (b.left + b.right) / 2, below = b.top - (plot.top + ya._offset + ya._length);
        if (centre < left || centre > right || below > 200) out.push(key(gd) + `colour bar not under its square map (${Math.round(below)} px below)`);
        continue;
      }
      const gap = b.left - right;
      if (gap > 60) out.push(key(gd) + `colour bar ${Math.round(gap)} px from its square map`);
    }
  }
  return out;
}"""

# The lesson's all-heads grid: the figure's height and what its square cells fill of it.
GRID_FILL_JS = """() => {
  const gd = document.querySelector('.st-key-lesson_chart_all_heads .js-plotly-plot');
  if (!gd || !gd._fullLayout) return null;
  const L = gd._fullLayout;
  return {figure: L.height, plot: L.yaxis._length, margins: L.margin.t + L.margin.b};
}"""

FIRST_PICTURE_JS = """() => { const el = document.querySelector('[data-testid="stMain"] .js-plotly-plot, [data-testid="stMain"] [data-attnviz-map]');
  return el ? el.getBoundingClientRect().top + window.scrollY : null; }"""


@pytest.fixture
def phone(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, viewport=PHONE)


@pytest.fixture
def desktop(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, viewport=DESKTOP)


def _visit(s: Session, page: str, lang: str) -> bool:
    """Open `page` and wait until it is whole; False (and nothing waited for) where it failed."""
    path = "" if page == "explorer" else page
    s.page.goto(f"{s.url}/{path}?lang={lang}")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want",
        arg=i18n.t(f"{TITLES.get(page, page)}.title", lang),
        timeout=FIRST_LOAD_MS,
    )
    s.page.locator(f'{READY[page]}, [data-testid="stException"]').first.wait_for(timeout=FIRST_LOAD_MS)
    _settle(s, FIRST_LOAD_MS)
    if s.page.locator('[data-testid="stException"]').count():
        return False
    if page == "lab":
        for key in LAB_OPEN:
            s.page.locator(f".st-key-{key} summary").first.click()
            _settle(s)
    return True


def _settle(s: Session, timeout: int = WAIT_MS) -> None:
    s.page.wait_for_function(SETTLED_JS, timeout=timeout)


def _shot(s: Session, name: str) -> None:
    """The whole page: the app scrolls inside its own box, so the screen is made as tall as it
    for the picture (and put back)."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = s.page.viewport_size
    tall = s.page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    s.page.set_viewport_size({"width": size["width"], "height": min(max(tall, size["height"]), 9000)})
    s.page.screenshot(path=str(ARTIFACTS / f"overflow-{name}.png"))
    s.page.set_viewport_size(size)


def _problems(s: Session, where: str) -> list[str]:
    """What does not fit, as the page stands and with the pointer on each table in turn (a table's
    toolbar is drawn only under the pointer: where it stood decided what the check saw)."""
    found = list(s.page.evaluate(PROBLEMS_JS))
    tables = s.page.locator('[data-testid="stMain"] [data-testid="stDataFrame"]')
    for i in range(tables.count()):
        table = tables.nth(i)
        if not table.is_visible():
            continue
        table.scroll_into_view_if_needed()
        table.hover()
        s.page.locator('[data-testid="stElementToolbar"]').first.wait_for(timeout=WAIT_MS)
        found += [p for p in s.page.evaluate(PROBLEMS_JS) if p.startswith("toolbar") and p not in found]
    s.page.mouse.move(0, 0)
    return [f"{where}: {p}" for p in found]


def _long_sentence(s: Session) -> None:
    s.type_sentence(LONG)
    s.page.wait_for_function(
        "() => (document.querySelector('.st-key-tokens code')?.innerText || '').split(' · ').length >= 512",
        timeout=WAIT_MS,
    )
    _settle(s)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_fits_a_phone(phone: Session, lang: str) -> None:
    s = phone
    found: list[str] = []
    for page in PAGES:
        if not _visit(s, page, lang):
            found.append(f"{page} 390 {lang}: the page failed")
            continue
        found += _problems(s, f"{page} 390 {lang}")
        _shot(s, f"{page}-390-{lang}")
        if page in ("explorer", "lesson"):
            top = s.page.evaluate(FIRST_PICTURE_JS)
            if top is None or top > PHONE["height"] - 150:
                found.append(f"{page} 390 {lang}: the first picture starts at {top}")
        if page == "lesson":
            grid = s.page.evaluate(GRID_FILL_JS)
            assert grid is not None
            if grid["figure"] > grid["plot"] + grid["margins"] + 4:
                found.append(
                    f"lesson 390 {lang}: the all-heads figure is {grid['figure']} px for {grid['plot']} px of grid"
                )
    _visit(s, "explorer", lang)
    _long_sentence(s)
    found += _problems(s, f"explorer 390 {lang} 512 tokens")
    _shot(s, f"explorer-390-{lang}-512")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_fits_a_desktop_at_1366_and_1920_px(desktop: Session, lang: str) -> None:
    s = desktop
    found: list[str] = []
    for page in PAGES:
        s.page.set_viewport_size(DESKTOP)
        if not _visit(s, page, lang):
            found.append(f"{page} 1366 {lang}: the page failed")
            continue
        found += _problems(s, f"{page} 1366 {lang}")
        _shot(s, f"{page}-1366-{lang}")
        s.page.set_viewport_size(WIDE)
        _settle(s)
        found += _problems(s, f"{page} 1920 {lang}")
        _shot(s, f"{page}-1920-{lang}")
    _visit(s, "explorer", lang)
    _long_sentence(s)
    found += _problems(s, f"explorer 1920 {lang} 512 tokens")
    _shot(s, f"explorer-1920-{lang}-512")
    assert found == [], "\n".join(found)

"""The app in a real browser: Debian's chromium driven by Playwright against `streamlit run app.py`
on a free loopback port (tests/browser.py). One server for the module; every test gets its own
browser context, which is its own Streamlit session.

What is checked here is what only a browser shows: the four explorer views are drawn (Plotly
rendered them, with the sentence's tokens in the SVG; the head and graph views once their
expander is opened), a click on a thumbnail of the all-heads
grid moves the focus and the URL, the language toggle holds across pages, hostile text stays
text (no dialog, no element from the payload), a shared link restores its view, and the dark
theme draws. Nothing is timed; waits are for content, with limits generous enough for a busy
2-core CI machine. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

import attnviz
from attnviz import i18n

from .browser import ARTIFACTS, keep_renderer, pooled_context, release

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIRST_LOAD_MS = 240_000  # the first session imports torch and loads the model (~10-25 s on 2 cores)
WAIT_MS = 90_000  # a rerun with the model warm takes a second or two; CI machines are slow and shared
SEPARATOR = " · "  # attnviz.app.widgets.TOKEN_SEPARATOR (not imported: the browser tests drive a server)
MEAN_LABEL = "mean · 平均"  # attnviz.app.widgets.MEAN_LABEL
VIEWS = ("view_heatmap", "view_grid")  # always drawn
LAZY_VIEWS = ("view_head", "view_graph")  # drawn while their expander is open (issue 24.1)
LAZY_EXPANDER = "views_open"  # attnviz.app.urls.VIEWS_OPEN, the expander's key
PAYLOADS = (
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[x](javascript:alert(3))",
    "$x^2$",
    ":red[danger]",
)

# The script has finished, nothing is greyed out as stale and no spinner turns.
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-stale="true"]')
    && !document.querySelector('[data-testid="stSpinner"]');
}"""

# Each explorer view shown holds a drawn chart: the heatmap and the grid (on their canvases,
# app/canvas/token_canvas.py and app/canvas/grid_canvas.py), and the head and graph views whenever their expander is open.
VIEWS_DRAWN_JS = """([keys, lazy, expander]) => {
  const box = document.querySelector('.st-key-' + expander);
  const details = box && (box.closest('details') || box.querySelector('details'));
  return [...keys, ...(details && details.open ? lazy : [])].every(k => {
    if (document.querySelector('.st-key-' + k + ' [data-attnviz-map][data-drawn]')) return true;
    const gd = document.querySelector('.st-key-' + k + ' .js-plotly-plot');
    return !!gd && !!gd.querySelector('.main-svg') && !!gd._fullLayout;
  });
}"""

DRAWN_COUNT_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')]
  .filter(gd => gd.querySelector('.main-svg') && gd._fullLayout).length
  + document.querySelectorAll('[data-attnviz-map][data-drawn]').length"""

# The canvas grid (app/canvas/grid_canvas.js): the centre of head (layer, head)'s cell in page px, the
# thumbnail size and the head the server outlined as in focus.
GRID_CELL_JS = """([layer, head]) => { const m = document.querySelector('.st-key-view_grid [data-attnviz-grid][data-drawn]');
  const L = m.__attnvizLayout, box = m.querySelector('canvas').getBoundingClientRect();
  return {px: box.left + L.x0 + (head + 0.5) * L.unit, py: box.top + L.y0 + (layer + 0.5) * L.unit,
          thumb: m.__attnvizMap.head.thumb, focus: m.__attnvizMap.head.focus}; }"""

# The texts a canvas map drew (title, axis titles, tick labels, colour bar), or null without one.
CANVAS_TEXT_JS = """(key) => { const m = document.querySelector('.st-key-' + key + ' [data-attnviz-map][data-drawn]');
  return m ? m.__attnvizText : null; }"""

# Anything a payload could have smuggled into the page.
INJECTED_JS = """() => {
  const md = [...document.querySelectorAll('[data-testid="stMarkdownContainer"] *')];
  return {
    img_x: [...document.querySelectorAll('img')].filter(i => i.getAttribute('src') === 'x').length,
    onerror: document.querySelectorAll('[onerror]').length,
    script: [...document.scripts].filter(s => s.textContent.includes('alert(')).length,
    js_link: [...document.querySelectorAll('a[href]')]
      .filter(a => a.getAttribute('href').trim().toLowerCase().startsWith('javascript')).length,
    tex: [...document.querySelectorAll('annotation')].filter(a => a.textContent.trim() === 'x^2').length,
    colour: md.filter(e => e.children.length === 0 && e.textContent.trim() === 'danger').length,
    exception: document.querySelectorAll('[data-testid="stException"]').length,
  };
}"""

CLEAN = {"img_x": 0, "onerror": 0, "script": 0, "js_link": 0, "tex": 0, "colour": 0, "exception": 0}


@dataclass
class Session:
    """One browser context (= one Streamlit session) and what it saw."""

    page: Any
    url: str
    dialogs: list[str] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)

    # --- navigation and waiting ---------------------------------------------------------------

    def open(self, query: dict[str, str] | None = None, path: str = "") -> None:
        """Load the app (a new session) and wait until the explorer's views are drawn."""
        target = f"{self.url}/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        self.page.goto(target)
        self.wait_views(timeout=FIRST_LOAD_MS)

    def wait_idle(self, timeout: int = WAIT_MS) -> None:
        self.page.wait_for_function(IDLE_JS, timeout=timeout)

    def wait_views(self, timeout: int = WAIT_MS) -> None:
        """Wait until every view shown is drawn (the head and graph views too if their expander is open)."""
        self.page.wait_for_function(VIEWS_DRAWN_JS, arg=[list(VIEWS), list(LAZY_VIEWS), LAZY_EXPANDER], timeout=timeout)
        self.wait_idle(timeout)

    def open_views(self) -> None:
        """Open the expander of the head and graph views (closed by default) and wait until both
        are drawn; it stays open for the session."""
        self.page.locator(f".st-key-{LAZY_EXPANDER} summary").first.click()
        for key in LAZY_VIEWS:
            self.page.locator(f".st-key-{key} .js-plotly-plot .main-svg").first.wait_for(timeout=WAIT_MS)
        self.wait_views()

    def drawn_charts(self) -> int:
        return int(self.page.evaluate(DRAWN_COUNT_JS))

    # --- the sentence box ---------------------------------------------------------------------

    def type_sentence(self, text: str) -> None:
        """Replace the sentence and commit it the way a person does: Ctrl+Enter in the box."""
        box = self.page.locator(".st-key-sentence_input textarea")
        box.fill(text)
        box.press("Control+Enter")

    def submit(self, text: str, tokens: list[str]) -> None:
        """Type `text` and wait until the page shows its `tokens` and the views are redrawn."""
        self.type_sentence(text)
        self.wait_tokens(tokens)
        self.wait_views()

    def wait_tokens(self, tokens: list[str]) -> None:
        """Wait until the page's token block (key "tokens", on every page) shows `tokens`."""
        self.page.wait_for_function(
            "(want) => { const c = document.querySelector('.st-key-tokens code');"
            " return !!c && c.innerText.trim() === want; }",
            arg=SEPARATOR.join(tokens),
            timeout=WAIT_MS,
        )

    def tokens_text(self) -> str:
        return str(self.page.locator(".st-key-tokens code").inner_text()).strip()

    # --- reading the page ---------------------------------------------------------------------

    def svg_texts(self, key: str) -> list[str]:
        """Every text drawn in the chart inside container `key` (tick labels, titles): the SVG's of
        a Plotly chart, or what a canvas map wrote."""
        drawn = self.page.evaluate(CANVAS_TEXT_JS, key)
        if drawn is not None:
            return [str(s) for s in drawn]
        return [str(s) for s in self.page.locator(f".st-key-{key} .js-plotly-plot svg text").all_text_contents()]

    def chart_title(self, key: str) -> str:
        drawn = self.page.evaluate(CANVAS_TEXT_JS, key)
        if drawn is not None:
            return str(drawn[0])
        return str(self.page.locator(f".st-key-{key} .js-plotly-plot .gtitle").first.text_content())

    def layer_head_widgets(self) -> tuple[str, str]:
        boxes = self.page.locator(".st-key-controls [data-testid='stSelectbox'] input[role='combobox']")
        return str(boxes.nth(0).input_value()), str(boxes.nth(1).input_value())

    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(self.page.url).query).items()}

    def shot(self, name: str, key: str | None = None) -> None:
        """A screenshot under test-artifacts/, scrolled to container `key` if given."""
        ARTIFACTS.mkdir(exist_ok=True)
        if key is not None:
            self.page.locator(f".st-key-{key}").first.scroll_into_view_if_needed()
        self.page.screenshot(path=str(ARTIFACTS / f"browser-{name}.png"))

    def go_to_page(self, url_path: str) -> None:
        """Follow the sidebar link to another page of the app (same session); the explorer, the
        default page, lives at the root. Returns once the new page has drawn its title: the path
        changes at the click, and until the new page's run arrives the old page's elements (and a
        gap between two runs that looks idle) are still there to fool a wait."""
        path = "" if url_path == "explorer" else url_path
        old_title = self.page.evaluate("() => document.querySelector('h1')?.innerText ?? ''")
        self.page.locator(f'[data-testid="stSidebarNav"] a[href="{self.url}/{path}"]').click()
        self.page.wait_for_function(
            "(p) => location.pathname.replace(/\\/+$/, '') === p", arg="/" + path if path else "", timeout=WAIT_MS
        )
        self.page.wait_for_function(
            "(old) => { const h = document.querySelector('h1'); return !!h && h.innerText !== old; }",
            arg=old_title,
            timeout=WAIT_MS,
        )


# --- fixtures (chromium, server and session: tests/conftest.py) -----------------------------------------------------------------------------------


def _session(chromium: Any, url: str, **context: Any) -> Iterator[Session]:
    """A new tab (a new Streamlit session, no cookies) in a context kept from test to test
    (tests/browser.py: pooled_context)."""
    context = {"viewport": {"width": 1400, "height": 1000}, "locale": "en-US", **context}
    ctx = pooled_context(chromium, **context)
    keep_renderer(ctx, url)
    page = ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    s = Session(page, url)

    def on_dialog(dialog: Any) -> None:
        s.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("crash", lambda _page: s.crashed.append("crash"))
    try:
        yield s
    finally:
        release(ctx)


@pytest.fixture
def chinese_session(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, locale="zh-CN")


def _tokens(model: attnviz.PretrainedModel, text: str) -> list[str]:
    return list(model.encode(text).tokens)


def _luminance(css_colour: str) -> float:
    """Relative brightness 0..1 of a computed 'rgb(r, g, b)' / 'rgba(...)' colour."""
    parts = css_colour[css_colour.index("(") + 1 : css_colour.index(")")].split(",")
    r, g, b = (float(p) / 255 for p in parts[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


# --- 1. the explorer, end to end (issue 3) ------------------------------------------------------


def test_explorer_draws_four_views_and_a_thumbnail_click_moves_the_focus(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    s.open()
    s.open_views()  # the head and graph views wait in their expander until it is opened
    text = "Quiet owls watch sleepy mice under the moon."
    tokens = _tokens(minilm, text)
    s.submit(text, tokens)

    assert s.drawn_charts() >= 4  # heatmap, all-heads grid, head view, graph view (and token focus)
    words = [tok for tok in tokens if tok not in ("[CLS]", "[SEP]")]
    for key in ("view_heatmap", "view_head"):
        drawn = set(s.svg_texts(key))
        missing = [w for w in words if w not in drawn]
        assert not missing, f"{key}: tokens {missing} not drawn in the SVG"
    assert s.query().get("text") == text
    s.shot("explorer", key="view_heatmap")

    # The grid's geometry from the canvas itself (app/canvas/grid_canvas.js): head (l, h) is the square
    # cell l down and h across. Click the centre of the thumbnail drawn for (layer 3, head 5).
    layer, head = 3, 5
    s.page.locator(".st-key-view_grid [data-attnviz-grid]").scroll_into_view_if_needed()
    spot = s.page.evaluate(GRID_CELL_JS, [layer, head])
    assert spot["thumb"] == min(32, len(tokens)), spot
    s.page.mouse.move(spot["px"], spot["py"])
    s.page.mouse.click(spot["px"], spot["py"])

    s.page.wait_for_function(
        "([l, h]) => { const q = new URLSearchParams(location.search);"
        " return q.get('layer') === String(l) && q.get('head') === String(h); }",
        arg=[layer, head],
        timeout=WAIT_MS,
    )
    s.wait_views()
    assert s.layer_head_widgets() == (str(layer), str(head))
    which = i18n.t("fig.head_n", "en", h=head)
    assert s.chart_title("view_heatmap").startswith(i18n.t("fig.layer_which", "en", layer=layer, which=which))
    outline = s.page.evaluate(GRID_CELL_JS, [0, 0])["focus"]
    assert outline == [layer, head], outline  # the grid outlines the head in focus
    assert s.query()["text"] == text  # the sentence stays in the shared URL
    s.shot("explorer-grid-click", key="view_grid")

    # A click on a query token of the head view highlights that token.
    i = tokens.index("mice")
    head_view = s.page.locator(".st-key-view_head .js-plotly-plot")
    head_view.scroll_into_view_if_needed()
    spot = head_view.evaluate(
        """(gd, i) => {
          const L = gd._fullLayout, tr = gd._fullData.find(t => t.name === 'query'), box = gd.getBoundingClientRect();
          return {px: box.left + L.xaxis._offset + L.xaxis.l2p(tr.x[i]),
                  py: box.top + L.yaxis._offset + L.yaxis.l2p(tr.y[i])};
        }""",
        i,
    )
    s.page.mouse.move(spot["px"], spot["py"])
    s.page.mouse.click(spot["px"], spot["py"])
    highlight = f".st-key-view_head input[aria-label='{i18n.t('ctl.highlight', 'en')}']"
    want = f"{i}: mice"  # attnviz.app.widgets.token_label
    # the box as it is at each check: the rerun the click starts may draw it anew (an element
    # handle taken before would keep watching the old, detached one)
    s.page.wait_for_function(
        "([sel, want]) => { const el = document.querySelector(sel); return !!el && el.value === want; }",
        arg=[highlight, want],
        timeout=WAIT_MS,
    )
    s.wait_views()
    assert s.layer_head_widgets() == (str(layer), str(head))  # the focus stays where it was
    assert not s.dialogs and not s.crashed


# --- 2. English / Chinese (issue 6) -------------------------------------------------------------


def test_language_toggle_shows_chinese_and_holds_across_pages(session: Session) -> None:
    s = session
    s.open()
    assert s.page.locator("h1").first.inner_text() == i18n.t("explorer.title", "en")

    s.page.locator('[data-testid="stSidebar"] [data-testid="stRadio"] label').filter(has_text="中文").click()
    title = s.page.locator("h1").first
    zh_title = i18n.t("explorer.title", "zh")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want", arg=zh_title, timeout=WAIT_MS
    )
    s.wait_views()
    labels = s.page.locator('[data-testid="stWidgetLabel"]').all_inner_texts()
    assert i18n.t("sentence.label", "zh") in labels
    assert i18n.t("ctl.layer", "zh") in labels
    nav = s.page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert i18n.t("nav.lab", "zh") in nav and i18n.t("nav.caveats", "zh") in nav
    # The example sentence switched to its Chinese twin, and the model reads Chinese characters.
    assert any("\u4e00" <= ch <= "\u9fff" for ch in s.tokens_text())
    assert s.query().get("lang") == "zh"
    s.shot("lang-zh-explorer")

    s.go_to_page("caveats")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want",
        arg=i18n.t("caveats.title", "zh"),
        timeout=WAIT_MS,
    )
    checked = s.page.locator('[data-testid="stSidebar"] [data-testid="stRadio"] label:has(input:checked)')
    assert checked.inner_text().strip() == "中文"
    assert s.query().get("lang") == "zh"
    s.shot("lang-zh-caveats")

    s.go_to_page("explorer")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want", arg=zh_title, timeout=WAIT_MS
    )
    assert title.inner_text() == zh_title
    assert not s.crashed


def test_a_chinese_browser_gets_the_chinese_interface(chinese_session: Session) -> None:
    s = chinese_session
    s.open()
    assert s.page.locator("h1").first.inner_text() == i18n.t("explorer.title", "zh")
    assert s.page.locator(".st-key-sentence_input textarea").input_value() == i18n.examples("zh")["default"]
    assert s.query().get("lang") == "zh"
    assert not s.crashed


# --- 3. hostile and empty input (issue 7) -------------------------------------------------------


def test_hostile_text_stays_text(session: Session, minilm: attnviz.PretrainedModel) -> None:
    s = session
    s.open()
    s.open_views()  # every view draws the payloads
    for payload in PAYLOADS:
        tokens = _tokens(minilm, payload)
        s.submit(payload, tokens)
        assert s.tokens_text() == SEPARATOR.join(tokens), payload  # shown literally, token by token
        assert s.page.locator(".st-key-sentence_input textarea").input_value() == payload
        assert s.page.evaluate(INJECTED_JS) == CLEAN, payload
        assert s.drawn_charts() >= 4, payload
        assert not s.dialogs, (payload, s.dialogs)
    s.shot("hostile-explorer", key="tokens")

    # All of them at once, through the other pages, which show the sentence in their own ways.
    everything = " ".join(PAYLOADS)
    tokens = _tokens(minilm, everything)
    s.submit(everything, tokens)
    for url_path in ("lab", "explain", "caveats"):
        s.go_to_page(url_path)
        s.wait_tokens(tokens)
        s.wait_idle()
        assert s.page.evaluate(INJECTED_JS) == CLEAN, url_path
        assert not s.dialogs, (url_path, s.dialogs)
        s.shot(f"hostile-{url_path}", key="tokens")
    assert not s.crashed


def test_empty_sentence_is_a_readable_error_and_the_app_keeps_working(
    session: Session, minilm: attnviz.PretrainedModel
) -> None:
    s = session
    s.open()
    message = i18n.t("err.empty", "en")
    alert = s.page.locator('[data-testid="stAlert"]').filter(has_text=message)
    for blank, text in (("", "dog bites man"), ("   \n\t ", "man bites dog")):
        s.type_sentence(blank)
        alert.first.wait_for(state="visible", timeout=WAIT_MS)
        s.page.locator(".st-key-view_heatmap").wait_for(state="detached", timeout=WAIT_MS)  # that run is over
        s.wait_idle()
        assert s.page.locator('[data-testid="stException"]').count() == 0
        s.shot("empty-sentence")

        s.submit(text, _tokens(minilm, text))  # and the app goes on working
        assert alert.count() == 0
        assert s.drawn_charts() >= 2  # heatmap and all heads (the head and graph views: closed)
    assert not s.crashed


# --- 4. a shared link restores its view ---------------------------------------------------------


def test_shared_url_restores_sentence_layer_and_head(session: Session, minilm: attnviz.PretrainedModel) -> None:
    s = session
    text = "I sat by the river bank."
    s.open({"text": text, "layer": "2", "head": "3"})
    assert s.page.locator(".st-key-sentence_input textarea").input_value() == text
    assert s.tokens_text() == SEPARATOR.join(_tokens(minilm, text))
    assert s.layer_head_widgets() == ("2", "3")
    which = i18n.t("fig.head_n", "en", h=3)
    assert s.chart_title("view_heatmap").startswith(i18n.t("fig.layer_which", "en", layer=2, which=which))
    assert s.page.evaluate(GRID_CELL_JS, [0, 0])["focus"] == [2, 3]  # the grid outlines the head in focus
    s.shot("shared-url")

    s.open({"text": text, "layer": "1", "head": "mean"})
    assert s.layer_head_widgets() == ("1", MEAN_LABEL)
    which = i18n.t("fig.mean_of_heads", "en", heads=12)
    assert s.chart_title("view_heatmap").startswith(i18n.t("fig.layer_which", "en", layer=1, which=which))
    assert s.query().get("head") == "mean"
    assert not s.crashed


# --- 5. the dark theme --------------------------------------------------------------------------


def test_dark_theme_draws_the_charts(dark_session: Session) -> None:
    """A browser that prefers dark gets Streamlit's dark theme (no theme is pinned in
    .streamlit/config.toml); the charts follow it, so their labels must be light."""
    s = dark_session
    s.open()
    s.open_views()
    assert s.drawn_charts() >= 4
    background = s.page.evaluate(
        "() => getComputedStyle(document.querySelector('[data-testid=\"stApp\"]')).backgroundColor"
    )
    assert _luminance(background) < 0.25, background
    for key in ("view_heatmap", "view_head"):
        fill = s.page.evaluate(  # the canvas map's label colour, or the SVG's
            "(k) => { const m = document.querySelector('.st-key-' + k + ' [data-attnviz-map][data-drawn]');"
            " return m ? m.dataset.label"
            " : getComputedStyle(document.querySelector('.st-key-' + k + ' .js-plotly-plot svg text')).fill; }",
            key,
        )
        assert _luminance(fill) > 0.6, (key, fill)  # readable on the dark background
    s.shot("dark-theme")
    s.shot("dark-theme-views", key="view_head")
    assert not s.crashed

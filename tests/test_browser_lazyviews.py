"""Issue 24.1 in a real browser: the explorer opens with its head view and graph view in one
closed expander, labelled in the visitor's language, with neither chart in the page; a click on
the label draws both (the sentence's tokens in the head view's SVG) and writes `views=1` into
the link; a new sentence redraws them with the expander still open. The lab's sections below the
fold likewise. Which code runs while closed: tests/test_lazyviews.py, tests/test_lazylab.py."""

from __future__ import annotations

import pytest

import attnviz
from attnviz import i18n
from attnviz.app.state import LAB_SECTIONS

from .test_browser import FIRST_LOAD_MS, LAZY_EXPANDER, LAZY_VIEWS, WAIT_MS, Session
from .test_lazylab import SECTIONS  # each lab expander's title and a chart it draws

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_opening_the_expander_draws_the_head_and_graph_views(session: Session, minilm: attnviz.PretrainedModel) -> None:
    s = session
    s.open()
    summary = s.page.locator(f".st-key-{LAZY_EXPANDER} summary").first
    summary.wait_for(timeout=WAIT_MS)
    assert summary.inner_text().strip().endswith(i18n.t("lazy.views", "en"))
    for key in LAZY_VIEWS:
        assert s.page.locator(f".st-key-{key}").count() == 0, key  # not sent while closed
    assert "views" not in s.query()

    s.open_views()
    tokens = list(minilm.encode(i18n.examples("en")["default"]).tokens)
    drawn = set(s.svg_texts("view_head"))
    assert [w for w in tokens if w not in ("[CLS]", "[SEP]") and w not in drawn] == []
    s.page.wait_for_function("() => new URLSearchParams(location.search).get('views') === '1'", timeout=WAIT_MS)

    text = "Quiet owls watch sleepy mice under the moon."
    s.submit(text, list(minilm.encode(text).tokens))  # waits for the head and graph views too: still open
    assert "mice" in s.svg_texts("view_head")
    for key in LAZY_VIEWS:
        assert s.page.locator(f".st-key-{key} .js-plotly-plot").count() == 1, key  # one chart each
    s.shot("lazy-views-open", key="view_head")
    assert not s.dialogs and not s.crashed


def test_a_lab_section_below_the_fold_is_drawn_when_its_title_is_clicked(session: Session) -> None:
    """The lab's sections below the fold arrive as five closed expanders, titled, none of their
    charts in the page; a click on the order demo's title draws its two maps and its verdict."""
    s = session
    s.page.goto(f"{s.url}/lab")
    s.page.locator(".st-key-chart_lab_scratch .js-plotly-plot .main-svg").first.wait_for(timeout=FIRST_LOAD_MS)
    s.wait_idle()
    assert tuple(SECTIONS) == LAB_SECTIONS
    for key, (title, _, chart) in SECTIONS.items():
        summary = s.page.locator(f".st-key-{key} summary")
        assert summary.inner_text().strip().endswith(i18n.t(title, "en")), key
        assert s.page.locator(f".st-key-{chart}").count() == 0, chart  # not sent while closed

    s.page.locator(".st-key-lab_order_open summary").click()
    for chart in ("chart_order_a", "chart_order_b"):
        s.page.locator(f".st-key-{chart} .js-plotly-plot .main-svg").first.wait_for(timeout=WAIT_MS)
    s.wait_idle()
    assert "Without position embeddings" in s.page.locator(".st-key-lab_order_note").inner_text()
    assert s.page.locator(".st-key-chart_sparse_patterns").count() == 0  # the others stay closed
    s.shot("lab-order-open", key="lab_order_open")
    assert not s.dialogs and not s.crashed

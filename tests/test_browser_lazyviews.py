"""Issue 24.1 in a real browser: the explorer opens with its head view and graph view in one
closed expander, labelled in the visitor's language, with neither chart in the page; a click on
the label draws both (the sentence's tokens in the head view's SVG) and writes `views=1` into
the link; a new sentence redraws them with the expander still open. Which code runs while it is
closed: tests/test_lazyviews.py."""

from __future__ import annotations

import pytest

import attnviz
from attnviz import i18n

from .test_browser import LAZY_EXPANDER, LAZY_VIEWS, WAIT_MS, Session

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

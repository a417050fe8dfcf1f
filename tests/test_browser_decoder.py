"""SmolLM2 in a real browser (Debian's chromium against `streamlit run app.py`, as in
tests/test_browser.py), in English and in Chinese: /?model=smollm2 opens the decoder, a typed
sentence gets the next-word panel (its top token is the model's own prediction, with the logit
lens table beside it), the all-heads grid shows the three key/value groups of its nine query
heads, Chinese characters show whole (never "\ufffd") and the page says the model was trained
mostly on English."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import attnviz
from attnviz import i18n
from attnviz.views.decoder import visible

from .smollm2_model import smollm2
from .test_browser import WAIT_MS, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SENTENCES = {"en": "The capital of France is", "zh": "我爱北京。"}

# The all-heads grid as Plotly drew it: its title, tick texts and the outlines of width 2.
GRID_JS = """() => {
  const gd = document.querySelector('.st-key-view_grid .js-plotly-plot');
  if (!gd || !gd._fullLayout || !gd.querySelector('.main-svg')) return null;
  const L = gd._fullLayout;
  return {title: L.title.text, ticks: L.xaxis.ticktext,
          groups: (L.shapes || []).filter(s => s.type === 'rect' && s.line.width === 2).length};
}"""


def _check(s: Session, model: attnviz.PretrainedModel, lang: str) -> None:
    text = SENTENCES[lang]
    s.open({"model": "smollm2"})
    s.submit(text, model.attend(text).merge_characters().tokens)
    assert "\ufffd" not in s.tokens_text()
    best = visible(attnviz.predict(model, text, k=1)[0][0])  # as the panel shows it: " Paris" is "␣Paris"
    panel = s.page.locator(".st-key-decoder_next")
    panel.first.wait_for(timeout=WAIT_MS)
    s.page.wait_for_function(
        "(want) => { const p = document.querySelector('.st-key-decoder_next');"
        " return !!p && p.innerText.includes(want); }",
        arg=i18n.t("dec.next_title", lang),
        timeout=WAIT_MS,
    )
    tables = panel.locator('[data-testid="stDataFrame"]')
    tables.first.wait_for(timeout=WAIT_MS)  # the tables are drawn after the heading
    s.wait_idle()
    assert tables.count() == 2  # the next tokens and the logit lens
    top = panel.locator("strong").first.inner_text()
    assert top == best, (top, best)
    grid = s.page.evaluate(GRID_JS)
    assert grid is not None and grid["groups"] == 3
    assert sum("kv 0" in tick for tick in grid["ticks"]) == 3 and "kv 2" in grid["ticks"][8]
    assert i18n.t("dec.grouped", lang, heads=9, kv=3, per=3) in grid["title"], grid["title"]
    page = s.page.locator('[data-testid="stMain"]').inner_text()
    assert i18n.t("decoder.english_only", lang)[:12] in page
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0
    s.shot(f"decoder-{lang}", key="decoder_next")


@pytest.fixture
def zh_session(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, locale="zh-CN")


def test_smollm2_shows_the_next_word_and_the_grouped_grid_in_both_languages(
    session: Session, zh_session: Session
) -> None:
    model = smollm2()
    _check(session, model, "en")
    _check(zh_session, model, "zh")

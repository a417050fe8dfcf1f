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

# The all-heads grid as its canvas drew it (app/canvas/grid_canvas.js): its heading and notes, each head's
# key/value label (null: none), the group outlines and every text drawn.
GRID_JS = """() => {
  const m = document.querySelector('.st-key-view_grid [data-attnviz-grid][data-drawn]');
  if (!m) return null;
  const h = m.__attnvizMap.head;
  return {title: [h.title, ...h.notes, h.group_note].join(' '), kv: h.kv.map(k => k && k[0]),
          groups: h.groups.length, drawn: m.__attnvizText};
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
    assert grid["kv"].count("kv 0") == 3 and grid["kv"][8] == "kv 2" and "kv 2" in grid["drawn"]
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

"""The guided lesson in a real browser (Debian's chromium against `streamlit run app.py`, as in
tests/test_browser.py), walked in Chinese with the multilingual model on 动物没有过马路，因为它太累了。
(issue 23: done when): the tokens carry no [UNK], the head the lesson points to is the one whose
row for the token holding 它 gives 动物 the most weight, above the uniform line 1/n, in the
pictures Plotly drew; questions are answered and checked; the handout downloads and carries the
sentence, the head and the answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz import i18n, lesson

from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SENTENCE = "动物没有过马路，因为它太累了。"

# The x values and y labels of the bars Plotly drew in the chart of container `key`.
BARS_JS = """(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const bar = gd && gd._fullData && gd.querySelector('.main-svg') && gd._fullData.find(t => t.type === 'bar');
  return bar ? {x: Array.from(bar.x), y: Array.from(bar.y)} : null;
}"""
HEATMAP_Z_JS = """(key) => {
  const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
  const hm = gd && gd._fullData && gd.querySelector('.main-svg') && gd._fullData.find(t => t.type === 'heatmap');
  return hm ? Array.from(hm.z, row => Array.from(row)) : null;
}"""


@pytest.fixture
def chinese(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, locale="zh-CN", accept_downloads=True)


@pytest.fixture(scope="module")
def e5() -> attnviz.PretrainedModel:
    return attnviz.load_model("e5-small", device="cpu")


def _wait_drawn(s: Session, key: str, script: str) -> Any:
    s.page.wait_for_function(f"(key) => ({script})(key) !== null", arg=key, timeout=WAIT_MS)
    return s.page.evaluate(script, key)


def test_the_lesson_in_chinese_points_to_a_head_linking_ta_to_dongwu(
    chinese: Session, e5: attnviz.PretrainedModel
) -> None:
    s = chinese
    s.page.goto(f"{s.url}/lesson")
    title = i18n.t("lesson.title", "zh")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want", arg=title, timeout=FIRST_LOAD_MS
    )
    s.page.locator(".st-key-lesson_step_tokens").first.wait_for(timeout=FIRST_LOAD_MS)
    s.wait_idle(FIRST_LOAD_MS)

    att = e5.attend(SENTENCE)
    assert not [tok for tok in att.tokens if "UNK" in tok.upper()]
    s.type_sentence(SENTENCE)
    s.wait_tokens(list(att.tokens))  # the lesson's own token block: e5-small's tokens, no [UNK]
    s.wait_idle()

    # The head the lesson points to, worked out here from the model's own weights.
    q = next(i for i, tok in enumerate(att.tokens) if "它" in tok)  # 因为它: one token
    k = att.tokens.index("动物")
    column = att.weights[:, :, q, k]
    layer, head = (int(v) for v in np.unravel_index(int(np.argmax(column)), column.shape))
    weight, uniform = float(column[layer, head]), 1.0 / att.n
    assert weight > uniform
    label = lesson.head_name(layer, head, "zh")
    pair = s.page.locator(".st-key-lesson_pair").inner_text()
    assert label in pair and "动物" in pair and "因为它" in pair

    z = np.array(_wait_drawn(s, "lesson_step_one_head", HEATMAP_Z_JS), dtype=float)
    assert z.shape == (att.n, att.n)
    np.testing.assert_allclose(z, att.head(layer, head), atol=1e-4)  # step 2 draws that head
    assert z[q, k] > uniform
    bars = _wait_drawn(s, "lesson_step_pronoun", BARS_JS)
    assert bars["y"][0] == label  # the longest bar of step 4 is the lesson's head
    assert bars["x"][0] == pytest.approx(weight, abs=1e-4) and bars["x"][0] > uniform

    # Answer step 1 (how many tokens) and step 6; each is checked on the page.
    box = s.page.locator(".st-key-lesson_a_tokens input")
    box.fill(str(att.n))
    box.press("Enter")
    verdict = s.page.locator(".st-key-lesson_verdict_tokens")
    verdict.first.wait_for(timeout=WAIT_MS)
    assert i18n.t("lesson.right", "zh") in verdict.inner_text()
    s.page.locator(".st-key-lesson_a_limits label").filter(has_text=i18n.t("lesson.opt.proof", "zh")).click()
    wrong = s.page.locator(".st-key-lesson_verdict_limits")
    wrong.first.wait_for(timeout=WAIT_MS)
    assert i18n.t("lesson.wrong", "zh") in wrong.inner_text()
    s.wait_idle()
    s.shot("lesson-zh", key="lesson_step_pronoun")

    s.wait_idle()
    with s.page.expect_download(timeout=WAIT_MS) as download:
        s.page.locator('.st-key-lesson_handout [data-testid="stDownloadButton"] button').first.click()
    handout = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename == "attnviz-lesson.html"
    assert SENTENCE in handout and label in handout
    assert i18n.t("lesson.right", "zh") in handout and i18n.t("lesson.wrong", "zh") in handout
    assert "<script" not in handout and handout.count("<svg") >= 3
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0

"""The guided lesson in a real browser (Debian's chromium against `streamlit run app.py`, as in
tests/test_browser.py), walked as a student would in English (MiniLM) and in Chinese (e5-small) on
sentences the app has never seen, each with the referent a reader gives: at every step a wrong
answer is marked wrong (a hint first, the answer on a second wrong try) and the right one right,
worked out here from the model's own numbers; steps 4-6 follow the referent the student gave, never
the word the heads weigh most; the head named in the text, the select, the pictures' titles and
the handout is the same; the handout carries the sentence, the referent and the answers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import attnviz
from attnviz import explain, i18n, lesson

from .test_browser import FIRST_LOAD_MS, WAIT_MS, Session, _session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Sentences no test or example of the app uses, with what their pronoun refers to.
UNSEEN = {
    "en": [
        ("The trophy would not fit in the brown suitcase because it was too big.", "trophy"),
        ("Tom lent his bike to Anna because she needed it.", "anna"),
        ("The bird built a nest because it wanted eggs.", "bird"),
    ],
    "zh": [
        ("小明把书还给了老师，因为他已经读完了。", "明"),
        ("妈妈给女儿买了一条裙子，因为她的生日快到了。", "女儿"),
        ("猫追着老鼠跑，因为它饿了。", "猫"),
    ],
}
LOCALE = {"en": "en-US", "zh": "zh-CN"}

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
TEXT_JS = "(key) => document.querySelector('.st-key-' + key)?.innerText ?? ''"


@pytest.fixture(scope="module")
def models() -> dict[str, attnviz.PretrainedModel]:
    return {"en": attnviz.load_model("minilm", device="cpu"), "zh": attnviz.load_model("e5-small", device="cpu")}


@pytest.fixture(params=["en", "zh"])
def student(request: pytest.FixtureRequest, chromium: Any, server: str) -> Iterator[tuple[str, Session]]:
    lang = str(request.param)
    for s in _session(chromium, server, locale=LOCALE[lang], accept_downloads=True):
        yield lang, s


def _wait_drawn(s: Session, key: str, script: str) -> Any:
    s.page.wait_for_function(f"(key) => ({script})(key) !== null", arg=key, timeout=WAIT_MS)
    return s.page.evaluate(script, key)


def _answered(s: Session, step: str, act: Any, *args: Any) -> str:
    """Do `act(s, *args)`, wait for the step's verdict to change, and return its text."""
    key = f"lesson_verdict_{step}"
    before = s.page.evaluate(TEXT_JS, key)
    act(s, *args)
    s.page.wait_for_function(
        "([key, before]) => { const t = document.querySelector('.st-key-' + key)?.innerText ?? '';"
        " return t !== '' && t !== before; }",
        arg=[key, before],
        timeout=WAIT_MS,
    )
    s.wait_idle()
    return str(s.page.evaluate(TEXT_JS, key))


def _choose(s: Session, step: str, label: str) -> None:
    """Pick the option `label` of the step's select as a person does: type, then click it."""
    box = s.page.locator(f".st-key-lesson_q_{step} input[role=combobox]")
    box.click()
    box.press_sequentially(label.split(": ", 1)[-1][:12])
    option = s.page.locator("[role=option]").filter(has_text=re.compile(f"^{re.escape(label)}$")).first
    option.wait_for(timeout=WAIT_MS)
    option.click()


def _count(s: Session, n: int) -> None:
    box = s.page.locator(".st-key-lesson_q_tokens input")
    box.fill(str(n))
    box.press("Enter")


def _option(s: Session, step: str, option: str, lang: str) -> None:
    s.page.locator(f".st-key-lesson_q_{step} label").filter(has_text=i18n.t(f"lesson.opt.{option}", lang)).click()


def _referent(att: attnviz.Attention, word: str) -> int:
    return next(i for i, tok in enumerate(att.tokens) if not att.special[i] and word in tok.lower())


def test_the_lesson_marks_wrong_answers_wrong_and_right_ones_right_on_unseen_sentences(
    student: tuple[str, Session], models: dict[str, attnviz.PretrainedModel]
) -> None:
    lang, s = student
    model = models[lang]
    right_mark, wrong_mark = i18n.t("lesson.right", lang), i18n.t("lesson.wrong", lang)
    s.page.goto(f"{s.url}/lesson?lang={lang}")
    s.page.locator(".st-key-lesson_step_tokens").first.wait_for(timeout=FIRST_LOAD_MS)
    s.wait_idle(FIRST_LOAD_MS)
    for text, word in UNSEEN[lang]:
        att = model.attend(text)
        assert not [tok for tok in att.tokens if "UNK" in tok.upper()]
        s.type_sentence(text)
        s.wait_tokens(list(att.tokens))
        s.wait_idle()
        label = widgets_label(att)
        q, found = lesson.lesson_query(att, lang)
        assert found
        look = lesson.Facts.of(att, lesson.look_head(att, q))

        # Step 1: a wrong count gets a hint (not the count), a second one the count, the right one "right".
        hinted = _answered(s, "tokens", _count, att.n + 1)
        assert wrong_mark in hinted and str(att.n) not in hinted
        told = _answered(s, "tokens", _count, att.n - 1)
        assert wrong_mark in told and str(att.n) in told
        assert right_mark in _answered(s, "tokens", _count, att.n)

        # Step 2: the head named in the text is the one drawn, under its own name.
        look_name = lesson.head_name(look.pick.layer, look.pick.head, lang)
        assert look_name in s.page.evaluate(TEXT_JS, "lesson_pair")
        z = np.array(_wait_drawn(s, "lesson_step_one_head", HEATMAP_Z_JS), dtype=float)
        np.testing.assert_allclose(z, att.head(look.pick.layer, look.pick.head), atol=1e-4)
        assert look_name in s.chart_title("lesson_step_one_head")
        top, low = int(np.argmax(look.row)), int(np.argmin(look.row))
        assert wrong_mark in _answered(s, "one_head", _choose, "one_head", label(low))
        assert right_mark in _answered(s, "one_head", _choose, "one_head", label(top))

        # Step 3.
        right3, wrong3 = ("different", "same") if look.distinct_tops > 1 else ("same", "different")
        assert wrong_mark in _answered(s, "all_heads", _option, "all_heads", wrong3, lang)
        assert right_mark in _answered(s, "all_heads", _option, "all_heads", right3, lang)

        # Step 4: the student's referent, then the heads linking the two.
        k = _referent(att, word)
        taken = _answered(s, "referent", _choose, "referent", label(k))
        assert att.tokens[k] in taken
        pick = lesson.find_head(att, q, k)
        facts = lesson.Facts.of(att, pick)
        bars = _wait_drawn(s, "lesson_step_pronoun", BARS_JS)
        name = lesson.head_name(pick.layer, pick.head, lang)
        assert bars["y"][0] == name and bars["x"][0] == pytest.approx(pick.weight, abs=1e-4)
        quoted = f"“{att.tokens[k]}”" if lang == "en" else f"「{att.tokens[k]}」"
        assert quoted in s.page.evaluate(TEXT_JS, "lesson_step_pronoun")  # the student's word, not the heads'
        weakest = int(np.argmin(facts.column))
        weak_name = lesson.head_name(*divmod(weakest, att.n_heads), lang)
        assert wrong_mark in _answered(s, "pronoun", _choose, "pronoun", weak_name)
        assert right_mark in _answered(s, "pronoun", _choose, "pronoun", name)

        # Step 5: the head switched off is the step-4 head; distances as the model gives them.
        effect = explain.ablate(model, text, [(pick.layer, pick.head)])
        d = np.asarray(effect.token_distance)
        assert name in s.page.evaluate(TEXT_JS, "lesson_step_switch_off")
        assert wrong_mark in _answered(s, "switch_off", _choose, "switch_off", label(int(np.argmin(d))))
        assert right_mark in _answered(s, "switch_off", _choose, "switch_off", label(int(np.argmax(d))))

        # Step 6.
        assert wrong_mark in _answered(s, "limits", _option, "limits", "proof", lang)
        assert right_mark in _answered(s, "limits", _option, "limits", "mix", lang)

        # The handout: this sentence, both heads by the same names, the referent and the answers.
        with s.page.expect_download(timeout=WAIT_MS) as download:
            s.page.locator('.st-key-lesson_handout [data-testid="stDownloadButton"] button').first.click()
        handout = Path(download.value.path()).read_text(encoding="utf-8")
        assert text in handout and look_name in handout and name in handout
        assert handout.count(right_mark) >= 6 and "<script" not in handout
        assert i18n.t("lesson.handout.unanswered", lang) not in handout  # every question answered
    s.shot(f"lesson-walk-{lang}", key="lesson_step_pronoun")
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0


def widgets_label(att: attnviz.Attention) -> Any:
    """The pickers' option text of token i (attnviz.app.widgets.token_label)."""
    return lambda i: f"{i}: {att.tokens[i]}"

"""The Write panel in a real browser (Debian's chromium against `streamlit run app.py`, as in
tests/test_browser.py), on SmolLM2 in English and in Chinese: opened under the explorer, Play
writes ten steps one after the other; each step, stepped through again with Next, shows what
`attnviz.generate` run here writes (the token and its probability, the text so far in whole
characters, the five likeliest tokens with their probabilities); a click on the second likeliest
token at step 2 branches, and both writings show what `Generation.branch` writes, side by side.
The panel fits a 1366 px desktop and a 390 px phone (tests/test_browser_overflow.py's checks, on
the page with the panel open and branched); screenshots go to test-artifacts/ and /tmp."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import attnviz
from attnviz import i18n
from attnviz.app.sections.write import FIRST_STEPS, Written, _spans
from attnviz.views import generation as gv

from .browser import ARTIFACTS
from .smollm2_model import smollm2
from .test_browser import WAIT_MS, Session, _session
from .test_browser_overflow import DESKTOP, PHONE, _problems, _settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEXTS = {"en": "The capital of France is", "zh": "我爱北京。"}
SHOTS = Path("/tmp")

# Every text the step view's "wrote" line shows, in order, as the page changes it (Play's record).
RECORD_JS = """() => { window.__wrote = [];
  const seen = () => { const el = document.querySelector('.st-key-write_wrote [data-testid="stMarkdownContainer"]');
    const text = el && el.innerText.trim();
    if (text && window.__wrote[window.__wrote.length - 1] !== text) window.__wrote.push(text); };
  new MutationObserver(seen).observe(document.body, {subtree: true, childList: true, characterData: true}); }"""

SHOWN_JS = """() => { const v = document.querySelector('.st-key-write_step_view');
  if (!v) return null;
  const md = v.querySelector('.st-key-write_wrote [data-testid="stMarkdownContainer"]');
  const pre = v.querySelector('.st-key-write_wrote pre');
  const buttons = [...v.querySelectorAll('.st-key-write_choices [class*="st-key-write_choice_"]')]
    .map(c => c.querySelector('button').innerText.trim());
  return {wrote: md ? md.innerText.trim() : null, text: pre ? pre.textContent : null, choices: buttons}; }"""


@pytest.fixture
def en_desktop(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, viewport=DESKTOP)


@pytest.fixture
def zh_desktop(chromium: Any, server: str) -> Iterator[Session]:
    yield from _session(chromium, server, viewport=DESKTOP, locale="zh-CN")


def _drawn(label: str) -> str:
    """A token label as the page draws it through `escape_md`: a word joiner after each colon."""
    return label.replace(":", ":\u2060")


def _wrote(written: Written, k: int, lang: str) -> str:
    """Step k's line as the page reads it (its Markdown bold drawn, not typed)."""
    step = written.gen.steps[k]
    label = _drawn(gv.step_label(written.gen, k, lang=lang))
    n = len(written.gen.steps)
    return i18n.t("write.wrote", lang, k=k + 1, n=n, token=label, p=f"{step.probability:.1%}").replace("**", "")


def _choices(written: Written, k: int, lang: str) -> list[str]:
    return [f"{_drawn(c.label)} · {c.probability:.1%}" for c in gv.choices(written.gen, k, lang=lang)]


def _shown(s: Session) -> dict[str, Any]:
    got = s.page.evaluate(SHOWN_JS)
    assert got is not None
    return dict(got)


def _wait_line(s: Session, line: str) -> None:
    s.page.wait_for_function(
        "(want) => { const el = document.querySelector('.st-key-write_wrote [data-testid=\"stMarkdownContainer\"]');"
        " return !!el && el.innerText.trim() === want; }",
        arg=line,
        timeout=WAIT_MS,
    )
    s.wait_idle()


def _check(s: Session, written: Written, k: int, lang: str) -> None:
    _wait_line(s, _wrote(written, k, lang))
    shown = _shown(s)
    assert shown["text"] == written.until(k), (shown["text"], written.until(k))
    assert shown["choices"] == _choices(written, k, lang)
    assert "\ufffd" not in shown["text"]


def _open_panel(s: Session, lang: str) -> None:
    s.open({"model": "smollm2", "text": TEXTS[lang], "lang": lang})
    s.page.locator(".st-key-write_open summary").first.click()
    s.page.locator(".st-key-write_step_view").first.wait_for(timeout=WAIT_MS)
    s.wait_idle()


def _play(s: Session, written: Written, lang: str) -> None:
    """Play from the first step to the last, recording every step line the page shows."""
    s.page.evaluate(RECORD_JS)
    s.page.locator(".st-key-write_play button").first.click()
    last = _wrote(written, len(written.gen.steps) - 1, lang)
    _wait_line(s, last)
    play = i18n.t("write.play", lang)
    s.page.wait_for_function(
        "(want) => (document.querySelector('.st-key-write_play button')?.innerText || '').includes(want)",
        arg=play,
        timeout=WAIT_MS,
    )
    s.wait_idle()
    seen = s.page.evaluate("() => window.__wrote")
    assert seen == [_wrote(written, k, lang) for k in range(len(written.gen.steps))], seen


def _step_through(s: Session, written: Written, lang: str) -> None:
    """Back to step 1 (the slider's Home key), then each step with Next."""
    s.page.locator(".st-key-write_step input[type=range]").first.press("Home")
    for k in range(len(written.gen.steps)):
        if k:
            s.page.locator(".st-key-write_next button").first.click()
        _check(s, written, k, lang)


def _branch(s: Session, written: Written, lang: str) -> None:
    """At step 2, the second likeliest token clicked: the branch shown beside the first writing."""
    s.page.locator(".st-key-write_step input[type=range]").first.press("Home")
    s.page.locator(".st-key-write_next button").first.click()
    _check(s, written, 1, lang)
    alt = gv.choices(written.gen, 1, lang=lang)[1]
    branch = _spans(smollm2(), written.gen.branch(1, alt.token_id))
    s.page.locator(".st-key-write_choice_1 button").first.click()
    s.page.locator(".st-key-write_branches").first.wait_for(timeout=WAIT_MS)
    _check(s, branch, 1, lang)  # the step view plays the branch back now
    texts = [
        str(s.page.locator(f".st-key-write_branch_{which} pre").first.text_content()) for which in ("first", "branch")
    ]
    last = len(written.gen.steps) - 1
    assert texts == [written.until(last), branch.until(len(branch.gen.steps) - 1)]
    assert branch.gen.ids[: written.gen.n_prompt + 1] == written.gen.ids[: written.gen.n_prompt + 1]
    assert branch.gen.ids[written.gen.n_prompt + 1] == alt.token_id != written.gen.ids[written.gen.n_prompt + 1]


def _panel_shot(s: Session, name: str) -> None:
    """The whole panel: the app scrolls inside its own box, so the screen is made as tall as the
    page for the picture (and put back), as test_browser_overflow.py's screenshots are."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = s.page.viewport_size
    tall = s.page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight")
    s.page.set_viewport_size({"width": size["width"], "height": min(max(tall, size["height"]), 9000)})
    _settle(s)
    shot = ARTIFACTS / f"browser-{name}.png"
    s.page.locator(".st-key-write_panel").first.screenshot(path=str(shot))
    shutil.copy(shot, SHOTS / f"attnviz-{name}.png")
    s.page.set_viewport_size(size)


def _fits(s: Session, lang: str) -> list[str]:
    """The page with the panel fits at 1366 px and at 390 px; a screenshot of the panel at each."""
    found: list[str] = []
    for size, width in ((DESKTOP, 1366), (PHONE, 390)):
        s.page.set_viewport_size(size)
        _settle(s)
        found += [p for p in _problems(s, f"write {width} {lang}") if "write" in p or "sideways" in p]
        _panel_shot(s, f"write-{width}-{lang}")
    s.page.set_viewport_size(DESKTOP)
    return found


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_play_ten_steps_step_through_them_and_branch_once(lang: str, request: pytest.FixtureRequest) -> None:
    s: Session = request.getfixturevalue(f"{lang}_desktop")
    model = smollm2()
    written = _spans(model, attnviz.generate(model, TEXTS[lang], FIRST_STEPS))
    assert len(written.gen.steps) == FIRST_STEPS == 10
    _open_panel(s, lang)
    _check(s, written, 0, lang)
    _play(s, written, lang)
    _step_through(s, written, lang)
    _branch(s, written, lang)
    found = _fits(s, lang)
    assert found == [], "\n".join(found)
    assert not s.crashed and s.page.locator('[data-testid="stException"]').count() == 0

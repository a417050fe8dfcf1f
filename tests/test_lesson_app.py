"""The lesson page through AppTest (no browser): in English it reads the sentence with MiniLM, names
the head it found for "it" -> "animal" and draws that head; answers are checked on the page (right
and wrong, with the sentence's numbers); a hostile sentence stays text; a sentence without a
pronoun says what the lesson follows instead."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n, lesson
from attnviz.app.widgets import escape_md

APP = str(Path(__file__).resolve().parent / "app_entry.py")
PAGE = "../pages/lesson.py"
TIRED = "The animal didn't cross the street because it was tired."
TIMEOUT = 180

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)


def _lesson() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    return _ok(at.switch_page(PAGE).run())


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _heatmap_z(at: AppTest, key: str) -> np.ndarray:
    element = next(e for e in at.get("plotly_chart") if e.proto.id.endswith(f"-{key}"))
    z = json.loads(element.proto.spec)["data"][0]["z"]
    if isinstance(z, dict):  # plotly >= 6: a base64 typed array
        import base64

        flat = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return flat.reshape([int(s) for s in str(z["shape"]).split(",")])
    return np.asarray(z, dtype=np.float64)


def test_the_english_lesson_points_to_the_head_linking_it_to_animal_and_checks_answers(
    minilm: attnviz.PretrainedModel,
) -> None:
    at = _lesson()
    assert at.title[0].value == i18n.t("lesson.title", "en")
    assert not at.error, [e.value for e in at.error]
    att = minilm.attend(TIRED)
    q, k = att.tokens.index("it"), att.tokens.index("animal")
    pick = lesson.find_head(att, q, k)
    assert pick.above_uniform
    name = escape_md(lesson.head_name(pick.layer, pick.head, "en"))  # as Markdown carries it
    assert any(name in m.value and "“animal”" in m.value for m in at.markdown)
    np.testing.assert_allclose(_heatmap_z(at, "lesson_chart_one_head"), att.head(pick.layer, pick.head), atol=1e-4)
    assert len(at.get("plotly_chart")) == 6  # the tokens, one head, all heads, the ranking, the switch, weight vs norm

    _ok(at.selectbox(key="lesson_a_pronoun").set_value(pick.layer * att.n_heads + pick.head).run())
    assert [s.value for s in at.success] and name in at.success[0].value and "Right." in at.success[0].value
    _ok(at.number_input(key="lesson_a_tokens").set_value(att.n + 1).run())
    assert any("Not quite." in w.value and f"{att.n} tokens" in w.value for w in at.warning)
    _ok(at.radio(key="lesson_a_all_heads").set_value("different").run())
    assert len(at.success) == 2

    # A new sentence starts the answers afresh.
    _ok(at.text_area(key="sentence_input").set_value("dogs bark.").run())
    assert at.selectbox(key="lesson_a_pronoun").value is None and not at.success
    assert any("last word" in i.value for i in at.info)


def test_a_hostile_sentence_stays_text_on_the_lesson_page() -> None:
    at = _lesson()
    payload = "<script>alert(1)</script> it [x](javascript:alert(2)) :red[danger] $x^2$"
    _ok(at.text_area(key="sentence_input").set_value(payload).run())
    assert not at.error
    shown = " ".join(m.value for m in at.markdown)
    assert "<script>" not in shown and "](javascript" not in shown and ":red[" not in shown

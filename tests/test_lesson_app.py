"""The lesson page through AppTest (no browser): in English it reads the sentence with MiniLM, draws
the head steps 2-3 show, asks what "it" refers to (the example knows: animal), and only then ranks
the heads linking the two; answers are checked on the page (right; wrong with a hint first and the
right answer on a second try); a new sentence starts with fresh questions; a hostile sentence stays
text; a sentence without a pronoun says what the lesson follows instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


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


def _widget(at: AppTest, kind: str, step: str) -> Any:
    """The answer widget of `step` (its key ends with the sentence's signature)."""
    found = [w for w in at.get(kind) if str(w.key or "").startswith(f"lesson_a_{step}_")]
    assert len(found) == 1, [w.key for w in at.get(kind)]
    return found[0]


def test_the_english_lesson_asks_the_referent_before_linking_heads_and_checks_answers(
    minilm: attnviz.PretrainedModel,
) -> None:
    at = _lesson()
    assert at.title[0].value == i18n.t("lesson.title", "en")
    assert not at.error, [e.value for e in at.error]
    att = minilm.attend(TIRED)
    q, k = att.tokens.index("it"), att.tokens.index("animal")
    look = lesson.look_head(att, q)
    np.testing.assert_allclose(_heatmap_z(at, "lesson_chart_one_head"), att.head(look.layer, look.head), atol=1e-4)
    # Before the referent is said: steps 1-3 drawn, no heads ranked for "it" -> anything.
    assert len(at.get("plotly_chart")) == 3
    assert not any("lesson.why" in m.value for m in at.markdown)

    # A wrong referent: a hint (not the answer), then the answer on a second wrong try.
    street = att.tokens.index("street")
    _ok(_widget(at, "selectbox", "referent").set_value(street).run())
    assert any(w.value.startswith("**Not quite.**") and "animal" not in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) == 3
    cross = att.tokens.index("cross")
    _ok(_widget(at, "selectbox", "referent").set_value(cross).run())
    assert any("refers to “animal”" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")) == 6  # told the answer, the lesson goes on with "animal"

    pick = lesson.find_head(att, q, k)
    assert pick.above_uniform
    name = escape_md(lesson.head_name(pick.layer, pick.head, "en"))  # as Markdown carries it
    _ok(_widget(at, "selectbox", "pronoun").set_value(pick.layer * att.n_heads + pick.head).run())
    assert any(name in s.value and "Right." in s.value for s in at.success)
    _ok(_widget(at, "number_input", "tokens").set_value(att.n + 1).run())
    hinted = [w.value for w in at.warning if "Not quite." in w.value and "special tokens" in w.value]
    assert hinted and f"{att.n} tokens" not in hinted[0]  # a hint first, not the count
    _ok(_widget(at, "number_input", "tokens").set_value(att.n + 2).run())
    assert any("Not quite." in w.value and f"{att.n} tokens" in w.value for w in at.warning)
    _ok(_widget(at, "radio", "all_heads").set_value("different").run())
    assert len(at.success) == 2

    # A new sentence starts the answers afresh: no verdict, no stale choice, no steps 5-6 yet.
    _ok(at.text_area(key="sentence_input").set_value("dogs bark.").run())
    assert _widget(at, "selectbox", "referent").value is None and not at.success and not at.warning
    assert _widget(at, "number_input", "tokens").value is None
    assert any("last word" in i.value for i in at.info)


def test_a_hostile_sentence_stays_text_on_the_lesson_page() -> None:
    at = _lesson()
    payload = "<script>alert(1)</script> it [x](javascript:alert(2)) :red[danger] $x^2$"
    _ok(at.text_area(key="sentence_input").set_value(payload).run())
    assert not at.error
    shown = " ".join(m.value for m in at.markdown)
    assert "<script>" not in shown and "](javascript" not in shown and ":red[" not in shown

"""A class through AppTest (no browser): the teacher's form starts a class and the page opens as
its teacher link; a wrong secret opens nothing; a student's link reads the teacher's sentence,
keeps a checked answer before saying so, and shows a step the teacher has not opened as closed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n
from attnviz.classes import ClassSpec, ClassStore, database_url

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 180
SENTENCE = "The pilot thanked the mechanic because he had checked the engine."

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


@pytest.fixture
def store() -> ClassStore:
    # the folder tests/conftest.py gives the run: the app's server wing opens the same one
    return ClassStore(database_url("", os.environ["ATTNVIZ_DATA_DIR"]))


def _page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT).run()
    for key, value in params.items():
        at.query_params[key] = value
    at = at.switch_page(f"../pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_teachers_form_starts_a_class_and_opens_its_dashboard(store: ClassStore) -> None:
    at = _page("class")
    at.text_input(key="class_new_title").input("Period 3 **bold** <b>x</b>")
    next(b for b in at.button if b.label == i18n.t("class.start", "en")).click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    code, secret = str(at.query_params["class"]), str(at.query_params["teacher"])
    info = store.teacher(code, secret)
    assert info.title == "Period 3 **bold** <b>x</b>" and info.sentences["en"][0] == i18n.examples("en")["default"]
    shown = " ".join(m.value for m in at.markdown)
    assert f"**{code}**" in shown and "\\*\\*bold\\*\\*" in " ".join(h.value for h in at.subheader)
    assert any(t.label == i18n.t("class.students", "en") for t in at.metric)


def test_a_wrong_secret_opens_nothing(store: ClassStore) -> None:
    started = store.create(ClassSpec("T", "en", {"en": (SENTENCE, "minilm")}))
    at = _page("class", **{"class": started.info.code, "teacher": "A" * 32})
    assert [e.value for e in at.error] and i18n.t("class.secret_wrong", "en") in at.error[0].value
    assert not at.metric and not at.get("table")


def test_a_students_answer_is_kept_before_the_page_says_saved(
    store: ClassStore, minilm: attnviz.PretrainedModel
) -> None:
    started = store.create(ClassSpec("T", "en", {"en": (SENTENCE, "minilm")}, open_steps=("tokens", "one_head")))
    _student, token = store.join(started.info.code, "Ana", "en")
    at = _page("lesson", **{"class": started.info.code, "student": token})
    assert "Ana" in at.markdown[0].value or any("Ana" in m.value for m in at.markdown)
    box = next(w for w in at.number_input if str(w.key).startswith("lesson_a_tokens_"))
    n = minilm.attend(SENTENCE).n
    box.set_value(n).run()
    assert not at.exception
    kept = store.answers(started.info.code, started.secret)
    assert [(a.step, a.answer, a.right, a.sentence) for a in kept] == [("tokens", str(n), True, SENTENCE)]
    assert any(i18n.t("class.saved", "en") in c.value for c in at.caption)
    # the handout the student would download is kept for the teacher, with the answer in it
    page = store.handout(started.info.code, started.secret, 1)
    assert page is not None and SENTENCE in page and i18n.t("lesson.right", "en") in page
    # steps 3-6 are not open: each says so instead of asking
    closed = [i for i in at.info if i18n.t("class.step_closed", "en") in i.value]
    assert len(closed) == 4
    box.set_value(n).run()  # the same answer again keeps nothing new
    assert len(store.answers(started.info.code, started.secret)) == 1


def test_own_sentences_start_from_the_teachers_and_are_kept_with_the_answer(store: ClassStore) -> None:
    started = store.create(ClassSpec("T", "en", {"en": (SENTENCE, "minilm")}, own_sentence=True))
    _student, token = store.join(started.info.code, "", "en")
    at = _page("lesson", **{"class": started.info.code, "student": token})
    assert at.text_area(key="sentence_input").value == SENTENCE
    mine = "The cat chased the mouse because it was hungry."
    at.text_area(key="sentence_input").input(mine).run()
    box = next(w for w in at.number_input if str(w.key).startswith("lesson_a_tokens_"))
    box.set_value(3).run()
    assert not at.exception
    assert [(a.sentence, a.right) for a in store.answers(started.info.code, started.secret)] == [(mine, False)]
    assert at.text_area(key="sentence_input").value == mine  # a rerun keeps the student's own

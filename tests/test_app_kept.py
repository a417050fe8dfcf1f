"""State that outlives a page, kept one way (`attnviz.app.state.KEPT`): a value set on one page is
there again after a visit to another, for each kind of entry (a widget that is its own home, a
widget with a home of its own), and every widget that copies itself home is registered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app import state

from .test_app import _ok

APP = str(Path(__file__).resolve().parent / "app_entry.py")
APP_DIR = Path(__file__).resolve().parents[1] / "attnviz" / "app"
TIMEOUT = 180


def test_every_widget_and_home_is_registered_once() -> None:
    widgets = [k.widget_key for k in state.KEPT]
    homes = [k.home for k in state.KEPT]
    assert len(set(widgets)) == len(widgets) and len(set(homes)) == len(homes)
    assert not set(homes) & {k.widget for k in state.KEPT if k.widget}  # a home is never another's widget


def _keep_calls() -> list[tuple[str, ast.Call]]:
    """Every call in the app that passes `on_change=keep` (or `state.keep`)."""
    found = []
    for path in APP_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            for kw in node.keywords:
                value = kw.value
                name = value.attr if isinstance(value, ast.Attribute) else getattr(value, "id", None)
                if kw.arg == "on_change" and name == "keep":
                    found.append((path.name, node))
    return found


def test_every_widget_that_keeps_itself_has_a_home_in_the_registry() -> None:
    calls = _keep_calls()
    assert len(calls) >= 4  # the sentence box, the two ablation switches, the sinks switch
    homes_of = {k.widget: k.home for k in state.KEPT if k.widget}
    for where, call in calls:
        kwargs = {kw.arg: kw.value for kw in call.keywords}
        key, args = kwargs["key"], kwargs["args"]
        assert isinstance(args, ast.Tuple) and ast.unparse(args.elts[0]) == ast.unparse(key), where
        # the key is a name bound to a registered widget key: resolve it through the module
        assert ast.unparse(key) in {"SENTENCE_INPUT", "MODE_WIDGET", "CLICK_WIDGET", "TOGGLE"}, where
    from attnviz.app.sections import ablation, sinks

    for widget in (state.SENTENCE_INPUT, ablation.MODE_WIDGET, ablation.CLICK_WIDGET, sinks.TOGGLE):
        assert widget in homes_of


@pytest.mark.slow
def test_values_of_every_kind_survive_a_visit_to_another_page(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    at = _ok(AppTest.from_file(APP, default_timeout=TIMEOUT).run())
    _ok(at.text_area(key=state.SENTENCE_INPUT).set_value("dog bites man").run())
    _ok(at.radio(key="_abl_mode").set_value("mean").run())  # a home of its own
    _ok(at.checkbox(key="_abl_click").check().run())
    _ok(at.checkbox(key="hide_special").check().run())  # its own home
    _ok(at.switch_page("../pages/training.py").run())
    _ok(at.selectbox(key="train_task").set_value("copy").run())
    _ok(at.number_input(key="train_seed").set_value(7).run())
    _ok(at.switch_page("../pages/lab.py").run())
    _ok(at.switch_page("../pages/explorer.py").run())
    assert at.text_area(key=state.SENTENCE_INPUT).value == "dog bites man"
    assert at.radio(key="_abl_mode").value == "mean"
    assert at.checkbox(key="_abl_click").value is True
    assert at.checkbox(key="hide_special").value is True
    _ok(at.switch_page("../pages/training.py").run())
    assert at.selectbox(key="train_task").value == "copy"
    assert at.number_input(key="train_seed").value == 7

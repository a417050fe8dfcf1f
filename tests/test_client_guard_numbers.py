"""An integer number input's value, as a browser sends it, reaches the page (attnviz/app/server/client_guard.py):
Streamlit registers every number_input as "double_value" and its browser sends an integer one as
"int_value"; the guard dropped it as a misfit, so typing in any integer box did nothing."""

from __future__ import annotations

from types import SimpleNamespace

from streamlit.proto.WidgetStates_pb2 import WidgetState

from attnviz.app.server.client_guard import fits


def _number_metadata() -> SimpleNamespace:
    return SimpleNamespace(value_type="double_value", deserializer=lambda v: v)


def test_an_integer_number_input_value_fits_its_widget() -> None:
    sent = WidgetState(id="$$ID-abc-lesson_a_tokens", int_value=14)
    assert fits(sent, _number_metadata())
    assert fits(WidgetState(id="$$ID-abc-x", double_value=1.5), _number_metadata())


def test_other_fields_still_do_not_fit_a_number_input() -> None:
    assert not fits(WidgetState(id="$$ID-abc-x", string_value="14"), _number_metadata())
    assert not fits(WidgetState(id="$$ID-abc-x", bool_value=True), _number_metadata())

"""Streamlit's internals that attnviz uses (attnviz/app/streamlit_adapter.py) are where this
Streamlit keeps them and still do what the app relies on: a release that moves one fails here,
naming it and what needs a new hook, before a page or a hostile client finds out."""

from __future__ import annotations

import importlib
import inspect
import json
import re
from pathlib import Path
from typing import Any

import plotly.io as pio
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app import plot_theme
from attnviz.app import streamlit_adapter as adapter

WIDGETS = """
import streamlit as st
st.radio("r", ["a", "b", "c"], key="r")
st.selectbox("s", ["x", "y"], key="s")
st.multiselect("m", ["p", "q"], key="m")
st.select_slider("l", ["lo", "hi"], key="l")
st.number_input("n", value=1, key="n")
"""


@pytest.mark.parametrize("thing", adapter.INTERNALS, ids=lambda i: i.path)
def test_each_internal_is_where_the_adapter_looks(thing: adapter.Internal) -> None:
    try:
        adapter.internal(thing.path)
    except adapter.StreamlitMoved as moved:
        pytest.fail(str(moved))


def test_a_moved_internal_is_named_with_what_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(importlib.import_module("streamlit.runtime.state.session_state"), "WStates")
    with pytest.raises(adapter.StreamlitMoved) as moved:
        adapter.internal("streamlit.runtime.state.session_state.WStates.__getitem__")
    assert str(moved.value).startswith("streamlit.runtime.state.session_state.WStates.__getitem__ is gone")
    assert str(moved.value).endswith("client_guard's widget-state check needs a new hook")


def _original(path: str) -> Any:
    found = adapter.internal(path)
    while hasattr(found, "__wrapped__"):  # under client_guard's bound, when a test installed it
        found = found.__wrapped__
    return found


def test_the_query_limits_are_the_ones_streamlits_sanitiser_applies() -> None:
    sanitize = _original("streamlit.runtime.state.query_params.sanitize_query_string")
    longest = "t=" + "a" * (adapter.QUERY_MAX - 2)
    assert sanitize(longest) == longest
    assert sanitize(longest + "a") == ""  # one character more: the whole query is ignored
    most = "&".join(["k=v"] * adapter.FIELDS_MAX)
    assert sanitize(most) == most
    assert sanitize(most + "&k=v") == ""


def test_every_query_a_run_reads_passes_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    modules = [
        importlib.import_module(m) for m in ("streamlit.runtime.app_session", "streamlit.runtime.state.query_params")
    ]
    for module in modules:
        monkeypatch.setattr(module, "sanitize_query_string", module.sanitize_query_string)
    adapter.filter_query_strings(lambda q: q.replace("text=long", "text=cut"))
    assert modules[1]._parse_query_string("text=long&lang=en") == {"text": ["cut"], "lang": ["en"]}
    assert modules[0].sanitize_query_string("text=long") == "text=cut"
    # ... and a session's query is read through that module name, at every rerun
    assert "sanitize_query_string(client_state.query_string)" in inspect.getsource(modules[0].AppSession)


def test_widget_states_pass_the_filter_with_their_metadata_and_a_misfit_reads_as_never_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    wstates = adapter.internal("streamlit.runtime.state.session_state.WStates")
    session_state = adapter.internal("streamlit.runtime.state.session_state.SessionState")
    monkeypatch.setattr(wstates, "__getitem__", wstates.__getitem__)
    monkeypatch.setattr(session_state, "set_widgets_from_proto", session_state.set_widgets_from_proto)
    seen: dict[str, tuple[bool, Any, str]] = {}

    def keep(session: Any, proto: Any) -> bool:
        metadata = adapter.widget_metadata(session, proto.id)
        key = proto.id.rsplit("-", 1)[-1]
        seen[key] = (adapter.is_element_id(proto.id), adapter.option_names(metadata), metadata.value_type)
        return True

    adapter.filter_widget_states(
        keep, lambda proto, metadata: proto.WhichOneof("value") != "string_value" or proto.string_value != "c"
    )
    app = AppTest.from_string(WIDGETS).run()
    assert app.radio(key="r").set_value("b").run().radio(key="r").value == "b"
    assert seen == {
        "r": (True, {"a", "b", "c"}, "string_value"),
        "s": (True, {"x", "y"}, "string_value"),
        "m": (True, {"p", "q"}, "string_array_value"),
        "l": (True, {"lo", "hi"}, "string_array_value"),
        "n": (True, None, "double_value"),
    }
    # the misfit reads as never sent: the radio keeps its last good value
    assert app.radio(key="r").set_value("c").run().radio(key="r").value == "b"
    assert not app.exception


def test_outside_a_page_run_there_is_no_session_and_every_session_is_alive() -> None:
    assert adapter.script_run(quiet=True) is None
    assert adapter.session_id() == "bare"
    assert adapter.run_cursors() is None
    assert adapter.stop_check() is None
    assert adapter.session_alive("any")  # no runtime: nothing can be said to have gone
    with adapter.before_each_message(lambda: pytest.fail("no page run, no message")):
        pass


def test_the_run_context_gives_the_session_cursors_and_messages_to_the_adapter() -> None:
    script = """
import streamlit as st
from attnviz.app import streamlit_adapter as adapter
calls = []
with adapter.before_each_message(lambda: calls.append(1)):
    st.write("one")
    st.write("two")
st.session_state["calls"] = len(calls)
st.session_state["same"] = adapter.session_id() == adapter.script_run().session_id != "bare"
st.session_state["cursors"] = adapter.run_cursors() is adapter.script_run().cursors is not None
st.session_state["stop"] = callable(adapter.stop_check())
"""
    app = AppTest.from_string(script).run()
    assert not app.exception
    assert app.session_state["calls"] == 2
    assert app.session_state["same"] and app.session_state["cursors"] and app.session_state["stop"]


def test_the_build_has_one_of_each_chunk_and_its_entry_module_loads_them() -> None:
    html = (adapter.STATIC_JS.parent.parent / "index.html").read_text(encoding="utf-8")
    entry = re.search(r'<script type="module"[^>]* src="\.(/static/js/index\.[^"]+)"', html)
    assert entry, "streamlit/static/index.html has no module script under static/js/index.*: ENTRY_MODULE"
    assert "/static/js/index." in adapter.ENTRY_MODULE
    code = (adapter.STATIC_JS / entry.group(1).rsplit("/", 1)[-1]).read_text(encoding="utf-8")
    for kind in ("chart", "component", "code"):
        name = adapter.build_file(kind)
        assert name is not None, f"no single {adapter.chunk_pattern(kind).pattern} in the build: preload's {kind}"
        assert f"./{name}" in code  # imported relative to the entry module, as the preload does


def test_the_surface_colours_for_this_release_are_in_its_frontend_build() -> None:
    """The page's background and heading colours the charts take (plot_theme.palette) are
    colours the installed frontend defines: a release with a new palette fails here, before
    tests/test_theme_browser.py sees a chart on a background that is not the page's."""
    build = "".join(p.read_text(encoding="utf-8", errors="replace") for p in adapter.STATIC_JS.glob("*.js")).lower()
    for mode, surfaces in adapter.theme_surfaces().items():
        for name in ("bg", "heading"):
            colour = surfaces[name].lower()
            assert f"`{colour}`" in build or f'"{colour}"' in build, (adapter.release(), mode, name, colour)


def _resolved(value: Any, colours: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _resolved(v, colours) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v, colours) for v in value]
    return colours.get(value, value) if isinstance(value, str) else value


@pytest.mark.parametrize("mode", plot_theme.MODES)
def test_plot_themes_copy_has_the_shape_of_this_streamlits_chart_template(mode: plot_theme.Mode) -> None:
    """Streamlit's template with its placeholders swapped for plot_theme's palette: its trace
    defaults, colourway and colour scales are plot_theme's (the browser-side layout, fonts and
    margins, is read from a drawn chart and is checked by tests/test_theme_browser.py)."""
    template, names = adapter.chart_template()
    palette = plot_theme.palette(mode)
    colours = {
        **{names[f"CATEGORY_{i}"]: c for i, c in enumerate(palette["categorical"])},
        **{names[f"SEQUENTIAL_{i}"]: c for i, c in enumerate(palette["sequential"])},
        **{names[f"DIVERGING_{i}"]: c for i, c in enumerate(plot_theme._DIVERGING)},
        **{names[n]: palette[k] for n, k in (("INCREASING", "increasing"), ("DECREASING", "decreasing"),
           ("TOTAL", "total"), ("GRAY_70", "gray70"), ("GRAY_90", "gray90"), ("BG_COLOR", "bg"),
           ("FADED_TEXT_05", "faded05"), ("BG_MIX", "bg_mix"))},
    }  # fmt: skip
    ours = json.loads(pio.json.to_json_plotly(plot_theme.template(mode).to_plotly_json()))  # the same JSON form
    theirs = _resolved(template, colours)
    assert theirs["data"] == ours["data"]
    assert {k: theirs["layout"][k] for k in ("colorway", "colorscale")} == {
        k: ours["layout"][k] for k in ("colorway", "colorscale")
    }
    assert theirs["layout"]["coloraxis"]["colorscale"] == ours["layout"]["coloraxis"]["colorscale"]


def test_no_other_module_of_the_app_imports_streamlits_internals() -> None:
    root = Path(__file__).resolve().parents[1]
    internal_import = re.compile(r"^\s*(from streamlit\.\w|import streamlit\.\w)", re.MULTILINE)
    files = [*root.joinpath("attnviz").rglob("*.py"), root / "app.py", *root.joinpath("pages").glob("*.py")]
    found = [str(f.relative_to(root)) for f in files if internal_import.search(f.read_text(encoding="utf-8"))]
    assert found == ["attnviz/app/streamlit_adapter.py"]

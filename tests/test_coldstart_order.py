"""A cold start's order (issue 24.2, app/coldstart/warmup.py): the frame, the title and the sentence box
need neither torch nor pandas; the warm-up thread takes the CPU only once the first screen is
handed over; the explorer imports pandas (the race guard) before its sections; the browser is
asked for Streamlit's chart code once per session, by the very file name Streamlit loads lazily.
Order and content only, nothing timed (bench/bench_browser.py measures)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app import state
from attnviz.app.coldstart import preload, warmup
from attnviz.app.server import registry as model_registry
from attnviz.config import Settings

from .test_imports import fresh_python

ROOT = Path(__file__).resolve().parents[1]
# What app.py imports before the page runs: the frame, the sidebar, the title and the sentence box.
FRAME = (
    "attnviz.app.coldstart.warmup",
    "attnviz.app.coldstart.preload",
    "attnviz.config",
    "attnviz.app.nav",
    "attnviz.app.state",
    "attnviz.app.charts",
    "attnviz.app.server.client_guard",
    "attnviz.app.sidebar",
    "attnviz.app.server.visitor",
    "attnviz.app.widgets",
)
PROBE = """
import json, sys
import streamlit
for name in %r:
    __import__(name)
print(json.dumps(sorted(m for m in ("torch", "transformers", "pandas", "pyarrow") if m in sys.modules)))
"""


def test_the_frame_imports_neither_torch_nor_pandas() -> None:
    """One fresh interpreter imports what app.py imports before the page: none of the heavy ones."""
    assert fresh_python(PROBE % (FRAME,)) == []


def _call_names(tree: ast.AST) -> set[str]:
    return {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}


def test_app_imports_the_frame_before_the_page_and_guards_pandas_for_every_page() -> None:
    source = (ROOT / "app.py").read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = {
        f"{node.module}.{alias.name}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    assert {name for name in imported if name.startswith("attnviz.app.")} <= set(FRAME)
    # every page but the explorer: pandas before the page; the explorer: in warmup.loading
    guard = next(n for n in tree.body if isinstance(n, ast.If) and "nav.is_explorer" in ast.unparse(n.test))
    assert ast.unparse(guard.test) == "not nav.is_explorer(page)"
    assert "warmup.warm_up" in _call_names(guard)
    assert source.index("warmup.warm_up()") < source.index("page.run()")
    assert source.index("warmup.start(settings, after_first_screen=True)") < source.index("page.run()")


def test_the_explorer_draws_only_its_title_and_box_before_warmup_loading() -> None:
    """The explorer skips app.py's pandas import: what it does before `warmup.loading` must make
    no figure and no table (pandas comes after its first map: the next test)."""
    tree = ast.parse((ROOT / "pages" / "explorer.py").read_text(encoding="utf-8"))
    body = [n for n in tree.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    first_with = next(i for i, n in enumerate(body) if isinstance(n, ast.With))
    assert ast.unparse(body[first_with].items[0].context_expr).startswith("warmup.loading(")
    before = body[:first_with]
    imports = [n for n in before if isinstance(n, ast.Import | ast.ImportFrom)]
    assert {ast.unparse(n) for n in imports} == {
        "import streamlit as st",
        "from attnviz.app import widgets",
        "from attnviz.app.coldstart import warmup",
    }
    calls = set().union(*(_call_names(n) for n in before if n not in imports))
    assert calls == {"widgets.page_header", "widgets.sentence_box"}


def test_the_explorer_imports_pandas_after_its_first_map_and_before_any_figure() -> None:
    """On a cold server the heatmap's canvas goes out before `warm_up` (pandas, pyarrow and what
    plotly reads of them, which beside the warm-up thread's torch import share one GIL); the map
    makes no plotly figure (tests/test_token_canvas.py), the figures come after the import."""
    section = ast.parse((ROOT / "attnviz" / "app" / "sections" / "explorer.py").read_text(encoding="utf-8"))
    view = next(n for n in section.body if isinstance(n, ast.FunctionDef) and n.name == "heatmap_view")
    calls = [ast.unparse(n.func) for n in ast.walk(view) if isinstance(n, ast.Call)]
    order = [c for c in calls if c in ("token_canvas.token_map", "warmup.warm_up", "downloads.figure_downloads")]
    assert order == ["token_canvas.token_map", "warmup.warm_up", "downloads.figure_downloads"]
    assert not {"views.heatmap", "views.heatmap_figure"} & set(calls)  # its figure: made only for its download
    page = (ROOT / "pages" / "explorer.py").read_text(encoding="utf-8")
    first_figure = min(page.index(f"section.{name}(") for name in ("grid_view", "more_views", "token_focus_section"))
    assert page.index("section.heatmap_view(") < first_figure
    assert page.index("section.analysis(") < page.index("section.heatmap_view(")
    long_mode = (ROOT / "attnviz" / "app" / "sections" / "long.py").read_text(encoding="utf-8")
    assert long_mode.index("warmup.warm_up()") < long_mode.index('st.container(key="long_mode")')


class _RecordingEvent(threading.Event):
    def __init__(self, log: list[tuple[str, Any]]) -> None:
        super().__init__()
        self.log = log

    def wait(self, timeout: float | None = None) -> bool:
        self.log.append(("wait", timeout))
        return super().wait(timeout)


class _Runner:
    def attend(self, text: str, max_tokens: int) -> None:
        return None


def _recording_warm_up(monkeypatch: pytest.MonkeyPatch, wait_s: float) -> tuple[list[tuple[str, Any]], _RecordingEvent]:
    log: list[tuple[str, Any]] = []
    event = _RecordingEvent(log)
    monkeypatch.setattr(model_registry, "REGISTRY", model_registry._Registry())
    monkeypatch.setattr(model_registry, "load", lambda *args: log.append(("load", event.is_set())) or _Runner())
    monkeypatch.setattr(warmup, "_STARTED", [])
    monkeypatch.setattr(warmup, "_FIRST_SCREEN", event)
    monkeypatch.setattr(warmup, "FIRST_SCREEN_WAIT_S", wait_s)
    return log, event


def test_the_warm_up_takes_the_cpu_only_once_the_first_screen_is_handed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    log, _event = _recording_warm_up(monkeypatch, wait_s=600.0)
    warmup.start(Settings(), after_first_screen=True)
    thread = warmup.started()
    assert thread is not None
    warmup.first_screen()
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert log == [("wait", 600.0), ("load", True)]  # it waited, and loaded after the first screen


def test_without_a_first_screen_the_warm_up_goes_ahead_after_its_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first visit to another page never calls `first_screen` before its own run ends."""
    log, _event = _recording_warm_up(monkeypatch, wait_s=0.01)
    warmup.start(Settings(), after_first_screen=True)
    thread = warmup.started()
    assert thread is not None
    thread.join(timeout=120)
    assert log == [("wait", 0.01), ("load", False)]


def test_a_plain_start_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    log, _event = _recording_warm_up(monkeypatch, wait_s=600.0)
    warmup.start(Settings())
    thread = warmup.started()
    assert thread is not None
    thread.join(timeout=120)
    assert log == [("load", False)]


def test_the_chart_code_is_the_module_streamlit_loads_lazily() -> None:
    """The preload imports the file Streamlit's entry module imports for a Plotly chart, by the
    same relative name, so the browser keeps one copy (a Streamlit upgrade that renames it fails here)."""
    import streamlit

    static = Path(streamlit.__file__).parent / "static"
    name = preload.build_file("chart")
    assert name is not None and preload.CHART_CODE.fullmatch(name)
    index_html = (static / "index.html").read_text(encoding="utf-8")
    entry = next(part.split('"')[0] for part in index_html.split('src="./static/js/')[1:] if "index." in part[:10])
    entry_js = (static / "static" / "js" / entry).read_text(encoding="utf-8")
    assert f"import(`./{name}`)" in entry_js or f'import("./{name}")' in entry_js
    assert preload.build_file("chart", static / "no-such-folder") is None


def _preload_twice() -> None:
    from attnviz.app.coldstart import preload

    preload.preload_chart_code()
    preload.preload_chart_code()


def test_the_chart_code_is_asked_for_once_per_session() -> None:
    at = AppTest.from_function(_preload_twice, default_timeout=60)
    at.run()
    scripts = at.sidebar.get("html")
    assert len(scripts) == 1
    body = scripts[0].proto.body
    assert scripts[0].proto.unsafe_allow_javascript
    assert body.startswith("<script>") and body.endswith("</script>")
    assert f"'./{preload.build_file('chart')}'" in body
    at.run()  # the session's next run: nothing sent again
    assert at.sidebar.get("html") == []


def _preload_for_the_explorer() -> None:
    from attnviz.app.coldstart import preload

    preload.preload_chart_code(after=".st-key-sentence_input textarea", first_map=True)


def test_the_explorer_loads_the_component_code_at_its_box_and_no_other() -> None:
    """What its first map needs (the canvas's component code) loads while the model does;
    Plotly's not at all (its first screen has no Plotly chart: the heatmap and the all-heads grid
    are canvases, and the chart code's compile held a cold map back a second); st.code's
    highlighter never (no page shows st.code: app/literal.py, copy_link.py)."""
    at = AppTest.from_function(_preload_for_the_explorer, default_timeout=60)
    at.run()
    (first,) = (s.proto.body for s in at.sidebar.get("html"))
    component, code, chart = (preload.build_file(k) for k in ("component", "code", "chart"))
    assert component is not None and preload.COMPONENT_CODE.fullmatch(component)
    assert code is not None and preload.CODE_CODE.fullmatch(code)
    box = "document.querySelector('.st-key-sentence_input textarea')"
    assert f"'./{component}'" in first and box in first
    assert chart is not None and chart not in first
    assert code not in first
    js = (ROOT / "attnviz" / "app" / "canvas" / "token_canvas.js").read_text(encoding="utf-8")
    assert f'classList.add("{preload.MAP_DRAWN[1:]}")' in js  # the class the canvas sets once drawn
    import streamlit

    entry = Path(streamlit.__file__).parent / "static" / "static" / "js"
    # imported by the entry module by that name: one copy in the browser
    assert any(f"./{component}" in p.read_text(encoding="utf-8") for p in entry.glob("index.*.js")), component


def test_the_preload_script_takes_only_a_chart_file_name_and_a_plain_selector() -> None:
    name = preload.build_file("chart")
    assert name is not None
    script = preload.preload_script(name, ".st-key-sentence_input textarea")
    assert "document.querySelector('.st-key-sentence_input textarea')" in script
    for bad_name, bad_after in [("x.js", ""), (name, "a'); alert(1); ('"), (name, "</script>")]:
        with pytest.raises(ValueError):
            preload.preload_script(bad_name, bad_after)


# A fresh interpreter (nothing has imported torch) runs the app as a cold server's first visitor:
# every map handed to Streamlit, in order, with whether torch was imported then.
FIRST_MAP_PROBE = """
import json, sys
import numpy as np
from streamlit.testing.v1 import AppTest
from attnviz import views
from attnviz.app.canvas import token_canvas
from attnviz.app.coldstart import first_map
maps, weights = [], []
real_map, real_spec = token_canvas.token_map, views.heatmap_spec
def spy(spec, key, **kw):
    maps.append([key, "torch" in sys.modules, kw.get("after"), spec.layer, spec.head, list(spec.rows)])
    return real_map(spec, key, **kw)
def spec_spy(att, *args, **kw):  # the attention each map is drawn from, every layer and head
    weights.append(att.weights)
    return real_spec(att, *args, **kw)
token_canvas.token_map = spy
views.heatmap_spec = first_map.heatmap_spec = spec_spy
at = AppTest.from_file(%r, default_timeout=300)
at.query_params.update(%r)
at.run()
from attnviz.app.coldstart import warmup
warmup.started().join(timeout=300)
left = sorted(e.proto.id.rsplit("-", 1)[-1] for e in at.get("bidi_component"))
gap = float(np.abs(weights[0] - weights[-1]).max()) if len(weights) > 1 else None
print(json.dumps({"maps": maps, "gap": gap, "left": left, "errors": len(at.exception),
                  "numpy_dropped": first_map._DROPPED.is_set() and not first_map._MODEL}))
"""


# a shared link's layer past MiniLM's six: the picker clamps it to the last layer, and so must the first map
@pytest.mark.parametrize("query", [{}, {"layer": "9", "head": "2"}], ids=["defaults", "layer_past_the_last"])
def test_a_cold_explorer_draws_its_first_map_from_numpy_before_torch_is_imported(query: dict[str, str]) -> None:
    """The first map (app/coldstart/first_map.py) goes out before anything imports torch; the explorer's
    own map (torch) follows in the same run and replaces it: the same tokens and head, the same
    weights within 1e-5; the numpy weights are dropped once the torch model is in. Both maps are
    drawn once the sentence box is (their `after`; tests/test_browser_cold_start.py holds the
    box's code back in a real browser)."""
    out = fresh_python(FIRST_MAP_PROBE % (str(ROOT / "tests" / "app_entry.py"), query))
    (
        (first, first_torch, first_after, *first_focus, first_tokens),
        (own, own_torch, own_after, *own_focus, own_tokens),
    ) = out["maps"]
    assert (first, first_torch, first_after) == ("chart_first_map", False, state.SENTENCE_TEXT_AREA)
    assert (own, own_torch, own_after) == ("chart_heatmap", True, state.SENTENCE_TEXT_AREA)
    assert first_focus == own_focus and first_tokens == own_tokens
    if query:
        assert own_focus == [5, 2]
    assert out["gap"] is not None and out["gap"] <= 1e-5
    assert "chart_heatmap" in out["left"] and "chart_first_map" not in out["left"]  # replaced
    assert out["errors"] == 0 and out["numpy_dropped"]

"""A cold server's start: what the first page needs, made ready while the page frame is drawn.

Each job once per process (the preload once per session):

- `start(settings, after_first_screen=True)`, at the top of app.py: a background thread imports
  torch and loads the first model of the list (the embedded MiniLM) into the model registry
  (app/registry.py), then runs one small pass. It first waits until the first page has handed
  its title and sentence box to Streamlit (`first_screen()`, at most FIRST_SCREEN_WAIT_S): the
  server has two cores and one GIL, so a torch import beside the script thread doubled the time
  to the sentence box and starved the event loop that sends it, and gained the first chart
  nothing (both are Python work under one GIL). The page's own `load_runner` waits on the same
  registry entry (one load per key), so the model is never loaded twice
  (bench/results_browser.md: cold start). transformers is not imported for it: MiniLM's first
  answers come from its files through `tokenizers` and plain torch (models/minilm_quick.py).
  On the explorer the first screen is handed over only after its first map: the explorer's
  sections import torch before any map of their own, so `loading` first shows the focused
  head's map from MiniLM in numpy (app/first_map.py), which their map replaces.
- `warm_up()`, on a script thread before anything of the page that makes a figure or a table
  (app.py before the page; on the explorer right after its first map, the heatmap's canvas,
  which makes no plotly figure: on a cold server that map no longer waits for these imports,
  which beside the warm-up thread's torch import shared one GIL with it): imports
  pandas and what plotly imports lazily. Eight visitors opening a freshly started server at
  once got "partially initialized module 'pandas'": two script threads raced on that first
  import while plotly and Streamlit read `sys.modules["pandas"]` directly. Importing them, and
  serialising one small figure, first under a lock that every run passes removes the race
  (tests/test_load.py opens every page of a cold server eight times at once). Never from the
  background thread: Streamlit failed on a half-imported one ("'pandas' has no attribute
  'Series'"). The frame, the title and the sentence box make no figure and no table.
- `preload_chart_code()`, once the first screen is out (the explorer's `loading()`; app.py
  before any other page): the browser fetches and compiles Streamlit's Plotly chart code (one
  4.7 MB module it otherwise asks for only when the first chart's data arrives) while the
  server works. The compile holds the browser's main thread for a second or more on a busy
  2-core machine, so the explorer, whose first screen has no Plotly chart (its heatmap and its
  all-heads grid are canvases: v2 components, whose 15 KB module loads once the sentence box is
  drawn), does not load it at all: the views below the fold that use Plotly load it when they
  are opened. Once per session, on its first run; a Streamlit without those file names sends
  nothing (the chart then loads its code itself, as before).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from . import heap

if TYPE_CHECKING:
    from ..config import Settings
    from .state import Ctx

__all__ = [
    "chart_code_file",
    "first_screen",
    "loading",
    "preload_chart_code",
    "preload_script",
    "start",
    "started",
    "warm_up",
]

LOG = logging.getLogger("attnviz")
MODULES = ("numpy", "pandas", "pyarrow", "narwhals", "plotly.graph_objects", "plotly.io", "plotly.subplots")
_DONE = threading.Event()
_LOCK = threading.Lock()
_STARTED: list[threading.Thread] = []
_START_LOCK = threading.Lock()
_FIRST_SCREEN = threading.Event()
FIRST_SCREEN_WAIT_S = 6.0  # at the latest; app.py hands it over after any page anyway
CHART_CODE = re.compile(r"PlotlyChart\.[A-Za-z0-9_-]{4,16}\.js")  # the chunk's name in Streamlit's build
COMPONENT_CODE = re.compile(r"BidiComponent\.[A-Za-z0-9_-]{4,16}\.js")  # the v2 components' (the canvas map)
# st.code's highlighter: no page loads it any more (app/literal.py, copy_link.py); tests watch for it
CODE_CODE = re.compile(r"StreamlitSyntaxHighlighter\.[A-Za-z0-9_-]{4,16}\.js")
_CODES = {
    "chart": ("PlotlyChart.*.js", CHART_CODE),
    "component": ("BidiComponent.*.js", COMPONENT_CODE),
    "code": ("StreamlitSyntaxHighlighter.*.js", CODE_CODE),
}
_CHART_CODE_SENT = "_chart_code_sent"
# A classic script may import a module: the URL is resolved against Streamlit's own entry module,
# so the browser's module map holds one copy, which the chart's lazy import then finds ready.
_PRELOAD_JS = """<script>(() => {
  const main = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!main) return;
  let done = false;
  const go = () => { if (done) return; done = true;
    requestAnimationFrame(() => setTimeout(() => import(new URL('./NAME', main.src).href).catch(() => {}), 0)); };
  const shown = () => !'AFTER' || document.querySelector('AFTER');
  if (shown()) return go();
  const seen = new MutationObserver(() => { if (shown()) { seen.disconnect(); go(); } });
  seen.observe(document.body, {childList: true, subtree: true, attributes: true, attributeFilter: ['class']});
  setTimeout(() => { seen.disconnect(); go(); }, WAIT_MS);
})();</script>"""
PRELOAD_WAIT_MS = 3000  # no such element by then: the code loads anyway
MAP_DRAWN = ".attnviz-map-drawn"  # the explorer's canvas map once drawn (app/token_canvas.js)
SAFE_SELECTOR = re.compile(r"[A-Za-z0-9_ .#>-]*")


def warm_up() -> None:
    """Idempotent and thread-safe; the first call does the work, the others wait for it. On a
    script thread it also empties this run's first map (app/first_map.py), if one shows: it is
    called right after the explorer's own map."""
    # Another session's thread may be importing first_map right now: in sys.modules, `clear`
    # not yet defined (eight first visits at once: "partially initialized module" in one of
    # them). This run drew no first map then (its own import would have waited for that one).
    clear = getattr(sys.modules.get("attnviz.app.first_map"), "clear", None)
    if clear is not None:
        clear()
    if _DONE.is_set():
        return
    with _LOCK:
        if _DONE.is_set():
            return
        for name in MODULES:
            # an optional one missing is fine: then nothing imports it later either
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        import numpy as np
        import plotly.graph_objects as go
        import plotly.io as pio

        fig = go.Figure(go.Heatmap(z=np.eye(2, dtype=np.float32)))
        pio.to_json(fig, validate=False)
        heap.settle("the figure imports")  # no run's collection walks them again (app/heap.py)
        _DONE.set()


def chart_code_file(static: Path | None = None, kind: str = "chart") -> str | None:
    """The file name of one of Streamlit's lazily loaded modules in its static folder, if exactly
    one: `kind` "chart" (Plotly), "component" (v2 components) or "code" (st.code's highlighter)."""
    if static is None:
        import streamlit

        static = Path(streamlit.__file__).parent / "static" / "static" / "js"
    found, pattern = _CODES[kind]
    names = [p.name for p in static.glob(found) if pattern.fullmatch(p.name)]
    return names[0] if len(names) == 1 else None


def preload_script(name: str, after: str = "", wait_ms: int = PRELOAD_WAIT_MS) -> str:
    """The script that imports Streamlit's module `name` (its chart or component code), once the
    element `after` (a CSS selector of ours) is in the page and painted, or after `wait_ms`: the
    chart module's compile (a second of the browser's main thread on a busy 2-core machine) must
    not hold up the sentence box or the first map."""
    if not any(p.fullmatch(name) for _, p in _CODES.values()) or not SAFE_SELECTOR.fullmatch(after):
        raise ValueError("not a chart or component code file name or not a plain selector")
    return _PRELOAD_JS.replace("NAME", name).replace("AFTER", after).replace("WAIT_MS", str(int(wait_ms)))


def preload_chart_code(after: str = "", *, first_map: bool = False) -> None:
    """On a session's first run: the browser starts loading the chart code (see the module's
    docstring) at once, or once the element `after` is drawn. `first_map` (the explorer, whose
    first screen is canvases): the component code once `after` is drawn, and no chart code. The
    scripts name nothing of the visitor's: file names of Streamlit's and selectors of ours, all
    checked."""
    import streamlit as st

    if st.session_state.get(_CHART_CODE_SENT):
        return
    st.session_state[_CHART_CODE_SENT] = True
    plan = [("chart", after, PRELOAD_WAIT_MS)]
    if first_map:
        plan = [
            ("component", after, PRELOAD_WAIT_MS),
        ]
    for kind, selector, wait_ms in plan:
        name = chart_code_file(kind=kind)
        if name is not None:
            st.sidebar.html(preload_script(name, selector, wait_ms), unsafe_allow_javascript=True)


def first_screen() -> None:
    """The page's first screen (its title and sentence box) is handed to Streamlit: the warm-up
    thread may take the CPU now."""
    _FIRST_SCREEN.set()


def start(settings: Settings, *, after_first_screen: bool = False) -> None:
    """Start the background load once per process (later calls return at once); with
    `after_first_screen`, it begins once `first_screen()` is called (or after FIRST_SCREEN_WAIT_S)."""
    with _START_LOCK:
        if _STARTED:
            return
        thread = threading.Thread(
            target=_load_first_model, args=(settings, after_first_screen), name="attnviz-warmup", daemon=True
        )
        _STARTED.append(thread)
    thread.start()


def started() -> threading.Thread | None:
    """The background thread, once started (tests wait on it)."""
    return _STARTED[0] if _STARTED else None


@contextlib.contextmanager
def loading(model: str, text: str | None = None, context: Ctx | None = None) -> Iterator[None]:
    """Right after the explorer's sentence box: the first screen is out, so the browser starts
    on the chart code once the box is drawn (`preload_chart_code`: compiling it earlier delayed
    the box); on a cold server, with `text` and `context`, the first map from numpy
    (app/first_map.py: torch not imported yet); then the warm-up thread goes ahead
    (`first_screen`), under a spinner naming the model while the warm-up thread still runs (a
    cold server): what the page imports next (torch) waits for that thread. What plotly needs
    (`warm_up`) is imported after the explorer's own map (sections/explorer.py `heatmap_view`),
    which replaces the first one. No spinner once the thread is done (Streamlit shows one only
    after half a second anyway)."""
    import streamlit as st

    from .state import SENTENCE_TEXT_AREA, t
    from .widgets import escape_md

    preload_chart_code(after=SENTENCE_TEXT_AREA, first_map=True)
    if context is not None and "torch" not in sys.modules:  # a cold server: no import of torch for this
        from . import first_map

        first_map.draw(context, text)
    first_screen()
    thread = started()
    if thread is None or not thread.is_alive():
        yield
        return

    with st.spinner(t("spinner.loading", name=escape_md(model))):
        yield


def _load_first_model(settings: Settings, after_first_screen: bool = False) -> None:
    """The model the explorer opens with, loaded as `runners.load_runner` would load it for a
    new session (same registry key: the model, device "auto", no options). Any failure is only
    logged: the page then loads (and reports) it itself."""
    if after_first_screen:
        _FIRST_SCREEN.wait(FIRST_SCREEN_WAIT_S)
    try:
        from ..models import EMBEDDED_MODEL
        from .registry import REGISTRY, load
        from .state import model_options

        name = model_options(settings)[0]
        if name != EMBEDDED_MODEL:
            return
        settings.check_model(name)
        key = (name, "auto", ())
        runner = REGISTRY.get(key, lambda: load(name, "auto", settings.max_tokens, {}))
        _drop_first_map()  # the torch model is in: the first map's numpy weights go
        runner.attend("warm up", 8)  # torch's first pass pays its one-time set-up here
        heap.settle("the first model")  # torch and the model: out of every run's collection (app/heap.py)
    except Exception as exc:  # a thread must not die with a traceback in the log
        LOG.warning("attnviz: warm-up load failed: %s: %.300s", type(exc).__name__, exc)
    finally:
        _drop_first_map()


def _drop_first_map() -> None:
    if "attnviz.app.first_map" in sys.modules:
        sys.modules["attnviz.app.first_map"].drop()

"""A cold server's start: what the first page needs, made ready while the page frame is drawn.

Each job once per process (the preload once per session):

- `start(settings, after_first_screen=True)`, at the top of app.py: a background thread imports
  torch and loads the first model of the list (the embedded MiniLM) into the model registry
  (app/server/registry.py), then runs one small pass. It first waits until the first page has handed
  its title and sentence box to Streamlit (`first_screen()`, at most FIRST_SCREEN_WAIT_S): the
  server has two cores and one GIL, so a torch import beside the script thread doubled the time
  to the sentence box and starved the event loop that sends it, and gained the first chart
  nothing (both are Python work under one GIL). The page's own `load_runner` waits on the same
  registry entry (one load per key), so the model is never loaded twice
  (bench/results_browser.md: cold start). transformers is not imported for it: MiniLM's first
  answers come from its files through `tokenizers` and plain torch (models/minilm_quick.py).
  On the explorer the first screen is handed over only after its first map: the explorer's
  sections import torch before any map of their own, so `loading` first shows the focused
  head's map from MiniLM in numpy (app/coldstart/first_map.py), which their map replaces.
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
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from . import heap
from .preload import preload_chart_code

if TYPE_CHECKING:
    from ...config import Settings
    from ..state import Ctx

__all__ = [
    "first_screen",
    "loading",
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


def warm_up() -> None:
    """Idempotent and thread-safe; the first call does the work, the others wait for it. On a
    script thread it also empties this run's first map (app/coldstart/first_map.py), if one shows: it is
    called right after the explorer's own map."""
    # Another session's thread may be importing first_map right now: in sys.modules, `clear`
    # not yet defined (eight first visits at once: "partially initialized module" in one of
    # them). This run drew no first map then (its own import would have waited for that one).
    clear = getattr(sys.modules.get("attnviz.app.coldstart.first_map"), "clear", None)
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
        heap.settle("the figure imports")  # no run's collection walks them again (app/coldstart/heap.py)
        _DONE.set()


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
    (app/coldstart/first_map.py: torch not imported yet); then the warm-up thread goes ahead
    (`first_screen`), under a spinner naming the model while the warm-up thread still runs (a
    cold server): what the page imports next (torch) waits for that thread. What plotly needs
    (`warm_up`) is imported after the explorer's own map (sections/explorer.py `heatmap_view`),
    which replaces the first one. No spinner once the thread is done (Streamlit shows one only
    after half a second anyway)."""
    import streamlit as st

    from ..state import SENTENCE_TEXT_AREA, t
    from ..widgets import escape_md

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
        from ...models import EMBEDDED_MODEL
        from ..server.registry import REGISTRY, load
        from ..state import model_options

        name = model_options(settings)[0]
        if name != EMBEDDED_MODEL:
            return
        settings.check_model(name)
        key = (name, "auto", ())
        runner = REGISTRY.get(key, lambda: load(name, "auto", settings.max_tokens, {}))
        _drop_first_map()  # the torch model is in: the first map's numpy weights go
        runner.attend("warm up", 8)  # torch's first pass pays its one-time set-up here
        heap.settle("the first model")  # torch and the model: out of every run's collection (app/coldstart/heap.py)
    except Exception as exc:  # a thread must not die with a traceback in the log
        LOG.warning("attnviz: warm-up load failed: %s: %.300s", type(exc).__name__, exc)
    finally:
        _drop_first_map()


def _drop_first_map() -> None:
    if "attnviz.app.coldstart.first_map" in sys.modules:
        sys.modules["attnviz.app.coldstart.first_map"].drop()

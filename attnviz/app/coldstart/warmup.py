"""A cold server's start: what the first page needs, made ready while the page frame is drawn.

- `start` (app.py): a thread imports torch and loads the embedded MiniLM into the registry, once
  `first_screen()` is called (at most FIRST_SCREEN_WAIT_S): with two cores and one GIL, a torch
  import beside the script thread would delay the sentence box. The page's load waits on the
  same registry entry.
- `warm_up()`, on a script thread before any figure or table: imports pandas and what plotly
  imports lazily, under one lock (two threads importing pandas at once fail with "partially
  initialized module"; tests/test_load.py); never from the background thread, for that reason.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from . import heap
from .preload import preload_chart_code

if TYPE_CHECKING:
    from ...config import Settings
    from ..state import Ctx

LOG = logging.getLogger("attnviz")
MODULES = ("numpy", "pandas", "pyarrow", "narwhals", "plotly.graph_objects", "plotly.io", "plotly.subplots")
_DONE = threading.Event()
_LOCK = threading.Lock()
_STARTED: list[threading.Thread] = []
_START_LOCK = threading.Lock()
_FIRST_SCREEN = threading.Event()
FIRST_SCREEN_WAIT_S = 6.0  # at the latest; app.py hands it over after any page anyway


def warm_up() -> None:
    """Idempotent and thread-safe; the first call does the work, the others wait for it. Also
    empties this run's first map (called right after the explorer's own map)."""
    _first_map("clear")()
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
        heap.settle("the figure imports")
        _DONE.set()


def first_screen() -> None:
    """The page's title and sentence box are handed to Streamlit: the warm-up thread may go."""
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
def loading(context: Ctx, text: str) -> Iterator[None]:
    """Right after the explorer's sentence box: the component code's preload, on a cold server
    the first map from numpy, then the warm-up thread goes ahead under a spinner naming the
    model while it still runs."""
    import streamlit as st

    from ..state import SENTENCE_TEXT_AREA, t
    from ..widgets import escape_md

    preload_chart_code(after=SENTENCE_TEXT_AREA, first_map=True)
    if "torch" not in sys.modules:  # a cold server: no import of torch for this
        from . import first_map

        first_map.draw(context, text)
    first_screen()
    thread = started()
    alive = thread is not None and thread.is_alive()
    with st.spinner(t("spinner.loading", name=escape_md(context.model))) if alive else contextlib.nullcontext():
        yield


def _load_first_model(settings: Settings, after_first_screen: bool = False) -> None:
    """The explorer's first model, under `runners.load_runner`'s registry key for a new session.
    Failures are only logged: the page then loads (and reports) it itself."""
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
        _first_map("drop")()
        runner.attend("warm up", 8)  # torch's first pass pays its one-time set-up here
        heap.settle("the first model")
    except Exception as exc:  # a thread must not die with a traceback in the log
        LOG.warning("attnviz: warm-up load failed: %s: %.300s", type(exc).__name__, exc)
    finally:
        _first_map("drop")()


def _first_map(name: str) -> Callable[[], None]:
    """first_map's function `name` when it is imported, else one that does nothing: no import of
    it from here (it may be half imported by another session's thread: then nothing either)."""
    return getattr(sys.modules.get("attnviz.app.coldstart.first_map"), name, lambda: None)

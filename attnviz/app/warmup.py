"""A cold server's start: what the first page needs, made ready while the page frame is drawn.

Two jobs, each once per process:

- `start(settings)`, at the top of app.py: a background thread imports torch and loads the
  first model of the list (the embedded MiniLM) into the model registry (app/registry.py), then
  runs one small pass. The first visitor's page draws its frame, the sentence box and "Loading
  model …" meanwhile, and the page's own `load_runner` waits on the same registry entry (one
  load per key), so the model is never loaded twice (bench/results_browser.md: cold start).
  transformers is not imported for it: MiniLM's first answers come from its files through
  `tokenizers` and plain torch (models/minilm_quick.py); transformers' model loads when
  something first needs it, after the explorer's views are sent (the hide-sinks switch).
- `warm_up()`, on the script's own thread at the top of app.py: imports what plotly imports
  lazily while serialising a figure. Eight visitors opening a freshly started server at once
  got "partially initialized module 'pandas'": plotly imports pandas (and narwhals) lazily
  while serialising a figure, and two script threads raced on that first import. Importing
  them, and serialising one small figure, first removes the race (tests/test_load.py opens
  every page of a cold server eight times at once). Never from the background thread: Streamlit
  reads `sys.modules["pandas"]` directly and failed on a half-imported one ("'pandas' has no
  attribute 'Series'").
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["loading", "start", "started", "warm_up"]

LOG = logging.getLogger("attnviz")
MODULES = ("numpy", "pandas", "pyarrow", "narwhals", "plotly.graph_objects", "plotly.io", "plotly.subplots")
_DONE = threading.Event()
_LOCK = threading.Lock()
_STARTED: list[threading.Thread] = []
_START_LOCK = threading.Lock()


def warm_up() -> None:
    """Idempotent and thread-safe; the first call does the work, the others wait for it."""
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
        _DONE.set()


def start(settings: Settings) -> None:
    """Start the background load once per process (later calls return at once)."""
    with _START_LOCK:
        if _STARTED:
            return
        thread = threading.Thread(target=_load_first_model, args=(settings,), name="attnviz-warmup", daemon=True)
        _STARTED.append(thread)
    thread.start()


def started() -> threading.Thread | None:
    """The background thread, once started (tests wait on it)."""
    return _STARTED[0] if _STARTED else None


@contextlib.contextmanager
def loading(model: str) -> Iterator[None]:
    """A spinner naming the model while the warm-up thread still runs (a cold server): what the
    page imports next (torch) waits for that thread, and the page showed nothing meanwhile.
    Nothing once the thread is done (Streamlit shows a spinner only after half a second anyway)."""
    thread = started()
    if thread is None or not thread.is_alive():
        yield
        return
    import streamlit as st

    from .state import t
    from .widgets import escape_md

    with st.spinner(t("spinner.loading", name=escape_md(model))):
        yield


def _load_first_model(settings: Settings) -> None:
    """The model the explorer opens with, loaded as `runners.load_runner` would load it for a
    new session (same registry key: the model, device "auto", no options). Any failure is only
    logged: the page then loads (and reports) it itself."""
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
        runner.attend("warm up", 8)  # torch's first pass pays its one-time set-up here
    except Exception as exc:  # a thread must not die with a traceback in the log
        LOG.warning("attnviz: warm-up load failed: %s: %.300s", type(exc).__name__, exc)

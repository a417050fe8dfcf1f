"""Import at start-up what the figures and tables import lazily.

Eight visitors opening a freshly started server at once got "partially initialized module
'pandas'": plotly imports pandas (and narwhals) lazily while serialising a figure, and two
script threads raced on that first import. Importing them, and serialising one small figure,
before any page runs removes the race (tests/test_load.py opens every page of a cold server
eight times at once)."""

from __future__ import annotations

import contextlib
import importlib
import threading

__all__ = ["warm_up"]

MODULES = ("numpy", "pandas", "pyarrow", "narwhals", "plotly.graph_objects", "plotly.io", "plotly.subplots")
_DONE = threading.Event()
_LOCK = threading.Lock()


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

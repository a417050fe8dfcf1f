"""The server's long-lived heap, kept out of every run's garbage collection: Streamlit runs
`gc.collect(2)` after each script run, which would walk every module, class and function of
torch, plotly and pandas while holding the GIL. `settle()` collects once and `gc.freeze()`s what
is left, after each of the two big imports (warmup.py). A cycle frozen alive and dead later is
never collected; at those points only the first visitors' first runs exist.
"""

from __future__ import annotations

import gc
import logging
import threading
import time

LOG = logging.getLogger("attnviz")
_LOCK = threading.Lock()
_SETTLED: list[str] = []  # the reasons, in order (tests read them)


def settle(reason: str) -> None:
    """Collect, then freeze every object tracked now; `reason` names the point for the log."""
    with _LOCK:
        t0 = time.perf_counter()
        gc.collect()
        gc.freeze()
        _SETTLED.append(reason)
        seconds, frozen = time.perf_counter() - t0, gc.get_freeze_count()
    LOG.warning("attnviz: heap settled after %s: %d objects frozen in %.2f s", reason, frozen, seconds)


def settled() -> list[str]:
    return list(_SETTLED)

"""The server's long-lived heap, kept out of every run's garbage collection.

Streamlit collects garbage, every generation (`gc.collect(2)`, its `runner.postScriptGC`), after
each script run, so that memory freed by a run does not wait for Python's own collector. With
torch, the model, plotly and pandas imported, that walks about 255,000 objects: 0.16-0.20 s
of CPU per run, holding the GIL, so every other session's run and the event loop that sends
the finished run's last messages wait for it (bench/README.md: issue 24, ninth pass). Nearly
all of those objects are modules, classes and functions that live as long as the process.

`settle()` collects once and then freezes what is left (`gc.freeze()`: the objects go to the
permanent generation, which no later collection walks; objects still die as before when their
last reference goes). It is called at the two points of a process's life where the big imports
are done, once each: the warm-up thread's model load and the first `warm_up()`
(app/coldstart/warmup.py). A run's collection then walks only what was made since: the runs' own objects
and the modules a page imports later (about 40,000 more once every page has been opened).

What it costs: a reference cycle that is alive at a freeze and dies later is never collected.
At those two points the only sessions are the first visitors of a fresh server, on their first
run; what they hold then is a page frame and at most one sentence's maps.
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
    """Collect, then freeze every object tracked now (see the module's note); `reason` names the
    point for the log."""
    with _LOCK:
        t0 = time.perf_counter()
        gc.collect()
        gc.freeze()
        _SETTLED.append(reason)
        seconds, frozen = time.perf_counter() - t0, gc.get_freeze_count()
    LOG.warning("attnviz: heap settled after %s: %d objects frozen in %.2f s", reason, frozen, seconds)


def settled() -> list[str]:
    return list(_SETTLED)

"""attnviz app: `streamlit run app.py`. The frame: page config, the shared sidebar, the pages.
Pages (pages/) are thin: they read widgets, call `attnviz`, and hand figures to st.plotly_chart;
the app's shared code is `attnviz/app/`."""

from __future__ import annotations

import contextlib
import ctypes
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # `attnviz` from this checkout, whatever the working directory
    sys.path.insert(0, str(ROOT))


def _return_large_frees_to_the_os() -> None:
    """glibc keeps freed blocks under its (self-raising) mmap threshold in the heap: after a few
    75 MB attention arrays a server held 100-150 MB it no longer used and crossed 1 GB
    (bench/results_browser.md). A fixed 1 MB threshold, as MALLOC_MMAP_THRESHOLD_=1048576
    would set, gives large blocks back at once. Only on glibc; elsewhere nothing happens."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 20)  # -3 = M_MMAP_THRESHOLD


_return_large_frees_to_the_os()

import streamlit as st  # noqa: E402

from attnviz.app import charts, client_guard, nav, sidebar, state, warmup  # noqa: E402
from attnviz.config import settings_from_env  # noqa: E402

state.leave_legacy_pages_mode()
warmup.warm_up()
st.set_page_config(page_title="attnviz", page_icon=str(nav.ICON), layout="wide")
settings = settings_from_env()
client_guard.install(settings)  # widget states that fit their widgets; one upload limit
state.start_run(settings)
st.html(ROOT / "assets" / "style.css")
# Navigation before the sidebar's widgets: a widget's id includes the script hash active when it
# is created, and before st.navigation resolves the page a session's first run has another one,
# so the first change of a sidebar widget (the model, the device) was lost.
page = nav.navigation(state.lang())
c = sidebar.sidebar(settings)
st.session_state["_ctx"] = c
charts.sync_url(c, on_explorer=nav.is_explorer(page))
page.run()

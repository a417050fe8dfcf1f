"""attnviz app: `streamlit run app.py`. The entry point builds the shared sidebar (language,
model, device, token limit), registers the pages and runs the chosen one. Pages are thin: they
read widgets, call `attnviz`, and hand figures to st.plotly_chart."""

from __future__ import annotations

import contextlib
import ctypes
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent


def _return_large_frees_to_the_os() -> None:
    """glibc keeps freed blocks under its (self-raising) mmap threshold in the heap: after a few
    75 MB attention arrays a server held 100-150 MB it no longer used and crossed 1 GB
    (bench/results_browser.md). A fixed 1 MB threshold, as MALLOC_MMAP_THRESHOLD_=1048576
    would set, gives large blocks back at once. Only on glibc; elsewhere nothing happens."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").mallopt(-3, 1 << 20)  # -3 = M_MMAP_THRESHOLD


_return_large_frees_to_the_os()
if str(ROOT) not in sys.path:  # `app_pages.common` is imported by the pages, whatever the working directory
    sys.path.insert(0, str(ROOT))

from app_pages import common  # noqa: E402
from app_pages.common import t  # noqa: E402

st.set_page_config(page_title="attnviz", page_icon=":material/grid_on:", layout="wide")
common.setup()
explorer = st.Page(
    common.EXPLORER, title=t("nav.explorer"), icon=":material/grid_on:", url_path="explorer", default=True
)
page = st.navigation(
    [
        explorer,
        st.Page(common.LAB, title=t("nav.lab"), icon=":material/science:", url_path="lab"),
        st.Page(common.EXPLAIN, title=t("nav.explain"), icon=":material/insights:", url_path="explain"),
        st.Page(common.CAVEATS, title=t("nav.caveats"), icon=":material/warning:", url_path="caveats"),
    ]
)
common.sync_url(on_explorer=page is explorer or page.url_path == explorer.url_path)
page.run()

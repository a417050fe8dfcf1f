"""attnviz app: `streamlit run app.py`. The entry point builds the shared sidebar (language,
model, device, token limit), registers the pages and runs the chosen one. Pages are thin: they
read widgets, call `attnviz`, and hand figures to st.plotly_chart."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
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

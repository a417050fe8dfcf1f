"""attnviz app: `streamlit run app.py`. The frame: page config, the shared sidebar, the pages.
Pages (pages/) are thin: they read widgets, call `attnviz`, and hand figures to st.plotly_chart;
the app's shared code is `attnviz/app/`."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # `attnviz` from this checkout, whatever the working directory
    sys.path.insert(0, str(ROOT))


from attnviz._malloc import return_large_frees_to_the_os  # noqa: E402  (no torch: attnviz imports lazily)

return_large_frees_to_the_os()  # large arrays go back to the OS when freed (attnviz/_malloc.py)

import streamlit as st  # noqa: E402

from attnviz.app.coldstart import preload, warmup  # noqa: E402
from attnviz.config import settings_from_env  # noqa: E402

settings = settings_from_env()
# Once per process: torch and the first model load in a thread, from the moment this run has
# handed over the page's title and sentence box (cold start, app/coldstart/warmup.py).
warmup.start(settings, after_first_screen=True)

from attnviz.app import nav, state  # noqa: E402

state.leave_legacy_pages_mode()
st.set_page_config(page_title="attnviz", page_icon=str(nav.ICON), layout="wide")

from attnviz.app import charts, sidebar  # noqa: E402
from attnviz.app.server import client_guard, visitor  # noqa: E402

client_guard.install(settings)  # widget states that fit their widgets; one upload limit
state.start_run(settings)
visitor.identify(settings)  # one budget per visitor, whichever of their tabs
st.html(ROOT / "assets" / "style.css")
# Navigation before the sidebar's widgets: a widget's id includes the script hash active when it
# is created, and before st.navigation resolves the page a session's first run has another one,
# so the first change of a sidebar widget (the model, the device) was lost.
page = nav.navigation(state.lang())
context = sidebar.sidebar(settings)
st.session_state["_ctx"] = context
charts.sync_url(context, on_explorer=nav.is_explorer(page), page=page.url_path)
if not nav.is_explorer(page):  # the explorer does both after its sentence box (warmup.loading)
    preload.preload_chart_code()  # the browser loads the chart code now, not once the first chart's data is in
    # pandas, on this thread before the page: Streamlit and plotly read sys.modules["pandas"]
    # directly, so they must never find a half-imported pandas from another thread (app/coldstart/warmup.py)
    warmup.warm_up()
with visitor.turn():  # at most two runs of one visitor at once, whichever tabs
    page.run()
warmup.first_screen()  # whichever page came first, the warm-up may go ahead
charts.share_link(context, on_explorer=nav.is_explorer(page))  # values the page clamped, and the copy box

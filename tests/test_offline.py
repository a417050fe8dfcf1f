"""Nothing is fetched from outside the machine: every page of the app, in a real browser, with
every request and websocket to a host other than the loopback written down. Each page is opened
at its typed URL and must be that page (its own title, no "Page not found", no exception), its
Plotly charts drawn and its fonts loaded.

A classroom without internet must get the whole app from `streamlit run app.py` or the image:
fonts, icons, scripts, the favicon. Streamlit bundles its fonts and the Material Symbols icon
font, but a `:material/...:` *page icon* (set_page_config's page_icon, or an st.Page icon when
page_icon is not set) becomes the browser tab's favicon, which Streamlit's frontend loads from
fonts.gstatic.com. The app's page icon is therefore a local file, assets/icon.png.

Links (`<a href>` to papers) are not requests and are not counted; websockets are (only the
app's own, to the loopback, may open).

The visits are tests/test_load.py's cold start (scripts/loadtest.py `_cold`: every page at once,
each in a browser context of its own, so nothing comes from another visit's cache): a second
walk through every page here cost a minute of the suite and checked the same pages. Here: the
icon itself, and what decides "outside".
"""

from __future__ import annotations

from scripts.loadtest import outside

from .browser import ROOT


def test_the_page_icon_is_a_local_file() -> None:
    icon = ROOT / "assets" / "icon.png"
    assert icon.is_file() and icon.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_only_the_loopback_and_in_page_urls_are_inside() -> None:
    for url in (
        "http://127.0.0.1:8501/_stcore/stream",
        "ws://localhost:1/x",
        "http://[::1]:80/",
        "data:font/woff2;base64,AA",
        "blob:http://127.0.0.1/1",
        "about:blank",
    ):
        assert not outside(url), url
    for url in (
        "https://fonts.gstatic.com/s/x.woff2",
        "http://example.com/",
        "ws://10.0.0.1/stream",
        "https://127.0.0.1.evil.example/",
    ):
        assert outside(url), url

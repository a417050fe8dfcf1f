"""The app's pages: one file each in pages/; `PAGES` is the one list (tests and scripts visit
every page from it). Paths are absolute because AppTest runs the app from tests/app_entry.py,
and a relative `st.Page` path resolves against the entry script's folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from .. import i18n
from .streamlit_adapter import StreamlitPage

ROOT = Path(__file__).resolve().parents[2]  # the repository (or the folder that holds app.py and pages/)
PAGES_DIR = ROOT / "pages"
ICON = ROOT / "assets" / "icon.png"


@dataclass(frozen=True)
class PageSpec:
    name: str  # also the file name in pages/ and the URL path
    title_key: str  # the name in the navigation
    heading_key: str  # the page's title (its h1, from widgets.page_header)
    icon: str  # Streamlit's bundled Material Symbols font: nothing fetched (the favicon is assets/icon.png)


PAGES = (
    PageSpec("explorer", "nav.explorer", "explorer.title", ":material/grid_on:"),
    PageSpec("lesson", "nav.lesson", "lesson.title", ":material/school:"),
    PageSpec("class", "nav.class", "class.title", ":material/groups:"),
    PageSpec("lab", "nav.lab", "lab.title", ":material/science:"),
    PageSpec("explain", "nav.explain", "explain.title", ":material/insights:"),
    PageSpec("caveats", "nav.caveats", "caveats.title", ":material/warning:"),
    PageSpec("corpus", "nav.corpus", "corpus.title", ":material/library_books:"),
    PageSpec("training", "nav.training", "train.title", ":material/model_training:"),
)
DEFAULT = "explorer"
# The default page is served at "/" and Streamlit gives it no other path, so "/explorer"
# typed or shared would show "Page not found": a hidden alias runs the same file there.
ALIAS = "explorer"
DEFAULT_URL_PATH = "home"


def page(name: str, lang: str = i18n.DEFAULT_LANGUAGE) -> StreamlitPage:
    """The st.Page of one page (equal objects each time: Streamlit matches pages by URL path)."""
    if name == DEFAULT:
        return _page(name, lang, url_path=DEFAULT_URL_PATH, default=True)
    return _page(name, lang, url_path=name)


def alias(lang: str = i18n.DEFAULT_LANGUAGE) -> StreamlitPage:
    return _page(ALIAS, lang, url_path=ALIAS, visibility="hidden")


def _page(name: str, lang: str, **options: Any) -> StreamlitPage:
    spec = next(p for p in PAGES if p.name == name)
    return st.Page(PAGES_DIR / f"{name}.py", title=i18n.t(spec.title_key, lang), icon=spec.icon, **options)


def navigation(lang: str) -> StreamlitPage:
    """Register every page and return the one this run shows."""
    return st.navigation([*(page(p.name, lang) for p in PAGES), alias(lang)])


def is_explorer(current: StreamlitPage) -> bool:
    return current.url_path in ("", DEFAULT_URL_PATH, ALIAS)

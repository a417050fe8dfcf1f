"""The share link with a copy button: a tiny v2 component, not `st.code` and its highlighter
chunk. The link is set as textContent only (`.st-key-share_link code`).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import streamlit as st

from .state import t

CSS = (
    ".attnviz-copy{display:flex;flex-direction:column;gap:0.4rem;align-items:flex-start;margin-bottom:0.5rem}"
    ".attnviz-copy code{align-self:stretch;min-width:0;display:block;padding:0.5rem 0.75rem;border-radius:0.5rem;"
    "font-family:var(--st-code-font,'Source Code Pro',monospace);font-size:0.8rem;color:inherit;"
    "background:var(--st-secondary-background-color,#f0f2f6);white-space:pre-wrap;overflow-wrap:anywhere;"
    "user-select:text}"
    ".attnviz-copy button{flex:none;cursor:pointer;font:inherit;font-size:0.8rem;padding:0.35rem 0.6rem;"
    "border-radius:0.5rem;border:1px solid var(--st-border-color,#d5dae5);"
    "background:var(--st-background-color,#fff);color:var(--st-text-color,#31333f)}"
    ".attnviz-copy button:hover{border-color:var(--st-primary-color,#ff4b4b);color:var(--st-primary-color,#ff4b4b)}"
)


@cache
def _component() -> Any:
    js = resources.files(__package__).joinpath("copy_link.js").read_text("utf-8")
    return st.components.v2.component("attnviz_copy_link", js=js, css=CSS, isolate_styles=False)


def copy_link(link: str, key: str) -> None:
    """`link` in full with a copy button (labels in the page's language)."""
    data = {"link": link, "copy": t("copylink.copy"), "copied": t("copylink.copied"), "failed": t("copylink.failed")}
    _component()(key=key, data=data)


def link_of(element: Any) -> str | None:
    """The link a mounted copy_link shows, from its element (AppTest's `bidi_component`)."""
    proto = element.proto
    if "attnviz_copy_link" not in proto.component_name:
        return None
    return str(json.loads(proto.json)["link"])

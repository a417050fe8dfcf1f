"""Text shown as it is, monospaced, wrapped and exact, in a `<pre><code>` via `st.html`, every
character escaped; not `st.code`, whose 1.5 MB highlighter chunk every page would load.
`text_of` reads it back (tests, AppTest).
"""

from __future__ import annotations

import html
import re

import streamlit as st

CLASS = "attnviz-literal"
_STYLE = (
    "margin:0 0 1rem 0;padding:0.75rem 1rem;border-radius:0.5rem;"
    "background:rgba(151,166,195,0.15);"  # st.code's grey on white and on dark (no theme variables here)
    "white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word"
)
_CODE_STYLE = (
    "font-family:var(--st-code-font,'Source Code Pro',monospace);font-size:0.875rem;"
    "background:transparent;padding:0;white-space:inherit;color:inherit"
)
_TIP_STYLE = "text-decoration:underline dotted;cursor:help"  # a character with its pieces on hover
_BODY = re.compile(r'<pre class="' + CLASS + r'"[^>]*><code[^>]*>(.*)</code></pre>', re.DOTALL)


def body(text: str) -> str:
    """The HTML that shows `text` literally (every character escaped; nothing of it is markup)."""
    return parts_body([text], "", {})


def parts_body(parts: list[str], separator: str, titles: dict[int, str]) -> str:
    """`body` of the parts joined by `separator` (the same HTML for the same text), part i inside a span
    whose hover title is titles[i]: the byte pieces a character of a token list was cut into."""
    inner = [_escaped(part) for part in parts]
    for i, title in titles.items():
        if 0 <= i < len(inner):
            tip = _escaped(title)  # quotes too: html.escape's default
            inner[i] = f'<span title="{tip}" style="{_TIP_STYLE}">{inner[i]}</span>'
    joined = _escaped(separator).join(inner)
    return f'<pre class="{CLASS}" style="{_STYLE}"><code style="{_CODE_STYLE}">{joined}</code></pre>'


def _escaped(text: str) -> str:
    # line breaks as references too: one line, which st.html's dedent and strip leave alone
    return html.escape(text).replace("\r", "&#13;").replace("\n", "&#10;")


def literal(text: str) -> None:
    """`text` monospaced and wrapped, exactly as given, with no highlighter and no Markdown."""
    st.html(body(text))


def text_of(html_body: str) -> str | None:
    """The text a `literal` element shows (None for another HTML element)."""
    found = _BODY.fullmatch(html_body.strip())
    # the only tags inside are parts_body's spans: the text itself is escaped, so holds no "<"
    return html.unescape(re.sub(r"<[^>]*>", "", found.group(1))) if found else None

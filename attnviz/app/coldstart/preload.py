"""The browser's early fetch of Streamlit's lazily loaded chart or component code, once a page's
first screen is out: Plotly's chart module (4.7 MB) otherwise loads with the first chart's data,
and its compile holds the browser's main thread for a second or more.
"""

from __future__ import annotations

import re

from ..streamlit_adapter import ENTRY_MODULE, build_file, chunk_pattern

# The chunks' names in Streamlit's build: Plotly's, the v2 components' (the canvas map), and
# st.code's highlighter (no page loads it any more: app/literal.py, copy_link.py; tests watch for it)
CHART_CODE, COMPONENT_CODE, CODE_CODE = (chunk_pattern(kind) for kind in ("chart", "component", "code"))
_CHART_CODE_SENT = "_chart_code_sent"
# A classic script may import a module: the URL is resolved against Streamlit's own entry module,
# so the browser's module map holds one copy, which the chart's lazy import then finds ready.
_PRELOAD_JS = """<script>(() => {
  const main = document.querySelector('ENTRY');
  if (!main) return;
  let done = false;
  const go = () => { if (done) return; done = true;
    requestAnimationFrame(() => setTimeout(() => import(new URL('./NAME', main.src).href).catch(() => {}), 0)); };
  const shown = () => !'AFTER' || document.querySelector('AFTER');
  if (shown()) return go();
  const seen = new MutationObserver(() => { if (shown()) { seen.disconnect(); go(); } });
  seen.observe(document.body, {childList: true, subtree: true, attributes: true, attributeFilter: ['class']});
  setTimeout(() => { seen.disconnect(); go(); }, WAIT_MS);
})();</script>"""
PRELOAD_WAIT_MS = 3000  # no such element by then: the code loads anyway
MAP_DRAWN = ".attnviz-map-drawn"  # the explorer's canvas map once drawn (app/token_canvas.js)
SAFE_SELECTOR = re.compile(r"[A-Za-z0-9_ .#>-]*")


def preload_script(name: str, after: str = "") -> str:
    """The script that imports Streamlit's module `name` once the element `after` (a CSS
    selector of ours) is painted, or after PRELOAD_WAIT_MS, so its compile does not hold up the
    sentence box or the first map."""
    known = any(p.fullmatch(name) for p in (CHART_CODE, COMPONENT_CODE, CODE_CODE))
    if not known or not SAFE_SELECTOR.fullmatch(after):
        raise ValueError("not a chart or component code file name or not a plain selector")
    return (
        _PRELOAD_JS.replace("ENTRY", ENTRY_MODULE)
        .replace("NAME", name)
        .replace("AFTER", after)
        .replace("WAIT_MS", str(PRELOAD_WAIT_MS))
    )


def preload_chart_code(after: str = "", *, first_map: bool = False) -> None:
    """On a session's first run: the chart code (with `first_map`, the component code instead)
    loads once `after` is drawn. The script names only checked file names and selectors."""
    import streamlit as st

    if st.session_state.get(_CHART_CODE_SENT):
        return
    st.session_state[_CHART_CODE_SENT] = True
    name = build_file("component" if first_map else "chart")
    if name is not None:
        st.sidebar.html(preload_script(name, after), unsafe_allow_javascript=True)

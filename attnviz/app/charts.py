"""Plotly charts in the page, what a click on one does, and the link that keeps the view.

Every chart downloads for slides from the browser, with nothing installed on the server: the
modebar's camera saves a PNG `SLIDE_WIDTH` x `SLIDE_SCALE` px wide (`image_config`), and the
row under each chart (`image_buttons`) saves PNG or SVG through the page's own plotly.js
(`Plotly.toImage`), with the model and the sentence in a caption under the plot.

Callbacks live here, not in a page: Streamlit keeps a chart widget's metadata, callback
included, for the rest of the session, and a chart's widget id changes with its figure. A
callback defined in a page script would pin that run's globals (a 512-token attention is
75 MB, plus its figures) for every figure ever drawn in the session."""

from __future__ import annotations

import html
import json
import urllib.parse
from typing import Any, Literal

import plotly.graph_objects as go
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.elements.plotly_chart import PlotlyState

from .. import views
from ..models import EMBEDDED_MODEL
from ..views.charts import CAPTION_FONT, CAPTION_ROOM, slide_caption
from . import copy_link, nav, plot_theme, urls
from .state import SENTENCE, Ctx, set_sentence, t

__all__ = [
    "SLIDE_HEIGHT",
    "SLIDE_SCALE",
    "SLIDE_WIDTH",
    "chart",
    "focus_from_chart",
    "highlight_from_chart",
    "image_buttons",
    "image_config",
    "open_in_explorer",
    "share_link",
    "sync_url",
    "theme_mode",
]

SLIDE_WIDTH = 960  # css px the figure is laid out at for an image...
SLIDE_SCALE = 2  # ...and the pixels per css px of a PNG: 1920 px wide
SLIDE_HEIGHT = 540  # a figure without a height of its own: 16:9
NO_SENTENCE_PAGES = frozenset({"corpus", "training"})  # their charts are not of the sentence
PAGE = "_page"  # the url path of the page this run draws (set by sync_url)

# One click handler for every image row of the page, installed once (the page is one document).
_IMAGES_JS = """(() => {
  if (window.__attnvizImages) return;
  window.__attnvizImages = true;
  const chartOf = (button) => {
    const key = button.dataset.chart;
    const keyed = key && document.querySelector('.st-key-' + CSS.escape(key) + ' .js-plotly-plot');
    if (keyed) return keyed;
    const box = button.closest('[data-testid="stElementContainer"]');
    for (let el = box && box.previousElementSibling; el; el = el.previousElementSibling) {
      const gd = el.querySelector('.js-plotly-plot');
      if (gd) return gd;
    }
    return null;
  };
  document.addEventListener('click', (event) => {
    const button = event.target.closest && event.target.closest('[data-attnviz-image]');
    if (!button) return;
    const d = button.dataset, save = (url) => {
      const a = document.createElement('a');
      a.href = url; a.download = d.name + '.' + d.attnvizImage;
      document.body.appendChild(a); a.click(); a.remove();
      d.state = 'done';
    };
    const canvas = d.chart && document.querySelector('.st-key-' + CSS.escape(d.chart) + ' [data-attnviz-map]');
    if (canvas && canvas.__attnvizImage) {  // the explorer's canvas heatmap (app/token_canvas.py)
      const scale = d.attnvizImage === 'png' ? Number(d.scale) : 1;
      save(canvas.__attnvizImage(d.attnvizImage, d.caption, Number(d.width), Number(d.height), scale, ROOM, FONT));
      return;
    }
    const gd = chartOf(button), Plotly = window.Plotly;
    if (!gd || !Plotly || !gd._fullLayout) { d.state = 'unavailable'; return; }
    const format = d.attnvizImage, bottom = gd._fullLayout.margin.b;
    const layout = Object.assign({}, gd.layout);
    delete layout.width; delete layout.height;
    layout.margin = Object.assign({}, gd.layout.margin || {}, {b: bottom + ROOM});
    layout.annotations = [...(gd.layout.annotations || []), {text: d.caption, xref: 'paper', yref: 'paper',
      x: 0, y: 0, xanchor: 'left', yanchor: 'top', yshift: -(bottom + 6), showarrow: false, align: 'left', font: FONT}];
    const size = {format: format, width: Number(d.width), height: Number(d.height) + ROOM,
      scale: format === 'png' ? Number(d.scale) : 1};
    d.state = 'working';
    Plotly.toImage({data: gd.data, layout: layout}, size).then(save).catch(() => { d.state = 'failed'; });
  });
})();""".replace("ROOM", str(CAPTION_ROOM)).replace("FONT", json.dumps(CAPTION_FONT))


_IMAGES_CSS = (
    ".attnviz-images{display:flex;gap:.5rem;flex-wrap:wrap}"
    ".attnviz-images button{font:inherit;font-size:.875rem;padding:.2rem .75rem;cursor:pointer;"
    "border:1px solid rgba(128,128,128,.35);border-radius:.5rem;background:transparent;color:inherit}"
    ".attnviz-images button:hover{border-color:currentColor}"
)


def _height(fig: go.Figure) -> int:
    height = fig.layout.height
    return int(min(max(height, 300), 2400)) if isinstance(height, int | float) else SLIDE_HEIGHT


def image_config(fig: go.Figure, name: str) -> dict[str, Any]:
    """Plotly's config for a chart: no logo, and the camera saves a slide-sized PNG (1920 px)."""
    size = {"width": SLIDE_WIDTH, "height": _height(fig), "scale": SLIDE_SCALE}
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, **size}}


def chart(fig: go.Figure, key: str, *, caption: str | None = None, **kwargs: Any) -> PlotlyState | DeltaGenerator:
    """A figure across the column's width (its words are already in the visitor's language), and
    under it the row that saves it as PNG or SVG for a slide. `caption`: what the images say
    under the plot (Plotly text); default the model and the sentence (`page_caption`)."""
    name = "attnviz-" + key.removeprefix("chart_").replace("_", "-")
    theme: Literal["streamlit"] | None = None
    if plot_theme.streamlit_theme_customised():  # a [theme] of the deployment's own: Streamlit's colours
        shown, theme = fig, "streamlit"
    else:  # drawn once, not twice (plot_theme's doc)
        shown = plot_theme.for_browser(fig, theme_mode(), _selection(kwargs))
    out = st.plotly_chart(shown, width="stretch", key=key, config=image_config(fig, name), theme=theme, **kwargs)
    image_buttons(fig, key, name, page_caption() if caption is None else caption)
    return out


def _selection(kwargs: dict[str, Any]) -> tuple[str, ...]:
    """The selection modes of a chart that reports selections (st.plotly_chart's defaults)."""
    if kwargs.get("on_select", "ignore") == "ignore":
        return ()
    modes = kwargs.get("selection_mode", ("points", "box", "lasso"))
    return (modes,) if isinstance(modes, str) else tuple(modes)


def theme_mode() -> plot_theme.Mode:
    """The visitor's light or dark theme as the browser reported it (light when it did not)."""
    try:
        kind = st.context.theme.type
    except Exception:  # bare mode, an older client: Streamlit's default
        kind = None
    return "dark" if kind == "dark" else "light"


def page_caption() -> str:
    """The model and the sentence, as a chart of this page shows them under an image."""
    session = st.session_state
    context = session.get("_ctx")
    model = context.model if isinstance(context, Ctx) else None
    if session.get(PAGE) in NO_SENTENCE_PAGES:
        return slide_caption(None, f"attnviz · {model}" if model else "attnviz")
    return slide_caption(str(session.get(SENTENCE, "")), model)


def image_buttons(fig: go.Figure | int, key: str, name: str, caption: str) -> None:
    """PNG (1920 px wide) and SVG of the chart `key` just drawn, made in the browser; `fig`: the
    figure, or the height in px of a chart that is not a figure (the canvas map)."""
    height = fig if isinstance(fig, int) else _height(fig)
    attrs = {"data-chart": key, "data-name": name, "data-caption": caption, "data-width": str(SLIDE_WIDTH),
             "data-height": str(height), "data-scale": str(SLIDE_SCALE)}  # fmt: skip
    common = " ".join(f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
    buttons = "".join(
        f'<button type="button" class="attnviz-image" data-attnviz-image="{fmt}" {common} '
        f'title="{html.escape(t(f"slides.{fmt}_help"), quote=True)}">{html.escape(t(f"slides.{fmt}"))}</button>'
        for fmt in ("png", "svg")
    )
    st.html(
        f"<style>{_IMAGES_CSS}</style>"
        f'<div class="attnviz-images" data-images-for="{html.escape(key, quote=True)}">{buttons}</div>'
        f"<script>{_IMAGES_JS}</script>",
        unsafe_allow_javascript=True,
    )


def focus_from_chart(chart_key: str) -> None:
    """on_select callback: focus the explorer on the head clicked in chart `chart_key`."""
    pick = views.model_view_pick(st.session_state.get(chart_key))
    if pick is not None:
        st.session_state["layer"], st.session_state["head"] = pick


def highlight_from_chart(chart_key: str) -> None:
    """on_select callback: highlight the token clicked in chart `chart_key`."""
    token = views.token_pick(st.session_state.get(chart_key))
    if token is not None:
        st.session_state["highlight"] = token


def _params(context: Ctx, on_explorer: bool) -> dict[str, str | None]:
    session = st.session_state
    layer, head = (session.get("layer"), session.get("head")) if on_explorer else (None, None)
    base = urls.url_params(session.get(SENTENCE, ""), context.model, EMBEDDED_MODEL, context.lang, layer, head)
    return base | urls.view_params(session)


def sync_url(context: Ctx, on_explorer: bool, page: str | None = None) -> None:
    """Write the view into the URL, so it can be shared: the sentence, model, language, (on the
    explorer) layer/head, and the rest of the view (`urls.VIEW_PARAMS`: heads off, hidden
    sinks, ...); only what changed is written. `page`: this run's url path (for the captions)."""
    if page is not None:
        st.session_state[PAGE] = page
    qp = st.query_params
    for k, v in _params(context, on_explorer).items():
        if v is None:
            if k in qp:
                del qp[k]
        elif qp.get(k) != v:
            qp[k] = v


def share_link(context: Ctx, on_explorer: bool) -> None:
    """After the page: the URL once more (values the page clamped are written back) and, in the
    sidebar, the link to this view with a copy button (app/copy_link.py: no highlighter)."""
    sync_url(context, on_explorer)
    query = urllib.parse.urlencode(st.query_params.to_dict())
    try:
        base = st.context.url or ""
    except Exception:  # bare mode, an older client: a link relative to the page
        base = ""
    with st.sidebar.container(key="share_link"):
        st.caption(t("copylink.share"))
        copy_link.copy_link(f"{base}?{query}" if query else base or "?", key="share_link_copy")
        if len(str(st.session_state.get(SENTENCE, ""))) > urls.URL_TEXT_MAX:
            st.caption(t("links.text_left_out", limit=urls.URL_TEXT_MAX))


def open_in_explorer(context: Ctx, layer: int, head: int, sentence: str | None = None) -> None:
    """Focus the explorer on one head (from a click on another page), with a shareable URL."""
    session = st.session_state
    session["layer"], session["head"] = int(layer), int(head)
    if sentence is not None:
        set_sentence(sentence)
    params = {k: v for k, v in _params(context, on_explorer=True).items() if v is not None}
    st.switch_page(nav.alias(context.lang), query_params=params)

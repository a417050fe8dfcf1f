"""Plotly charts in the page, what a click on one does, and the link that keeps the view. Each
chart has a row of PNG (1920 x 1080) and SVG (960 x 540) slide buttons, made in the browser.

Callbacks live here, not in a page: Streamlit keeps a chart widget's callback for the rest of
the session, and one defined in a page script would pin that run's globals (a 512-token
attention is 75 MB).
"""

from __future__ import annotations

import html
import re
import urllib.parse
from functools import cache
from importlib import resources
from typing import Any, Literal

import plotly.graph_objects as go
import streamlit as st

from .. import views
from ..export import script_json
from ..models import EMBEDDED_MODEL
from ..views._base import one_line
from ..views.charts import CAPTION_CHARS
from ..views.margins import square_fit
from . import copy_link, nav, plot_theme, urls
from .readers import model_label
from .state import SENTENCE, Ctx, browser, set_sentence, t
from .streamlit_adapter import DeltaGenerator, PlotlyState, theme_options_set

SLIDE_WIDTH = 960  # css px a slide (and the chart in it) is laid out at...
SLIDE_HEIGHT = 540  # ...and its height: 16:9
SLIDE_SCALE = 2  # the pixels per css px of a PNG: 1920 x 1080
NO_SENTENCE_PAGES = frozenset({"corpus", "training"})  # their charts are not of the sentence
PAGE = "_page"  # the url path of the page this run draws (set by sync_url)
SWITCHES = "_image_switches"  # (page, heads off, sinks hidden): what this page's pictures show switched
# Notes in a figure's title that say what a click does: an image cannot be clicked. The note and
# what an image says in its place (None: nothing).
HINT_NOTES = {"fig.note_click_head": None, "abl.fig.note_off": "abl.fig.note_off_image"}


@cache
def _images_js() -> str:
    """The page's one click handler for every image row (slides.js)."""
    return resources.files(__package__).joinpath("slides.js").read_text("utf-8")


_IMAGES_CSS = (
    ".attnviz-images{display:flex;gap:.5rem;flex-wrap:wrap}"
    ".attnviz-images button{font:inherit;font-size:.875rem;padding:.2rem .75rem;cursor:pointer;"
    "border:1px solid rgba(128,128,128,.35);border-radius:.5rem;background:transparent;color:inherit}"
    ".attnviz-images button:hover{border-color:currentColor}"
)


def image_config(name: str) -> dict[str, Any]:
    """Plotly's config for a chart: no logo, and the camera saves a 16:9 PNG, 1920 x 1080."""
    size = {"width": SLIDE_WIDTH, "height": SLIDE_HEIGHT, "scale": SLIDE_SCALE}
    return {"displaylogo": False, "toImageButtonOptions": {"format": "png", "filename": name, **size}}


def image_title(fig: go.Figure) -> str | None:
    """The figure's title as a slide shows it, the notes on clicking taken out (`HINT_NOTES`);
    None when it has none to take out."""
    title = fig.layout.title.text
    if not isinstance(title, str):
        return None
    shown = title
    for key, instead in HINT_NOTES.items():
        shown = shown.replace(f"<br><sup>{t(key)}</sup>", f"<br><sup>{t(instead)}</sup>" if instead else "")
    return shown if shown != title else None


def chart(fig: go.Figure, key: str, *, caption: str | None = None, **kwargs: Any) -> PlotlyState | DeltaGenerator:
    """A figure across the column's width and the row that saves it as a slide; `caption`
    (Plotly text) defaults to `page_caption`."""
    theme: Literal["streamlit"] | None = None
    if theme_options_set():  # a [theme] of the deployment's own: Streamlit's colours
        shown, theme = fig, "streamlit"
    else:  # drawn once, not twice (plot_theme's doc); light unless the browser reported dark
        mode: plot_theme.Mode = "dark" if browser("theme.type") == "dark" else "light"
        shown = plot_theme.for_browser(fig, mode, _selection(kwargs))
    config = image_config(_image_name(key))
    out = st.plotly_chart(shown, width="stretch", key=key, config=config, theme=theme, **kwargs)
    image_buttons(fig, key, caption, style=fit_style(fig, shown, key))
    return out


def fit_style(fig: go.Figure, shown: go.Figure, key: str) -> str:
    """CSS that makes the chart `key`, if it draws square maps, no taller than they need at the
    page's width (views.margins.square_fit) nor than its own height: the server does not know
    the width. `shown`: the figure as sent (margins themed); shapes are read from `fig`."""
    height = fig.layout.height
    if not isinstance(height, int | float) or not re.fullmatch(r"[A-Za-z0-9_-]+", key):
        return ""
    traces = [
        {"type": "heatmap", "showscale": tr.showscale, "colorbar": {"orientation": tr.colorbar.orientation},
         "xaxis": tr.xaxis or "x", "yaxis": tr.yaxis or "y", "z": tr.z}
        for tr in fig.data if tr.type == "heatmap" and tr.z is not None and len(tr.z)
    ]  # fmt: skip
    fit = square_fit(shown.layout.to_plotly_json(), traces)
    if fit is None:
        return ""
    tb, lr, k = fit
    box = f".st-key-{key}"
    return (
        f"{box}{{container-type:inline-size;height:auto!important;flex:0 0 auto!important}}{box} [data-testid=stFullScreenFrame]{{height:auto!important}}"
        f"{box} [data-testid=stPlotlyChart]{{height:min({height:.0f}px,calc({tb:.0f}px + (100cqw - {lr:.0f}px) * {k:.5f}))}}"
    )


def _plain(text: str) -> str:
    """Plotly text as the plain text a caption draws: line breaks as spaces, tags out, entities read."""
    return html.unescape(re.sub(r"<[^>]*>", "", re.sub(r"<br\s*/?>", " ", text)))


def _selection(kwargs: dict[str, Any]) -> tuple[str, ...]:
    """The selection modes of a chart that reports selections (st.plotly_chart's defaults)."""
    if kwargs.get("on_select", "ignore") == "ignore":
        return ()
    modes = kwargs.get("selection_mode", ("points", "box", "lasso"))
    return (modes,) if isinstance(modes, str) else tuple(modes)


def caption_switches(settings: dict[str, Any]) -> None:
    """The switches that change this page's pictures (`settings` as the exports record them:
    "heads_off", "hide_sinks"), for the captions of its images (`page_caption`)."""
    heads = [(int(a), int(b)) for a, b in settings.get("heads_off", ())]
    st.session_state[SWITCHES] = (st.session_state.get(PAGE), heads, bool(settings.get("hide_sinks")))


def page_caption() -> list[str]:
    """The plain-text lines under this page's images: the model and the sentence, then the
    switches that change the picture (heads off, sinks hidden)."""
    session = st.session_state
    context = session.get("_ctx")
    label = model_label(context.model) if isinstance(context, Ctx) else None
    model = [one_line(label, 80)] if label else []
    if session.get(PAGE) in NO_SENTENCE_PAGES:
        return [" · ".join(["attnviz", *model])]
    sentence = str(session.get(SENTENCE, "")).strip()
    first = " · ".join(model + ([f"“{one_line(sentence, CAPTION_CHARS)}”"] if sentence else []))
    page, heads, sinks = session.get(SWITCHES, (None, [], False))
    switched = []
    if page == session.get(PAGE) and heads:
        shown = "; ".join(t("fig.layer_head", layer=a, head=b) for a, b in heads[:8])
        switched.append(t("slides.heads_off", heads=shown + ("; …" if len(heads) > 8 else ""), n=len(heads)))
    if page == session.get(PAGE) and sinks:
        switched.append(t("slides.sinks_hidden"))
    return [line for line in (first, " · ".join(switched)) if line]


def _image_name(key: str) -> str:
    return "attnviz-" + key.removeprefix("chart_").replace("_", "-")


def image_buttons(fig: go.Figure | int, key: str, caption: str | list[str] | None = None, style: str = "") -> None:
    """PNG and SVG slides of the chart `key` just drawn; `fig`: the figure, or a canvas's height in
    px; `caption`: plain-text lines or one line of Plotly text (`page_caption` by default). The
    caption's JSON escapes markup characters: Streamlit's sanitiser drops an attribute whose value
    holds "</script>"."""
    height, title = (fig, None) if isinstance(fig, int) else (fig.layout.height, image_title(fig))
    if not isinstance(fig, int):  # the chart's own height in css px (a slide scales a taller one down)
        height = int(min(max(height, 300), 2400)) if isinstance(height, int | float) else SLIDE_HEIGHT
    caption = page_caption() if caption is None else caption
    lines = [_plain(caption)] if isinstance(caption, str) else list(caption)
    attrs = {"data-chart": key, "data-name": _image_name(key), "data-caption": script_json(lines),
             "data-width": str(SLIDE_WIDTH), "data-height": str(height), "data-slide-height": str(SLIDE_HEIGHT),
             "data-scale": str(SLIDE_SCALE)}  # fmt: skip
    if title is not None:
        attrs["data-title"] = title
    common = " ".join(f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
    buttons = "".join(
        f'<button type="button" class="attnviz-image" data-attnviz-image="{fmt}" {common} '
        f'title="{html.escape(t(f"slides.{fmt}_help"), quote=True)}">{html.escape(t(f"slides.{fmt}"))}</button>'
        for fmt in ("png", "svg")
    )
    st.html(
        f"<style>{_IMAGES_CSS}{style}</style>"
        f'<div class="attnviz-images" data-images-for="{html.escape(key, quote=True)}">{buttons}</div>'
        f"<script>{_images_js()}</script>",
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
    """Write what changed of the view into the URL (`urls.url_params`, `urls.VIEW_PARAMS`);
    `page`: this run's url path (for the captions)."""
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
    """After the page: the URL once more (with values the page clamped) and the link with a copy
    button in the sidebar."""
    sync_url(context, on_explorer)
    query = urllib.parse.urlencode({k: v for k, v in st.query_params.to_dict().items() if k not in urls.CLASS_KEYS})
    base = browser("url") or ""  # none: a link relative to the page
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

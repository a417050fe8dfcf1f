"""The app layer every page shares: language, deployment settings, the sidebar, model loading
and result caching, the sentence box, safe display of user text, exports and the URL.

Streamlit lives here and in the pages, never in the `attnviz` package. Caching follows one
rule: models and analysis results are process-wide objects (st.cache_resource), never
st.cache_data, which would pickle-copy a 75 MB result on every rerun.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

import attnviz
from attnviz import export, i18n, views
from attnviz.cache import ResultCache
from attnviz.config import Settings, check_text, settings_from_env

ROOT = Path(__file__).resolve().parent.parent
EXPLORER = "app_pages/explorer.py"
LAB = "app_pages/lab.py"
EXPLAIN = "app_pages/explain.py"
CAVEATS = "app_pages/caveats.py"

EMBEDDED = attnviz.EMBEDDED_MODEL
CUSTOM = "__custom__"  # model choice: "type a Hugging Face id or a folder"
MEAN = -1  # head choice: the mean over heads
URL_TEXT_MAX = 500  # longer sentences stay out of the URL (browsers and proxies cap its length)
FAILED_LOAD_TTL_S = 60.0  # a model that failed to load is not retried on every rerun for this long
LANGUAGE_NAMES = {"en": "English", "zh": "中文"}
TOKEN_SEPARATOR = " · "  # between tokens shown as text (brackets would blur with "[" tokens)

# Widget keys whose values should survive a visit to another page (Streamlit drops the state of
# widgets that a run does not draw unless it is re-assigned at the top of every run).
PERSISTENT_KEYS = (
    "sentence",
    "model_id",
    "layer",
    "head",
    "hide_special",
    "merge_words",
    "color_range",
    "threshold",
    "hv_heads",
    "highlight",
    "lab_scale",
    "lab_positions",
    "lab_causal",
    "lab_random",
    "lab_seed",
    "lab_layer",
    "lab_head",
    "x_layer",
    "x_query",
    "x_stat",
    "focus_query",
    "focus_key",
    "mp_a",
    "mp_b",
    "mp_query",
    "mp_keys",
)


@dataclass(frozen=True)
class Ctx:
    """What every page needs from the shared sidebar."""

    lang: str
    settings: Settings
    model: str  # the model the visitor chose, already checked against the allow-list
    device: str
    max_tokens: int


# --- language -------------------------------------------------------------------------------


def lang() -> str:
    value = st.session_state.get("lang", i18n.DEFAULT_LANGUAGE)
    return value if value in i18n.LANGUAGES else i18n.DEFAULT_LANGUAGE


def t(key: str, **fmt: Any) -> str:
    return i18n.t(key, lang(), **fmt)


def option_labels(pattern: str) -> Callable[[Any], str]:
    """A format_func for translated option labels, bound to this run's language (Streamlit
    may call format_func outside the script run, where the session is out of reach)."""
    language = lang()
    return lambda value: i18n.t(pattern.format(value), language)


def examples() -> dict[str, Any]:
    return i18n.examples(lang())


def example_sentences(language: str | None = None) -> list[dict[str, str]]:
    data = i18n.examples(language or lang())
    return [s for fam in data["families"] for s in fam["sentences"]]


def example_for(text: str, language: str | None = None) -> dict[str, str] | None:
    """The example whose sentence is `text` (for token-focus defaults and language switches)."""
    return next((s for s in example_sentences(language) if s["text"] == text.strip()), None)


# --- safe display of user text ----------------------------------------------------------------

_MD_PUNCT = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")


def escape_md(text: str, limit: int = 400) -> str:
    """User text made inert for st.markdown / st.error / labels: every ASCII punctuation mark
    backslash-escaped (links, HTML, `$...$` LaTeX and `:red[...]` directives stay literal), a
    word joiner after each colon so `:emoji:` shortcodes do not match, one line, bounded length."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return _MD_PUNCT.sub(r"\\\1", text).replace(":", ":\u2060")


def show_error(message: str, detail: str | None = None) -> None:
    """A readable error in the page: our message (trusted) and the detail (escaped)."""
    st.error(message if not detail else f"{message}\n\n{escape_md(detail)}", icon=":material/error:")


def token_label(tokens: list[str], i: int) -> str:
    """Selectbox option text (plain text, not Markdown): position and token."""
    return f"{i}: {tokens[i]}"


def token_format(tokens: list[str], none: str | None = None) -> Callable[[int], str]:
    """A format_func for token pickers (`none` labels index -1). It holds the tokens only:
    Streamlit keeps a widget's format_func for the rest of the session, and a lambda written in
    a page would keep that run's globals (the attention, the figures) alive with it."""
    tokens = list(tokens)
    return lambda i: none if none is not None and i < 0 else token_label(tokens, i)


def show_tokens(tokens: list[str], key: str = "tokens") -> None:
    """The tokens as literal text (st.code renders nothing as Markdown or HTML)."""
    with st.container(key=key):
        st.caption(t("tokens.label", n=len(tokens)))
        st.code(TOKEN_SEPARATOR.join(tokens), language=None, wrap_lines=True)


def find_token(tokens: list[str], word: str, start: int = 0) -> int | None:
    """Index of the first token that is `word` (case-insensitive), or shows it as unknown
    ("[UNK]:它"), at or after `start`."""
    w = word.strip().lower()
    for i in range(start, len(tokens)):
        tok = tokens[i].lower()
        if tok == w or tok.endswith(":" + w):
            return i
    return None


# --- settings, first load, sidebar ------------------------------------------------------------


def setup() -> Ctx:
    """Run at the top of app.py on every rerun: defaults, the URL on first load, the sidebar."""
    settings = settings_from_env()
    ss = st.session_state
    if "_initialised" not in ss:
        _first_load(settings)
        ss["_initialised"] = True
    for key in PERSISTENT_KEYS:
        if key in ss:
            ss[key] = ss[key]
    ss["_lang_prev"] = lang()
    st.html(ROOT / "assets" / "style.css")
    ctx = _sidebar(settings)
    ss["_ctx"] = ctx
    return ctx


def ctx() -> Ctx:
    """The context app.py built for this run (pages are always run through app.py)."""
    value = st.session_state.get("_ctx")
    return value if isinstance(value, Ctx) else setup()


def _first_load(settings: Settings) -> None:
    """Defaults for a new session, then whatever a shared link carries (?text=&model=&layer=&head=&lang=)."""
    ss = st.session_state
    qp = st.query_params
    language = qp.get("lang") if qp.get("lang") in i18n.LANGUAGES else i18n.language_from_locale(_locale())
    ss["lang"] = language
    ss["sentence"] = i18n.examples(language)["default"]
    ss["model_choice"] = model_options(settings)[0]
    ss["model_id"] = ""
    ss["device"] = "auto"
    ss["max_tokens"] = settings.max_tokens
    notices: list[tuple[str, str]] = []
    text = qp.get("text")
    if text is not None:
        if text.strip() and len(text) <= settings.max_chars:
            ss["sentence"] = text
        else:
            notices.append((i18n.t("err.url_text", language, limit=settings.max_chars), ""))
    model = qp.get("model")
    if model:
        try:
            model = settings.check_model(model)
        except ValueError as exc:  # refused before any loading
            notices.append((i18n.t("err.model_not_allowed", language), str(exc)))
        else:
            if model in model_options(settings):
                ss["model_choice"] = model
            else:
                ss["model_choice"] = CUSTOM
                ss["model_id"] = model
    for key in ("layer", "head"):
        raw = qp.get(key)
        if raw is None:
            continue
        if key == "head" and raw == "mean":
            ss["head"] = MEAN
        elif raw.isdigit() and len(raw) < 4:
            ss[key] = int(raw)
    ss["_notices"] = notices


def _locale() -> str | None:
    try:
        return st.context.locale
    except Exception:  # older clients or bare mode: no locale
        return None


def model_options(settings: Settings) -> list[str]:
    builtin = [EMBEDDED, "scratch"]
    if settings.allowed_models:
        return list(settings.allowed_models)
    return [*builtin, CUSTOM]


def _model_labels() -> Callable[[str], str]:
    labels = {EMBEDDED: t("model.minilm"), "scratch": t("model.scratch"), CUSTOM: t("model.custom")}
    return lambda name: labels.get(name, name)


# Widgets whose option labels change with the language. The browser reports a choice by its
# label, so after a language switch those labels would no longer match and Streamlit would
# reset the choice; the language callback pins each value first (it still reads the old labels).
TRANSLATED_OPTIONS = ("model_choice", "color_range", "x_stat")


def _on_language_change() -> None:
    """Keep an example sentence an example: swap it for the same example in the new language."""
    ss = st.session_state
    for key in TRANSLATED_OPTIONS:
        if key in ss:
            ss[key] = ss[key]
    old, new = ss.get("_lang_prev", i18n.DEFAULT_LANGUAGE), lang()
    current = ss.get("sentence", "")
    if current.strip() == i18n.examples(old)["default"]:
        ss["sentence"] = i18n.examples(new)["default"]
        return
    ex = example_for(current, old)
    if ex is not None:
        match = next((s for s in example_sentences(new) if s["id"] == ex["id"]), None)
        if match is not None:
            ss["sentence"] = match["text"]


def _sidebar(settings: Settings) -> Ctx:
    ss = st.session_state
    with st.sidebar:
        st.radio(
            "Language / 语言",
            i18n.LANGUAGES,
            key="lang",
            format_func=LANGUAGE_NAMES.__getitem__,
            horizontal=True,
            on_change=_on_language_change,
        )
        options = model_options(settings)
        if ss.get("model_choice") not in options:
            ss["model_choice"] = options[0]
        choice = st.selectbox(
            t("sidebar.model"), options, key="model_choice", format_func=_model_labels(), help=t("sidebar.model_help")
        )
        name = choice
        if choice == CUSTOM:
            typed = st.text_input(
                t("sidebar.model_id"), key="model_id", placeholder="bert-base-uncased", help=t("sidebar.model_id_help")
            )
            name = typed.strip() or EMBEDDED
            if not typed.strip():
                st.caption(t("sidebar.model_id_empty"))
        devices = available_devices()
        if ss.get("device") not in devices:
            ss["device"] = "auto"
        device = st.selectbox(t("sidebar.device"), devices, key="device", help=t("sidebar.device_help"))
        ss["max_tokens"] = min(max(2, int(ss.get("max_tokens", settings.max_tokens))), settings.max_tokens)
        max_tokens = st.number_input(
            t("sidebar.max_tokens"),
            min_value=2,
            max_value=settings.max_tokens,
            step=16,
            key="max_tokens",
            help=t("sidebar.max_tokens_help", limit=settings.max_tokens),
        )
        if settings.demo:
            st.caption(t("sidebar.demo"))
        st.caption(t("sidebar.about", version=attnviz.__version__))
    try:
        name = settings.check_model(name)
    except ValueError as exc:
        st.session_state.setdefault("_notices", []).append((t("err.model_not_allowed"), str(exc)))
        name = EMBEDDED
    return Ctx(lang=lang(), settings=settings, model=name, device=device, max_tokens=int(max_tokens))


def available_devices() -> list[str]:
    """Only devices that exist here."""
    devices = ["auto", "cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def show_notices() -> None:
    """Messages from reading a shared link (a refused model id, an unusable text), shown once."""
    for message, detail in st.session_state.pop("_notices", []):
        show_error(message, detail or None)


# --- models and results -----------------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=6)  # ~90 MB each for MiniLM-sized models
def _load_model(
    name: str,
    device: str,
    max_tokens: int,
    scale: bool = True,
    positions: bool = True,
    causal: bool = False,
    weights: str = "pretrained",
    seed: int = 0,
) -> Any:
    return attnviz.load_model(
        name,
        device,
        scale=scale,
        positions=positions,
        causal=causal,
        weights="random" if weights == "random" else "pretrained",
        seed=seed,
        max_tokens=max_tokens,
    )


@st.cache_resource(show_spinner=False)
def _load_failures() -> dict[Hashable, tuple[float, str]]:
    return {}


@st.cache_resource(show_spinner=False)
def _result_cache(max_entries: int, max_bytes: int) -> ResultCache:
    return ResultCache(max_entries=max_entries, max_bytes=max_bytes)


def results(settings: Settings) -> ResultCache:
    """The process-wide bounded cache of analysis results."""
    return _result_cache(settings.cache_entries, settings.cache_mb * 2**20)


ModelKey = tuple[Any, ...]


def load_runner(c: Ctx, name: str | None = None, *, fallback: bool = True, **opts: Any) -> tuple[Any, ModelKey] | None:
    """The runner for `name` (default: the sidebar's model) and its cache key, loaded once per
    process. A model that cannot be loaded gives a readable error and, with `fallback`, the
    embedded model instead; None only if even that fails."""
    name = name or c.model
    if name != "scratch":
        opts = {}
    key: ModelKey = (name, c.device, tuple(sorted(opts.items())))
    failures = _load_failures()
    try:
        c.settings.check_model(name)  # an allow-list refuses before any loading
        failed = failures.get(key)
        if failed and time.monotonic() - failed[0] < FAILED_LOAD_TTL_S:
            raise attnviz.ModelLoadError(failed[1])
        with st.spinner(t("spinner.loading", name=escape_md(name))):
            runner = _load_model(name, c.device, c.settings.max_tokens, **opts)
        failures.pop(key, None)
        return runner, key
    except (ValueError, attnviz.ModelLoadError) as exc:
        failures[key] = (time.monotonic(), str(exc))
        reason = str(exc)
    except Exception as exc:  # torch / transformers internals: still a message, not a traceback
        reason = f"{type(exc).__name__}: {exc}"
        failures[key] = (time.monotonic(), reason)
    falls_back = fallback and name != EMBEDDED
    message = t("err.model_failed_fallback", model=t("model.minilm")) if falls_back else t("err.model_failed")
    show_error(message, f"{name}: {reason}")
    if falls_back:
        return load_runner(c, EMBEDDED, fallback=False)
    return None


def checked_text(c: Ctx, text: str | None) -> str | None:
    """The text if it can be analysed; otherwise a readable error (limits named) and None."""
    text = text or ""
    if not text.strip():
        show_error(t("err.empty"))
        return None
    if len(text) > c.settings.max_chars:
        show_error(t("err.too_long", n=f"{len(text):,}", limit=f"{c.settings.max_chars:,}"))
        return None
    try:
        return check_text(text, c.settings.max_chars)
    except ValueError as exc:
        show_error(t("err.bad_input"), str(exc))
        return None


def analyse(
    c: Ctx,
    loaded: tuple[Any, ModelKey],
    text: str,
    *,
    hide_special: bool = False,
    merge_words: bool = False,
) -> attnviz.Attention | None:
    """Attention of `text` from the bounded result cache (the model runs only on a miss), with
    special tokens hidden and word pieces merged on request. None after showing an error."""
    runner, key = loaded
    cache = results(c.settings)
    base_key = ("attend", key, text, c.max_tokens)
    try:
        with st.spinner(t("spinner.running", n=f"{len(text):,}")):
            att = cache.get_or_compute(base_key, lambda: runner.attend(text, c.max_tokens))
    except torch.OutOfMemoryError:
        if c.device == "cpu":
            show_error(t("err.oom_cpu"))
            return None
        st.warning(t("err.oom_fallback"), icon=":material/memory:")
        cpu = Ctx(c.lang, c.settings, c.model, "cpu", c.max_tokens)
        loaded_cpu = load_runner(cpu, key[0], fallback=False, **dict(key[2]))
        return (
            None
            if loaded_cpu is None
            else analyse(cpu, loaded_cpu, text, hide_special=hide_special, merge_words=merge_words)
        )
    except ValueError as exc:
        show_error(t("err.bad_input"), str(exc))
        return None
    except attnviz.ModelLoadError as exc:
        show_error(t("err.no_attention"), str(exc))
        return None
    except Exception as exc:  # never a traceback in the page
        show_error(t("err.unexpected"), f"{type(exc).__name__}: {exc}")
        return None
    if not (hide_special or merge_words):
        return att

    def derive() -> attnviz.Attention:
        out = att.without_special() if hide_special else att
        return out.merge_words() if merge_words else out

    return cache.get_or_compute(("view", *base_key, hide_special, merge_words), derive)


def truncation_notice(att: attnviz.Attention) -> None:
    if att.truncated:
        st.warning(
            t("notice.truncated", kept=f"{att.n:,}", total=f"{att.n_input_tokens:,}"), icon=":material/content_cut:"
        )


def run_settings(c: Ctx, att: attnviz.Attention, **extra: Any) -> dict[str, Any]:
    """What produced a result, bundled into every export."""
    return {
        "text": att.text,
        "model": att.model,
        "device": att.device,
        "max_tokens": c.max_tokens,
        "attnviz": attnviz.__version__,
        **extra,
    }


# --- the sentence box -------------------------------------------------------------------------


def _set_sentence(text: str) -> None:
    st.session_state["sentence"] = text


def sentence_box(c: Ctx) -> str:
    """The shared sentence (key "sentence") and the one-click examples (keys "ex_<id>")."""
    with st.container(key="sentence_box"):
        text = st.text_area(
            t("sentence.label"),
            key="sentence",
            height=80,
            help=t("sentence.help", limit=f"{c.settings.max_chars:,}", tokens=c.max_tokens),
        )
        families = examples()["families"]
        cols = st.columns(len(families))
        for col, fam in zip(cols, families, strict=True):
            with col:
                st.caption(t(f"examples.{fam['id']}"))
                inner = st.columns(len(fam["sentences"]))
                for box, ex in zip(inner, fam["sentences"], strict=True):
                    box.button(
                        ex["label"],
                        key=f"ex_{ex['id']}",
                        on_click=_set_sentence,
                        args=(ex["text"],),
                        help=t("examples.use"),
                        width="stretch",
                    )
    return text


# --- layer / head pickers ---------------------------------------------------------------------


# Option labels of selectboxes are the same in every language: Streamlit keeps a selectbox's
# value as its label, and a label that changed with the language would reset the choice.
MEAN_LABEL = "mean · 平均"


def fmt_layer(layer: int) -> str:
    return str(layer)


def fmt_head(head: int) -> str:
    return MEAN_LABEL if head == MEAN else str(head)


def layer_head(
    n_layers: int, n_heads: int, layer_key: str = "layer", head_key: str = "head", *, allow_mean: bool = True
) -> tuple[int, int | None]:
    """Layer and head selectboxes; values are clamped when a new model has fewer of either."""
    ss = st.session_state
    if not isinstance(ss.get(layer_key), int) or not 0 <= ss[layer_key] < n_layers:
        ss[layer_key] = min(max(int(ss.get(layer_key, 0) or 0), 0), n_layers - 1)
    heads = ([MEAN] if allow_mean else []) + list(range(n_heads))
    if ss.get(head_key) not in heads:
        ss[head_key] = heads[0] if not allow_mean else 0
    a, b = st.columns(2)
    layer = a.selectbox(t("ctl.layer"), range(n_layers), key=layer_key, format_func=fmt_layer, help=t("ctl.layer_help"))
    head = b.selectbox(t("ctl.head"), heads, key=head_key, format_func=fmt_head, help=t("ctl.head_help"))
    return int(layer), (None if head == MEAN else int(head))


# --- exports ----------------------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def image_export_problem() -> str | None:
    """None if PNG/SVG export works in this process, else why not (checked once)."""
    import plotly.graph_objects as go

    try:
        export.figure_image(go.Figure(), "svg")
    except export.ExportUnavailable as exc:
        return str(exc)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def figure_downloads(fig: Any, name: str, settings: dict[str, Any]) -> None:
    """HTML (offline, plotly.js inlined) for every view, PNG/SVG where an engine exists. The
    bytes are built only when a button is clicked."""
    problem = image_export_problem()
    cols = st.columns(3 if problem is None else 1)
    cols[0].download_button(
        t("export.html"),
        data=lambda: export.figure_html(fig, settings),
        file_name=f"attnviz-{name}.html",
        mime="text/html",
        key=f"dl_{name}_html",
        on_click="ignore",
        icon=":material/download:",
    )
    if problem is None:
        for col, fmt, mime in ((cols[1], "png", "image/png"), (cols[2], "svg", "image/svg+xml")):
            col.download_button(
                fmt.upper(),
                data=lambda fmt=fmt: export.figure_image(fig, fmt),
                file_name=f"attnviz-{name}.{fmt}",
                mime=mime,
                key=f"dl_{name}_{fmt}",
                on_click="ignore",
                icon=":material/image:",
            )


def image_export_note() -> None:
    problem = image_export_problem()
    if problem is not None:
        st.caption(t("export.no_image", reason=escape_md(problem, limit=200)))


def number_downloads(att: attnviz.Attention, layer: int, head: int | None, settings: dict[str, Any]) -> None:
    """The focused head as CSV, the whole attention as NPZ and JSON, each with its settings."""
    a, b, c = st.columns(3)
    a.download_button(
        t("export.csv"),
        data=lambda: export.head_csv(att, layer, head, settings),
        file_name="attnviz-head.csv",
        mime="text/csv",
        key="dl_csv",
        on_click="ignore",
        icon=":material/table:",
    )
    b.download_button(
        t("export.npz"),
        data=lambda: export.attention_npz(att, settings),
        file_name="attnviz-attention.npz",
        mime="application/octet-stream",
        key="dl_npz",
        on_click="ignore",
        icon=":material/data_array:",
    )
    c.download_button(
        t("export.json"),
        data=lambda: export.attention_json(att, settings),
        file_name="attnviz-attention.json",
        mime="application/json",
        key="dl_json",
        on_click="ignore",
        icon=":material/data_object:",
    )


# --- the rest ---------------------------------------------------------------------------------


def caveat(key: str) -> None:
    """A short caveat beside a view, linking to the caveats page."""
    st.caption(t(key))
    st.page_link(CAVEATS, label=t("caveat.more"), icon=":material/info:")


# English axis, colour-bar and legend titles that attnviz.views writes, and their catalogue keys.
FIGURE_WORDS = {
    "head": "fig.head",
    "layer": "fig.layer",
    "weight": "fig.weight",
    "mean weight": "fig.mean_weight",
    "attention weight": "fig.weight",
    "edge weight": "fig.edge_weight",
    "key (attended to)": "axis.key",
    "query (attending)": "axis.query",
    "tokens n": "cost.tokens",
}


def localise(fig: Any) -> Any:
    """Translate the fixed words views.py puts on axes, colour bars and legends."""
    if lang() == i18n.DEFAULT_LANGUAGE:
        return fig

    def swap(title: Any) -> None:
        text = getattr(title, "text", None)
        if text in FIGURE_WORDS:
            title.text = t(FIGURE_WORDS[text])

    fig.for_each_xaxis(lambda axis: swap(axis.title))
    fig.for_each_yaxis(lambda axis: swap(axis.title))
    swap(fig.layout.legend.title)
    for trace in fig.data:
        colorbar = getattr(trace, "colorbar", None)
        if colorbar is not None:
            swap(colorbar.title)
    return fig


def chart(fig: Any, key: str, **kwargs: Any) -> Any:
    return st.plotly_chart(localise(fig), width="stretch", key=key, config={"displaylogo": False}, **kwargs)


def _url_params(on_explorer: bool) -> dict[str, str | None]:
    ss = st.session_state
    c: Ctx = ss["_ctx"]
    text = ss.get("sentence", "")
    wanted: dict[str, str | None] = {
        "text": text if text.strip() and len(text) <= URL_TEXT_MAX else None,
        "model": c.model if c.model != EMBEDDED else None,
        "lang": c.lang,
        "layer": None,
        "head": None,
    }
    if on_explorer:
        layer, head = ss.get("layer"), ss.get("head")
        wanted["layer"] = str(layer) if isinstance(layer, int) else None
        wanted["head"] = ("mean" if head == MEAN else str(head)) if isinstance(head, int) else None
    return wanted


def sync_url(on_explorer: bool) -> None:
    """Write the sentence, model, language and (on the explorer) layer/head into the URL, so a
    view can be shared; only what changed is written."""
    qp = st.query_params
    for k, v in _url_params(on_explorer).items():
        if v is None:
            if k in qp:
                del qp[k]
        elif qp.get(k) != v:
            qp[k] = v


def focus_from_chart(chart_key: str) -> None:
    """on_select callback: focus the explorer on the head clicked in chart `chart_key`.

    Defined here, not in a page: Streamlit keeps a chart widget's metadata, callback included,
    for the rest of the session, and a chart's widget id changes with its figure. A callback
    defined in a page script would pin that run's globals (a 512-token attention is 75 MB, plus
    its figures) for every figure ever drawn in the session."""
    pick = views.model_view_pick(st.session_state.get(chart_key))
    if pick is not None:
        st.session_state["layer"], st.session_state["head"] = pick


def highlight_from_chart(chart_key: str) -> None:
    """on_select callback: highlight the token clicked in chart `chart_key` (see focus_from_chart)."""
    token = views.token_pick(st.session_state.get(chart_key))
    if token is not None:
        st.session_state["highlight"] = token


def open_in_explorer(layer: int, head: int, sentence: str | None = None) -> None:
    """Focus the explorer on one head (from a click on another page), with a shareable URL."""
    ss = st.session_state
    ss["layer"], ss["head"] = int(layer), int(head)
    if sentence is not None:
        ss["sentence"] = sentence
    params = {k: v for k, v in _url_params(on_explorer=True).items() if v is not None}
    st.switch_page(EXPLORER, query_params=params)


def max_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b|, in float64 one slice of the first axis at a time: a whole 512-token
    attention in float64 makes 150 MB temporaries (300 MB more at the peak, and 9x slower)."""
    if not a.size:
        return 0.0
    if a.ndim < 2 or a.shape != b.shape:
        return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
    return max(float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) for x, y in zip(a, b, strict=True))


def attention_like(att: attnviz.Attention, weights: np.ndarray) -> attnviz.Attention:
    """`att` with other weights of the same shape (a permuted or derived map, for the views)."""
    return replace(att, weights=weights)


def fit_text(runner: Any, text: str, max_tokens: int) -> str:
    """The prefix of `text` that the runner's own encode() keeps within `max_tokens` tokens, so
    explanations (which encode the text themselves) see the same tokens as the views."""
    enc = runner.tokenizer(text, truncation=True, max_length=max_tokens, return_offsets_mapping=True)
    offsets = [end for _, end in enc["offset_mapping"] if end]
    return text[: max(offsets)] if offsets and max(offsets) < len(text) else text

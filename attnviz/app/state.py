"""Session state: the context every page runs in, what a shared link sets on first load, and
what survives a page switch: `KEPT`. A kept value lives in its home; `start_run` assigns each
widget from its home at the top of every run (Streamlit drops a widget's state at the end of a
run that does not draw it, unless its key was assigned in that run). A widget is its own home
(`Kept("layer")`), or `keep` (its on_change) copies it home at the start of the run that
receives the change, so a page switch in that run cannot lose it (docs/RELIABILITY.md, hole 8).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import streamlit as st

from .. import i18n
from ..config import Settings
from ..models.unknown_tokens import model_for_language
from . import link_refusals, urls
from .streamlit_adapter import leave_legacy_pages_mode

SENTENCE = "sentence"  # the sentence, never a widget key
SENTENCE_INPUT = "sentence_input"  # the text box
SENTENCE_TEXT_AREA = f".st-key-{SENTENCE_INPUT} textarea"  # the box once drawn, as the browser finds it
CUSTOM = "__custom__"  # model choice: "type a Hugging Face id or a folder"
MEAN = urls.MEAN  # head choice: the mean over heads

ABLATION_MODE = "ablation_mode"  # "zero" | "mean": what a switched-off head gives
ABLATION_CLICK = "ablation_click"  # bool: a click in the all-heads grid switches heads off
HIDE_SINKS = "hide_sinks_on"  # bool: the explorer's "hide sinks" switch
# The lab's sections below the fold, each an expander closed by default (widgets.lazily)
LAB_SECTIONS = ("lab_order_open", "lab_sparse_open", "lab_cross_open", "lab_pairs_open", "lab_flash_open")
LANG_HOME = "ui_lang"  # the language; the sidebar's radio ("lang") copies itself here on change


@dataclass(frozen=True)
class Kept:
    """A value that survives a visit to another page: it lives in `home`, shown by `widget`."""

    home: str
    widget: str = ""  # "": the widget's key is the home

    @property
    def widget_key(self) -> str:
        return self.widget or self.home


# Everything that outlives a page (a widget with a home of its own: on_change=keep, args=(widget,)).
KEPT: tuple[Kept, ...] = (
    Kept(SENTENCE, SENTENCE_INPUT),
    Kept(ABLATION_MODE, "_abl_mode"),
    Kept(ABLATION_CLICK, "_abl_click"),
    Kept(HIDE_SINKS, "sinks_toggle"),
    # A browser can send the language radio back as its first option when a page switches the
    # page itself; only a real change (on_change) moves the home.
    Kept(LANG_HOME, "lang"),
    *(Kept(key) for key in (
        "model_id", "layer", "head", "hide_special", "merge_words", "color_range", "threshold", "hv_heads",
        "highlight", "focus_query", "focus_key", "focus_open", urls.VIEWS_OPEN,
        "lab_scale", "lab_positions", "lab_causal", "lab_random", "lab_seed", "lab_layer", "lab_head",
        "x_layer", "x_query", "x_stat", *LAB_SECTIONS,
        # what was typed in the lab's sections (no default value: kept as they are)
        "cross_same", "cross_y", "pairs_example", "pairs_a", "pairs_b", "mp_a", "mp_b", "mp_query", "mp_keys",
        "corpus_source", "corpus_limit", "corpus_tokens", "corpus_stat", "corpus_layer", "corpus_head",
        "corpus_atlas_method", "corpus_atlas_colour", "corpus_atlas_points",
        "train_task", "train_text", "train_layers", "train_heads", "train_d_model", "train_steps", "train_seed",
        "train_plateau", "train_sparse", "train_window",
    )),
)  # fmt: skip
_BY_WIDGET = {k.widget_key: k for k in KEPT}


@dataclass(frozen=True)
class Ctx:
    """What every page needs from the shared sidebar."""

    lang: str
    settings: Settings
    model: str  # the model the visitor chose, already checked against the allow-list
    device: str
    max_tokens: int


def lang() -> str:
    value = st.session_state.get("lang", i18n.DEFAULT_LANGUAGE)
    return value if value in i18n.LANGUAGES else i18n.DEFAULT_LANGUAGE


def t(key: str, **fmt: Any) -> str:
    return i18n.t(key, lang(), **fmt)


def model_options(settings: Settings) -> list[str]:
    """The model list: the allow-list in a demo; otherwise the built-in models, the ones baked
    into the image (ATTNVIZ_EXTRA_MODELS) and a free-text choice."""
    if settings.allowed_models:
        return list(settings.model_choices)
    return [*settings.model_choices, CUSTOM]


def browser(path: str) -> Any:
    """What the browser told Streamlit: `st.context`'s `path` ("locale", "theme.type", "url"); None
    where it said nothing (bare mode, an older client)."""
    try:
        return operator.attrgetter(path)(st.context)
    except Exception:
        return None


def set_sentence(text: str) -> None:
    """Make `text` the sentence (example buttons, language switch, links)."""
    st.session_state[SENTENCE] = text
    st.session_state[SENTENCE_INPUT] = text


def start_run(settings: Settings) -> None:
    """At the top of every run: defaults and the shared link on a session's first run, then
    keep what must survive a page switch."""
    session = st.session_state
    if "_initialised" not in session:
        _first_load(settings)
        session["_initialised"] = True
    for kept in KEPT:
        if kept.home in session:
            session[kept.widget_key] = session[kept.home]
    session["_lang_prev"] = lang()


def keep(widget: str) -> None:
    """on_change of a widget with a home of its own (see `KEPT`): its value goes home at once."""
    st.session_state[_BY_WIDGET[widget].home] = st.session_state.get(widget)


def ctx() -> Ctx:
    """The context app.py built for this run. A page run without app.py is a cold server's
    legacy first run (see `leave_legacy_pages_mode`): it reruns through app.py instead."""
    value = st.session_state.get("_ctx")
    if not isinstance(value, Ctx):
        leave_legacy_pages_mode()
        st.rerun()
    assert isinstance(value, Ctx)
    return value


def _first_load(settings: Settings) -> None:
    """Defaults for a new session, then whatever a shared link carries."""
    session = st.session_state
    params = st.query_params.to_dict()
    link = urls.parse_link(params, settings.max_chars)
    language = link.lang or i18n.language_from_locale(browser("locale"))
    session["lang"] = session[LANG_HOME] = language
    set_sentence(link.text or i18n.examples(language)["default"])
    session["model_choice"] = model_for_language(language, model_options(settings))  # e5-small for Chinese
    session["model_id"] = ""
    session["device"] = "auto"
    session["max_tokens"] = settings.max_tokens
    notices: list[tuple[str, str]] = []
    if "text" in link.problems:
        notices.append((link_refusals.text_refusal(link, settings.max_chars, language), ""))
    if "model" in link.problems:
        notices.append((i18n.t("err.model_not_allowed", language), i18n.t("err.bad_model_name", language)))
    if link.model:
        try:
            model = settings.check_model(link.model)
        except ValueError as exc:  # refused before any loading
            notices.append((i18n.t("err.model_not_allowed", language), str(exc)))
        else:  # one the sidebar lists, or the free-text choice holding it
            custom = model not in model_options(settings)
            session["model_choice"] = CUSTOM if custom else model
            session["model_id"] = model if custom else ""
    if link.layer is not None:
        session["layer"] = link.layer
    if link.head is not None:
        session["head"] = link.head
    urls.apply_view(session, link)  # the rest of the view: heads off, sinks, tokens, ...
    # what the link carried and nothing uses leaves the URL (and Streamlit's copy of it), said so:
    # our own keys with why (text and model have their notices above), others counted
    unused = urls.unused_params(params, link)
    for key in unused:
        del st.query_params[key]
    if names := link_refusals.removed_names(params, unused, language):
        notices.append((i18n.t("links.removed", language, names=names), ""))
    session["_notices"] = notices

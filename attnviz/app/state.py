"""Session state: the context every page runs in, what a shared link sets on first load, and
what survives a page switch.

The sentence has one home, the plain key `SENTENCE`, which Streamlit never cleans up. The text
box is a widget with its own key whose on_change callback copies into it: a widget's state is
dropped when a run does not draw it, and a fast page switch right after Ctrl+Enter could
otherwise lose the text or bring back an older one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from .. import i18n
from ..config import Settings
from ..models import EMBEDDED_MODEL
from . import urls

__all__ = [
    "CUSTOM",
    "MEAN",
    "PERSISTENT_KEYS",
    "SENTENCE",
    "SENTENCE_INPUT",
    "Ctx",
    "ctx",
    "lang",
    "leave_legacy_pages_mode",
    "model_options",
    "set_sentence",
    "start_run",
    "t",
]

SENTENCE = "sentence"  # the sentence, never a widget key
SENTENCE_INPUT = "sentence_input"  # the text box
CUSTOM = "__custom__"  # model choice: "type a Hugging Face id or a folder"
MEAN = urls.MEAN  # head choice: the mean over heads

# Widget keys whose values should survive a visit to another page (Streamlit drops the state of
# widgets that a run does not draw unless it is re-assigned at the top of every run).
PERSISTENT_KEYS = (
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
    "corpus_source",
    "corpus_limit",
    "corpus_tokens",
    "corpus_stat",
    "corpus_layer",
    "corpus_head",
    "corpus_atlas_method",
    "corpus_atlas_colour",
    "corpus_atlas_points",
)


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


def set_sentence(text: str) -> None:
    """Make `text` the sentence (example buttons, language switch, links)."""
    st.session_state[SENTENCE] = text
    st.session_state[SENTENCE_INPUT] = text


def start_run(settings: Settings) -> None:
    """At the top of every run: defaults and the shared link on a session's first run, then
    keep what must survive a page switch."""
    ss = st.session_state
    if "_initialised" not in ss:
        _first_load(settings)
        ss["_initialised"] = True
    for key in PERSISTENT_KEYS:
        if key in ss:
            ss[key] = ss[key]
    # the box always starts a run from the sentence: its own state may have been dropped with
    # the last page's widgets, and what was typed is already in SENTENCE (its on_change ran first)
    ss[SENTENCE_INPUT] = ss.get(SENTENCE, "")
    ss["_lang_prev"] = lang()


def ctx() -> Ctx:
    """The context app.py built for this run. A page run without app.py is a cold server's
    legacy first run (see `leave_legacy_pages_mode`): it reruns through app.py instead."""
    value = st.session_state.get("_ctx")
    if not isinstance(value, Ctx):
        leave_legacy_pages_mode()
        st.rerun()
    assert isinstance(value, Ctx)
    return value


def leave_legacy_pages_mode() -> None:
    """Streamlit decides once per process, when the first session starts, whether the app is an
    old-style multipage app: `PagesManager.uses_pages_directory` becomes True when a `pages/`
    folder sits beside the main script, and stays so until some run calls st.navigation. Until
    then a visitor whose first URL is /lab gets pages/lab.py run on its own, without app.py
    (seen with eight simultaneous first visits to a cold server). app.py is never an old-style
    app: it says so at the top of every run, and a page that finds itself run alone reruns."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


def _first_load(settings: Settings) -> None:
    """Defaults for a new session, then whatever a shared link carries."""
    ss = st.session_state
    link = urls.parse_link(st.query_params.to_dict(), settings.max_chars)
    language = link.lang or i18n.language_from_locale(_locale())
    ss["lang"] = language
    set_sentence(link.text or i18n.examples(language)["default"])
    ss["model_choice"] = model_options(settings)[0]
    ss["model_id"] = ""
    ss["device"] = "auto"
    ss["max_tokens"] = settings.max_tokens
    notices: list[tuple[str, str]] = []
    if "text" in link.problems:
        notices.append((i18n.t("err.url_text", language, limit=settings.max_chars), ""))
    if "model" in link.problems:
        notices.append((i18n.t("err.model_not_allowed", language), i18n.t("err.bad_model_name", language)))
    if link.model:
        _choose_model(settings, link.model, language, notices)
    if link.layer is not None:
        ss["layer"] = link.layer
    if link.head is not None:
        ss["head"] = link.head
    _drop_unused(link, language, notices)
    ss["_notices"] = notices


def _drop_unused(link: urls.Link, language: str, notices: list[tuple[str, str]]) -> None:
    """Remove what the link carried and nothing uses from the URL (and Streamlit's copy of it);
    say so, naming our own keys (text and model have their notices above) and counting others."""
    unused = urls.unused_params(st.query_params.to_dict(), link)
    for key in unused:
        del st.query_params[key]
    names = [k for k in unused if k in urls.LINK_KEYS and k not in ("text", "model")]
    others = sum(k not in urls.LINK_KEYS for k in unused)
    if others:
        names.append(i18n.t("links.others", language, n=others))
    if names:
        notices.append((i18n.t("links.removed", language, names=", ".join(names)), ""))


def _choose_model(settings: Settings, model: str, language: str, notices: list[tuple[str, str]]) -> None:
    ss = st.session_state
    try:
        model = settings.check_model(model)
    except ValueError as exc:  # refused before any loading
        notices.append((i18n.t("err.model_not_allowed", language), str(exc)))
        return
    if model in model_options(settings):
        ss["model_choice"] = model
    else:
        ss["model_choice"] = CUSTOM
        ss["model_id"] = model


def _locale() -> str | None:
    try:
        return st.context.locale
    except Exception:  # older clients or bare mode: no locale
        return None


def default_model() -> str:
    return EMBEDDED_MODEL

"""The sidebar every page shares: language, model, device and token limit; it builds the Ctx."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from .. import __version__, i18n
from ..config import Settings
from ..models import EMBEDDED_MODEL, MODEL_NAME_MAX
from ..models.names import E5_MODEL, SMOLLM2_MODEL
from ..models.tokens import token_limit
from ..models.unknown_tokens import model_for_language
from . import readers, widgets
from .server import session_models
from .state import CUSTOM, SENTENCE, Ctx, keep, lang, model_options, set_sentence, t

LANGUAGE_NAMES = {"en": "English", "zh": "中文"}
# Widgets whose option labels change with the language. The browser reports a choice by its
# label, so after a language switch those labels would no longer match and Streamlit would
# reset the choice; the language callback pins each value first (it still reads the old labels).
TRANSLATED_OPTIONS = ("model_choice", "color_range", "x_stat", "train_task")


def available_devices() -> list[str]:
    """Only devices that exist here. Where no GPU can (no NVIDIA or AMD driver, not a Mac), known
    without torch, which a cold server's first run is still importing in the warm-up thread."""
    devices = ["auto", "cpu"]
    if sys.platform != "darwin" and not any(Path(p).exists() for p in ("/proc/driver/nvidia", "/dev/kfd")):
        return devices
    import torch

    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def _on_language_change() -> None:
    """Keep an example sentence an example: swap it for the same example in the new language."""
    session = st.session_state
    keep("lang")  # the one place the language changes (state.LANG_HOME)
    for key in TRANSLATED_OPTIONS:
        if key in session:
            session[key] = session[key]
    old, new = session.get("_lang_prev", i18n.DEFAULT_LANGUAGE), lang()
    context = session.get("_ctx")
    if isinstance(context, Ctx):  # a language's own model (e5-small for Chinese) follows the language
        options = model_options(context.settings)
        if session.get("model_choice") == model_for_language(old, options):
            session["model_choice"] = model_for_language(new, options)
    current = str(session.get(SENTENCE, ""))
    if current.strip() == i18n.examples(old)["default"]:
        set_sentence(i18n.examples(new)["default"])
        return
    ex = i18n.example_for(current, old)
    match = None if ex is None else next((s for s in i18n.example_sentences(new) if s["id"] == ex["id"]), None)
    if match is not None:
        set_sentence(match["text"])


def _model_labels(extra: tuple[str, ...]) -> Callable[[str], str]:
    # every label made now, in this run's language: the widget formats its value again later
    labels = {name: readers.model_label(name) for name in (EMBEDDED_MODEL, E5_MODEL, "scratch", SMOLLM2_MODEL)}
    labels.update({CUSTOM: t("model.custom"), **{name: t("model.baked", name=name) for name in extra}})
    for name in session_models.names():  # models trained in this session (Training lab)
        m = session_models.trained(name)
        if m is not None:
            labels[name] = t(
                "train.model_label", task=t(f"train.task.{m.task}"), layers=m.layers, heads=m.heads, step=m.step
            )
    return lambda name: labels.get(name, name)


def model_label(name: str) -> str:
    """A model's name as the sidebar shows it, in this run's language (a raw id stays as it is;
    a model trained in this session by its task and shape)."""
    return _model_labels(())(name)


def _model(settings: Settings) -> str:
    options = model_options(settings)
    trained = session_models.names()  # this session's trained models, before the free-text choice
    options = [*options[:-1], *trained, options[-1]] if options[-1:] == [CUSTOM] else [*options, *trained]
    labels = _model_labels(settings.extra_models)
    choice = widgets.pick(t("sidebar.model"), options, "model_choice", format_func=labels, help=t("sidebar.model_help"))
    if choice != CUSTOM:
        return str(choice)
    typed = st.text_input(
        t("sidebar.model_id"),
        key="model_id",
        max_chars=MODEL_NAME_MAX,
        placeholder="bert-base-uncased",
        help=t("sidebar.model_id_help"),
    )
    if not typed.strip():
        st.caption(t("sidebar.model_id_empty"))
    return typed.strip() or EMBEDDED_MODEL


def sidebar(settings: Settings) -> Ctx:
    session = st.session_state
    with st.sidebar:
        st.radio(
            "Language / 语言",
            i18n.LANGUAGES,
            key="lang",
            format_func=LANGUAGE_NAMES.__getitem__,
            horizontal=True,
            on_change=_on_language_change,
        )
        name = _model(settings)
        device = widgets.pick(t("sidebar.device"), available_devices(), "device", help=t("sidebar.device_help"))
        limit = settings.token_limit(name)
        session["max_tokens"] = token_limit(session.get("max_tokens"), limit)
        max_tokens = st.number_input(
            t("sidebar.max_tokens"),
            min_value=2,
            max_value=limit,
            step=16,
            key="max_tokens",
            help=t("sidebar.max_tokens_help", limit=limit),
        )
        if settings.demo:
            st.caption(t("sidebar.demo"))
        st.caption(t("sidebar.about", version=__version__))
    try:
        name = name if session_models.owns(name) else settings.check_model(name)
    except ValueError as exc:
        session.setdefault("_notices", []).append((t("err.model_not_allowed"), str(exc)))
        name = EMBEDDED_MODEL
    return Ctx(lang=lang(), settings=settings, model=name, device=str(device), max_tokens=int(max_tokens))

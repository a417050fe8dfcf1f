"""Which model reads the visitor's text: the explorer's notice when the model cannot read part of
it (unknown tokens), and the offered model that does (models/unknown_tokens.py counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ..models.unknown_tokens import MAX_UNKNOWN_SHARE, reader_for, unknown_tokens
from .state import CUSTOM, Ctx, model_options, t
from .widgets import escape_md

if TYPE_CHECKING:  # the frame imports model_label (charts' slide captions) before torch may load
    from ..models import Runner

_SHOWN_CHARACTERS = 12


def model_label(name: str) -> str:
    """The display name of a built-in model in this run's language (the name itself otherwise)."""
    key = {
        "minilm": "model.minilm",
        "e5-small": "model.e5",
        "scratch": "model.scratch",
        "smollm2": "model.smollm2",
    }.get(name)
    return t(key) if key else name


def unknown_notice(context: Ctx, runner: Runner, text: str, *, offer_reader: bool = True) -> float:
    """How many tokens are unknown and what that does to the pictures, and above
    MAX_UNKNOWN_SHARE (with `offer_reader`) the offered model that reads the text. Returns the
    share unknown (0 for a tokenizer that cannot say)."""
    try:
        found = unknown_tokens(runner.tokenizer, text, context.max_tokens)
    except (TypeError, KeyError, ValueError, NotImplementedError):  # a tokenizer without offsets or masks
        return 0.0
    if not found.unknown:
        return 0.0
    shown = "".join(found.characters[:_SHOWN_CHARACTERS]) + ("…" if len(found.characters) > _SHOWN_CHARACTERS else "")
    message = t(
        "unknown.notice",
        count=found.unknown,
        total=found.ordinary,
        share=f"{found.share:.0%}",
        characters=escape_md(shown) if shown else "?",
    )
    if found.share > MAX_UNKNOWN_SHARE and offer_reader:
        offered = [m for m in model_options(context.settings) if m != CUSTOM]
        reader = reader_for(text, offered, runner.name, context.max_tokens)
        said = t("unknown.no_reader") if reader is None else t("unknown.reader", model=model_label(reader))
        message += "\n\n" + said
    st.warning(message, icon=":material/help:")
    return found.share

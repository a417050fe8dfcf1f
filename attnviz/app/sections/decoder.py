"""The explorer's decoder panel (issue 19): what the model would write next, the logit lens of
the chosen token (layers by rank), and the rotary distance view of the head in focus; also the
byte pieces of a character shown as the character, and the notice that SmolLM2 reads mostly
English. Nothing here for an encoder (no next word) beyond a no-op.

The numbers come from attnviz.predict, attnviz.explain.logit_lens and
attnviz.explain.rotary, through the bounded result cache; tables hold tokens as data."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import numpy as np
import streamlit as st

from ...explain.logit_lens import logit_lens
from ...explain.rotary import rotary_distance
from ...models.names import SMOLLM2_MODEL
from ...nextword import predict
from ...result import Attention, char_groups
from ...views import decoder as views
from .. import charts, runners
from ..runners import Loaded
from ..state import Ctx, t
from ..widgets import escape_md, show_error

__all__ = ["has_byte_pieces", "notices", "panel", "whole_characters"]

LOG = logging.getLogger("attnviz")
NEXT_K = 10  # next tokens listed
LENS_K = 5  # ranks of the logit lens table


class FocusLike(Protocol):  # the explorer's Focus (sections/explorer.py imports this module)
    @property
    def loaded(self) -> Loaded: ...
    @property
    def text(self) -> str: ...
    @property
    def att(self) -> Attention: ...
    @property
    def layer(self) -> int: ...
    @property
    def head(self) -> int | None: ...


def has_byte_pieces(att: Attention) -> bool:
    """Some tokens are byte pieces of one character (a byte-level tokenizer on 我 or 😀)."""
    return len(att.spans) == att.n and bool(att.text) and len(char_groups(att.spans, att.special)) < att.n


def whole_characters(context: Ctx, loaded: Loaded, text: str, att: Attention, *view: object) -> Attention:
    """`att` with the byte pieces of each character merged into the character (cached; `view`:
    the switches that made `att`, part of the cache key). The same object when there are none."""
    if not has_byte_pieces(att):
        return att
    return runners.cached(context, loaded, "characters", text, *view, fn=att.merge_characters)


def notices(loaded: Loaded, merged: bool) -> None:
    """SmolLM2 was trained mostly on English; byte pieces are shown merged."""
    if loaded.runner.name == SMOLLM2_MODEL:
        st.info(t("decoder.english_only"), icon=":material/translate:")
    if merged:
        st.caption(t("decoder.byte_pieces"))


def _is_decoder(loaded: Loaded) -> bool:
    return bool(getattr(loaded.runner, "causal", False)) and getattr(loaded.runner, "lm_head", None) is not None


def panel(context: Ctx, focus: FocusLike) -> None:
    """The next word, the logit lens and the rotary view; nothing for an encoder."""
    if not _is_decoder(focus.loaded):
        return
    with st.container(key="decoder_next"):
        st.subheader(t("dec.next_title"))
        st.caption(t("dec.next_intro", k=NEXT_K))
        left, right = st.columns([2, 3], gap="large")
        with left:
            _next_word(context, focus)
        with right:
            _lens(context, focus)
    with st.container(key="decoder_rotary"):
        st.subheader(t("dec.rotary_title"))
        st.caption(t("dec.rotary_intro"))
        if st.toggle(t("dec.rotary_open"), key="dec_rotary_open"):  # below the fold: a forward when opened
            _rotary(context, focus)


def _next_word(context: Ctx, focus: FocusLike) -> None:
    runner, text = focus.loaded.runner, focus.text
    try:
        pairs = runners.cached(context, focus.loaded, "predict", text, NEXT_K,
                               fn=lambda: predict(runner, text, NEXT_K, context.max_tokens))  # fmt: skip
    except Exception as exc:  # never a traceback in the page
        LOG.warning("attnviz: next word failed: %s: %.300s", type(exc).__name__, exc)
        show_error(t("dec.failed"), type(exc).__name__)
        return
    if pairs:
        best, p = pairs[0]
        st.markdown(t("dec.top", token=escape_md(views.visible(best)), p=f"{p:.0%}"))
    prob = t("dec.probability")
    st.dataframe(
        views.next_rows(pairs, lang=context.lang),
        hide_index=True,
        key="table_next",
        column_config={prob: st.column_config.ProgressColumn(prob, min_value=0.0, max_value=1.0, format="%.3f")},
    )


def _positions(context: Ctx, focus: FocusLike) -> tuple[list[int], dict[int, str]]:
    """The model's own token positions the lens can read (the last piece of each character)
    and their labels (the character's text for byte pieces)."""
    loaded, text = focus.loaded, focus.text
    raw = runners.cached(context, loaded, "attend", text, fn=lambda: loaded.runner.attend(text, context.max_tokens))
    if len(raw.spans) == raw.n and raw.text:
        groups = char_groups(raw.spans, raw.special)
    else:
        groups = [[i] for i in range(raw.n)]
    labels = {}
    for g in groups:
        if len(g) > 1:  # the byte pieces of one character: the character
            labels[g[-1]] = raw.text[raw.spans[g[0]][0] : raw.spans[g[-1]][1]].strip() or "\u2423"
        else:
            labels[g[0]] = raw.tokens[g[0]]
    return [g[-1] for g in groups], labels


def _label(labels: dict[int, str]) -> Callable[[int], str]:
    return lambda i: f"{i}: {labels.get(i, '')}"


def _lens(context: Ctx, focus: FocusLike) -> None:
    runner, text = focus.loaded.runner, focus.text
    try:
        positions, labels = _positions(context, focus)
        if st.session_state.get("dec_lens_pos") not in positions:
            st.session_state["dec_lens_pos"] = positions[-1]
        chosen = st.selectbox(t("dec.lens_token"), positions, key="dec_lens_pos", format_func=_label(labels))
        pos = positions[-1] if chosen is None else int(chosen)
        lens = runners.cached(context, focus.loaded, "lens", text, pos, LENS_K,
                              fn=lambda: logit_lens(runner, text, pos, LENS_K, context.max_tokens))  # fmt: skip
    except Exception as exc:
        LOG.warning("attnviz: logit lens failed: %s: %.300s", type(exc).__name__, exc)
        show_error(t("dec.failed"), type(exc).__name__)
        return
    st.markdown(f"**{t('dec.lens_title')}**")
    st.caption(t("dec.lens_intro"))
    st.dataframe(views.lens_rows(lens, lang=context.lang), hide_index=True, key="table_lens")


def _rotary(context: Ctx, focus: FocusLike) -> None:
    if focus.head is None:
        st.caption(t("dec.rotary_head"))
        return
    skip = st.checkbox(t("dec.rotary_first"), value=True, key="dec_rotary_first")
    runner, text, layer, head = focus.loaded.runner, focus.text, focus.layer, focus.head
    try:
        profile = runners.cached(context, focus.loaded, "rotary", text, layer, head, skip,
                                 fn=lambda: rotary_distance(runner, text, layer, head, skip_first=skip,
                                                            max_tokens=context.max_tokens))  # fmt: skip
    except ValueError:
        st.caption(t("dec.rotary_none"))
        return
    except Exception as exc:
        LOG.warning("attnviz: rotary view failed: %s: %.300s", type(exc).__name__, exc)
        show_error(t("dec.failed"), type(exc).__name__)
        return
    if np.isfinite(profile.mean).any():
        charts.chart(views.rotary_chart(profile, lang=context.lang), key="chart_rotary")

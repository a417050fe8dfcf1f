"""The explorer's decoder panel (nothing for an encoder): what the model would write next
(attnviz.predict), the logit lens of the chosen token (attnviz.explain.logit_lens) and the
rotary distance view of the head in focus (attnviz.explain.rotary), through the result cache."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ...explain.logit_lens import logit_lens
from ...explain.rotary import rotary_distance
from ...nextword import next_tokens
from ...views import decoder as views
from .. import charts, runners
from ..state import Ctx, t
from ..subject import Focus
from ..widgets import escape_md, failed, pick, token_format

NEXT_K = 10  # next tokens listed
LENS_K = 5  # ranks of the logit lens table


def panel(context: Ctx, focus: Focus) -> None:
    runner = focus.loaded.runner
    if not getattr(runner, "causal", False) or getattr(runner, "lm_head", None) is None:  # an encoder
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


def _next_word(context: Ctx, focus: Focus) -> None:
    runner, text = focus.loaded.runner, focus.text
    try:
        found = runners.cached(context, focus.loaded, "next tokens", text, NEXT_K,
                               fn=lambda: next_tokens(runner, text, NEXT_K, context.max_tokens))  # fmt: skip
    except Exception as exc:  # never a traceback in the page
        failed("next word", exc, t("dec.failed"))
        return
    if found:
        best = views.next_label(found[0], lang=context.lang)
        st.markdown(t("dec.top", token=escape_md(best), p=f"{found[0].probability:.0%}"))
    prob = t("dec.probability")
    bar = st.column_config.ProgressColumn(prob, min_value=0.0, max_value=1.0, format="%.3f")
    st.dataframe(
        views.next_rows(found, lang=context.lang), hide_index=True, key="table_next", column_config={prob: bar}
    )


def _lens(context: Ctx, focus: Focus) -> None:
    runner, text = focus.loaded.runner, focus.text
    try:
        raw = runners.cached(context, focus.loaded, "attend", text, fn=lambda: runner.attend(text, context.max_tokens))
        groups = raw.character_groups()  # a shown token's byte pieces: the lens reads the last, which read them all
        positions, tokens = [g[-1] for g in groups], raw.character_tokens(groups)
        shown = range(len(tokens))  # the shown list's positions, 0..m-1, as every other token picker of the page
        chosen = pick(t("dec.lens_token"), shown, "dec_lens_pos", default=shown[-1], format_func=token_format(tokens))
        pos = positions[int(chosen)]
        lens = runners.cached(context, focus.loaded, "lens", text, pos, LENS_K,
                              fn=lambda: logit_lens(runner, text, pos, LENS_K, context.max_tokens))  # fmt: skip
    except Exception as exc:
        failed("logit lens", exc, t("dec.failed"))
        return
    st.markdown(f"**{t('dec.lens_title')}**")
    st.caption(t("dec.lens_intro"))
    # at the last token the lens's candidates are the next-word table's: its pieces named alike
    found = runners.peek(context, focus.loaded, "next tokens", text, NEXT_K) if pos == positions[-1] else None
    known = {c.token: c for c in found or ()}
    st.dataframe(views.lens_rows(lens, lang=context.lang, known=known), hide_index=True, key="table_lens")


def _rotary(context: Ctx, focus: Focus) -> None:
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
        failed("rotary view", exc, t("dec.failed"))
        return
    if np.isfinite(profile.mean).any():
        charts.chart(views.rotary_chart(profile, lang=context.lang), key="chart_rotary")

"""Why a head looks there, in the explorer: a click on a cell of the focused head's map opens the
parts of its pre-softmax score (`explain.score_sources`, at most SCORE_SOURCES_MAX_TOKENS
tokens) and the head's card beside it (sections/head_card.py)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import streamlit as st

from ... import explain
from ...explain.sources import SCORE_SOURCES_MAX_TOKENS
from ...result import Attention, word_groups
from ...views import head_label
from ...views import why as why_views
from .. import charts, runners, widgets
from ..runners import Loaded
from ..state import Ctx, t
from ..subject import Focus
from . import head_card
from .explain import code_span

MAP_KEY = "chart_heatmap"  # the explorer's map (sections/explorer.py: heatmap_view)
OPEN, QUERY, KEY = "why_open", "why_query", "why_key"


def pick_cell(chart_key: str, n_rows: int, n_cols: int) -> None:
    """on_click_change of the explorer's map: the clicked cell becomes the "why" cell (and the
    token focus's pair), and "why" opens. The trigger value {"i": row, "j": column} comes from
    the browser, so it is taken only as two ints inside the map."""
    state = st.session_state.get(chart_key)
    click = state.get("click") if isinstance(state, Mapping) else None
    if not isinstance(click, Mapping):
        return
    i, j = click.get("i"), click.get("j")
    if not (type(i) is int and type(j) is int and 0 <= i < n_rows and 0 <= j < n_cols):
        return
    session = st.session_state
    session[QUERY], session[KEY], session[OPEN] = i, j, True
    session["focus_query"], session["focus_key"] = i, j  # the token focus's pickers (explorer.py)


def map_clicks(att: Attention) -> dict[str, Any]:
    """What the explorer's map (token_canvas.token_map) takes to hook "why" to its cells: the
    click's callback, the cell it outlines (the "why" cell while "why" is open) and its hint."""
    session = st.session_state
    i, j = session.get(QUERY), session.get(KEY)
    shown = bool(session.get(OPEN)) and type(i) is int and type(j) is int and 0 <= i < att.n and 0 <= j < att.n_keys
    return {
        "on_click": partial(pick_cell, MAP_KEY, att.n, att.n_keys),
        "mark": (i, j) if shown else None,
        "hint": t("why.map_hint"),
    }


def positions(raw: Attention, hide_special: bool, merge_words: bool) -> list[list[int]]:
    """The model's positions behind each token the explorer shows: `raw` (the model's own
    tokens) with special tokens hidden and words merged as asked, then byte pieces merged into
    characters, the same steps as runners.analyse and subject.analysis take."""
    groups, att = [[i] for i in range(raw.n)], raw
    if hide_special:
        keep = ~att.special
        if keep.any() and not keep.all():  # Attention.without_special's own condition
            groups = [groups[i] for i in np.flatnonzero(keep)]
        att = att.without_special()
    if merge_words:
        groups = _joined(groups, word_groups(att.word_ids))
        att = att.merge_words()
    return _joined(groups, att.character_groups())


def _joined(groups: list[list[int]], cut: list[list[int]]) -> list[list[int]]:
    """`groups` joined as `cut` joins the tokens they stand for (unchanged where it joins none)."""
    return groups if len(cut) == len(groups) else [[p for i in g for p in groups[i]] for g in cut]


def model_cell(
    raw: Attention, groups: list[list[int]], layer: int, head: int, i: int, j: int
) -> tuple[int, int | None]:
    """The model's (query, key) positions behind shown cell (i, j): the query token's last
    piece (it has read the whole token; in a decoder the earlier pieces have not), and the key
    token's piece that query looks at most (None where a decoder's query sees none of them)."""
    query = groups[i][-1]
    seen = [p for p in groups[j] if not raw.causal or p <= query]
    if not seen:
        return query, None
    return query, max(seen, key=lambda p: float(raw.weights[layer, head, query, p]))


def sources(
    context: Ctx, loaded: Loaded, text: str, layer: int, head: int, query: int, key: int
) -> explain.ScoreSources | None:
    """`explain.score_sources` through the result cache, in its turn in the queue."""
    make = partial(explain.score_sources, loaded.runner, text, layer, head, query, key)
    return head_card.queued(context, loaded, "why", text, layer, head, query, key, label=t("why.computing"), make=make)


def section(context: Ctx, focus: Focus) -> None:
    """The "why" of the explorer, under its views: closed until opened or a cell is clicked."""
    with st.container(key="why"):
        st.subheader(t("why.title"))
        st.caption(t("why.intro", limit=SCORE_SOURCES_MAX_TOKENS))
        if not st.toggle(t("why.open"), key=OPEN, help=t("why.open_help")):
            return
        if focus.head is None:
            st.caption(t("why.pick_head"))
            return
        raw = runners.analyse(context, focus.loaded, focus.text)  # the model's own tokens (cached)
        if raw is None:
            return
        if raw.n > SCORE_SOURCES_MAX_TOKENS:
            st.info(t("why.too_long", n=f"{raw.n:,}", limit=SCORE_SOURCES_MAX_TOKENS), icon=":material/block:")
            return
        groups = positions(raw, bool(focus.settings.get("hide_special")), bool(focus.settings.get("merge_words")))
        if len(groups) != focus.att.n:
            st.caption(t("why.unsupported"))
            return
        a, b = st.columns(2)
        fmt = widgets.token_format(focus.att.tokens)
        i = widgets.pick(t("why.query"), range(focus.att.n), QUERY, default=focus.att.n - 1, box=a, format_func=fmt)
        j = widgets.pick(t("why.key"), range(focus.att.n_keys), KEY, box=b, format_func=fmt)
        query, key = model_cell(raw, groups, focus.layer, focus.head, int(i), int(j))
        if key is None:
            st.caption(t("why.ahead"))
            return
        text = focus.loaded.runner.fit(focus.text, context.max_tokens)
        s = sources(context, focus.loaded, text, focus.layer, focus.head, query, key)
        if s is not None:
            _show(context, focus, raw, s)


def _show(context: Ctx, focus: Focus, raw: Attention, s: explain.ScoreSources) -> None:
    lang = context.lang
    st.markdown(t("why.cell", head=head_label(s.layer, s.head, lang=lang), i=s.query, j=s.key,
                  query=code_span(s.tokens[s.query]), key_token=code_span(s.tokens[s.key]),
                  weight=f"{s.weight:.3f}", score=f"{s.score:.3f}"))  # fmt: skip
    if focus.off:
        st.caption(t("why.whole_model"))
    for column, side in zip(st.columns(2, gap="large"), ("query", "key"), strict=True):
        with column, st.container(key=f"why_{side}_parts"):
            st.markdown(f"**{t(f'why.{side}_side')}**")
            st.table(why_views.side_rows(s, side, lang=lang))
    st.caption(t("why.shares_note"))
    left, right = st.columns([3, 2], gap="large")
    with left, st.container(key="why_matrix"):
        charts.chart(why_views.why_matrix(s, lang=lang), key="chart_why")
        st.caption(t("why.matrix_note", k=why_views.MATRIX_TOP))
    with right:
        head_card.card(context, focus.loaded, focus.text, raw, s)

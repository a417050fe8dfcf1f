"""Attention sinks in the app: the explorer's "hide sinks" switch and the caveat on the visitor's
sentence (a head can send most of its weight to [CLS], [SEP] or a full stop and move almost
nothing), and the Caveats page's table of the sentence's sink heads."""

from __future__ import annotations

import dataclasses
import logging
from functools import partial
from typing import Any

import numpy as np
import streamlit as st

from ... import explain
from ...explain import NormWeights
from ...result import Attention
from .. import again, nav, runners, state
from ..runners import Loaded
from ..state import Ctx, t
from ..subject import Focus, Subject
from ..widgets import escape_md
from .explain import cached_norms, code_span

LOG = logging.getLogger("attnviz")
TOGGLE = "sinks_toggle"  # the widget
STATE = state.HIDE_SINKS  # its value: a plain key survives a visit to another page (state.KEPT)


def _value_norms(context: Ctx, loaded: Loaded, text: str, att: Attention) -> np.ndarray | None:
    """||f_h(x_j)|| (layers, heads, n) of the text as the views cut it, where that fits `att`'s maps;
    None for a model whose layers cannot be taken apart: from the views' own forward (cached by
    runners.analyse), else one cached forward that keeps no maps."""
    try:  # the explorer's own pass put its values in the cache (runners.attend_views); a second forward only without
        runner = loaded.runner  # the text fitted only on a miss: a hit costs no tokenization
        got = runners.cached(context, loaded, "value_norms", text,
                             fn=lambda: explain.value_norms(runner, runner.fit(text, context.max_tokens)))  # fmt: skip
        norms = got.norms() if isinstance(got, explain.PassValues) else got
    except RuntimeError as exc:  # the accelerator out of memory, say: the caveat goes without the norms
        LOG.warning("attnviz: value norms failed: %s: %.300s", type(exc).__name__, exc)
        return None
    except ValueError:
        return None
    return norms if norms.shape == att.weights.shape[:3] else None


def _view(focus: Focus) -> tuple[Any, ...]:
    """What decides the maps the views draw, for the cache keys: the token view and any heads
    switched off (the ablation switch runs before this one, so `f.att` may be the switched model's)."""
    settings, off = focus.settings, tuple(tuple(h) for h in focus.settings.get("heads_off", ()))
    return settings.get("hide_special"), settings.get("merge_words"), off, settings.get("ablation_mode")


def hide_switch(context: Ctx, focus: Focus) -> Focus:
    """The switch, what it hides and how much, and the caveat; the focus the views then draw.
    The hidden maps (a 75 MB copy at 512 tokens) are made only while the switch is on."""
    usable = _value_norms(context, focus.loaded, focus.text, focus.att)  # when its tokens are the raw ones
    sink_scores = partial(explain.sink_scores, focus.att, norms=usable)
    scores = runners.cached(context, focus.loaded, "sinks", focus.text, *_view(focus), fn=sink_scores)
    columns = scores.parking()
    with st.container(key="sinks"):
        left, right = st.columns([1, 3])
        on = left.toggle(t("sinks.toggle"), key=TOGGLE, on_change=state.keep, args=(TOGGLE,),
                         help=t("sinks.toggle_help", eps=scores.threshold))  # fmt: skip
        removed = explain.removed_share(focus.att.weights[focus.layer : focus.layer + 1], columns)[0]  # (heads,)
        share = float(removed.mean() if focus.head is None else removed[focus.head])
        heads = int(scores.heads_on_any(columns).sum())  # every head above epsilon on one of them
        tokens = ", ".join(code_span(focus.att.tokens[k]) for k in columns.tolist())
        if not columns.size:
            right.caption(t("sinks.none", eps=scores.threshold))
        elif on:
            right.markdown(t("sinks.hidden", tokens=tokens, share=f"{share:.0%}"))
        else:
            right.markdown(t("sinks.found", tokens=tokens, heads=heads, share=f"{share:.0%}"))
        sink_caveat(context, focus)
    if not (on and columns.size):
        return focus
    parked = tuple(int(k) for k in columns.tolist())
    key = runners.result_key(context, focus.loaded, "hidden_sinks", focus.text, *_view(focus), parked)
    hidden, back = again.step(
        context, focus.again, key, lambda att: explain.hide_sinks(att, list(parked))[0], focus.att
    )
    return dataclasses.replace(focus, att=hidden, settings={**focus.settings, "hide_sinks": True}, again=back)


def sink_caveat(context: Ctx, focus: Focus) -> None:
    """The sinks caveat on the visitor's sentence (the raw analysis): the head that sinks hardest,
    its token and, with value norms of the raw shape (layers, heads, n), how much the token moves
    there (the column's norm-based share, ||alpha f|| rows normalised, beside its attention share);
    then a link to the Caveats page."""
    raw = runners.analyse(context, focus.loaded, focus.text)
    if raw is None:
        return
    norms = _value_norms(context, focus.loaded, focus.text, raw)
    scores = explain.sink_scores(raw, norms=norms)
    if not scores.is_sink.any():
        st.caption(t("sinks.caveat_none"))
    else:
        layer, head = np.unravel_index(int(np.where(scores.is_sink, scores.share, -1).argmax()), scores.share.shape)
        k = int(scores.token[layer, head])
        share, token = f"{scores.share[layer, head]:.0%}", escape_md(raw.tokens[k], 40)
        text = t("sinks.caveat", layer=int(layer), head=int(head), share=share, token=token)
        if norms is not None:
            moved = explain.moved_share(raw.weights[layer, head], norms[layer, head], k)
            ratio = float(scores.value_norm[layer, head] / max(scores.mean_value_norm[layer, head], 1e-12))
            text += " " + t("sinks.caveat_norm", ratio=f"{ratio:.2f}", moved=f"{moved:.0%}")
        st.caption(text)
    st.page_link(nav.page("caveats", context.lang), label=t("caveat.more"), icon="ℹ️")


def sink_heads(context: Ctx, s: Subject) -> None:
    """Caveats page: every token some head sinks on, how many heads, how much weight, and how
    long its value vectors are there next to the heads' average."""
    try:
        norms: NormWeights | None = cached_norms(context, s.loaded, s.fitted)
    except ValueError:
        norms = None
    usable = norms if norms is not None and norms.per_head.shape == s.att.weights.shape else None
    scores = explain.sink_scores(s.att, norms=usable)
    with st.container(key="caveats_sink_heads"):
        st.markdown(f"**{t('sinks.table_title', eps=scores.threshold)}**")
        if not scores.columns.size:
            st.caption(t("sinks.none", eps=scores.threshold))
            return
        rows = []
        parked = set(scores.parking().tolist())
        for k in scores.columns:
            on = scores.heads_on(int(k))  # every head above epsilon on k (Gu et al.), not only its argmax
            row: dict[str, Any] = {
                t("sinks.col_token"): s.shown.tokens[s.index(int(k))],  # a piece named by its character
                t("sinks.col_heads"): int(on.sum()),
                t("sinks.col_share"): f"{scores.received[..., int(k)][on].mean():.0%}",
            }
            if usable is not None:
                row[t("sinks.col_norm")] = round(float(scores.value_ratio(int(k))[on].mean()), 2)
            row[t("sinks.col_kind")] = t("sinks.kind_parked") if int(k) in parked else t("sinks.kind_focus")
            rows.append(row)
        st.dataframe(rows, hide_index=True, key="table_sink_heads")
        st.caption(t("sinks.table_note", rate=f"{scores.rate:.0%}"))

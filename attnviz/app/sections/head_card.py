"""A head's card, beside its "why" (sections/why.py) and in the Training lab: its kind (Clark et
al. 2019), the tokens it reads most, what switching it off changes (Michel et al. 2019), the
parts that write its score at the chosen cell and the heads it composes with (Elhage et al. 2021)."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from functools import partial
from typing import TypeVar

import numpy as np
import streamlit as st

from ... import explain
from ...models import Progress
from ...result import Attention
from ...views import head_label
from ...views import why as why_views
from .. import runners, widgets, work
from ..runners import Loaded
from ..state import Ctx, t
from .ablation import cached_ablation
from .explain import code_span

COMPOSE_TOP = 3  # earlier heads named a composition kind
_HEAD = re.compile(r"L(\d+)H(\d+)")
T = TypeVar("T")


def queued(
    context: Ctx, loaded: Loaded, kind: str, text: str, *parts: Hashable, label: str, make: Callable[[], T]
) -> T | None:
    """`make()` through the result cache under `kind`, in its turn in the queue (a message and
    None where the model or the text is refused)."""

    def compute(progress: Progress) -> T:
        progress(0.0)
        return make()

    run = partial(work.cached_long, context, loaded, kind, text, *parts, label=label, fn=compute)
    return widgets.attempt(run, kind, message=t("why.unsupported"))


def _named(name: str, kinds: np.ndarray, lang: str) -> str:
    """A part's name as the card writes it: a head with its kind when it has one ("L0H0,
    previous token")."""
    found = _HEAD.fullmatch(name)
    label = why_views.part_label(name, lang)
    if found is None:
        return label
    layer, head = int(found.group(1)), int(found.group(2))
    kind = str(kinds[layer, head]) if layer < kinds.shape[0] and head < kinds.shape[1] else ""
    return t("why.head_kind", head=label, kind=t(f"why.kind_{kind}")) if kind else label


def _kind_line(kinds: np.ndarray, stats: dict[str, np.ndarray], layer: int, head: int) -> str:
    kind = str(kinds[layer, head])
    if not kind:
        return t("why.card_kind_none")
    value = stats["entropy_rel" if kind == "broad" else kind][layer, head]
    return t("why.card_kind", kind=t(f"why.kind_{kind}"), share=f"{value:.0%}")


def _reads_line(raw: Attention, layer: int, head: int) -> str:
    tokens = t("why.list_sep").join(t("why.token_share", token=code_span(raw.tokens[j]), j=j, share=f"{w:.0%}")
                       for j, w in why_views.reads_most(raw, layer, head))  # fmt: skip
    return t("why.card_reads", tokens=tokens)


def _off_line(context: Ctx, loaded: Loaded, text: str, raw: Attention, layer: int, head: int, kinds: np.ndarray) -> str:
    """What switching the head off changes: the output, and the later map that moves most."""
    try:  # "zero", as the lesson switches one head off: the same cache entry
        result = cached_ablation(context, loaded, text, ((layer, head),), "zero")
    except ValueError:  # a model whose heads cannot be switched off
        return t("why.card_off_none")
    if result is None or result.attention.weights.shape != raw.weights.shape:
        return t("why.card_off_none")
    if result.measure == "next_token":
        line = t("why.card_off_lm", token=code_span(result.next_token), d=f"{-result.effect:+.3f}")  # effect: the drop
    else:
        line = t("why.card_off_embedding", d=f"{result.effect:.4f}")
    moved = why_views.map_change(raw, result.attention, layer)
    if moved is not None:
        name = _named(f"L{moved[0]}H{moved[1]}", kinds, context.lang)
        line += " " + t("why.card_off_moves", head=name, share=f"{moved[2]:.0%}")
    return line


def _sources_line(s: explain.ScoreSources, kinds: np.ndarray, lang: str) -> str:
    def side(which: str) -> str:
        return t("why.list_sep").join(f"{_named(name, kinds, lang)} {why_views.share_text(share)}"
                         for name, _, share in s.top(which, 2))  # fmt: skip

    return t("why.card_sources", query=side("query"), key_side=side("key"))


def _composition_line(context: Ctx, loaded: Loaded, s: explain.ScoreSources, kinds: np.ndarray) -> str:
    """The earlier heads it composes with: from the weights (K and Q) and on this sentence."""
    if s.layer == 0:
        return t("why.card_first_layer")
    lang, label = context.lang, t("why.computing_composition")
    comp = queued(context, loaded, "composition", "", label=label, make=partial(explain.composition, loaded.runner))
    if comp is None:
        return ""
    weights = {kind: t("why.list_sep").join(f"{_named(f'L{a}H{b}', kinds, lang)} {v:.2f}"
                               for a, b, v in comp.top(s.layer, s.head, kind, COMPOSE_TOP))
               for kind in ("k", "q")}  # fmt: skip
    through = t("why.list_sep").join(f"{_named(name, kinds, lang)} {why_views.share_text(either)}"
                        for name, _, _, either in explain.composing_heads(s, COMPOSE_TOP))  # fmt: skip
    return t("why.card_compose", k=weights["k"], q=weights["q"], through=through or "–")


def card(
    context: Ctx, loaded: Loaded, text: str, raw: Attention, s: explain.ScoreSources, key: str = "why_card"
) -> None:
    """Head (s.layer, s.head)'s card on `text` (`raw`: its attention as the model reads it, the
    shape the switched model's is compared with), its sources read at the cell of `s`."""
    layer, head, lang = s.layer, s.head, context.lang
    with st.container(key=key, border=True):
        st.markdown(f"**{t('why.card_title', head=head_label(layer, head, lang=lang))}**")
        stats = runners.cached(context, loaded, "stats", text, fn=lambda: explain.head_stats(raw))
        kinds = explain.head_kinds(stats)  # every head's kind on this sentence
        lines = [
            _kind_line(kinds, stats, layer, head),
            _reads_line(raw, layer, head),
            _off_line(context, loaded, text, raw, layer, head, kinds),
            _sources_line(s, kinds, lang),
            _composition_line(context, loaded, s, kinds),
        ]
        st.markdown("\n".join(f"- {line}" for line in lines if line))
        st.caption(t("why.card_note"))

"""The Caveats page's sections: what an attention map does not say, each point with its
source, and live numbers for the sentence on screen."""

from __future__ import annotations

from functools import partial

import numpy as np
import streamlit as st

from ... import explain, i18n
from ...focus import default_focus
from .. import literal, nav, runners, widgets, work
from ..state import Ctx, lang, t
from ..subject import Subject
from .explain import analysis, attempt, cached_norms, occlude, occlusion_kind

CAVEATS = ("weight", "mixing", "sinks", "rest", "app")
LIVE_ATTRIBUTION_N = 64  # occlusion runs n forward passes; beyond this the page skips it
REFERENCES = (
    ("Vaswani et al. 2017", "Attention Is All You Need", "NeurIPS", "https://arxiv.org/abs/1706.03762"),
    ("Jain & Wallace 2019", "Attention is not Explanation", "NAACL", "https://arxiv.org/abs/1902.10186"),
    ("Wiegreffe & Pinter 2019", "Attention is not not Explanation", "EMNLP", "https://arxiv.org/abs/1908.04626"),
    ("Clark et al. 2019", "What Does BERT Look At? An Analysis of BERT's Attention", "BlackboxNLP", "https://arxiv.org/abs/1906.04341"),
    ("Abnar & Zuidema 2020", "Quantifying Attention Flow in Transformers", "ACL", "https://arxiv.org/abs/2005.00928"),
    ("Brunner et al. 2020", "On Identifiability in Transformers", "ICLR", "https://arxiv.org/abs/1908.04211"),
    ("Kobayashi et al. 2020", "Attention is Not Only a Weight: Analyzing Transformers with Vector Norms", "EMNLP", "https://arxiv.org/abs/2004.10102"),
    ("Xiao et al. 2024", "Efficient Streaming Language Models with Attention Sinks", "ICLR", "https://arxiv.org/abs/2309.17453"),
)  # fmt: skip
GROUPS = {"[CLS]": "caveats.group_cls", "[SEP]": "caveats.group_sep", "punctuation": "caveats.group_punct"}
FIRST = "first"  # a decoder's group: the first token, where its heads park attention (Xiao et al. 2024)


def points(decoder: bool = False) -> None:
    """The points; for a decoder the sinks point names its first token (it has no [CLS] or [SEP])."""
    for name in CAVEATS:
        with st.container(key=f"caveat_{name}", border=True):
            title = "aware.sinks_title_decoder" if decoder and name == "sinks" else f"caveats.{name}.title"
            st.markdown(f"**{t(title)}**")
            st.markdown(t(f"caveats.{name}.body"))
            st.caption(t(f"caveats.{name}.source"))


def live_subject(context: Ctx) -> Subject | None:
    st.subheader(t("caveats.live_title"))
    return analysis(context)


def sinks(context: Ctx, s: Subject) -> None:
    norms = attempt(s, lambda: cached_norms(context, s.loaded, s.fitted))
    norms = norms if norms is not None and norms.per_head.shape == s.att.weights.shape else None
    shares = explain.sink_shares(s.att, norms)
    groups = {group: t(key) for group, key in GROUPS.items()}
    if s.att.causal:  # a decoder's rows: the share on its first token (mean over layers, heads and rows, as
        # `explain.sink_shares`) and on punctuation; no [CLS] or [SEP] rows
        maps = {"attention": s.att.weights} | ({} if norms is None else {"norm": norms.per_head})
        for kind, w in maps.items():
            w = w / np.maximum(w.sum(-1, keepdims=True), np.finfo(np.float32).tiny)  # rows sum to 1
            shares[kind] = {FIRST: float(w[..., 0].mean()), "punctuation": shares[kind]["punctuation"]}
        groups = {FIRST: t("aware.group_first", token=" ".join(s.att.tokens[0].split())[:40]), **groups}
    rows = []
    for group, value in shares["attention"].items():
        row = {t("caveats.col_group"): groups.get(group, group), t("caveats.col_attention"): f"{value:.1%}"}
        if "norm" in shares:
            row[t("caveats.col_norm")] = f"{shares['norm'][group]:.1%}"
        rows.append(row)
    with st.container(key="caveats_sinks"):
        st.markdown(f"**{t('aware.sinks_live_decoder' if s.att.causal else 'caveats.sinks_live')}**")
        st.dataframe(rows, hide_index=True, key="table_sinks")
        st.caption(t("caveats.sinks_note"))


def agreement(context: Ctx, s: Subject) -> None:
    att = s.att
    with st.container(key="caveats_agreement"):
        st.markdown(f"**{t('caveats.agreement_live')}**")
        if att.n > min(LIVE_ATTRIBUTION_N, context.settings.explain_tokens):
            st.caption(t("caveats.agreement_skipped", n=att.n, limit=LIVE_ATTRIBUTION_N))
            return
        query = default_focus(att, i18n.example_for(att.text, lang()))[0]
        kind = occlusion_kind(s.loaded.runner)
        if kind is None:  # said before anything runs: no refusal under a progress line
            st.caption(t("aware.no_occlusion"))
            return
        fn = partial(occlude, s.loaded.runner, s.fitted, query, kind)
        label = t("aware.computing_lm" if kind == "lm" else "explain.computing_attributions", n=att.n)
        occlusion = attempt(
            s, lambda: work.cached_long(context, s.loaded, f"occlusion_{kind}", s.fitted, query, label=label, fn=fn)
        )
        if occlusion is None:
            return
        rollout = runners.cached(context, s.loaded, "rollout", s.fitted, fn=lambda: explain.rollout(att))
        last = att.n_layers - 1
        taus = [
            explain.agreement(m[query], occlusion, keep=att)["kendall"] for m in (att.head(0), att.head(last), rollout)
        ]
        st.caption(t("caveats.agreement_for"))
        literal.literal(widgets.token_label(att.tokens, query))
        names = (t("caveats.tau_first"), t("caveats.tau_last", layer=last), t("caveats.tau_rollout"))
        for box, name, tau in zip(st.columns(3), names, taus, strict=True):
            box.metric(name, f"{tau:.2f}")
        st.caption(t("caveats.agreement_note"))
    st.page_link(nav.page("explain", context.lang), label=t("caveats.to_explain"), icon=":material/insights:")


def references() -> None:
    st.subheader(t("caveats.references"))
    st.markdown("\n".join(f"- {who}: [{title}]({url}), {venue}." for who, title, venue, url in REFERENCES))

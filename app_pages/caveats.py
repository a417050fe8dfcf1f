"""Caveats: what an attention map does not say, each point with its source, and live numbers
for the sentence on screen."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app_pages import common
from app_pages.common import t
from attnviz import explain

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

c = common.ctx()
st.title(t("caveats.title"))
st.markdown(t("caveats.intro"))
common.show_notices()

for name in CAVEATS:
    with st.container(key=f"caveat_{name}", border=True):
        st.markdown(f"**{t(f'caveats.{name}.title')}**")
        st.markdown(t(f"caveats.{name}.body"))
        st.caption(t(f"caveats.{name}.source"))

# --- live numbers for the sentence on screen --------------------------------------------------
st.subheader(t("caveats.live_title"))
text = common.sentence_box(c)
loaded = common.load_runner(c)
clean = common.checked_text(c, text)
att = common.analyse(c, loaded, clean) if loaded is not None and clean is not None else None
if loaded is not None and att is not None:
    runner, model_key = loaded
    fitted = common.fit_text(runner, clean or "", c.max_tokens)
    cache = common.results(c.settings)

    def cached(kind: str, *parts: Any, fn: Any) -> Any:
        return cache.get_or_compute((kind, model_key, fitted, c.max_tokens, *parts), fn)

    common.truncation_notice(att)
    common.show_tokens(att.tokens)
    try:
        norms = cached("norms", fn=lambda: explain.norm_weights(runner, fitted))
        shares = explain.sink_shares(att, norms if norms.per_head.shape == att.weights.shape else None)
    except (ValueError, IndexError) as exc:
        common.show_error(t("explain.unsupported"), str(exc))
        shares = explain.sink_shares(att)
    group_names = {"[CLS]": "caveats.group_cls", "[SEP]": "caveats.group_sep", "punctuation": "caveats.group_punct"}
    rows = []
    for group, value in shares["attention"].items():
        row = {t("caveats.col_group"): t(group_names.get(group, group)), t("caveats.col_attention"): f"{value:.1%}"}
        if "norm" in shares:
            row[t("caveats.col_norm")] = f"{shares['norm'][group]:.1%}"
        rows.append(row)
    with st.container(key="caveats_sinks"):
        st.markdown(f"**{t('caveats.sinks_live')}**")
        st.dataframe(rows, hide_index=True, key="table_sinks")
        st.caption(t("caveats.sinks_note"))

    with st.container(key="caveats_agreement"):
        st.markdown(f"**{t('caveats.agreement_live')}**")
        if att.n > LIVE_ATTRIBUTION_N:
            st.caption(t("caveats.agreement_skipped", n=att.n, limit=LIVE_ATTRIBUTION_N))
        else:
            example = common.example_for(att.text)
            ordinary = [i for i in range(att.n) if not att.special[i]] or list(range(att.n))
            found = common.find_token(att.tokens, example["query"]) if example else None
            query = found if found is not None else ordinary[-1]
            try:
                occlusion = cached("occlusion", query, fn=lambda: explain.occlusion(runner, fitted, query))
                rollout = cached("rollout", fn=lambda: explain.rollout(att))
                last = att.n_layers - 1
                first_raw = explain.agreement(att.head(0)[query], occlusion, keep=att)
                last_raw = explain.agreement(att.head(last)[query], occlusion, keep=att)
                rolled = explain.agreement(rollout[query], occlusion, keep=att)
            except (ValueError, IndexError) as exc:
                common.show_error(t("explain.unsupported"), str(exc))
            else:
                st.caption(t("caveats.agreement_for"))
                st.code(common.token_label(att.tokens, query), language=None)
                a, b, col = st.columns(3)
                a.metric(t("caveats.tau_first"), f"{first_raw['kendall']:.2f}")
                b.metric(t("caveats.tau_last", layer=last), f"{last_raw['kendall']:.2f}")
                col.metric(t("caveats.tau_rollout"), f"{rolled['kendall']:.2f}")
                st.caption(t("caveats.agreement_note"))
    st.page_link(common.EXPLAIN, label=t("caveats.to_explain"), icon=":material/insights:")

# --- sources ----------------------------------------------------------------------------------
st.subheader(t("caveats.references"))
st.markdown("\n".join(f"- {who}: [{title}]({url}), {venue}." for who, title, venue, url in REFERENCES))

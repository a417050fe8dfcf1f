"""Explain: how far the attention of one token explains anything. Raw attention next to rollout,
flow, norm-based weights and two attributions; their agreement; head statistics; a minimal pair."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from app_pages import common
from app_pages.common import t
from attnviz import explain, i18n, views

AUTO_ATTRIBUTION_N = 64  # occlusion runs n forward passes: beyond this many tokens, on request
STATS = ("entropy_rel", "prev", "next", "self", "cls", "sep", "punct")
LABEL_KEYS = {
    "previous token": "stats.l_prev",
    "next token": "stats.l_next",
    "self": "stats.l_self",
    "[CLS] sink": "stats.l_cls",
    "[SEP] sink": "stats.l_sep",
    "punctuation": "stats.l_punct",
    "broad": "stats.l_broad",
}

c = common.ctx()
ss = st.session_state
st.title(t("explain.title"))
st.caption(t("explain.intro"))
common.show_notices()
text = common.sentence_box(c)

loaded = common.load_runner(c)
clean = common.checked_text(c, text)
if loaded is None or clean is None:
    st.stop()
runner, model_key = loaded
fitted = common.fit_text(runner, clean, c.max_tokens)  # explanations encode the text themselves
att = common.analyse(c, loaded, clean)
if att is None:
    st.stop()
common.truncation_notice(att)
common.show_tokens(att.tokens)
cache = common.results(c.settings)


def cached(kind: str, *parts: Any, fn: Any) -> Any:
    return cache.get_or_compute((kind, model_key, fitted, c.max_tokens, *parts), fn)


def share(values: np.ndarray) -> np.ndarray:
    """Scores rescaled so their absolute values sum to 1: methods side by side on one axis."""
    v = np.asarray(values, dtype=np.float64)
    return v / max(float(np.abs(v).sum()), 1e-12)


signature = (att.text, att.model, att.n)
if ss.get("_x_signature") != signature:
    ss["_x_signature"] = signature
    example = common.example_for(att.text)
    q = common.find_token(att.tokens, example["query"]) if example else None
    ordinary = [i for i in range(att.n) if not att.special[i]] or list(range(att.n))
    ss["x_query"] = q if q is not None else ordinary[-1]
if ss.get("x_layer") not in range(att.n_layers):
    ss["x_layer"] = att.n_layers - 1

# --- one token, six ways --------------------------------------------------------------------------
st.subheader(t("explain.token_title"))
a, b = st.columns(2)
query = a.selectbox(t("explain.query"), range(att.n), key="x_query", format_func=common.token_format(att.tokens))
layer = b.selectbox(t("explain.layer"), range(att.n_layers), key="x_layer", format_func=common.fmt_layer)

series: dict[str, np.ndarray] = {}
notes: list[str] = []
series[t("explain.raw", layer=layer)] = att.head(layer)[query]
rollout = cached("rollout", fn=lambda: explain.rollout(att))
series[t("explain.rollout")] = rollout[query]
flow_problem = explain.flow_limit(att.n, row=query)
if flow_problem is None:
    with st.spinner(t("explain.computing_flow")):
        series[t("explain.flow")] = cached("flow", query, fn=lambda: explain.flow(att, row=query))
else:
    notes.append(t("explain.flow_too_large", n=att.n, limit=explain.FLOW_MAX_N_ROW))


def attempt(compute: Any) -> Any:
    """Run one explanation; a method this model or text cannot support becomes a message."""
    try:
        result = compute()
    except (ValueError, IndexError) as exc:
        common.show_error(t("explain.unsupported"), str(exc))
    except Exception as exc:  # an explanation failing never takes the page down
        common.show_error(t("err.unexpected"), f"{type(exc).__name__}: {exc}")
    else:
        if np.shape(result)[-1] == att.n:
            return result
        common.show_error(t("explain.unsupported"), t("explain.length_mismatch"))
    return None


with st.spinner(t("explain.computing_norms")):
    norms = attempt(lambda: cached("norms", fn=lambda: explain.norm_weights(runner, fitted)).layer_norms(layer))
if norms is not None:
    series[t("explain.norm", layer=layer)] = share(norms[query])
occlusion = None
run_attributions = att.n <= AUTO_ATTRIBUTION_N or ss.get("_x_attributions") == signature
if not run_attributions and st.button(t("explain.compute", n=att.n), key="x_compute"):
    ss["_x_attributions"] = signature
    run_attributions = True
if run_attributions:
    with st.spinner(t("explain.computing_attributions", n=att.n)):
        occlusion = attempt(lambda: cached("occlusion", query, fn=lambda: explain.occlusion(runner, fitted, query)))
        gradient = attempt(lambda: cached("ixg", query, fn=lambda: explain.input_x_gradient(runner, fitted, query)))
    if occlusion is not None:
        series[t("explain.occlusion")] = share(occlusion)
    if gradient is not None:
        series[t("explain.ixg")] = share(gradient)
else:
    notes.append(t("explain.attributions_on_request", n=att.n))

with st.container(key="explain_bars"):
    fig = views.token_bars(att.tokens, series, title=t("explain.bars_title"), highlight=query)
    common.chart(fig, key="chart_explain_bars")
    for note in notes:
        st.caption(note)
    st.caption(t("explain.bars_note"))
    common.figure_downloads(fig, "explain", common.run_settings(c, att, query=int(query), layer=int(layer)))

if occlusion is not None:
    with st.container(key="explain_agreement"):
        st.subheader(t("explain.agreement_title"))
        rows = []
        for name, values in series.items():
            if name == t("explain.occlusion"):
                continue
            agree = explain.agreement(values, occlusion, keep=att)
            rows.append(
                {
                    t("explain.col_method"): name,
                    t("explain.col_kendall"): round(agree["kendall"], 3),
                    t("explain.col_spearman"): round(agree["spearman"], 3),
                }
            )
        st.dataframe(rows, hide_index=True, key="table_agreement")
        st.caption(t("explain.agreement_note"))

# --- head statistics --------------------------------------------------------------------------
st.subheader(t("stats.title"))
st.caption(t("stats.intro"))
stats = cached("stats", fn=lambda: explain.head_stats(att))
labels = explain.head_labels(stats)
short = np.vectorize(lambda s: t(LABEL_KEYS[s]) if s in LABEL_KEYS else s, otypes=[str])(labels)
stat = st.selectbox(t("stats.which"), STATS, key="x_stat", format_func=common.option_labels("stats.{}"))
fig = views.layer_head_grid(stats[stat], title=t(f"stats.{stat}"), labels=short, zmin=0.0, zmax=1.0)
event = common.chart(fig, key="chart_stats", on_select="rerun", selection_mode="points")
pick = views.model_view_pick(event)
if pick is not None:
    common.open_in_explorer(*pick)
st.caption(t("stats.click"))

# --- minimal pair -----------------------------------------------------------------------------
st.subheader(t("pair.title"))
st.caption(t("pair.intro"))
pair = common.examples()["minimal_pair"]
foreign = i18n.examples("zh" if c.lang == "en" else "en")["minimal_pair"]
foreign_values = {foreign["a"], foreign["b"], foreign["query"], ", ".join(foreign["keys"])}
for key, value in (
    ("mp_a", pair["a"]),
    ("mp_b", pair["b"]),
    ("mp_query", pair["query"]),
    ("mp_keys", ", ".join(pair["keys"])),
):
    if key not in ss or ss[key] in foreign_values:
        ss[key] = value
a, b = st.columns(2)
text_a = a.text_input(t("pair.a"), key="mp_a")
text_b = b.text_input(t("pair.b"), key="mp_b")
a, b = st.columns(2)
query_word = a.text_input(t("pair.query"), key="mp_query")
key_words = b.text_input(t("pair.keys"), key="mp_keys", help=t("pair.keys_help"))
ta, tb = common.checked_text(c, text_a), common.checked_text(c, text_b)
if ta is not None and tb is not None:
    att_a = common.analyse(c, loaded, ta)
    att_b = common.analyse(c, loaded, tb)
    if att_a is not None and att_b is not None:
        q_idx = common.find_token(att_a.tokens, query_word) if query_word.strip() else None
        k_idx = [common.find_token(att_a.tokens, w) for w in key_words.replace("，", ",").split(",") if w.strip()]
        if q_idx is None or not k_idx or any(k is None for k in k_idx):
            common.show_error(t("pair.not_found"))
            common.show_tokens(att_a.tokens, key="pair_tokens")
        else:
            try:
                result = explain.minimal_pair(att_a, att_b, q_idx, [int(k) for k in k_idx if k is not None])
            except (ValueError, IndexError) as exc:
                common.show_error(t("pair.failed"), str(exc))
            else:
                with st.container(key="pair_result"):
                    fig = views.layer_head_grid(result.score, title=t("pair.grid_title"))
                    event = common.chart(fig, key="chart_pair", on_select="rerun", selection_mode="points")
                    pick = views.model_view_pick(event)
                    if pick is not None:
                        common.open_in_explorer(*pick, sentence=ta)
                    top = result.ranked[:5]
                    rows = []
                    for lay, hd in top:
                        row: dict[str, Any] = {t("pair.col_head"): views.head_label(lay, hd)}
                        for k in result.keys:
                            row[f"A → {att_a.tokens[k]}"] = round(float(att_a.weights[lay, hd, result.query, k]), 3)
                            row[f"B → {att_b.tokens[k]}"] = round(float(att_b.weights[lay, hd, result.query, k]), 3)
                        rows.append(row)
                    st.dataframe(rows, hide_index=True, key="table_pair")
                    st.caption(t("pair.note"))

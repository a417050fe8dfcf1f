"""The from-scratch lab's sections: our own encoder next to the pretrained model, switches that
take it apart, one head step by step, and the order demo (no positions, no order)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from ... import i18n, lab, views
from ...models import EMBEDDED_MODEL, Steps
from ...models.unknown_tokens import MAX_UNKNOWN_SHARE
from ...result import Attention
from .. import charts, downloads, literal, runners, state, subject, widgets
from ..readers import model_label
from ..runners import Loaded
from ..state import Ctx, model_options, t
from ..widgets import escape_md

SHOW_TOKENS = 12  # the walkthrough shows at most this many tokens ...
SHOW_DIMS = 8  # ... and this many of a head's dimensions
SAME = 1e-4  # "identical" below this max |difference| (float32 through 6 layers is ~1e-6)
LAB_MODELS = (EMBEDDED_MODEL, "scratch")  # the from-scratch encoder carries MiniLM's weights and tokenizer
DEFAULTS = (("lab_scale", True), ("lab_positions", True), ("lab_causal", False), ("lab_random", False), ("lab_seed", 0))


@dataclass(frozen=True)
class Pair:
    """The sentence through the pretrained model and through the scratch encoder as switched."""

    text: str
    scratch: Loaded
    pretrained: Attention
    mine: Attention
    opts: dict[str, Any]
    layer: int
    head: int

    def head_map(self, context: Ctx, att: Attention, title: str, chart_key: str, **words: str) -> go.Figure:
        """`att`'s map of the chosen head, its title the catalogue's `title` with the layer and head."""
        heading = t(title, layer=self.layer, head=self.head, **words)
        fig = views.heatmap(att, self.layer, self.head, zmax=1.0, title=heading, lang=context.lang)
        charts.chart(fig, chart_key)
        return fig

    def walk(self, context: Ctx, layer: int) -> Steps:
        """The picked head of `layer` step by step through the scratch encoder, within the maps' token limit."""
        fn = partial(self.scratch.runner.steps, self.text, layer, self.head, context.max_tokens)
        return runners.cached(context, self.scratch, "steps", self.text, layer, self.head, fn=fn)


def switches() -> dict[str, Any]:
    for key, default in DEFAULTS:
        st.session_state.setdefault(key, default)
    with st.container(key="lab_switches"):
        *boxes, seed_col = st.columns(5)
        on = {
            name: box.toggle(t(f"lab.{name}"), key=f"lab_{name}", help=t(f"lab.{name}_help"))
            for box, name in zip(boxes, ("scale", "positions", "causal", "random"), strict=True)
        }
        seed = seed_col.number_input(
            t("lab.seed"), min_value=0, max_value=2**31 - 1, step=1, key="lab_seed", disabled=not on["random"]
        )
    random = on.pop("random")
    return {**on, "weights": "random" if random else "pretrained", "seed": int(seed) if random else 0}


def analysis(context: Ctx, opts: dict[str, Any]) -> Pair | None:
    text = widgets.sentence_box(context)
    if context.model not in LAB_MODELS:  # the lab's encoder carries MiniLM's weights: it reads with MiniLM
        needs_minilm(context, "aware.lab_needs_minilm", context.model, "lab")
    # MiniLM stays, whatever is chosen: no other model is offered for a text it cannot read
    pretrained = subject.analysis(context, text, EMBEDDED_MODEL, fallback=False, offer_reader=False, tokens=False)
    if pretrained is None:
        return None
    clean = pretrained.text
    mine = subject.analysis(context, clean, "scratch", fallback=False, opts=opts, notices=False)
    if mine is None:
        return None
    if pretrained.unknown > MAX_UNKNOWN_SHARE:
        english = i18n.examples("en")["default"]
        st.button(t("aware.lab_english"), key="lab_english", on_click=state.set_sentence, args=(english,))
    widgets.show_tokens(pretrained.att.tokens)
    att_s = mine.att
    layer, head = widgets.layer_head(att_s.n_layers, att_s.n_heads, "lab_layer", "lab_head", allow_mean=False)
    assert head is not None  # allow_mean=False
    return Pair(clean, mine.loaded, pretrained.att, att_s, opts, layer, head)


def needs_minilm(context: Ctx, message: str, model: str, key: str) -> None:
    """Why `model` cannot serve here (catalogue key `message`), then one click that makes MiniLM
    the sidebar's model (when this server offers it); container `{key}_model_note`."""
    with st.container(key=f"{key}_model_note"):
        st.info(t(message, model=escape_md(model_label(model))), icon=":material/info:")
        if EMBEDDED_MODEL in model_options(context.settings):
            label = t("aware.use_model", model=model_label(EMBEDDED_MODEL))
            st.button(label, key=f"{key}_use_minilm", on_click=_choose, args=(EMBEDDED_MODEL,))


def _choose(name: str) -> None:
    st.session_state["model_choice"] = name  # before the sidebar draws its select in the next run


def side_by_side(context: Ctx, p: Pair) -> None:
    st.subheader(t("lab.side_by_side"))
    diff = lab.max_abs_diff(p.pretrained.weights, p.mine.weights)
    o = p.opts
    defaults = o["scale"] and o["positions"] and not o["causal"] and o["weights"] == "pretrained"
    heads = p.mine.n_layers * p.mine.n_heads
    left, right = st.columns(2)  # the two maps first, the verdict on them under them
    with st.container(key="lab_compare_note"):
        if diff < SAME:
            st.success(t("lab.identical", diff=f"{diff:.1e}", heads=heads), icon=":material/check:")
        else:
            key = "lab.different_unexpected" if defaults else "lab.different_expected"
            st.info(t(key, diff=f"{diff:.3f}"), icon=":material/compare_arrows:")
    with left:
        p.head_map(context, p.pretrained, "lab.pretrained_title", "chart_lab_pretrained")
    with right:
        fig = p.head_map(context, p.mine, "lab.scratch_title", "chart_lab_scratch")
        settings = downloads.run_settings(context, p.mine, layer=p.layer, head=p.head, **p.opts)
        downloads.figure_downloads(fig, "lab-scratch", settings)


def steps(context: Ctx, p: Pair) -> None:
    """One head step by step: Q, K, QK^T, scaling, mask, softmax, V, the weighted sum."""
    st.subheader(t("lab.steps_title", layer=p.layer, head=p.head))
    walk = p.walk(context, p.layer)  # the maps' token limit: the walk shows exactly the tokens they show
    n, hs = walk["q"].shape
    rows = p.mine.tokens[:SHOW_TOKENS]
    dims = [f"d{j}" for j in range(min(hs, SHOW_DIMS))]
    if n > SHOW_TOKENS or hs > SHOW_DIMS:
        st.caption(t("lab.steps_cut", tokens=min(n, SHOW_TOKENS), n=n, dims=min(hs, SHOW_DIMS), hs=hs))
    r, k = len(rows), len(dims)
    o = p.opts
    panels = [
        ("q", t("lab.step_q"), walk["q"][:r, :k], dims),
        ("k", t("lab.step_k"), walk["k"][:r, :k], dims),
        ("scores", t("lab.step_scores"), walk["scores"][:r, :r], rows),
        ("scaled", t("lab.step_scaled", hs=hs) if o["scale"] else t("lab.step_unscaled"), walk["scaled"][:r, :r], rows),
        ("masked", t("lab.step_masked") if o["causal"] else t("lab.step_nomask"), walk["masked"][:r, :r], rows),
        ("weights", t("lab.step_softmax"), walk["weights"][:r, :r], rows),
        ("v", t("lab.step_v"), walk["v"][:r, :k], dims),
        ("output", t("lab.step_output"), walk["output"][:r, :k], dims),
    ]
    with st.container(key="lab_steps"):
        for i in range(0, len(panels), 2):
            for col, (name, title, values, columns) in zip(st.columns(2), panels[i : i + 2], strict=True):
                fmt = ".2f" if name == "weights" else ".1f"
                with col:
                    fig = views.matrix(values, rows, columns, title=title, fmt=fmt, lang=context.lang)
                    charts.chart(fig, key=f"chart_step_{name}")
    match = lab.max_abs_diff(walk["weights"], p.mine.weights[p.layer, p.head])
    st.caption(t("lab.steps_match", diff=f"{match:.1e}"))
    with st.container(key="lab_scaling"):
        names = (t("lab.entropy_scaled"), t("lab.entropy_unscaled"), t("lab.entropy_uniform"))
        for box, name, entropy in zip(st.columns(3), names, lab.scaling_entropies(walk), strict=True):
            box.metric(name, f"{entropy:.2f}")
        st.caption(t("lab.entropy_note", hs=hs))


def order_demo(context: Ctx, p: Pair) -> None:
    """The same words in another order, with positions off and on."""
    first, second = i18n.examples(context.lang)["order_pair"]
    st.caption(t("lab.order_intro"))
    literal.literal(f"A: {first}\nB: {second}")
    results = {}
    for positions in (False, True):
        opts = {"scale": True, "positions": positions, "causal": False, "weights": "pretrained", "seed": 0}
        got_a = subject.analysis(context, first, "scratch", fallback=False, opts=opts, notices=False)
        got_b = subject.analysis(context, second, "scratch", fallback=False, opts=opts, notices=False)
        if got_a is None or got_b is None:
            return
        result = lab.order_demo(got_a.att, got_b.att)
        if result is None:
            st.warning(t("lab.order_not_permutation"))
            return
        results[positions] = (got_a.att, result)
    with st.container(key="lab_order_note"):
        off, on = results[False][1].diff, results[True][1].diff
        st.info(t("lab.order_result", off=f"{off:.1e}", on=f"{on:.3f}"), icon=":material/swap_horiz:")
    att_a, result = results[False]
    left, right = st.columns(2)
    with left:
        p.head_map(context, att_a, "lab.order_a", "chart_order_a")
    with right:
        p.head_map(context, result.back, "lab.order_b", "chart_order_b")

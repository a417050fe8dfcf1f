"""Cross-attention in the app: X asks Y in the from-scratch lab (with the Y = X switch
that shows self-attention is the special case), sentence pairs through the pretrained encoder
(which heads read across), and the encoder-decoder trained live in the Training lab."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from ... import explain, lab, views
from ...models import EMBEDDED_MODEL, Progress
from ...result import Attention
from ...views._base import head_label
from ...views.training import alignment_curves
from .. import charts, runners, subject, widgets
from ..readers import model_label, unknown_notice
from ..runners import Loaded
from ..state import Ctx, t
from .ablation import has_layers
from .digits import train_box
from .lab import LAB_MODELS, SAME, SHOW_TOKENS, Pair, needs_minilm

Y_DEFAULT = "The cat sat on the mat because it was tired."
PAIR_EXAMPLES = {  # model inputs: MiniLM reads English
    "qa": ("Where did the cat sleep last night?", "The cat slept on the warm mat by the kitchen door."),
    "nli": ("A man is playing a guitar on a busy street.", "Someone is making music outdoors."),
    "translation": ("The weather is nice today.", "今天天气很好。"),
}
# the encoder-decoder's tasks, the first the default, each with steps enough on a shared 2-core machine
S2S_STEPS = {"reverse": 100, "copy": 100, "sort": 1000, "date": 200}
S2S_MAX_STEPS = 2000


def cross_lab(context: Ctx, p: Pair) -> None:
    """X (the lab's sentence) asks Y through the scratch encoder's layers; Y = X is self-attention."""
    st.caption(t("cross.intro"))
    st.session_state.setdefault("cross_y", Y_DEFAULT)
    with st.container(key="cross_controls"):
        same = st.toggle(t("cross.same"), key="cross_same", help=t("cross.same_help"))
        typed = st.text_input(t("cross.y"), key="cross_y", disabled=same, max_chars=2000)
    y = p.text if same else runners.checked_text(context, typed)
    if y is None:
        return
    loaded, own = _cross_model(context, p)
    runner = loaded.runner
    if not same:
        unknown_notice(context, runner, y)
    att = widgets.attempt(
        lambda: runners.cached(context, loaded, "cross", p.text, y,
                               fn=lambda: lab.cross_attention(runner, p.text, y, context.max_tokens)),
        "cross-attention", message=t("cross.failed"),
    )  # fmt: skip
    if att is None:
        return
    layer, head = min(p.layer, att.n_layers - 1), min(p.head, att.n_heads - 1)  # another model's shape
    with st.container(key="cross_note"):
        if same:
            diff = lab.max_abs_diff(att.weights, (p.mine if own is None else own).weights)
            heads = att.n_layers * att.n_heads
            if diff < SAME:
                st.success(t("cross.same_equal", diff=f"{diff:.1e}", heads=heads), icon=":material/check:")
            else:
                st.warning(t("cross.same_differs", diff=f"{diff:.3f}"))
        st.caption(t("cross.shape", nx=att.n, ny=att.n_keys))
    title = t("cross.map_title", head=head_label(layer, head, lang=context.lang))
    charts.chart(views.heatmap(att, layer, head, zmax=1.0, title=title, lang=context.lang), "chart_cross_lab")
    _cross_walk(context, loaded, p.text, y, att, layer, head)


def _cross_model(context: Ctx, p: Pair) -> tuple[Loaded, Attention | None]:
    """The model X asks Y through: the sidebar's when its layers can be taken apart (a BERT-family
    encoder), else the lab's encoder as switched above (said, with one click to MiniLM, for a
    model whose layers cannot)."""
    if context.model in LAB_MODELS:
        return p.scratch, None
    loaded = runners.load_runner(context, fallback=False)
    if loaded is not None and has_layers(loaded.runner):
        own = subject.analysis(context, p.text, loaded, notices=False)
        if own is not None:
            st.caption(t("aware.cross_model", model=widgets.escape_md(model_label(loaded.runner.name))))
            return loaded, own.att
    needs_minilm(context, "aware.cross_needs_layers", context.model, "cross")
    return p.scratch, None


def _cross_walk(context: Ctx, loaded: Loaded, x: str, y: str, att: Attention, layer: int, head: int) -> None:
    """The step-by-step walk's cross case: Q from X, K from Y, their scores and the softmax."""
    runner = loaded.runner
    walk = widgets.attempt(
        lambda: runners.cached(context, loaded, "cross_steps", x, y, layer, head,
                               fn=lambda: lab.cross_steps(runner, x, y, layer, head, context.max_tokens)),
        "cross steps", message=t("cross.failed"),
    )  # fmt: skip
    if walk is None:
        return
    st.markdown(f"**{t('cross.walk_title')}**")
    rows, cols = att.tokens[:SHOW_TOKENS], att.keys[:SHOW_TOKENS]
    if att.n > SHOW_TOKENS or att.n_keys > SHOW_TOKENS:
        st.caption(t("cross.walk_cut", rows=len(rows), nx=att.n, cols=len(cols), ny=att.n_keys))
    r, c = len(rows), len(cols)
    panels = (
        ("scores", "cross.walk_scores", ".1f", "chart_cross_scores"),
        ("weights", "cross.walk_softmax", ".2f", "chart_cross_softmax"),
    )
    with st.container(key="cross_steps"):
        for column, (name, title, fmt, key) in zip(st.columns(2), panels, strict=True):
            with column:
                fig = views.matrix(walk[name][:r, :c], rows, cols, title=t(title), fmt=fmt, lang=context.lang)
                charts.chart(fig, key)


def pairs(context: Ctx) -> None:
    """Two texts through the sidebar's model (MiniLM for the scratch encoder, which carries its
    weights): the heads that read across most. A model that reads no pairs says so."""
    st.caption(t("pairs.intro"))
    with st.container(key="pairs_controls"):
        example = st.selectbox(t("pairs.example"), list(PAIR_EXAMPLES), key="pairs_example",
                               format_func=widgets.option_labels("pairs.example.{}"), on_change=_fill_pair)  # fmt: skip
        if "pairs_a" not in st.session_state:
            _fill_pair()
        left, right = st.columns(2)
        a = left.text_area(t("pairs.a"), key="pairs_a", height=80, max_chars=2000)
        b = right.text_area(t("pairs.b"), key="pairs_b", height=80, max_chars=2000)
    name = EMBEDDED_MODEL if context.model == "scratch" else context.model
    loaded = runners.load_runner(context, name, fallback=False)
    a_clean, b_clean = runners.checked_text(context, a), runners.checked_text(context, b)
    if loaded is None or a_clean is None or b_clean is None:
        return
    runner: Any = loaded.runner  # a PretrainedModel: attend takes pair=
    if not reads_pairs(runner):
        needs_minilm(context, "aware.pairs_needs_encoder", name, "pairs")
        return
    st.caption(t("aware.pairs_model", model=widgets.escape_md(model_label(runner.name))))
    if example == "translation" and runner.name == EMBEDDED_MODEL:
        st.caption(t("pairs.translation_note"))
    for text in (a_clean, b_clean):
        unknown_notice(context, runner, text)
    att = widgets.attempt(
        lambda: runners.cached(context, loaded, "pair", a_clean, b_clean,
                               fn=lambda: runner.attend(a_clean, context.max_tokens, pair=b_clean)),
        "sentence pair", message=t("pairs.failed"),
    )  # fmt: skip
    if att is not None:
        _pair_views(context, att, special=f"{runner.tokenizer.cls_token}/{runner.tokenizer.sep_token}")


def reads_pairs(runner: Any) -> bool:
    """An encoder whose tokenizer separates two texts (models/pairs.py reads them so)."""
    tok = getattr(runner, "tokenizer", None)
    return (
        not getattr(runner, "causal", False)
        and hasattr(runner, "attend")
        and getattr(tok, "sep_token", None) is not None
        and bool(getattr(tok, "is_fast", False))
    )


def _fill_pair() -> None:
    a, b = PAIR_EXAMPLES.get(str(st.session_state.get("pairs_example", "qa")), PAIR_EXAMPLES["qa"])
    st.session_state["pairs_a"], st.session_state["pairs_b"] = a, b


def _pair_views(context: Ctx, att: Attention, special: str) -> None:
    blocks = explain.pair_blocks(att)  # (L, H, 2, 2)
    across = explain.across_share(blocks)
    layer, head = (int(i) for i in np.unravel_index(int(np.argmax(across)), across.shape))
    label = head_label(layer, head, lang=context.lang)
    labels = np.vectorize(lambda v: f"{v:.0%}")(across)
    grid = views.layer_head_grid(across, title=t("pairs.grid_title"), labels=labels, zmin=0.0, lang=context.lang)
    charts.chart(grid, "chart_pairs_grid")
    with st.container(key="pairs_top"):
        st.info(t("pairs.top", head=label, share=f"{across[layer, head]:.0%}"), icon=":material/swap_horiz:")
        b = blocks[layer, head]
        table = {
            "": [t("pairs.row_a"), t("pairs.row_b")],
            t("pairs.col_a"): [f"{b[0, 0]:.1%}", f"{b[1, 0]:.1%}"],
            t("pairs.col_b"): [f"{b[0, 1]:.1%}", f"{b[1, 1]:.1%}"],
            t("aware.pairs_col_special", tokens=special): [f"{1 - b[0].sum():.1%}", f"{1 - b[1].sum():.1%}"],
        }
        st.caption(t("pairs.blocks", head=label))
        st.dataframe(table, hide_index=True)
    charts.chart(views.heatmap(att, layer, head, zmax=1.0, lang=context.lang), "chart_pairs_head")


def seq2seq(context: Ctx) -> None:
    """Train the encoder-decoder here (seconds) and step through its cross-attention snapshots."""
    from ...training import train

    def fit(steps: int, seed: int, progress: Progress) -> Any:
        task = str(st.session_state.get("s2s_task", "reverse"))
        return train(task=task, arch="seq2seq", steps=steps, seed=seed, progress=progress)

    run = train_box(context, "s2s", S2S_MAX_STEPS, S2S_STEPS, "s2s.start", fit)
    if run is not None:
        _s2s_views(context, run)


def _s2s_views(context: Ctx, run: Any) -> None:
    last = run.snapshots[-1]
    with st.container(key="s2s_result"):
        st.success(t("s2s.result", steps=last.step, seconds=f"{run.seconds:.1f}", exact=f"{last.exact:.0%}",
                     alignment=f"{last.alignment:.2f}"), icon=":material/check:")  # fmt: skip
    i = widgets.snapshot_slider(
        t("s2s.snapshot"), run.snapshots, "s2s_snapshot", "{:,}".format, t("s2s.alignment_help")
    )
    snap = run.snapshots[i]
    best = int(np.argmax(np.nan_to_num(snap.heads[-1])))
    layer = snap.cross.n_layers - 1
    title = t("s2s.cross_title", step=f"{snap.step:,}")
    with st.container(key="s2s_cross"):
        fig = views.heatmap(snap.cross, layer, best, zmax=1.0, title=title, lang=context.lang)
        charts.chart(fig, "chart_s2s_cross")
    charts.chart(alignment_curves(run.steps, run.alignment, run.exact, lang=context.lang), "chart_s2s_curves")
    _try_source(context, run)


def _try_source(context: Ctx, run: Any) -> None:
    task = run.task
    if task.name == "date":
        hint, default = t("s2s.try_help_date"), "3 May 2026"
    else:
        default = " ".join(task.tokens(run.probe[0]))
        hint = t("s2s.try_help_symbols", n=task.src_len, example=default)
    typed = st.text_input(t("s2s.try"), value=default, key=f"s2s_try_{task.name}", help=hint, max_chars=400)
    out = widgets.attempt(lambda: run.translate(typed), "seq2seq translate")
    if out is None:
        return
    st.markdown(t("s2s.output", output=widgets.escape_md(" ".join(out.output))))
    last = out.cross.n_layers - 1
    charts.chart(views.heatmap(out.cross, last, None, zmax=1.0, lang=context.lang), "chart_s2s_try")

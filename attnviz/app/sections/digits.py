"""The Training lab's image section: train the digits ViT here (synchronous, bounded steps), then
for a chosen held-out digit (misclassified ones marked) the image, each head's attention from the
class token over its patches, the rollout, and a slider over the training snapshots."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ...explain import rollout
from ...views.digits import class_token_maps, digit_panels
from .. import charts, widgets, work
from ..state import Ctx, t

MAX_STEPS = 1000  # the page's bound: about a minute on two loaded cores
DEFAULT_STEPS = 400  # ~97 % held-out in about 25 s on two shared cores
CORRECT_SHOWN, WRONG_SHOWN = 6, 6  # the digits offered: a few read right, then up to this many read wrong


def digits(context: Ctx) -> None:
    """Steps, seed and the Train button; the maps once a run exists in this session."""
    st.subheader(t("digits.title"))
    st.caption(t("digits.intro"))
    limit = max(10, min(MAX_STEPS, context.settings.train_max_steps))
    st.session_state.setdefault("digits_steps", min(DEFAULT_STEPS, limit))
    with st.container(key="digits_controls"):
        steps_col, seed_col = st.columns(2)
        steps_col.number_input(t("digits.steps"), min_value=10, max_value=limit, step=50, key="digits_steps")
        seed_col.number_input(t("digits.seed"), min_value=0, max_value=2**31 - 1, step=1, key="digits_seed")
        start = st.button(t("digits.train"), key="digits_start")
    if start:
        _train_now(context, limit)
    run = st.session_state.get("_digits_run")
    if run is not None:
        _views(context, run)


def _train_now(context: Ctx, limit: int) -> None:
    from ...training import train

    steps = min(int(st.session_state.get("digits_steps", DEFAULT_STEPS)), limit)
    seed = int(st.session_state.get("digits_seed", 0))
    # through the server-wide heavy-work queue, its place shown, with Cancel (app/work.py)
    run = widgets.attempt(
        lambda: work.run_long(context, ("digits", steps, seed), t("digits.training"),
                              lambda progress: train(task="digits", steps=steps, seed=seed,
                                                     progress=lambda done, total: progress(done / max(total, 1)))),
        "digits training", message=t("digits.failed"),
    )  # fmt: skip
    if run is not None:
        st.session_state["_digits_run"] = run
        st.session_state["digits_snapshot"] = len(run.snapshots) - 1
        st.session_state.pop("digits_pick", None)


def _choices(run: Any) -> list[int]:
    right = [i for i in range(len(run.labels)) if run.predictions[i] == run.labels[i]][:CORRECT_SHOWN]
    return right + [int(i) for i in run.misclassified[:WRONG_SHOWN]]


def _views(context: Ctx, run: Any) -> None:
    last = run.snapshots[-1]
    st.success(t("digits.result", accuracy=f"{run.accuracy:.1%}", steps=last.step, seconds=f"{run.seconds:.1f}"),
               icon=":material/check:")  # fmt: skip
    choices = _choices(run)

    labels = {  # plain strings, in this run's language: Streamlit keeps format_func for the session
        i: t("digits.option" if run.predictions[i] == run.labels[i] else "digits.option_wrong",
             index=i, label=int(run.labels[i]), prediction=int(run.predictions[i]))
        for i in choices
    }  # fmt: skip

    pick_col, layer_col = st.columns(2)
    index = int(pick_col.selectbox(t("digits.pick"), choices, key="digits_pick", format_func=labels.__getitem__))
    layers = run.config.n_layers
    layer = int(layer_col.selectbox(t("digits.layer"), range(layers), index=layers - 1, key="digits_layer",
                                    format_func=widgets.fmt_layer))  # fmt: skip
    k = widgets.snapshot_slider(t("digits.snapshot"), run.snapshots, "digits_snapshot")
    snap = run.snapshots[k]
    att = run.attention(index, snapshot=k)
    maps = class_token_maps(att.weights, rollout(att), layer)
    titles = [t("digits.head", head=h) for h in range(att.n_heads)] + [t("digits.rollout")]
    title = t("digits.figure_title", step=snap.step, accuracy=f"{snap.accuracy:.1%}")
    fig = digit_panels(run.images[index], maps, titles, title, lang=context.lang)
    with st.container(key="digits_maps"):
        charts.chart(fig, "chart_digits_maps", caption=title)
    st.caption(t("digits.caption"))

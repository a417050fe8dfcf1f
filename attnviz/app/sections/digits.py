"""The Training lab's image section: train the digits ViT here (synchronous, bounded steps), then
for a chosen held-out digit (misclassified ones marked) the image, each head's attention from the
class token over its patches, the rollout, and a slider over the training snapshots."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from ...explain import rollout
from ...models import Progress
from ...views.training import class_token_maps, digit_panels
from .. import charts, widgets, work
from ..state import Ctx, t

MAX_STEPS = 1000  # the page's bound: about a minute on two loaded cores
DEFAULT_STEPS = 400  # ~97 % held-out in about 25 s on two shared cores
CORRECT_SHOWN, WRONG_SHOWN = 6, 6  # the digits offered: a few read right, then up to this many read wrong
Fit = Callable[[int, int, Progress], Any]  # (steps, seed, progress) -> a run with .snapshots


def train_box(context: Ctx, name: str, most: int, steps: Mapping[str, int], start: str, fit: Fit) -> Any | None:
    """The title, the task box (where `steps` names more than one task, each with its default
    steps), the steps and seed boxes, and the `start` button, which runs `fit(steps, seed, progress)`
    here through the server-wide heavy-work queue, its place shown, with Cancel (app/work.py). This
    session's last run; widget keys and catalogue entries start with `name`."""
    st.subheader(t(f"{name}.title"))
    st.caption(t(f"{name}.intro"))
    session = st.session_state
    limit = max(10, min(most, context.settings.train_max_steps))
    first = min(next(iter(steps.values())), limit)
    widgets.clamp_kept(f"{name}_steps", 10, limit, first)

    def on_task() -> None:
        session[f"{name}_steps"] = min(steps.get(str(session.get(f"{name}_task")), first), limit)

    with st.container(key=f"{name}_controls"):
        *task_col, steps_col, seed_col = st.columns(3 if len(steps) > 1 else 2)
        if task_col:
            labels = widgets.option_labels(f"{name}.task.{{}}")
            task_col[0].selectbox(
                t(f"{name}.task"), list(steps), key=f"{name}_task", format_func=labels, on_change=on_task
            )
        steps_col.number_input(t(f"{name}.steps"), min_value=10, max_value=limit, step=50, key=f"{name}_steps")
        seed_col.number_input(t(f"{name}.seed"), min_value=0, max_value=2**31 - 1, step=1, key=f"{name}_seed")
        clicked = st.button(t(start), key=f"{name}_start")
    if clicked:
        n, seed = int(session[f"{name}_steps"]), int(session.get(f"{name}_seed", 0))
        key = (name, session.get(f"{name}_task"), n, seed)
        run = widgets.attempt(
            lambda: work.run_long(context, key, t(f"{name}.training"), lambda progress: fit(n, seed, progress)),
            f"{name} training",
            message=t(f"{name}.failed"),
        )
        if run is not None:
            session[f"_{name}_run"], session[f"{name}_snapshot"] = run, len(run.snapshots) - 1
            session.pop(f"{name}_pick", None)
    return session.get(f"_{name}_run")


def digits(context: Ctx) -> None:
    """Steps, seed and the Train button; the maps once a run exists in this session."""
    from ...training import train

    def fit(steps: int, seed: int, progress: Progress) -> Any:
        return train(task="digits", steps=steps, seed=seed, progress=lambda done, total: progress(done / max(total, 1)))

    run = train_box(context, "digits", MAX_STEPS, {"digits": DEFAULT_STEPS}, "digits.train", fit)
    if run is not None:
        _views(context, run)


def _views(context: Ctx, run: Any) -> None:
    last = run.snapshots[-1]
    st.success(t("digits.result", accuracy=f"{run.accuracy:.1%}", steps=last.step, seconds=f"{run.seconds:.1f}"),
               icon=":material/check:")  # fmt: skip
    right = [i for i in range(len(run.labels)) if run.predictions[i] == run.labels[i]][:CORRECT_SHOWN]
    choices = right + [int(i) for i in run.misclassified[:WRONG_SHOWN]]

    labels = {  # plain strings, in this run's language: Streamlit keeps format_func for the session
        i: t("digits.option" if run.predictions[i] == run.labels[i] else "digits.option_wrong",
             index=i, label=int(run.labels[i]), prediction=int(run.predictions[i]))
        for i in choices
    }  # fmt: skip

    pick_col, layer_col = st.columns(2)
    index = int(pick_col.selectbox(t("digits.pick"), choices, key="digits_pick", format_func=labels.__getitem__))
    layers = run.config.n_layers
    layer = int(layer_col.selectbox(t("digits.layer"), range(layers), index=layers - 1, key="digits_layer"))
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

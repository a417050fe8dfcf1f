"""The Training lab's sections: pick a task and a size, train in a background thread, watch the
curves, every head's map and the head scores change live, stop and keep, open in the explorer."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import streamlit as st

from ... import views
from ...lab.sparse import KINDS
from ...training import TASKS, TrainConfig, TrainingRun
from ...training.plateau import PRESET_OPTIONS, PRESET_STEPS
from ...training.reach import verdict
from ...training.tasks import MAX_TEXT_CHARS, MIN_TEXT_CHARS
from .. import charts, literal, runners, widgets
from ..server import budget, session_models, training_jobs
from ..state import Ctx, lang, t
from . import head_card, why
from .explain import code_span

POLL_S = 2.0  # the live part redraws this often while a run trains (light figures: see _live)
DEFAULT_STEPS = PRESET_STEPS  # the presets' step budgets; each run also stops on a plateau
WIDTHS = (16, 32, 64, 128, 256)
HEADS = (1, 2, 4, 8)
SPARSE_CHOICES = ("", *KINDS)  # "": every earlier key (full causal attention)


CONTROL_DEFAULTS = {"train_task": "induction", "train_layers": 2, "train_heads": 2, "train_d_model": 64,
                    "train_seed": 0, "train_plateau": True, "train_sparse": "", "train_window": 2}  # fmt: skip


def _value(key: str, default: Any = None) -> Any:
    """A control's value in a callback, whatever the client sent: a client may leave out any
    widget's state."""
    fallback = CONTROL_DEFAULTS.get(key) if default is None else default
    return st.session_state.get(key, st.session_state.get(f"_kept_{key}", fallback))


def _on_task(most: int) -> None:
    steps = DEFAULT_STEPS.get(_value("train_task"), DEFAULT_STEPS["induction"])
    st.session_state["train_steps"] = min(steps, most)


def controls(context: Ctx) -> None:
    """Task, text, size, steps, seed and the Train button (which starts a background run)."""
    settings = context.settings
    session_state = st.session_state
    for key, default in {**CONTROL_DEFAULTS, "train_text": t("train.default_text")}.items():
        session_state.setdefault(key, default)  # first values; they survive a visit to another page (state.KEPT)
    default_steps = min(DEFAULT_STEPS[session_state["train_task"]], settings.train_max_steps)
    widgets.clamp_kept("train_steps", 10, max(10, settings.train_max_steps), default_steps)
    with st.container(key="train_controls"):
        task = st.selectbox(t("train.task"), TASKS, key="train_task", format_func=widgets.option_labels("train.task.{}"),
                            on_change=_on_task, args=(settings.train_max_steps,), help=t("train.task_help"))  # fmt: skip
        st.markdown(t(f"train.explain.{task}"))
        if task == "text":
            st.text_area(t("train.text"), key="train_text", height=110, max_chars=MAX_TEXT_CHARS,
                         help=t("train.text_help", min=MIN_TEXT_CHARS, max=f"{MAX_TEXT_CHARS:,}"))  # fmt: skip
        _size_inputs(context)
        st.checkbox(t("trainlab.plateau"), key="train_plateau", help=t("trainlab.plateau_help"))
        _sparse_inputs()
        st.caption(t("train.limits", steps=f"{settings.train_max_steps:,}", layers=settings.train_max_layers,
                     heads=settings.train_max_heads, d_model=settings.train_max_d_model))  # fmt: skip
        st.button(t("train.start"), key="train_start", type="primary", on_click=_start, args=(context,))
    message = session_state.pop("_train_message", None)
    if message is not None:
        (widgets.show_error if message[0] == "error" else st.warning)(*message[1:])


def _size_inputs(context: Ctx) -> None:
    s = context.settings
    heads = [h for h in HEADS if h <= s.train_max_heads] or [1]
    widths = [w for w in WIDTHS if w <= s.train_max_d_model] or [s.train_max_d_model]
    widgets.clamp_kept("train_layers", 1, s.train_max_layers)
    layers_col, heads_col, width_col, steps_col, seed_col = st.columns(5)
    layers_col.number_input(t("train.layers"), min_value=1, max_value=s.train_max_layers, step=1, key="train_layers")
    for label, key, options, box in (("train.heads", "train_heads", heads, heads_col),
                                     ("train.d_model", "train_d_model", widths, width_col)):  # fmt: skip
        # a link's value: the nearest this server offers
        near = widgets.nearest(options, st.session_state.get(key), options[min(1, len(options) - 1)])
        widgets.pick(t(label), options, key, default=near, box=box)
    steps_col.number_input(
        t("train.steps"), min_value=10, max_value=max(10, s.train_max_steps), step=100, key="train_steps"
    )
    seed_col.number_input(
        t("train.seed"), min_value=0, max_value=2**31 - 1, step=1, key="train_seed", help=t("train.seed_help")
    )


def _sparse_inputs() -> None:
    """Which keys each query may look at (attnviz/sparse.py): every earlier one, or a pattern."""
    labels = widgets.option_labels("trainlab.sparse.{}")
    with st.expander(t("trainlab.sparse"), expanded=bool(st.session_state.get("train_sparse"))):
        kind_col, window_col = st.columns(2)
        kind_col.selectbox(t("trainlab.sparse_kind"), SPARSE_CHOICES, key="train_sparse", help=t("trainlab.sparse_help"),
                           format_func=lambda kind: labels(kind or "full"))  # fmt: skip
        window_col.number_input(t("trainlab.window"), min_value=0, max_value=64, step=1, key="train_window",
                                help=t("trainlab.window_help"))  # fmt: skip


def _start(context: Ctx) -> None:
    """Train button: check the limits, then queue the run (a worker thread trains it)."""
    session_state, settings = st.session_state, context.settings
    try:
        task = str(_value("train_task"))
        steps = int(_value("train_steps", DEFAULT_STEPS.get(task, DEFAULT_STEPS["induction"])))
        cfg = TrainConfig(task, min(steps, settings.train_max_steps), int(_value("train_seed")),
                          int(_value("train_layers")), int(_value("train_heads")), int(_value("train_d_model")),
                          plateau=bool(_value("train_plateau")), sparse=str(_value("train_sparse")),
                          window=int(_value("train_window")),
                          **PRESET_OPTIONS.get(task, {}))  # type: ignore[arg-type]  # fmt: skip
        settings.check_training(cfg.steps, cfg.layers, cfg.heads, cfg.d_model)
        text = str(_value("train_text", "")) if cfg.task == "text" else None
        training_jobs.start(session_models.session_id(), cfg, text, float(settings.budget_s))
    except (ValueError, TypeError, KeyError) as exc:
        session_state["_train_message"] = ("error", t("train.failed"), str(exc))
    except training_jobs.Busy as exc:
        busy = str(exc) == "visitor"
        session_state["_train_message"] = ("warning", t("train.per_visitor") if busy else t("train.busy", n=str(exc)))


def live(context: Ctx) -> None:
    """The live part: polled every POLL_S while this session's run trains, still otherwise."""
    job = training_jobs.get(session_models.session_id())
    running = job is not None and not job.finished
    st.fragment(_live, run_every=POLL_S if running else None)(context)


def _live(context: Ctx) -> None:
    session_state = st.session_state
    job = training_jobs.get(session_models.session_id())
    if job is None or job.run is None:
        st.info(t("train.none"), icon="🌱")
        return
    if job.finished and session_state.get("_train_listed") != job.seq:  # once a run, even if it finished mid-run
        session_state["_train_listed"] = job.seq
        st.rerun()  # the whole page: polling stops, the sidebar lists the new model
    run = job.run
    snapshots = list(run.snapshots)
    _status(job, run, snapshots)
    if not snapshots:
        return
    if job.finished and run.waited >= 1:
        st.caption(t("trainlab.waited", waited=f"{run.waited:.0f}", seconds=f"{run.seconds:.0f}"))
    if job.finished and run.config.sparse:
        _sparse_verdict(run, snapshots[-1].accuracy)
    with st.container(key="train_curves"):
        st.subheader(t("train.curves"))
        held_out = [(s.step, s.loss, s.accuracy) for s in snapshots]
        # while it trains the axis runs to the steps asked for (the curve grows towards its end);
        # a run that ended (done, stopped, plateaued, out of budget) ends it at its last step
        last = max(int(run.step), 1) if job.finished else run.config.steps
        fig = views.training_curves(run.history[:], held_out, total_steps=last, lang=context.lang)
        charts.chart(fig, key="chart_train_curves")
    # While it trains the page redraws every POLL_S: the latest maps alone and no score panel,
    # so the redraws (built on the server, drawn by the browser, both on the training's cores)
    # cost little; the slider over every snapshot and the scores come when the run ends.
    with st.container(key="train_grid"):
        st.subheader(t("train.snapshots"))
        st.caption(t("train.snapshots_help") if job.finished else t("trainlab.snapshots_live"))
        literal.literal(t("train.probe", text=run.probe.text))
        fig = views.snapshot_grid([s.attention for s in snapshots], [s.step for s in snapshots],
                                  animate=job.finished, lang=context.lang)  # fmt: skip
        charts.chart(fig, key="chart_train_grid")
    if job.finished:
        _scores(context, run, len(snapshots))
        induction_card(context, run, job.model_name)


def _status(job: training_jobs.Job, run: TrainingRun, snapshots: list[Any]) -> None:
    total, step = run.config.steps, run.step
    accuracy = f"{snapshots[-1].accuracy:.1%}" if snapshots else "–"
    with st.container(key="train_status"):
        if job.error is not None:
            widgets.show_error(t("train.failed"), job.error)
        elif job.queued:
            st.info(t("train.queued", place=max(job.place, 1)), icon=":material/hourglass_top:")
            st.button(t("train.stop"), key="train_stop", on_click=training_jobs.stop, args=(job.session,))
        elif not job.finished:
            text = t("train.running", step=f"{step:,}", total=f"{total:,}", seconds=f"{job.elapsed:.0f}")
            st.progress(min(step / max(total, 1), 1.0), text=text)
            if step == 0 and job.elapsed > 2:
                st.caption(t("train.waiting"))
            st.button(t("train.stop"), key="train_stop", on_click=training_jobs.stop, args=(job.session,),
                      help=t("train.stop_help"))  # fmt: skip
        elif job.budget_hit:
            st.warning(t("train.budget", step=f"{step:,}", minutes=int(budget.BUDGET_WINDOW_S // 60)), icon="⏳")
        elif run.plateau is not None:
            p = run.plateau
            st.success(t("trainlab.plateaued", step=f"{p.step:,}", total=f"{total:,}", seconds=f"{run.seconds:.1f}",
                         accuracy=f"{p.accuracy:.1%}", window=f"{p.window:,}", gain=f"{100 * p.gain:.1f}"), icon="✅")  # fmt: skip
        elif run.stopped:
            st.info(t("train.stopped", step=f"{step:,}", total=f"{total:,}", accuracy=accuracy), icon="⏹️")
        else:
            st.success(t("train.done", step=f"{step:,}", seconds=f"{run.seconds:.1f}", accuracy=accuracy), icon="✅")


def _sparse_verdict(run: TrainingRun, accuracy: float) -> None:
    """Why a run with a sparse pattern learned its task or could not (training/reach.py)."""
    cfg, v = run.config, verdict(run.config, run.task)
    lo, hi = v.need
    need = f"{lo}" if lo == hi else f"{lo}–{hi}"
    words = {"window": cfg.window, "layers": cfg.layers, "reach": v.reach, "need": need, "accuracy": f"{accuracy:.1%}",
             "chance": f"{1 / max(len(run.task.vocab) - 3, 1):.0%}", "task": t(f"train.task.{cfg.task}")}  # fmt: skip
    show, key, icon = {
        "fail": (st.warning, "fail", ":material/block:"),
        "partial": (st.info, "partial", ":material/rule:"),
        "ok": (st.success, "ok", ":material/check:"),
    }.get(v.kind, (st.info, cfg.sparse, ":material/grid_on:"))
    with st.container(key="train_sparse_verdict"):
        show(t(f"trainlab.verdict_{key}", **words), icon=icon)


def _scores(context: Ctx, run: TrainingRun, count: int) -> None:
    rows = run.snapshot_scores[:count]
    if len(rows) < count:
        return
    scores = {name: np.stack([r[name] for r in rows]) for name in run.task.pattern_names}
    with st.container(key="train_scores"):
        st.subheader(t("train.scores"))
        st.caption(t("train.scores_help"))
        steps = [s.step for s in run.snapshots[:count]]
        charts.chart(views.head_score_curves(steps, scores, lang=context.lang), key="chart_train_scores")
        last = rows[-1]
        if "induction" in last and run.config.layers > 1:
            prev, ind = _best(last["previous"], first_layer=0), _best(last["induction"], first_layer=1)
            st.markdown(t("train.verdict", prev=prev, ind=ind))
        elif "diagonal" in last:
            st.markdown(t("train.verdict_diagonal", diag=_best(last["diagonal"])))


def best_head(values: np.ndarray, first_layer: int = 0) -> tuple[int, int, float]:
    """(layer, head, value) of the highest score at or after `first_layer` (the last layer if
    there are fewer); NaN counts as lowest."""
    values = np.asarray(values)
    first_layer = min(first_layer, values.shape[0] - 1)
    part = np.nan_to_num(values[first_layer:], nan=-1.0)
    layer, head = np.unravel_index(int(np.argmax(part)), part.shape)
    return int(layer) + first_layer, int(head), float(part[layer, head])


def _best(values: np.ndarray, first_layer: int = 0) -> str:
    layer, head, value = best_head(values, first_layer)
    return t("train.head_value", layer=layer, head=head, value=f"{value:.2f}")


def induction_cell(run: TrainingRun, weights: np.ndarray) -> tuple[int, int] | None:
    """The probe's (query, matching key) where the induction head (its map `weights`) looks
    most: the key after the query token's earlier copy (the task's induction pattern)."""
    cols = run.probe.patterns.get("induction")
    if cols is None:
        return None
    rows = [(int(q), int(cols[q])) for q in np.flatnonzero(np.asarray(cols) >= 0)]
    return max(rows, key=lambda r: float(weights[r])) if rows else None


def induction_card(context: Ctx, run: TrainingRun, model_name: str | None) -> None:
    """After an induction run: the induction head's card (sections/head_card.py) at the probe's
    matching key, where its key side points at the previous-token head."""
    scores = run.snapshot_scores[-1] if run.snapshot_scores else {}
    if model_name is None or "induction" not in scores or run.config.layers < 2:
        return
    loaded = runners.load_runner(context, model_name, fallback=False)
    raw = None if loaded is None else runners.analyse(context, loaded, run.probe.text)
    if loaded is None or raw is None:
        return
    layer, head, _ = best_head(scores["induction"], 1)
    cell = induction_cell(run, raw.head(layer, head))
    if cell is None:
        return
    with st.container(key="train_why"):
        st.subheader(t("why.train_title"))
        st.caption(t("why.train_intro", head=views.head_label(layer, head, lang=context.lang), i=cell[0], j=cell[1],
                     query=code_span(raw.tokens[cell[0]]), key_token=code_span(raw.tokens[cell[1]])))  # fmt: skip
        s = why.sources(context, loaded, run.probe.text, layer, head, *cell)
        if s is not None:
            head_card.card(context, loaded, run.probe.text, raw, s, key="train_why_card")


def _choose(name: str) -> None:
    st.session_state["model_choice"] = name  # the sidebar's widget: set before it is drawn
    st.session_state["_train_open"] = name


def open_in_explorer(context: Ctx) -> None:
    """After a run: its model is in this session's model list; one click shows it in the
    explorer, on the probe input, focused on the head that learned the task's pattern."""
    session = session_models.session_id()
    job = training_jobs.get(session)
    if job is None or not job.finished or job.model_name is None or job.run is None:
        return
    model = session_models.trained(job.model_name, session)
    if model is None:
        return
    st.button(t("train.open"), key="train_open", help=t("train.open_help"), icon="🔍", on_click=_choose,
              args=(job.model_name,))  # fmt: skip
    if st.session_state.pop("_train_open", None) == job.model_name:
        run = job.run
        pattern = "induction" if "induction" in run.task.pattern_names else run.task.expected
        layer, head, _ = best_head(run.snapshot_scores[-1][pattern], 1 if pattern == "induction" else 0)
        charts.open_in_explorer(replace(context, model=job.model_name, lang=lang()), layer, head, sentence=model.probe)

"""The first picture of the Caveats, Corpus and Training pages, right under their title: a small
example chart from bundled numbers or the task itself (no model is loaded for it)."""

from __future__ import annotations

import streamlit as st

from ...corpus.example import load_example
from ...views import corpus_grid
from ...views.examples import method_agreement, pattern_map
from .. import charts
from ..sidebar import model_label
from ..state import Ctx, t
from .faithfulness import _average


def caveats_picture(context: Ctx) -> None:
    """How far each method's ranking of tokens agrees with deleting them one at a time, averaged
    over the bundled sentences: raw attention lowest (the Caveats page's point in one chart)."""
    data = _average()
    if data is None:
        return
    fig = method_agreement(data["rows"], lang=context.lang)
    with st.container(key="picture_caveats"):
        charts.chart(fig, key="chart_picture_caveats", caption=t("pic.agreement_caption_short"))
        st.caption(
            t("pic.agreement_caption", n=data.get("sentences", 0), model=model_label(str(data.get("model", "?"))))
        )


def corpus_picture(context: Ctx) -> None:
    """A finished run of the bundled sentences of the visitor's language, as the page draws it."""
    example = load_example(lang=context.lang)
    if example is None:
        return
    stat = str(example.get("stat", "prev"))
    fig = corpus_grid(
        example["mean"], example["std"], count=example["sentences"], zmin=0.0, zmax=1.0, lang=context.lang
    )
    # no "click a head" note: nothing below this example follows a click
    fig.update_layout(title={"text": t("pic.corpus_title", stat=t(f"corpus.stat_{stat}"))}, height=430)
    with st.container(key="picture_corpus"):
        charts.chart(fig, key="chart_picture_corpus")
        which = "pic.corpus_caption_zh" if example.get("source") == "zh.txt" else "pic.corpus_caption"
        st.caption(t(which, n=example["sentences"], model=model_label(str(example.get("model", "?")))))


def _probe(task_name: str, text: str) -> tuple[list[str], list[int]] | None:
    """The tokens of the task's probe and the column each row should read (the task's
    expected pattern); None when the text cannot make a task."""
    from ...training.loop import TrainConfig
    from ...training.plateau import PRESET_OPTIONS
    from ...training.tasks import make_task

    cfg = TrainConfig(task_name, **PRESET_OPTIONS.get(task_name, {}))  # type: ignore[arg-type]
    try:
        task = make_task(task_name, text=text, symbols=cfg.symbols, length=cfg.length, periods=cfg.periods,
                         block=cfg.block)  # fmt: skip
    except ValueError:
        return None
    probe = task.probe(0)
    tokens = [task.vocab[i] for i in probe.ids]
    return tokens, [int(c) for c in probe.patterns[task.expected]]


def training_picture(context: Ctx) -> None:
    """The map a head that solved the chosen task would draw on its probe sequence."""
    from .training import TASKS, _value  # a Training control's value before its widget is drawn

    task_name, text = _value("train_task"), _value("train_text")
    task_name = str(task_name) if task_name in TASKS else "induction"
    found = _probe(task_name, text if isinstance(text, str) else "") or _probe(task_name, t("train.default_text"))
    if found is None:
        return
    fig = pattern_map(*found, title=t("pic.pattern_title", task=t(f"train.task.{task_name}")), lang=context.lang)
    with st.container(key="picture_training"):
        charts.chart(fig, key="chart_picture_training")
        st.caption(t(f"pic.pattern_caption.{task_name}"))

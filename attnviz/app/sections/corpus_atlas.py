"""The Corpus page's query-key atlas: one head's queries and keys over the corpus in 2D (after
AttentionViz), computed on request with progress, cached, and clickable into the explorer."""

from __future__ import annotations

import streamlit as st

from ... import corpus, views
from ...models import Progress
from .. import charts, widgets, work
from ..server import corpus_jobs as jobs
from ..state import Ctx, t
from .corpus import job_model, result_of

POINTS_DEFAULT = 10_000
POINTS_MAX = 50_000
POINTS_MAX_DEMO = 5_000
COLOURS = ("kind", "position")


def head_pickers(job: jobs.Job) -> tuple[int, int]:
    """Layer and head of the sentences and the atlas (a click on the grid sets them too)."""
    result = result_of(job)
    widgets.clamp_kept("corpus_layer", 0, result.n_layers - 1, 0)  # a link's past this model's: its last
    widgets.clamp_kept("corpus_head", 0, result.n_heads - 1, 0)
    a, b = st.columns(2)
    layer = a.selectbox(t("ctl.layer"), range(result.n_layers), key="corpus_layer")
    head = b.selectbox(t("ctl.head"), range(result.n_heads), key="corpus_head")
    return int(layer), int(head)


def _texts(result: corpus.CorpusResult, most: int) -> list[str]:
    """The first `most` sentences of the run, read a batch at a time."""
    import pyarrow.parquet as pq

    texts: list[str] = []
    with result.store.fs.open_input_file(result.store.path("sentences.parquet")) as fh:
        for batch in pq.ParquetFile(fh).iter_batches(batch_size=1024, columns=["text"]):
            texts.extend(str(x) for x in batch.column(0).to_pylist())
            if len(texts) >= most:
                break
    return texts[:most]


def _controls(context: Ctx) -> tuple[str, str, int]:
    a, b, d = st.columns(3)
    method = a.radio(
        t("corpus.atlas_method"), corpus.methods(), key="corpus_atlas_method", horizontal=True,
        format_func=widgets.option_labels("fig.method_{}"), help=t("corpus.atlas_method_help"),
    )  # fmt: skip
    colour = b.radio(
        t("corpus.atlas_colour"), COLOURS, key="corpus_atlas_colour", horizontal=True,
        format_func=widgets.option_labels("corpus.colour_{}"),
    )  # fmt: skip
    cap = POINTS_MAX_DEMO if context.settings.demo else POINTS_MAX
    widgets.clamp_kept("corpus_atlas_points", 100, cap, min(POINTS_DEFAULT, cap))
    points = d.number_input(
        t("corpus.atlas_points"), min_value=100, max_value=cap, step=1000, key="corpus_atlas_points",
        help=t("corpus.atlas_points_help", cap=f"{cap:,}"),
    )  # fmt: skip
    return str(method), str(colour), int(points)


def atlas(context: Ctx, job: jobs.Job, layer: int, head: int) -> None:
    """The atlas of (layer, head): drawn on request (then cached), points clickable."""
    result = result_of(job)
    st.subheader(t("corpus.atlas_title", head=views.head_label(layer, head, lang=context.lang)))
    st.caption(t("corpus.atlas_intro"))
    method, colour, points = _controls(context)
    wanted = (str(job.out), layer, head, method, points)
    session = st.session_state
    if session.get("_corpus_atlas") != wanted:
        if not st.button(t("corpus.atlas_draw"), key="corpus_atlas_draw"):
            return
        session["_corpus_atlas"] = wanted
    loaded = job_model(context, job)
    if loaded is None:
        return
    runner = loaded.runner

    def compute(progress: Progress) -> corpus.Atlas:
        texts = _texts(result, max(1, points // 4))
        return corpus.atlas(
            runner, texts, layer, head, method=method, max_points=points, max_tokens=job.max_tokens, progress=progress
        )

    label = t("corpus.atlas_computing", head=views.head_label(layer, head, lang=context.lang))
    found = widgets.attempt(
        lambda: work.cached_long(context, loaded, "corpus_atlas", str(job.out), layer, head, method, points,
                                 label=label, fn=compute),
        "corpus atlas", message=t("corpus.atlas_failed"),
    )  # fmt: skip
    if found is None:
        return
    fig = views.query_key_atlas(
        found.xy, found.is_key, found.row, found.relative, found.tokens, found.texts,
        layer=found.layer, head=found.head, method=found.method, colour_by=colour, lang=context.lang,
    )  # fmt: skip
    with st.container(key="corpus_atlas"):
        event = charts.chart(fig, key="chart_atlas", on_select="rerun", selection_mode="points")
        if found.capped:
            st.caption(t("corpus.atlas_capped", n=f"{len(found.texts):,}"))
        st.caption(t("corpus.atlas_click"))
    row = views.atlas_pick(event)
    if row is not None and 0 <= row < len(found.texts):
        charts.open_in_explorer(context, found.layer, found.head, sentence=found.texts[row])

"""The Corpus page's sections: choose a corpus (bundled or uploaded), run it in the background
with progress that survives a page switch, then per-head statistics over the corpus, the
sentences where a head is most and least typical, and the query-key atlas of one head."""

from __future__ import annotations

import shutil
from pathlib import Path

import streamlit as st

from ... import corpus, views
from ...corpus.readers import FORMATS
from .. import charts, nav, runners, widgets
from ..runners import Loaded
from ..server import budget, visitor
from ..server import corpus_jobs as jobs
from ..sidebar import model_label
from ..state import Ctx, ctx, t

BUNDLED = nav.ROOT / "assets" / "corpus"
SOURCES = ("en", "zh", "both", "upload")
STAT_RANGES = {"entropy": (None, None)}  # every other statistic is a share in [0, 1]
TYPICAL_K = 5
TOKEN_CHOICES = (32, 64, 128, 256, 512)
DOWNLOAD_MAX_BYTES = 4 << 20
LABEL_CHARS = 90  # of a sentence on a button


def source(context: Ctx) -> str:
    """The corpus to run: a bundled one or an upload (which is checked when the run starts)."""
    st.subheader(t("corpus.source_title"))
    choice = st.radio(t("corpus.source"), SOURCES, key="corpus_source", horizontal=True,
                      format_func=widgets.option_labels("corpus.src_{}"))  # fmt: skip
    if choice == "upload":
        limit = context.settings.corpus_upload_mb
        st.file_uploader(t("corpus.upload", mb=limit), type=[ext.lstrip(".") for ext in FORMATS], key="corpus_upload",
                         max_upload_size=limit, help=t("corpus.upload_help"))  # fmt: skip
        st.caption(t("upload.over_limit", mb=limit))  # the browser's own refusal is in English
        received(st.session_state.get("corpus_upload"))
    return str(choice)


def received(upload: object) -> None:
    """Says that the server has the file: the browser shows its name at once, but a Run pressed
    before the upload arrived finds none."""
    if upload is None or not hasattr(upload, "name") or not hasattr(upload, "size"):
        return
    size = int(upload.size)
    shown = f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{max(1, round(size / 1024))} KB"
    with st.container(key="corpus_upload_ready"):
        st.caption(
            t("corpus.upload_ready", name=widgets.escape_md(str(upload.name), 80), size=shown, run=t("corpus.run"))
        )


def _input_for(context: Ctx, choice: str, folder: Path) -> tuple[Path, str] | None:
    """Where the chosen corpus is, as a file the run can read, and how to name it; None after
    an error (nothing uploaded, too large, a format this cannot read)."""
    if choice in ("en", "zh"):
        return BUNDLED / f"{choice}.txt", t(f"corpus.src_{choice}")
    if choice == "both":
        path = folder / "bundled.txt"
        path.write_bytes(b"".join((BUNDLED / name).read_bytes() for name in ("en.txt", "zh.txt")))
        return path, t("corpus.src_both")
    upload = st.session_state.get("corpus_upload")
    if upload is None:
        widgets.show_error(t("corpus.no_upload"))
        return None
    ext = Path(str(upload.name)).suffix.lower()
    if ext not in FORMATS:
        widgets.show_error(t("corpus.bad_format"), str(upload.name))
        return None
    if upload.size > context.settings.corpus_upload_mb * 2**20:
        widgets.show_error(t("corpus.too_big", mb=context.settings.corpus_upload_mb))
        return None
    path = folder / f"upload{ext}"  # never the visitor's file name on disk
    path.write_bytes(upload.getvalue())
    return path, str(upload.name)


def run_controls(context: Ctx, loaded: Loaded, choice: str) -> None:
    """How many lines to read and the Run button, which starts (or replaces) the job."""
    cap = context.settings.corpus_sentences
    # a link's numbers are brought within this server's limits (and the link writes them back)
    widgets.clamp_kept("corpus_limit", 1, cap, min(cap, 1000))
    sizes = [n for n in TOKEN_CHOICES if n <= context.settings.max_tokens] or [context.settings.max_tokens]
    near = widgets.nearest(sizes, st.session_state.get("corpus_tokens"), corpus.DEFAULT_CORPUS_TOKENS)
    a, d, b = st.columns([3, 2, 1])
    limit = a.number_input(t("corpus.limit"), min_value=1, max_value=cap, step=100, key="corpus_limit",
                           help=t("corpus.limit_help", cap=f"{cap:,}"))  # fmt: skip
    tokens = widgets.pick(t("corpus.tokens"), sizes, "corpus_tokens", default=near, box=d, help=t("corpus.tokens_help"))
    b.write("")
    current = jobs.get(visitor.session_id())
    running = current is not None and current.active
    if not b.button(t("corpus.run"), key="corpus_run", type="primary", width="stretch", disabled=running):
        return
    if budget.left(context.settings.budget_s, visitor.visitor()) <= 0:
        st.warning(t("work.budget", minutes=int(budget.BUDGET_WINDOW_S // 60)), icon="⏳")
        return
    folder = jobs.new_folder()
    found = _input_for(context, choice, folder)
    if found is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    path, label = found
    job = jobs.Job(
        session=visitor.session_id(), folder=folder, input=path, label=label, runner=loaded.runner,
        model_key=loaded.key, max_tokens=int(tokens), limit=int(limit), budget_s=float(context.settings.budget_s),
    )  # fmt: skip
    try:
        jobs.start(job)
    except jobs.Busy:
        shutil.rmtree(folder, ignore_errors=True)
        st.warning(t("corpus.busy"), icon="⏳")


def job_model(context: Ctx, job: jobs.Job) -> Loaded | None:
    """The model the job ran with, from the process-wide registry (loaded again if it was
    evicted since); None after an error message."""
    name, _device, opts = job.model_key
    return runners.load_runner(context, str(name), fallback=False, **dict(opts))  # type: ignore[call-overload]


def _resume() -> None:
    session = visitor.session_id()
    job = jobs.get(session)
    loaded = None if job is None else job_model(ctx(), job)
    try:
        if loaded is not None:
            jobs.resume(session, loaded.runner)
    except jobs.Busy:
        st.session_state["_corpus_busy"] = True


def _eta(seconds: float | None) -> str:
    if seconds is None:
        return "…"
    s = round(seconds)
    return f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s} s"


def progress() -> None:
    """The visitor's run: a live progress bar while it goes (also after a page switch), what
    stopped it otherwise."""
    job = jobs.get(visitor.session_id())
    if job is None:
        return
    st.session_state["_corpus_seen"] = (id(job), job.state)
    if job.active:
        _live()
    elif job.state in ("cancelled", "budget", "failed", "refused"):
        widgets.show_error(t("corpus.over_budget" if job.state == "budget" else f"corpus.{job.state}"), job.error)
        if job.state == "refused":  # the same file would be refused again: nothing to resume
            return
        st.button(t("corpus.resume"), key="corpus_resume", on_click=_resume, help=t("corpus.resume_help"))
        if st.session_state.pop("_corpus_busy", False):
            st.warning(t("corpus.busy"), icon="⏳")


@st.fragment(run_every=1.0)
def _live() -> None:
    """Polled every second while the run goes; once it ends (or was replaced) the whole page
    runs again, and the polling stops with it."""
    job = jobs.get(visitor.session_id())
    if job is None or (id(job), job.state) != st.session_state.get("_corpus_seen"):
        st.rerun(scope="app")
    p = job.progress
    done = 0 if p is None else p.records
    text = t("corpus.running", label=widgets.escape_md(job.label, 80), done=f"{done:,}", limit=f"{job.limit:,}")
    if p is not None and p.rate > 0:
        text += " · " + t("corpus.rate", rate=f"{p.rate:.1f}", left=_eta(p.eta_s))
    st.progress(0.0 if p is None else min(1.0, p.fraction), text=text)
    if place := job.place:  # waiting in the server's heavy-work queue: where it stands
        st.caption(t("fair.queued", place=place))
    st.button(t("work.cancel"), key="corpus_cancel", on_click=jobs.cancel, args=(visitor.session_id(),))


def finished() -> jobs.Job | None:
    job = jobs.get(visitor.session_id())
    return job if job is not None and job.state == "done" and job.result is not None else None


def summary(job: jobs.Job) -> bool:
    """What the run read, analysed and skipped, and its files; False when nothing was analysed."""
    result = result_of(job)
    r = result.report
    label = widgets.escape_md(job.label, 80)
    st.subheader(t("corpus.result_title"))
    st.markdown(
        t("corpus.summary", label=label, model=widgets.escape_md(model_label(str(r["settings"]["model"]))), read=f"{r['lines_read']:,}",
          analysed=f"{r['analysed']:,}", truncated=f"{r['truncated']:,}", tokens=r["settings"]["max_tokens"])
    )  # fmt: skip
    if r["skipped"]:
        reasons = ", ".join(f"{t(f'corpus.skip_{why}')}: {n:,}" for why, n in r["skipped_by_reason"].items())
        st.caption(t("corpus.skipped", n=f"{r['skipped']:,}", reasons=reasons))
        rows = [
            {t("corpus.col_line"): s["id"], t("corpus.col_reason"): t(f"corpus.skip_{s['reason']}")}
            for s in r["skips"][:200]
        ]
        with st.expander(t("corpus.skips_title", n=f"{r['skipped']:,}")):
            st.dataframe(rows, hide_index=True, key="corpus_skips")
    if r["settings"].get("limit") and r["lines_read"] >= r["settings"]["limit"]:
        st.caption(t("corpus.limit_reached", n=f"{r['settings']['limit']:,}"))
    folder = Path(result.store.root)
    a, b = st.columns(2)
    heads, report = folder / "heads.parquet", folder / "report.json"
    a.download_button(t("corpus.download_heads"), heads.read_bytes(), "heads.parquet", key="dl_heads")
    if report.stat().st_size <= DOWNLOAD_MAX_BYTES:  # sent with every run of the page: keep it small
        b.download_button(t("corpus.download_report"), report.read_bytes(), "report.json", key="dl_report")
    if not result.analysed:
        st.info(t("corpus.nothing"), icon="ℹ️")
    return result.analysed > 0


def _pick() -> None:
    pick = views.model_view_pick(st.session_state.get("chart_corpus"))
    if pick is not None:
        st.session_state["corpus_layer"], st.session_state["corpus_head"] = pick


def result_of(job: jobs.Job) -> corpus.CorpusResult:
    assert job.result is not None
    return job.result


def grid(context: Ctx, job: jobs.Job) -> str:
    """The chosen statistic over the corpus, one cell a head with its spread; a click picks the
    head of the sentences and the atlas below. Returns the statistic."""
    result = result_of(job)
    st.subheader(t("corpus.grid_title"))
    st.caption(t("corpus.grid_intro"))
    labels = widgets.option_labels("corpus.stat_{}")  # the default, entropy_rel, is bounded 0..1 like the shares
    stat = widgets.pick(t("stats.which"), corpus.STATS, "corpus_stat", default="entropy_rel", format_func=labels)
    zmin, zmax = STAT_RANGES.get(stat, (0.0, 1.0))
    fig = views.corpus_grid(
        result.grid(stat), result.grid(stat, "std"), minimum=result.grid(stat, "min"), maximum=result.grid(stat, "max"),
        count=result.analysed, title=t("corpus.grid_fig", stat=t(f"corpus.stat_{stat}")), zmin=zmin, zmax=zmax, lang=context.lang,
    )  # fmt: skip
    with st.container(key="corpus_grid"):
        charts.chart(fig, key="chart_corpus", on_select=_pick, selection_mode="points")
    return str(stat)


def typical(context: Ctx, job: jobs.Job, stat: str, layer: int, head: int) -> None:
    """The sentences where the head is closest to and farthest from its corpus mean; each
    opens in the explorer at that head."""
    result = result_of(job)
    st.subheader(t("corpus.typical_title", head=views.head_label(layer, head, lang=context.lang)))
    mean, std = result.grid(stat)[layer, head], result.grid(stat, "std")[layer, head]
    st.caption(t("corpus.typical_intro", stat=t(f"corpus.stat_{stat}"), mean=f"{mean:.3f}", std=f"{std:.3f}"))
    key = ("corpus_typical", str(job.out), stat, layer, head)
    near, far = runners.results(context.settings).get_or_compute(
        key, lambda: result.typical(stat, layer, head, TYPICAL_K)
    )
    sides = {"near": (near, "corpus.most_typical"), "far": (far, "corpus.least_typical")}
    for col, (side, (rows, title)) in zip(st.columns(2), sides.items(), strict=True):
        with col, st.container(key=f"corpus_{side}"):
            st.markdown(f"**{t(title)}**")
            for i, row in enumerate(rows):
                label = f"{row['value']:.3f} · {widgets.escape_md(row['text'], LABEL_CHARS)}"
                if st.button(label, key=f"corpus_{side}_{i}", help=t("corpus.open_help"), width="stretch"):
                    charts.open_in_explorer(context, layer, head, sentence=row["text"])

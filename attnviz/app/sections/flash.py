"""The lab's FlashAttention walk: a small example tiled by attnviz.lab.flash_attention
step by step (which query block meets which key block, the running maximum, the running sum and
the rescaling), the result beside plain attention, then the recorded SDPA-vs-eager table."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import streamlit as st

from ...lab.flash import flash_attention
from ...views.flash import plain_attention, random_example, result_pair, step_rows, tile_grid
from .. import charts, nav, widgets
from ..state import Ctx, t
from .lab import Pair

WALK_MAX = 12  # the walk uses the sentence itself up to this many tokens
RANDOM_N, RANDOM_D, RANDOM_SEED = 10, 8, 0
BLOCKS = (2, 3, 4, 6)
BENCH_FILE = nav.ROOT / "assets" / "flash_bench.json"
COLUMNS = ("query", "max_before", "max_after", "rescale", "sum_after")


def _example(context: Ctx, p: Pair) -> tuple[dict[str, Any], list[str] | None]:
    """q, k, v and how to read them: layer 0 of the scratch model on the sentence (its head
    chosen above), or a seeded random example when the sentence has more than WALK_MAX tokens."""
    if p.mine.n <= WALK_MAX:
        walk = p.walk(context, 0)
        if walk["q"].shape[0] == p.mine.n:
            scale = walk["q"].shape[1] ** -0.5 if p.opts["scale"] else 1.0
            st.caption(t("flash.from_sentence", n=p.mine.n, layer=0, head=p.head, d=walk["q"].shape[1]))
            ex = {"q": walk["q"], "k": walk["k"], "v": walk["v"], "causal": bool(p.opts["causal"]), "scale": scale}
            return ex, list(p.mine.tokens)
    q, k, v = random_example(RANDOM_N, RANDOM_D, RANDOM_SEED)
    st.caption(t("flash.from_random", tokens=p.mine.n, limit=WALK_MAX, n=RANDOM_N, d=RANDOM_D, seed=RANDOM_SEED))
    return {"q": q, "k": k, "v": v, "causal": False, "scale": RANDOM_D**-0.5}, None


def walk(context: Ctx, p: Pair) -> None:
    """The step-by-step walk and its check against plain attention."""
    ex, tokens = _example(context, p)
    block = st.selectbox(t("flash.block"), BLOCKS, index=2, key="flash_block", help=t("flash.block_help"))
    result = flash_attention(ex["q"], ex["k"], ex["v"], block=int(block), causal=ex["causal"], scale=ex["scale"])
    step, last = 0, len(result.steps)
    if last > 1:  # the step slider, 1-based on screen (one tile holds everything: a slider from 1 to 1 is an error)
        widgets.clamp_kept("flash_step", 1, last, 1)  # kept inside the steps of this block size
        step = int(st.slider(t("flash.step"), 1, last, key="flash_step", help=t("flash.step_help"))) - 1
    q, k = (np.asarray(ex[name], dtype=np.float64) for name in ("q", "k"))
    scores = (q @ k.T) * ex["scale"]
    if ex["causal"]:
        scores = np.where(np.tril(np.ones(scores.shape, dtype=bool)), scores, -np.inf)
    with st.container(key="flash_walk"):
        left, right = st.columns([3, 2])
        with left:
            fig = tile_grid(result, scores, step, tokens, lang=context.lang)
            charts.chart(fig, "chart_flash_tiles")
        with right:
            s = result.steps[step]
            st.markdown(t("flash.step_text", q0=s.queries[0], q1=s.queries[1] - 1, k0=s.keys[0], k1=s.keys[1] - 1))
            rows = [{t(f"flash.col_{c}"): row[c] for c in COLUMNS} for row in step_rows(result, step, tokens)]
            st.dataframe(rows, hide_index=True)
            st.caption(t("flash.table_note"))
    plain = plain_attention(ex["q"], ex["k"], ex["v"], causal=ex["causal"], scale=ex["scale"])
    diff = float(np.abs(result.output - plain.astype(np.float64)).max())
    charts.chart(result_pair(result.output, plain, lang=context.lang), "chart_flash_result")
    st.metric(t("flash.diff"), f"{diff:.1e}", help=t("flash.diff_help"))


def bench_rows() -> tuple[dict[str, Any], list[dict[str, float]]] | None:
    """The recorded rows of bench/bench_flash.py --out (assets/flash_bench.json); None without them."""
    try:
        data = json.loads(BENCH_FILE.read_text(encoding="utf-8"))
        return dict(data["setup"]), [dict(r) for r in data["rows"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def bench() -> None:
    """The measured SDPA-vs-eager table (recorded, never run live in the page)."""
    st.markdown(f"#### {t('flash.bench_title')}")
    got = bench_rows()
    if got is None:
        st.info(t("flash.bench_missing"))
        return
    setup, rows = got
    table = [{t("flash.col_n"): f"{int(r['n']):,}", t("flash.col_eager_s"): f"{r['eager_s']:.3f}",
              t("flash.col_sdpa_s"): f"{r['sdpa_s']:.3f}", t("flash.col_eager_mb"): f"{r['eager_mb']:.0f}",
              t("flash.col_sdpa_mb"): f"{r['sdpa_mb']:.0f}", t("flash.col_weights_mb"): f"{r['weights_mb']:.0f}"}
             for r in rows]  # fmt: skip
    with st.container(key="flash_bench"):
        st.dataframe(table, hide_index=True)
        st.caption(t("flash.bench_setup", heads=setup["heads"], width=setup["width"], threads=setup["threads"],
                     repeat=setup["repeat"], when=setup["measured"]))  # fmt: skip
        st.markdown(t("flash.bench_note"))


def show(context: Ctx, p: Pair) -> None:
    st.markdown(t("flash.intro"))
    walk(context, p)
    bench()

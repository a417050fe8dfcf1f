"""The lab's sparse attention section: the four patterns of attnviz/sparse.py on the
sentence's tokens, the entries each keeps against n^2 as n grows, and the from-scratch encoder's
maps when every layer attends under the chosen pattern, beside its full maps."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import streamlit as st

from ...lab.sparse import KINDS, encoder_maps, sparse_count, sparse_mask
from ...views.sparse import pattern_growth, pattern_maps
from .. import charts, runners, widgets
from ..state import Ctx, t
from .lab import Pair

GROWTH_SIZES = (16, 64, 256, 1024, 4096)
# sparse_mask's options: (its name, the box's catalogue and key suffix, lowest, highest, default)
OPTIONS = (
    ("window", "window", 0, 64, 2),
    ("global_tokens", "global", 0, 16, 1),
    ("dilation", "dilation", 1, 8, 2),
    ("random_keys", "random", 0, 16, 2),
    ("seed", "seed", 0, 2**31 - 1, 0),
)


def show(context: Ctx, p: Pair) -> None:
    """Patterns, their growth against n^2, and the scratch encoder's maps under one of them."""
    st.markdown(t("sparse.intro"))
    options = {}  # the pattern's options, each brought within its bounds whatever a client sent
    with st.container(key="sparse_options"):
        for column, (name, box, lo, hi, default) in zip(st.columns(len(OPTIONS)), OPTIONS, strict=True):
            widgets.clamp_kept(f"sparse_{box}", lo, hi, default)
            options[name] = int(column.number_input(t(f"sparse.{box}"), lo, hi, key=f"sparse_{box}"))
    n = p.mine.n
    masks = {kind: sparse_mask(n, kind, **options) for kind in KINDS}  # type: ignore[arg-type]
    charts.chart(pattern_maps(masks, p.mine.tokens, lang=context.lang), key="chart_sparse_patterns")
    counted = {k: v for k, v in options.items() if k != "seed"}  # the count does not depend on the seed
    growth = {kind: [sparse_count(m, kind, **counted) for m in GROWTH_SIZES] for kind in KINDS}
    with st.container(key="sparse_growth"):
        left, right = st.columns(2)
        with left:
            charts.chart(pattern_growth(GROWTH_SIZES, growth, lang=context.lang), key="chart_sparse_growth")
        with right:
            rows = [{t("sparse.col_n"): f"{m:,}", t("sparse.col_full"): f"{m * m:,}",
                     **{t(f"trainlab.sparse.{k}"): f"{growth[k][i]:,} ({growth[k][i] / (m * m):.1%})" for k in KINDS}}
                    for i, m in enumerate(GROWTH_SIZES)]  # fmt: skip
            st.dataframe(rows, hide_index=True)
            st.caption(t("sparse.growth_note"))
    kind = st.selectbox(
        t("sparse.apply"), KINDS, key="sparse_kind", format_func=widgets.option_labels("trainlab.sparse.{}")
    )
    runner = p.scratch.runner
    allowed = masks[kind]

    def compute() -> np.ndarray:
        enc = runner.encode(p.text, context.max_tokens)
        return encoder_maps(runner.encoder, enc.inputs["input_ids"], allowed)  # type: ignore[attr-defined]

    weights = runners.cached(context, p.scratch, "sparse", p.text, kind, *sorted(options.items()), fn=compute)
    if weights.shape[-1] != n:  # a tokenizer that disagrees with the maps above: say nothing wrong
        return
    sparse_att = replace(p.mine, weights=weights)
    with st.container(key="sparse_maps"):
        left, right = st.columns(2)
        with left:
            p.head_map(context, p.mine, "sparse.full_title", "chart_sparse_full")
        with right:
            p.head_map(
                context, sparse_att, "sparse.sparse_title", "chart_sparse_map", kind=t(f"trainlab.sparse.{kind}")
            )
        masked = float(np.abs(weights[..., ~allowed]).max()) if (~allowed).any() else 0.0
        sums = float(np.abs(weights.astype(np.float64).sum(-1) - 1).max())
        kept = f"{int(allowed.sum()):,}"
        st.caption(t("sparse.check", masked=f"{masked:.1g}", sums=f"{sums:.1e}", kept=kept, total=f"{n * n:,}"))

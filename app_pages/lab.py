"""From-scratch lab: our own encoder next to the pretrained model, switches that take it apart,
one head step by step, and the order demo (no positions, no order)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app_pages import common
from app_pages.common import t
from attnviz import views

SHOW_TOKENS = 12  # the walkthrough shows at most this many tokens ...
SHOW_DIMS = 8  # ... and this many of a head's dimensions
SAME = 1e-4  # "identical" below this max |difference| (float32 through 6 layers is ~1e-6)

c = common.ctx()
ss = st.session_state
for key, default in (
    ("lab_scale", True),
    ("lab_positions", True),
    ("lab_causal", False),
    ("lab_random", False),
    ("lab_seed", 0),
):
    ss.setdefault(key, default)

st.title(t("lab.title"))
st.caption(t("lab.intro"))
common.show_notices()
text = common.sentence_box(c)

with st.container(key="lab_switches"):
    a, b, col, d, e = st.columns(5)
    scale = a.toggle(t("lab.scale"), key="lab_scale", help=t("lab.scale_help"))
    positions = b.toggle(t("lab.positions"), key="lab_positions", help=t("lab.positions_help"))
    causal = col.toggle(t("lab.causal"), key="lab_causal", help=t("lab.causal_help"))
    random = d.toggle(t("lab.random"), key="lab_random", help=t("lab.random_help"))
    seed = e.number_input(t("lab.seed"), min_value=0, max_value=2**31 - 1, step=1, key="lab_seed", disabled=not random)
opts = {
    "scale": scale,
    "positions": positions,
    "causal": causal,
    "weights": "random" if random else "pretrained",
    "seed": int(seed) if random else 0,
}

clean = common.checked_text(c, text)
pretrained = common.load_runner(c, common.EMBEDDED, fallback=False)
scratch = common.load_runner(c, "scratch", fallback=False, **opts)
if clean is None or pretrained is None or scratch is None:
    st.stop()
att_p = common.analyse(c, pretrained, clean)
att_s = common.analyse(c, scratch, clean)
if att_p is None or att_s is None:
    st.stop()
common.truncation_notice(att_p)
common.show_tokens(att_p.tokens)

layer, head = common.layer_head(att_s.n_layers, att_s.n_heads, "lab_layer", "lab_head", allow_mean=False)
assert head is not None  # allow_mean=False

# --- side by side ------------------------------------------------------------------------------
st.subheader(t("lab.side_by_side"))
diff = common.max_abs_diff(att_p.weights, att_s.weights)
defaults = scale and positions and not causal and not random
with st.container(key="lab_compare_note"):
    if diff < SAME:
        st.success(
            t("lab.identical", diff=f"{diff:.1e}", heads=att_s.n_layers * att_s.n_heads), icon=":material/check:"
        )
    else:
        st.info(
            t("lab.different_unexpected" if defaults else "lab.different_expected", diff=f"{diff:.3f}"),
            icon=":material/compare_arrows:",
        )
left, right = st.columns(2)
with left:
    fig = views.heatmap(att_p, layer, head, zmax=1.0, title=t("lab.pretrained_title", layer=layer, head=head))
    common.chart(fig, key="chart_lab_pretrained")
with right:
    fig = views.heatmap(att_s, layer, head, zmax=1.0, title=t("lab.scratch_title", layer=layer, head=head))
    common.chart(fig, key="chart_lab_scratch")
    common.figure_downloads(fig, "lab-scratch", common.run_settings(c, att_s, layer=layer, head=head, **opts))

# --- one head, step by step -------------------------------------------------------------------
st.subheader(t("lab.steps_title", layer=layer, head=head))
runner = scratch[0]
# the same token limit as the maps above, so the walk shows exactly the tokens they show
steps = common.results(c.settings).get_or_compute(
    ("steps", scratch[1], clean, layer, head, c.max_tokens), lambda: runner.steps(clean, layer, head, c.max_tokens)
)
tokens = runner.encode(clean, c.max_tokens).tokens
n, hs = steps["q"].shape
rows = tokens[:SHOW_TOKENS]
dims = [f"d{j}" for j in range(min(hs, SHOW_DIMS))]
if n > SHOW_TOKENS or hs > SHOW_DIMS:
    st.caption(t("lab.steps_cut", tokens=min(n, SHOW_TOKENS), n=n, dims=min(hs, SHOW_DIMS), hs=hs))
r, k = len(rows), len(dims)
panels = [
    ("q", t("lab.step_q"), steps["q"][:r, :k], rows, dims),
    ("k", t("lab.step_k"), steps["k"][:r, :k], rows, dims),
    ("scores", t("lab.step_scores"), steps["scores"][:r, :r], rows, rows),
    ("scaled", t("lab.step_scaled", hs=hs) if scale else t("lab.step_unscaled"), steps["scaled"][:r, :r], rows, rows),
    ("masked", t("lab.step_masked") if causal else t("lab.step_nomask"), steps["masked"][:r, :r], rows, rows),
    ("weights", t("lab.step_softmax"), steps["weights"][:r, :r], rows, rows),
    ("v", t("lab.step_v"), steps["v"][:r, :k], rows, dims),
    ("output", t("lab.step_output"), steps["output"][:r, :k], rows, dims),
]
with st.container(key="lab_steps"):
    for i in range(0, len(panels), 2):
        cols = st.columns(2)
        for col, (name, title, values, row_labels, col_labels) in zip(cols, panels[i : i + 2], strict=True):
            with col:
                fmt = ".2f" if name == "weights" else ".1f"
                common.chart(
                    views.matrix(values, row_labels, col_labels, title=title, fmt=fmt), key=f"chart_step_{name}"
                )
match = common.max_abs_diff(steps["weights"], att_s.weights[layer, head])
st.caption(t("lab.steps_match", diff=f"{match:.1e}"))


def _entropy(scores: np.ndarray, mask: np.ndarray) -> float:
    """Mean row entropy (nats) of softmax(scores + mask)."""
    z = scores + mask
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=-1, keepdims=True)
    return float(-(p * np.log(np.clip(p, 1e-12, None))).sum(-1).mean())


with st.container(key="lab_scaling"):
    scores64 = steps["scores"].astype(np.float64)
    mask64 = steps["mask"].astype(np.float64)
    a, b, col = st.columns(3)
    a.metric(t("lab.entropy_scaled"), f"{_entropy(scores64 / np.sqrt(hs), mask64):.2f}")
    b.metric(t("lab.entropy_unscaled"), f"{_entropy(scores64, mask64):.2f}")
    col.metric(t("lab.entropy_uniform"), f"{np.log(n):.2f}")
    st.caption(t("lab.entropy_note", hs=hs))

# --- the order demo ---------------------------------------------------------------------------
st.subheader(t("lab.order_title"))
first, second = common.examples()["order_pair"]
st.caption(t("lab.order_intro"))
st.code(f"A: {first}\nB: {second}", language=None)


def _permutation(tokens_a: list[str], tokens_b: list[str]) -> list[int] | None:
    """perm[i] = position in B of A's i-th token (the k-th occurrence of a token maps to the k-th)."""
    if sorted(tokens_a) != sorted(tokens_b):
        return None
    used: set[int] = set()
    perm = []
    for tok in tokens_a:
        j = next(j for j, other in enumerate(tokens_b) if other == tok and j not in used)
        used.add(j)
        perm.append(j)
    return perm


order_rows = []
order_maps = {}
for pos in (False, True):
    order_opts = {"scale": True, "positions": pos, "causal": False, "weights": "pretrained", "seed": 0}
    model = common.load_runner(c, "scratch", fallback=False, **order_opts)
    if model is None:
        st.stop()
    att_a = common.analyse(c, model, first)
    att_b = common.analyse(c, model, second)
    if att_a is None or att_b is None:
        st.stop()
    perm = _permutation(att_a.tokens, att_b.tokens)
    if perm is None:
        st.warning(t("lab.order_not_permutation"))
        st.stop()
    back = att_b.weights[:, :, perm][:, :, :, perm]  # B's maps in A's token order
    order_rows.append(common.max_abs_diff(att_a.weights, back))
    order_maps[pos] = (att_a, back)
off, on = order_rows
with st.container(key="lab_order_note"):
    st.info(t("lab.order_result", off=f"{off:.1e}", on=f"{on:.3f}"), icon=":material/swap_horiz:")
att_a, back = order_maps[False]
left, right = st.columns(2)
with left:
    fig = views.heatmap(att_a, layer, head, zmax=1.0, title=t("lab.order_a", layer=layer, head=head))
    common.chart(fig, key="chart_order_a")
with right:
    permuted = common.attention_like(att_a, back)
    fig = views.heatmap(permuted, layer, head, zmax=1.0, title=t("lab.order_b", layer=layer, head=head))
    common.chart(fig, key="chart_order_b")

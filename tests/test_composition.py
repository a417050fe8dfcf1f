"""attnviz.explain.composition: the Q-, K- and V-composition scores of Elhage et al. 2021 equal
the definitions computed by hand (full d x d matrices, numpy) on a two-layer toy whose matrices
are written here, and on a tiny grouped-query Llama (the key/value head each query head reads,
RMSNorm's weight folded in); on a sentence, what passes through a head's output is what
switching it off takes from the score (exact for an attention-only toy: its stream is a sum)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz import explain
from attnviz.training import DecoderConfig, TinyDecoder, TrainedModel, make_task

from .tiny_llama import build_llama, load_llama

# The toy: d = 4, two heads of width 2 a layer; rows of a projection are (head 0's 2, head 1's 2),
# columns of the output projection likewise. Layer 0's q and k do not enter any score.
V0 = [[1, 0, 2, 0], [0, 1, 0, -1], [1, 1, 0, 0], [0, 0, 1, 2]]
O0 = [[1, 0, 0, 1], [0, 2, 1, 0], [1, -1, 0, 0], [0, 0, 2, 1]]
Q1 = [[0, 1, 1, 0], [2, 0, 0, 1], [1, 0, -1, 0], [0, 1, 0, 1]]
K1 = [[1, 1, 0, 0], [0, 0, 1, -1], [0, 2, 0, 1], [1, 0, 1, 0]]
V1 = [[0, 0, 1, 1], [1, -1, 0, 0], [2, 0, 0, 1], [0, 1, 1, 0]]
O1 = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, -1]]


def _toy() -> TrainedModel:
    task = make_task("induction")
    decoder = TinyDecoder(DecoderConfig(len(task.vocab), task.max_len, d_model=4, n_layers=2, n_heads=2))
    with torch.no_grad():
        for block, mats in zip(decoder.layers, [(V0, V0, V0, O0), (Q1, K1, V1, O1)], strict=True):
            a = block.attention  # type: ignore[union-attr]
            for linear, m in zip((a.query, a.key, a.value, a.output), mats, strict=True):
                linear.weight.copy_(torch.tensor(m, dtype=torch.float32))
    return TrainedModel(decoder, task, "toy")


def _rows(m: list[list[int]] | np.ndarray, h: int, hs: int = 2) -> np.ndarray:
    return np.asarray(m, dtype=np.float64)[h * hs : (h + 1) * hs]  # (hs, d): head h's W_Q, W_K or W_V


def _cols(m: list[list[int]] | np.ndarray, h: int, hs: int = 2) -> np.ndarray:
    return np.asarray(m, dtype=np.float64)[:, h * hs : (h + 1) * hs]  # (d, hs): head h's W_O


def _by_definition(w_qk: np.ndarray, w_ov_b: np.ndarray, w_ov_a: np.ndarray) -> tuple[float, float, float]:
    fro = np.linalg.norm
    return (
        fro(w_qk.T @ w_ov_a) / (fro(w_qk) * fro(w_ov_a)),
        fro(w_qk @ w_ov_a) / (fro(w_qk) * fro(w_ov_a)),
        fro(w_ov_b @ w_ov_a) / (fro(w_ov_b) * fro(w_ov_a)),
    )


def test_composition_is_the_definition_on_a_two_layer_toy() -> None:
    c = explain.composition(_toy())
    assert c.q.shape == c.k.shape == c.v.shape == (2, 2, 2, 2)
    assert np.isnan(c.k[0]).all() and np.isnan(c.k[1, :, 1]).all()  # only earlier layers compose
    for hb in range(2):
        w_qk = _rows(Q1, hb).T @ _rows(K1, hb)  # x_q^T W_QK x_k
        w_ov_b = _cols(O1, hb) @ _rows(V1, hb)
        for ha in range(2):
            want = _by_definition(w_qk, w_ov_b, _cols(O0, ha) @ _rows(V0, ha))
            got = (c.q[1, hb, 0, ha], c.k[1, hb, 0, ha], c.v[1, hb, 0, ha])
            np.testing.assert_allclose(got, want, rtol=1e-5)
    assert 0 < np.nanmax(c.k) <= 1 and c.top(1, 0, "k", 1)[0] == (0, int(np.argmax(c.k[1, 0, 0])), c.k[1, 0, 0].max())
    with pytest.raises(ValueError, match="kind"):
        c.top(1, 0, "x")


def test_grouped_heads_read_their_key_value_head_through_the_norm(tmp_path_factory: pytest.TempPathFactory) -> None:
    model = load_llama(build_llama(tmp_path_factory.mktemp("tiny-llama-composition"), layers=3))
    c = explain.composition(model)
    blocks = model.hf_model.layers
    hs = 8  # hidden 32 over 4 query heads

    def weights(layer: int, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        a, gamma = blocks[layer].self_attn, blocks[layer].input_layernorm.weight.detach().double().numpy()
        kv = h // 2  # 4 query heads over 2 key/value heads
        q, k, v = (_rows(p.weight.detach().double().numpy(), i, hs) * gamma for p, i in
                   ((a.q_proj, h), (a.k_proj, kv), (a.v_proj, kv)))  # fmt: skip
        return q, k, v, _cols(a.o_proj.weight.detach().double().numpy(), h, hs)

    for (lb, hb), (la, ha) in [((1, 3), (0, 0)), ((2, 0), (0, 2)), ((2, 2), (1, 1))]:
        qb, kb, vb, ob = weights(lb, hb)
        _, _, va, oa = weights(la, ha)
        want = _by_definition(qb.T @ kb, ob @ vb, oa @ va)
        np.testing.assert_allclose((c.q[lb, hb, la, ha], c.k[lb, hb, la, ha], c.v[lb, hb, la, ha]), want, rtol=1e-5)


def test_what_passes_through_a_head_is_what_switching_it_off_takes() -> None:
    model = _toy()
    text = "t01 t05 t09 t01 t05"
    for ha in range(2):
        s = explain.score_sources(model, text, 1, 0, 5, 2)
        with model.switch_heads([(0, ha)]):
            off = explain.score_sources(model, text, 1, 0, 5, 2).model_score  # the model's own q and k
        q_side, k_side, either = s.through(f"L0H{ha}")
        assert s.score - off == pytest.approx(either, abs=1e-5)
        assert either == pytest.approx(q_side + k_side - s.matrix[1 + ha, 1 + ha], abs=1e-12)
    rows = explain.composing_heads(s, k=2)
    assert {r[0] for r in rows} == {"L0H0", "L0H1"} and abs(rows[0][3]) >= abs(rows[1][3])
    assert rows[0][3] == pytest.approx(s.through(rows[0][0])[2] / s.score)

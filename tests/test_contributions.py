"""Whole-layer contributions (GlobEnc, ALTI, Value Zeroing, norms, attention) against their
papers' definitions, each written again here in a plain form (loops over i and j, explicit
vectors, float64): first on hand-built layers with known weights, then on the embedded model,
and the invariants of shared/REFERENCES.md (non-negative rows summing to 1, identity when
attention is one-hot on self and the residual dominates, zeroing nothing changes nothing, the
scratch encoder and the pretrained model agree)."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
import torch
from torch import nn

import attnviz
from attnviz import explain
from attnviz.explain.context_mixing import normalise_rows, roll_out
from attnviz.explain.decompose import alti_map, globenc_map, layer_record, norm_map, record_layers
from attnviz.explain.value_zeroing import value_zeroing_map
from attnviz.models import ForwardGate, PretrainedModel
from attnviz.scratch import LayerParts, post_ln_layer

from .conftest import SENTENCES

TIRED = SENTENCES[0]
METHODS = explain.CONTRIBUTION_METHODS


@pytest.fixture(autouse=True)
def _no_grad() -> object:
    """The plain references read module weights: no autograd graph is wanted."""
    with torch.no_grad():
        yield


# ---------------------------------------------------------------- plain references


def hand_layer(
    d: int = 6, heads: int = 2, hs: int = 3, d_ff: int = 8, seed: int = 0, value_gain: float = 0.5
) -> LayerParts:
    """A small post-LN layer with seeded float64 weights (LayerNorms with non-trivial gain and bias)."""
    g = torch.Generator().manual_seed(seed)

    def lin(i: int, o: int, gain: float = 0.5) -> nn.Linear:
        m = nn.Linear(i, o, dtype=torch.float64)
        with torch.no_grad():
            m.weight.copy_(torch.randn(o, i, generator=g, dtype=torch.float64) * gain)
            m.bias.copy_(torch.randn(o, generator=g, dtype=torch.float64) * 0.1)
        return m

    def ln() -> nn.LayerNorm:
        m = nn.LayerNorm(d, eps=1e-5, dtype=torch.float64)
        with torch.no_grad():
            m.weight.copy_(1 + 0.3 * torch.randn(d, generator=g, dtype=torch.float64))
            m.bias.copy_(0.2 * torch.randn(d, generator=g, dtype=torch.float64))
        return m

    inner = heads * hs
    return LayerParts(
        lin(d, inner), lin(d, inner), lin(d, inner, value_gain), lin(inner, d), ln(),
        lin(d, d_ff), lin(d_ff, d), ln(), heads, hs,
    )  # fmt: skip


def plain_layer(p: LayerParts, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The layer by hand in float64: alpha (H, n, n), f (H, n, d), pre1, mid, pre2, out (n, d)."""
    w = {name: getattr(p, name).weight.double() for name in ("query", "key", "value", "output")}
    b = {name: getattr(p, name).bias.double() for name in ("query", "key", "value", "output")}
    x = x.double()
    H, hs = p.n_heads, p.head_dim
    q, k, v = (x @ w[s].T + b[s] for s in ("query", "key", "value"))
    alpha, f = [], []
    for h in range(H):
        sl = slice(h * hs, (h + 1) * hs)
        scores = q[:, sl] @ k[:, sl].T / hs**0.5
        alpha.append(torch.softmax(scores, dim=-1))
        f.append(v[:, sl] @ w["output"][:, sl].T)  # f_h(x_j) for every j: (n, d)
    alpha_t, f_t = torch.stack(alpha), torch.stack(f)
    attn_out = sum(alpha_t[h] @ f_t[h] for h in range(H)) + b["output"]

    def ln(m: nn.Module, t: torch.Tensor) -> torch.Tensor:
        mean, var = t.mean(-1, keepdim=True), t.var(-1, unbiased=False, keepdim=True)
        return (t - mean) / (var + m.eps) ** 0.5 * m.weight.double() + m.bias.double()

    pre1 = x + attn_out
    mid = ln(p.ln_attention, pre1)
    hidden = p.activation(mid @ p.ff_in.weight.double().T + p.ff_in.bias.double())
    pre2 = mid + hidden @ p.ff_out.weight.double().T + p.ff_out.bias.double()
    return {"x": x, "alpha": alpha_t, "f": f_t, "pre1": pre1, "mid": mid, "pre2": pre2, "out": ln(p.ln_ff, pre2)}


def mixed_vector(ref: dict[str, torch.Tensor], i: int, j: int) -> torch.Tensor:
    """v_ij = sum_h alpha[h,i,j] f_h(x_j) + [i == j] x_i: what position j puts into i before LN1."""
    v = sum(ref["alpha"][h, i, j] * ref["f"][h, j] for h in range(ref["alpha"].shape[0]))
    return v + ref["x"][i] if i == j else v


def ln_scale(p: nn.Module, t: torch.Tensor) -> torch.Tensor:
    return (t.var(unbiased=False) + p.eps) ** 0.5


def plain_globenc(p: LayerParts, ref: dict[str, torch.Tensor]) -> np.ndarray:
    n = ref["x"].shape[0]
    out = np.zeros((n, n))
    for i in range(n):
        s1, s2 = ln_scale(p.ln_attention, ref["pre1"][i]), ln_scale(p.ln_ff, ref["pre2"][i])
        for j in range(n):
            v = mixed_vector(ref, i, j)
            z1 = p.ln_attention.weight.double() * (v - v.mean()) / s1  # LN1 without its bias
            z2 = p.ln_ff.weight.double() * (z1 - z1.mean()) / s2  # LN2 without its bias, FF skipped
            out[i, j] = float(z2.norm())
    return out


def plain_alti(p: LayerParts, ref: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray]:
    """c_ij = max(0, ||y_i||_1 - ||y_i - T_i(x_j)||_1), and y rebuilt from the T's (n, d)."""
    n = ref["x"].shape[0]
    gamma, beta = p.ln_attention.weight.double(), p.ln_attention.bias.double()
    b_o = p.output.bias.double()
    out, rebuilt = np.zeros((n, n)), []
    for i in range(n):
        s1 = ln_scale(p.ln_attention, ref["pre1"][i])
        y = ref["mid"][i]
        ts = [gamma * (v - v.mean()) / s1 for v in (mixed_vector(ref, i, j) for j in range(n))]
        for j, t_ij in enumerate(ts):
            out[i, j] = max(0.0, float(y.abs().sum() - (y - t_ij).abs().sum()))
        rebuilt.append(sum(ts) + gamma * (b_o - b_o.mean()) / s1 + beta)
    return out, torch.stack(rebuilt).numpy()


def plain_value_zeroing(p: LayerParts, x: torch.Tensor) -> np.ndarray:
    """Rerun the whole layer with token j's value vectors zeroed (post_ln_layer, value_scale),
    one j at a time; 1 - cos of each position's output."""
    n = x.shape[0]
    base, _ = post_ln_layer(p, x[None])
    out = np.zeros((n, n))
    for j in range(n):
        scale = torch.ones(1, n, dtype=x.dtype)
        scale[0, j] = 0
        zeroed, _ = post_ln_layer(p, x[None], value_scale=scale)
        out[:, j] = (1 - torch.nn.functional.cosine_similarity(base[0], zeroed[0], dim=-1)).double().numpy()
    return out


def lane(heads: int) -> types.SimpleNamespace:
    """What value_zeroing_map needs of a runner for a hand-built layer: heads and a gate."""
    return types.SimpleNamespace(n_heads=heads, gate=ForwardGate())


# ---------------------------------------------------------------- hand-built layers


@pytest.fixture(scope="module")
def hand() -> tuple[LayerParts, torch.Tensor, dict[str, torch.Tensor]]:
    p = hand_layer()
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.no_grad():
        return p, x, plain_layer(p, x)


def test_the_record_of_a_hand_built_layer_is_the_layer_by_hand(hand) -> None:
    p, x, ref = hand
    r = layer_record(p, x)
    for name in ("alpha", "f", "pre1", "mid", "pre2", "out"):
        np.testing.assert_allclose(getattr(r, name).numpy(), ref[name].numpy(), atol=1e-12, err_msg=name)


def test_norm_map_is_the_norm_of_the_head_sum(hand) -> None:
    p, x, ref = hand
    n = x.shape[0]
    expected = [
        [
            float(mixed_vector(ref, i, j).norm()) if i != j else float((mixed_vector(ref, i, j) - ref["x"][i]).norm())
            for j in range(n)
        ]
        for i in range(n)
    ]
    np.testing.assert_allclose(norm_map(layer_record(p, x)).numpy(), expected, rtol=1e-10)


def test_globenc_is_the_norm_of_each_vector_through_both_layernorms(hand) -> None:
    p, x, ref = hand
    np.testing.assert_allclose(globenc_map(layer_record(p, x)).numpy(), plain_globenc(p, ref), rtol=1e-10)


def test_alti_is_the_l1_closeness_of_each_transformed_vector_to_the_ln_output(hand) -> None:
    p, x, ref = hand
    expected, rebuilt = plain_alti(p, ref)
    np.testing.assert_allclose(rebuilt, ref["mid"].numpy(), atol=1e-12)  # y_i = sum_j T_i(x_j) + bias terms
    got = alti_map(layer_record(p, x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert (got >= 0).all()


def test_value_zeroing_reruns_the_layer_without_each_value(hand) -> None:
    p, x, _ = hand
    got = value_zeroing_map(lane(p.n_heads), layer_record(p, x)).numpy()
    np.testing.assert_allclose(got, plain_value_zeroing(p, x), rtol=1e-7, atol=1e-12)
    assert (got > 0).all()  # every token's value reaches every position a little


def one_hot_self_layer() -> tuple[LayerParts, torch.Tensor]:
    """Queries and keys that make each token attend only to itself (W_Q = W_K = 10 I, and the
    rows of x orthogonal within each head's slice), with tiny values: the residual dominates."""
    d = 10
    p = hand_layer(d=d, heads=2, hs=5, value_gain=1e-3)
    with torch.no_grad():
        for m in (p.query, p.key):
            m.weight.copy_(10 * torch.eye(d, dtype=torch.float64))
            m.bias.zero_()
        p.value.bias.zero_()
    eye = torch.eye(5, dtype=torch.float64)
    return p, 3 * torch.cat([eye, eye], dim=1)  # x_i = 3 (e_i + e_{5+i}): one basis vector per head


def test_one_hot_self_attention_with_a_dominant_residual_gives_the_identity() -> None:
    p, x = one_hot_self_layer()
    r = layer_record(p, x)
    np.testing.assert_allclose(r.alpha.numpy(), np.broadcast_to(np.eye(5), (2, 5, 5)), atol=1e-12)
    maps = {
        "attention": r.alpha.mean(0),
        "norm": norm_map(r),
        "globenc": globenc_map(r),
        "alti": alti_map(r),
        "value_zeroing": value_zeroing_map(lane(2), r),
    }
    for name, m in maps.items():
        np.testing.assert_allclose(normalise_rows(m.numpy()), np.eye(5), atol=1e-6, err_msg=name)
        np.testing.assert_allclose(
            roll_out(normalise_rows(np.stack([m.numpy()] * 3)), residual=False)[-1], np.eye(5), atol=1e-6
        )


# ---------------------------------------------------------------- rows and rollout


def test_normalise_rows_sums_to_one_and_turns_an_empty_row_into_itself() -> None:
    m = np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0], [2.0, -1e-9, 2.0]])
    out = normalise_rows(m)
    np.testing.assert_allclose(out, [[0.25, 0.75, 0], [0, 1, 0], [0.5, 0, 0.5]], atol=1e-7)


def test_roll_out_is_the_product_from_the_top_layer_down() -> None:
    rng = np.random.default_rng(0)
    m = normalise_rows(rng.random((3, 4, 4)))
    plain = m[2].astype(np.float64) @ m[1] @ m[0]
    np.testing.assert_allclose(roll_out(m, residual=False)[-1], plain, atol=1e-6)
    half = [0.5 * layer + 0.5 * np.eye(4) for layer in m.astype(np.float64)]
    np.testing.assert_allclose(roll_out(m, residual=True)[1], half[1] @ half[0], atol=1e-6)


# ---------------------------------------------------------------- the embedded model


@pytest.fixture(scope="module")
def tired_all(minilm: PretrainedModel) -> dict[str, explain.Contributions]:
    return explain.contributions_all(minilm, TIRED)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_non_negative_rows_summing_to_one(tired_all, method: str) -> None:
    c = tired_all[method]
    assert c.method == method and c.per_layer.shape == (6, 15, 15) and c.rolled.shape == (15, 15)
    assert c.tokens[:3] == ["[CLS]", "the", "animal"] and c.special[[0, -1]].all()
    for m in (c.per_layer, c.rolled_layers):
        assert m.dtype == np.float32 and (m >= 0).all()
        np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(
        c.rolled_layers[0],
        c.per_layer[0] if method in ("globenc", "alti", "value_zeroing") else 0.5 * c.per_layer[0] + 0.5 * np.eye(15),
        atol=1e-6,
    )


def test_the_layer_records_start_from_the_real_forward(minilm: PretrainedModel) -> None:
    enc = minilm.encode(TIRED)
    with torch.inference_mode():
        states = minilm.hidden_states(enc.inputs)
    for layer, r in enumerate(record_layers(minilm, enc)):
        np.testing.assert_allclose(r.x.numpy(), states[layer][0].numpy(), atol=1e-5)
        np.testing.assert_allclose(r.out.numpy(), states[layer + 1][0].numpy(), atol=1e-4)


@pytest.mark.parametrize("layer", [0, 5])
def test_globenc_norm_and_alti_match_the_plain_forms_on_the_model(
    minilm: PretrainedModel, tired_all, layer: int
) -> None:
    enc = minilm.encode(TIRED)
    p = minilm.layers()[layer]
    with torch.no_grad():
        ref = plain_layer(p, minilm.hidden_states(enc.inputs)[layer][0])
        n = ref["x"].shape[0]
        kobayashi = np.array(
            [
                [float((mixed_vector(ref, i, j) - (ref["x"][i] if i == j else 0)).norm()) for j in range(n)]
                for i in range(n)
            ]
        )
        expected = {"norm": kobayashi, "globenc": plain_globenc(p, ref), "alti": plain_alti(p, ref)[0]}
    for method, raw in expected.items():
        plain = raw / raw.sum(-1, keepdims=True)
        np.testing.assert_allclose(tired_all[method].per_layer[layer], plain, atol=2e-5, err_msg=method)


def test_value_zeroing_matches_rerunning_the_models_layer(minilm: PretrainedModel, tired_all) -> None:
    """The brute force of the paper: for each token j, `layer_trace` reruns layer 3 of the real
    model with j's values zeroed in every head; 1 - cos of each output, rows normalised."""
    enc = minilm.encode(TIRED)
    n, layer = len(enc.tokens), 3
    with torch.inference_mode():
        base = minilm.layer_trace(enc.inputs, layer)["out"][0]
        plain = np.zeros((n, n))
        for j in range(n):
            scale = torch.ones(1, n)
            scale[0, j] = 0
            out = minilm.layer_trace(enc.inputs, layer, value_scale=scale)["out"][0]
            plain[:, j] = (1 - torch.nn.functional.cosine_similarity(out.double(), base.double(), dim=-1)).numpy()
    np.testing.assert_allclose(
        tired_all["value_zeroing"].per_layer[layer], plain / plain.sum(-1, keepdims=True), atol=5e-4
    )


@pytest.mark.parametrize("runner", ["minilm", "scratch"])
def test_zeroing_nothing_changes_nothing(runner: str, request) -> None:
    model = request.getfixturevalue(runner)
    enc = model.encode(SENTENCES[2])
    n = len(enc.tokens)
    with torch.inference_mode():
        states = model.hidden_states(enc.inputs)
        for layer in (0, 5):
            kept = model.layer_trace(enc.inputs, layer, value_scale=torch.ones(1, n))["out"]
            np.testing.assert_allclose(kept.numpy(), states[layer + 1].numpy(), atol=1e-4)
    r = next(record_layers(model, enc))
    unseen = dataclasses.replace(r, alpha=torch.zeros_like(r.alpha))  # no one attends: zeroing a value moves nothing
    with torch.inference_mode():
        assert float(value_zeroing_map(model, unseen).abs().max()) < 1e-10
        assert float(value_zeroing_map(model, r).abs().max()) > 1e-4


def test_attention_method_is_the_mean_over_heads_and_its_rollout(tired_all, tired: attnviz.Attention) -> None:
    c = tired_all["attention"]
    np.testing.assert_allclose(c.per_layer, tired.weights.mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(c.rolled, explain.rollout(tired), atol=1e-5)


def test_norm_method_is_the_norm_based_weights_row_normalised(minilm: PretrainedModel, tired_all) -> None:
    nw = explain.norm_weights(minilm, TIRED).per_layer
    np.testing.assert_allclose(tired_all["norm"].per_layer, nw / nw.sum(-1, keepdims=True), atol=1e-5)


def test_scratch_and_pretrained_give_the_same_contributions(minilm: PretrainedModel, scratch) -> None:
    text = SENTENCES[3]
    a, b = explain.contributions_all(minilm, text), explain.contributions_all(scratch, text)
    for method in METHODS:
        np.testing.assert_allclose(a[method].per_layer, b[method].per_layer, atol=1e-4, err_msg=method)
        np.testing.assert_allclose(a[method].rolled, b[method].rolled, atol=1e-4, err_msg=method)


def test_whole_layer_methods_give_special_tokens_far_less_than_attention_does(tired_all) -> None:
    """Attention parks much of its weight on [CLS]/[SEP] (a sink); counting the value vectors,
    the residual and the LayerNorms, those tokens contribute little (Kobayashi et al. 2020;
    Modarressi et al. 2022; Ferrando et al. 2022)."""
    special = tired_all["attention"].special
    attention = tired_all["attention"].per_layer[..., special].sum(-1).mean()
    for method in ("norm", "globenc", "alti"):
        assert tired_all[method].per_layer[..., special].sum(-1).mean() < 0.5 * attention, method


# ---------------------------------------------------------------- limits and errors


def test_value_zeroing_is_cut_to_its_cap_with_a_note(minilm: PretrainedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    from attnviz.explain import context_mixing as module

    monkeypatch.setattr(module, "VALUE_ZEROING_MAX_TOKENS", 8)
    c = explain.contributions(minilm, TIRED, "value_zeroing")
    assert c.n == 8 and c.truncated and c.n_input_tokens == 15
    assert c.notes and "8 of 15" in c.notes[0]
    full = explain.contributions(minilm, TIRED, "value_zeroing", max_tokens=512)
    assert full.n == 15 and not full.truncated and not full.notes
    assert not explain.contributions(minilm, TIRED, "globenc").truncated  # the cap is Value Zeroing's alone


def test_progress_is_reported_and_can_cancel(minilm: PretrainedModel) -> None:
    seen: list[float] = []
    explain.contributions(minilm, SENTENCES[4], "value_zeroing", progress=seen.append)
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)

    def stop(fraction: float) -> None:
        if fraction > 0.3:
            raise attnviz.models.Cancelled("stop")

    with pytest.raises(attnviz.models.Cancelled):
        explain.contributions(minilm, SENTENCES[4], "value_zeroing", progress=stop)


def test_unknown_methods_and_other_architectures_are_refused(minilm: PretrainedModel) -> None:
    with pytest.raises(ValueError, match="globenc"):
        explain.contributions(minilm, TIRED, "gradcam")
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    gpt2 = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=minilm.tokenizer.vocab_size))
    tiny = PretrainedModel("tiny-gpt2", gpt2.eval(), minilm.tokenizer, torch.device("cpu"), 64)
    with pytest.raises(ValueError, match="BERT-family"):
        explain.contributions(tiny, "dog bites man", "alti")

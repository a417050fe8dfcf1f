"""explain.py against the invariants of shared/REFERENCES.md: hand-built matrices first, then
the embedded model (and the scratch encoder carrying its weights)."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain
from attnviz.models import PretrainedModel
from attnviz.result import Attention

from .conftest import SENTENCES

TIRED, WIDE = SENTENCES[0], SENTENCES[1]


def random_attention(layers: int, heads: int, n: int, seed: int = 0, peaked: float = 3.0) -> np.ndarray:
    """Row-stochastic (layers, heads, n, n) float32 with uneven rows (softmax of scaled noise)."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(layers, heads, n, n)) * peaked
    w = np.exp(scores - scores.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)).astype(np.float32)


def as_attention(w: np.ndarray, special: list[int] | None = None, tokens: list[str] | None = None) -> Attention:
    n = w.shape[-1]
    mask = np.zeros(n, dtype=bool)
    mask[special or []] = True
    return Attention(tokens=tokens or [f"t{i}" for i in range(n)], weights=w, model="hand-built", special=mask)


def residual(w: np.ndarray) -> np.ndarray:
    """Â = 0.5 mean_h A + 0.5 I per layer, computed independently of explain.py."""
    return 0.5 * w.astype(np.float64).mean(axis=1) + 0.5 * np.eye(w.shape[-1])


# ---------------------------------------------------------------- rollout


def test_rollout_rows_sum_to_one() -> None:
    r = explain.rollout(random_attention(6, 4, 9))
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-5)
    assert (r >= 0).all()


def test_rollout_of_identity_attention_is_identity() -> None:
    eye = np.broadcast_to(np.eye(7, dtype=np.float32), (3, 2, 7, 7)).copy()
    np.testing.assert_allclose(explain.rollout(eye), np.eye(7), atol=1e-6)


def test_one_layer_rollout_is_residual_averaged_attention() -> None:
    w = random_attention(1, 3, 6)
    np.testing.assert_allclose(explain.rollout(w), residual(w)[0], atol=1e-6)


def test_rollout_is_the_product_from_the_top_layer_down() -> None:
    w = random_attention(4, 2, 5, seed=1)
    a = residual(w)
    np.testing.assert_allclose(explain.rollout(w), a[3] @ a[2] @ a[1] @ a[0], atol=1e-5)
    np.testing.assert_allclose(explain.rollout(w, start_layer=2), a[3] @ a[2], atol=1e-5)
    layers = explain.rollout_layers(w)
    assert layers.shape == (4, 5, 5)
    np.testing.assert_allclose(layers[1], a[1] @ a[0], atol=1e-5)


def test_relabelling_tokens_relabels_rollout() -> None:
    w = random_attention(3, 2, 6, seed=2)
    perm = np.random.default_rng(3).permutation(6)
    permuted = w[:, :, perm][:, :, :, perm]  # A'[i, j] = A[perm[i], perm[j]]
    r = explain.rollout(w)
    np.testing.assert_allclose(explain.rollout(permuted), r[perm][:, perm], atol=1e-6)


def test_rollout_rejects_a_start_layer_out_of_range() -> None:
    with pytest.raises(IndexError, match="start_layer"):
        explain.rollout(random_attention(2, 1, 3), start_layer=2)


# ---------------------------------------------------------------- attention flow


def reference_flow(w: np.ndarray) -> np.ndarray:
    """The paper's graph as it stands: every (layer, position) node, float capacities."""
    a = residual(w)
    layers, n, _ = a.shape
    g = nx.DiGraph()
    for layer in range(1, layers + 1):
        for i, j in itertools.product(range(n), range(n)):
            g.add_edge((layer, i), (layer - 1, j), capacity=float(a[layer - 1, i, j]))
    values = np.array([[nx.maximum_flow_value(g, (layers, i), (0, j)) for j in range(n)] for i in range(n)])
    return values / values.sum(-1, keepdims=True)


def test_one_layer_flow_equals_residual_attention() -> None:
    w = random_attention(1, 3, 5)
    np.testing.assert_allclose(explain.flow(w), residual(w)[0], atol=1e-6)


def test_flow_through_an_identity_layer_equals_the_layer_above() -> None:
    # With Â_1 = I every path from (2, i) to (0, j) runs through (1, j): the max flow is Â_2[i, j].
    top = random_attention(1, 2, 6, seed=4)
    w = np.concatenate([np.broadcast_to(np.eye(6, dtype=np.float32), (1, 2, 6, 6)), top])
    np.testing.assert_allclose(explain.flow(w), residual(top)[0], atol=1e-6)


@pytest.mark.parametrize(
    ("layers", "n", "peaked", "causal"), [(3, 5, 2.0, False), (6, 8, 4.0, False), (4, 7, 3.0, True)]
)
def test_flow_equals_max_flow_on_the_full_layered_graph(layers: int, n: int, peaked: float, causal: bool) -> None:
    w = random_attention(layers, 2, n, seed=5, peaked=peaked)
    if causal:  # zero capacities above the diagonal, as a decoder's attention has
        w = np.tril(w)
        w /= w.sum(-1, keepdims=True)
    np.testing.assert_allclose(explain.flow(w), reference_flow(w), atol=1e-6)


def test_flow_of_one_row_is_that_row_of_all_rows() -> None:
    w = random_attention(3, 2, 6, seed=6)
    np.testing.assert_allclose(explain.flow(w, row=4), explain.flow(w)[4], atol=1e-12)


def test_flow_on_the_model_lies_in_unit_interval_with_rows_summing_to_one(tired: Attention) -> None:
    assert tired.n <= explain.FLOW_MAX_N_ALL
    f = explain.flow(tired)
    assert f.shape == (tired.n, tired.n)
    assert (f >= 0).all() and (f <= 1).all()
    np.testing.assert_allclose(f.sum(-1), 1.0, atol=1e-9)


def test_flow_beyond_its_limit_raises_flow_too_large_naming_the_limit() -> None:
    n_all, n_row = explain.FLOW_MAX_N_ALL, explain.FLOW_MAX_N_ROW
    assert explain.flow_limit(n_all) is None and explain.flow_limit(n_row, row=0) is None
    with pytest.raises(explain.FlowTooLarge, match=f"limited to {n_all} tokens"):
        explain.flow(random_attention(6, 1, n_all + 1))
    with pytest.raises(explain.FlowTooLarge, match=f"limited to {n_row} tokens"):
        explain.flow(random_attention(6, 1, n_row + 1), row=0)
    assert issubclass(explain.FlowTooLarge, ValueError)
    assert explain.flow_limit(n_all + 1) is not None
    with pytest.raises(explain.FlowTooLarge, match="limited to 4 tokens"):
        explain.flow(random_attention(2, 1, 5), max_n=4)


# ---------------------------------------------------------------- norm-based weights


def bert_reference(model: PretrainedModel, text: str, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """alpha (H, n, n) and f (H, n, d) from BERT's own modules, and the explicit vectors
    alpha[h,i,j] f_h(x_j) (H, n, n, d): the direct computation explain.py must match."""
    attn = model.hf_model.encoder.layer[layer].attention
    grabbed: list[torch.Tensor] = []
    handle = attn.self.register_forward_pre_hook(lambda _m, args: grabbed.append(args[0]))
    enc = model.encode(text)
    try:
        with torch.inference_mode():
            out = model.hf_model(**enc.inputs, output_attentions=True)
    finally:
        handle.remove()
    heads, size = attn.self.num_attention_heads, attn.self.attention_head_size
    with torch.no_grad():
        x = grabbed[0][0].double()  # (n, d)
        v = (x @ attn.self.value.weight.double().T + attn.self.value.bias.double()).view(-1, heads, size)
        w_o = attn.output.dense.weight.double()  # (d, H * hs)
        f = torch.stack([v[:, h] @ w_o[:, h * size : (h + 1) * size].T for h in range(heads)])  # (H, n, d)
        alpha = out.attentions[layer][0].double()  # (H, n, n)
        vectors = alpha[..., None] * f[:, None, :, :]  # (H, n_i, n_j, d)
    return alpha.numpy(), f.numpy(), vectors.numpy()


@pytest.mark.parametrize("runner", ["minilm", "scratch"])
@pytest.mark.parametrize("layer", [0, 5])
def test_norm_decomposition_reconstructs_the_output_projection(runner: str, layer: int, request) -> None:
    model = request.getfixturevalue(runner)
    mixed, projected = explain.norm_reconstruction(model, TIRED, layer)
    assert mixed.shape == projected.shape == (15, 384)
    np.testing.assert_allclose(mixed, projected, atol=2e-5 * np.abs(projected).max())


@pytest.mark.parametrize("layer", [0, 3])
def test_norm_weights_match_the_direct_vectors(minilm: PretrainedModel, layer: int) -> None:
    nw = explain.norm_weights(minilm, TIRED)
    alpha, f, vectors = bert_reference(minilm, TIRED, layer)
    # ||alpha f|| = alpha ||f||: per_head is the norm of the explicit vectors ...
    np.testing.assert_allclose(nw.per_head[layer], np.linalg.norm(vectors, axis=-1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(nw.per_head[layer], alpha * np.linalg.norm(f, axis=-1)[:, None, :], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(nw.value_norms[layer], np.linalg.norm(f, axis=-1), rtol=1e-4)
    # ... and per_layer the norm of their sum over heads (vector sum first).
    direct = np.linalg.norm(vectors.sum(axis=0), axis=-1)
    np.testing.assert_allclose(nw.per_layer[layer], direct, rtol=1e-3, atol=1e-4 * direct.max())


def test_norm_of_head_sum_is_at_most_the_sum_of_norms(minilm: PretrainedModel) -> None:
    nw = explain.norm_weights(minilm, SENTENCES[2])
    assert nw.per_head.shape == (6, 12, nw.per_layer.shape[-1], nw.per_layer.shape[-1])
    assert (nw.per_layer <= nw.per_head.sum(axis=1) * (1 + 1e-5) + 1e-6).all()
    # and the heads do not all point the same way: the triangle inequality is strict somewhere
    assert (nw.per_layer < 0.9 * nw.per_head.sum(axis=1)).any()


def test_norm_weights_agree_between_minilm_and_scratch(minilm: PretrainedModel, scratch) -> None:
    a, b = explain.norm_weights(minilm, SENTENCES[4]), explain.norm_weights(scratch, SENTENCES[4])
    np.testing.assert_allclose(a.per_head, b.per_head, atol=1e-4)
    np.testing.assert_allclose(a.per_layer, b.per_layer, atol=1e-4)


def test_special_tokens_get_much_attention_but_little_norm(minilm: PretrainedModel, tired: Attention) -> None:
    # Kobayashi et al. 2020: [CLS] draws attention in MiniLM but gives little (small ||f||).
    shares = explain.sink_shares(tired, explain.norm_weights(minilm, TIRED))
    assert shares["attention"]["[CLS]"] > 0.3
    assert shares["norm"]["[CLS]"] < 0.5 * shares["attention"]["[CLS]"]
    for kind in ("attention", "norm"):
        assert 0 <= sum(shares[kind].values()) <= 1 + 1e-6


def test_norm_weights_as_attention_rows_sum_to_one(minilm: PretrainedModel) -> None:
    att = explain.norm_weights(minilm, SENTENCES[4]).as_attention()
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(explain.rollout(att).sum(-1), 1.0, atol=1e-5)


def test_norm_weights_reject_other_architectures(minilm: PretrainedModel) -> None:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    gpt2 = GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=minilm.tokenizer.vocab_size))
    tiny = PretrainedModel("tiny-gpt2", gpt2.eval(), minilm.tokenizer, torch.device("cpu"), 64)
    with pytest.raises(ValueError, match="BERT-family"):
        explain.norm_weights(tiny, "dog bites man")


# ---------------------------------------------------------------- attributions


def test_occlusion_of_the_query_itself_outweighs_every_other_token(minilm: PretrainedModel, tired: Attention) -> None:
    it = explain.find_token(tired, "it")
    scores = explain.occlusion(minilm, TIRED, it)
    assert scores.shape == (tired.n,)
    assert (scores[tired.special] == 0).all()
    others = np.delete(scores, it)
    assert scores[it] > 2 * others.max()
    assert (scores >= -1e-6).all() and (scores <= 2).all()


def test_occlusion_batch_equals_one_masked_forward(minilm: PretrainedModel) -> None:
    text, query, masked = SENTENCES[4], 3, 1  # "man", with "dog" masked
    enc = minilm.encode(text)
    ids = enc.inputs["input_ids"].clone()
    ids[0, masked] = minilm.tokenizer.mask_token_id
    with torch.inference_mode():
        h0 = minilm.last_hidden(enc.inputs)[0, query]
        h = minilm.last_hidden({**enc.inputs, "input_ids": ids})[0, query]
    expected = 1 - torch.nn.functional.cosine_similarity(h, h0, dim=0).item()
    assert explain.occlusion(minilm, text, query)[masked] == pytest.approx(expected, abs=1e-5)


def test_input_x_gradient_is_the_derivative_along_each_embedding(minilm: PretrainedModel) -> None:
    # s_j = sum_d e[j,d] dF/de[j,d] = d/dt F(e with row j scaled by t) at t = 1.
    text, query, j = SENTENCES[4], 2, 1
    scores = explain.input_x_gradient(minilm, text, query)
    enc = minilm.encode(text)
    with torch.inference_mode():
        e = minilm.input_embeddings()(enc.inputs["input_ids"]).double()
        h0 = minilm.last_hidden(enc.inputs)[0, query].double()
        u = h0 / h0.norm()

        def objective(t: float) -> float:
            scaled = e.clone()
            scaled[0, j] *= t
            return float(minilm.last_hidden(enc.inputs, inputs_embeds=scaled.float())[0, query].double() @ u)

        delta = 1e-2
        derivative = (objective(1 + delta) - objective(1 - delta)) / (2 * delta)
    assert scores[j] == pytest.approx(derivative, rel=2e-2, abs=1e-3)


def test_integrated_gradients_completeness_gap_falls_as_steps_grow(minilm: PretrainedModel) -> None:
    text, query = SENTENCES[4], 2
    gaps = [explain.completeness_gap(minilm, text, query, steps=s) for s in (2, 8, 32)]
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 0.05 * gaps[0]
    scores = explain.integrated_gradients(minilm, text, query, steps=8, baseline="zero")
    assert scores.shape == (5,)
    assert scores[0] == 0 and scores[-1] == 0  # specials are the same in input and baseline


def test_integrated_gradients_agree_between_minilm_and_scratch(minilm: PretrainedModel, scratch) -> None:
    a = explain.integrated_gradients(minilm, SENTENCES[4], 1, steps=4)
    b = explain.integrated_gradients(scratch, SENTENCES[4], 1, steps=4)
    np.testing.assert_allclose(a, b, atol=1e-3)


def test_gradient_attributions_work_inside_inference_mode(minilm: PretrainedModel) -> None:
    # an app may run everything under torch.inference_mode(); gradients must still come out
    expected = explain.input_x_gradient(minilm, SENTENCES[4], 2)
    with torch.inference_mode():
        np.testing.assert_allclose(explain.input_x_gradient(minilm, SENTENCES[4], 2), expected, atol=1e-6)
        assert explain.completeness_gap(minilm, SENTENCES[4], 2, steps=2) > 0


def test_attributions_reject_a_query_out_of_range(minilm: PretrainedModel) -> None:
    with pytest.raises(IndexError, match="query"):
        explain.occlusion(minilm, SENTENCES[4], 9)


# ---------------------------------------------------------------- agreement


def brute_force_tau_b(a: np.ndarray, b: np.ndarray) -> float:
    concordant = discordant = ties_a = ties_b = 0
    for i, j in itertools.combinations(range(len(a)), 2):
        da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
        ties_a += da == 0
        ties_b += db == 0
        concordant += da * db > 0
        discordant += da * db < 0
    pairs = len(a) * (len(a) - 1) // 2
    return (concordant - discordant) / math.sqrt((pairs - ties_a) * (pairs - ties_b))


def test_kendall_tau_of_identical_rankings_is_one_and_of_reversed_minus_one() -> None:
    x = np.array([0.3, 0.1, 0.5, 0.05, 0.05])
    assert explain.kendall_tau(x, x) == pytest.approx(1.0)
    assert explain.kendall_tau(x, -x) == pytest.approx(-1.0)
    assert explain.spearman_rho(x, x) == pytest.approx(1.0)
    assert explain.spearman_rho(x, -x) == pytest.approx(-1.0)


@pytest.mark.parametrize("seed", range(5))
def test_kendall_tau_b_matches_a_brute_force_pair_count_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, 4, size=12).astype(float), rng.integers(0, 5, size=12).astype(float)
    assert explain.kendall_tau(a, b) == pytest.approx(brute_force_tau_b(a, b), abs=1e-12)


def test_spearman_without_ties_matches_the_rank_difference_formula() -> None:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=15), rng.normal(size=15)
    d = np.argsort(np.argsort(a)) - np.argsort(np.argsort(b))
    assert explain.spearman_rho(a, b) == pytest.approx(1 - 6 * (d**2).sum() / (15 * (15**2 - 1)))


def test_agreement_leaves_out_special_tokens_of_an_attention(tired: Attention) -> None:
    a = np.arange(tired.n, dtype=float)
    b = a.copy()
    b[0], b[-1] = 100.0, -100.0  # specials ranked backwards: ignored
    result = explain.agreement(a, b, tired)
    assert result["n"] == tired.n - 2
    assert result["kendall"] == pytest.approx(1.0) and result["spearman"] == pytest.approx(1.0)
    assert explain.agreement(a, b)["kendall"] < 1.0
    with pytest.raises(ValueError, match="keep mask"):
        explain.agreement(a, b, np.ones(3, dtype=bool))


# ---------------------------------------------------------------- head statistics


def test_uniform_rows_have_entropy_ln_n_and_one_hot_rows_about_zero() -> None:
    n = 8
    uniform = np.full((1, 1, n, n), 1 / n, dtype=np.float32)
    one_hot = np.zeros((1, 1, n, n), dtype=np.float32)
    one_hot[..., 0] = 1.0
    assert explain.head_stats(as_attention(uniform))["entropy"][0, 0] == pytest.approx(math.log(n), abs=1e-4)
    assert explain.head_stats(as_attention(one_hot))["entropy"][0, 0] == pytest.approx(0.0, abs=1e-3)


def test_shift_matrix_gives_previous_token_share_one() -> None:
    n = 6
    shift = np.zeros((1, 2, n, n), dtype=np.float32)
    shift[0, 0, 0, 0] = 1.0
    shift[0, 0, np.arange(1, n), np.arange(n - 1)] = 1.0  # head 0: row i all on i - 1
    shift[0, 1, np.arange(n - 1), np.arange(1, n)] = 1.0  # head 1: row i all on i + 1
    shift[0, 1, n - 1, n - 1] = 1.0
    stats = explain.head_stats(as_attention(shift))
    assert stats["prev"][0, 0] == pytest.approx(1.0) and stats["next"][0, 0] == pytest.approx(0.0)
    assert stats["next"][0, 1] == pytest.approx(1.0) and stats["prev"][0, 1] == pytest.approx(0.0)
    assert explain.head_labels(stats).tolist() == [["previous token", "next token"]]


def test_head_stats_shares_of_cls_sep_punctuation_and_self() -> None:
    n = 5
    tokens = ["[CLS]", "a", ",", "b", "[SEP]"]
    w = np.zeros((1, 5, n, n), dtype=np.float32)
    w[0, 0, :, 0] = 1  # all on [CLS]
    w[0, 1, :, 4] = 1  # all on [SEP]
    w[0, 2, :, 2] = 1  # all on ","
    w[0, 3] = np.eye(n)
    w[0, 4] = 1 / n
    stats = explain.head_stats(as_attention(w, special=[0, 4], tokens=tokens))
    np.testing.assert_allclose(stats["cls"][0], [1, 0, 0, 0.2, 0.2], atol=1e-6)
    np.testing.assert_allclose(stats["sep"][0], [0, 1, 0, 0.2, 0.2], atol=1e-6)
    np.testing.assert_allclose(stats["punct"][0], [0, 0, 1, 0.2, 0.2], atol=1e-6)
    np.testing.assert_allclose(stats["self"][0], [0.2, 0.2, 0.2, 1, 0.2], atol=1e-6)
    labels = explain.head_labels(stats)[0].tolist()
    assert labels == ["[CLS] sink", "[SEP] sink", "punctuation", "self", "broad"]


def test_head_stats_on_the_model(tired: Attention) -> None:
    stats = explain.head_stats(tired)
    for name, value in stats.items():
        assert value.shape == (6, 12), name
    shares = stats["cls"] + stats["sep"] + stats["punct"]
    assert (shares >= 0).all() and (shares <= 1 + 1e-5).all()
    assert (stats["entropy"] >= 0).all() and (stats["entropy"] <= math.log(tired.n) + 1e-4).all()
    # Clark et al. 2019 found previous-token heads in BERT's early layers; MiniLM has one too.
    assert stats["prev"][:2].max() > explain.LABEL_SHARE
    assert "previous token" in explain.head_labels(stats)[:2]


def test_word_level_maps_keep_rows_summing_to_one(minilm: PretrainedModel) -> None:
    att = minilm.attend(SENTENCES[5])
    words = att.merge_words()
    assert words.n < att.n
    np.testing.assert_allclose(words.weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(explain.rollout(words).sum(-1), 1.0, atol=1e-5)
    assert explain.head_stats(words)["entropy"].shape == (6, 12)


# ---------------------------------------------------------------- minimal pairs


def test_minimal_pair_gives_the_difference_of_direct_indexing(minilm: PretrainedModel, tired: Attention) -> None:
    wide = minilm.attend(WIDE)
    pair = explain.minimal_pair(tired, wide, "it", ["animal", "street"])
    it, animal, street = (explain.find_token(tired, t) for t in ("it", "animal", "street"))
    assert pair.query == it and pair.keys == [animal, street]
    layer, head = 4, 7
    assert pair.diff[layer, head, 0] == wide.weights[layer, head, it, animal] - tired.weights[layer, head, it, animal]
    assert pair.diff[layer, head, 1] == wide.weights[layer, head, it, street] - tired.weights[layer, head, it, street]
    assert pair.score[layer, head] == pytest.approx(pair.diff[layer, head, 1] - pair.diff[layer, head, 0])
    top = pair.ranked[0]
    assert pair.score[top] == pair.score.max()
    assert len(pair.ranked) == 72


def test_minimal_pair_rejects_unequal_lengths_naming_both(minilm: PretrainedModel, tired: Attention) -> None:
    other = minilm.attend("The animal didn't cross the street because it was too tired.")
    assert other.n != tired.n
    with pytest.raises(ValueError, match=rf"{tired.n} and {other.n} tokens"):
        explain.minimal_pair(tired, other, "it", ["animal"])


def test_find_token_is_case_insensitive_and_counts_occurrences(tired: Attention) -> None:
    assert explain.find_token(tired, "The") == 1
    assert explain.find_token(tired, "the", occurrence=1) == 7
    with pytest.raises(ValueError, match="zebra"):
        explain.find_token(tired, "zebra")


def test_read_only_arrays_from_a_cache_are_accepted(minilm: PretrainedModel, tired: Attention) -> None:
    weights = tired.weights.copy()
    weights.setflags(write=False)
    frozen = as_attention(weights, special=[0, tired.n - 1], tokens=tired.tokens)
    np.testing.assert_allclose(explain.rollout(frozen), explain.rollout(tired))
    np.testing.assert_allclose(explain.head_stats(frozen)["entropy"], explain.head_stats(tired)["entropy"])
    nw = explain.norm_weights(minilm, SENTENCES[4])
    nw.per_head.setflags(write=False)
    nw.head_cosines.setflags(write=False)
    assert nw.layer_norms(0).shape == (5, 5)


def test_explain_is_reachable_from_the_package() -> None:
    assert attnviz.explain.rollout is explain.rollout

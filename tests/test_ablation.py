"""Heads switched off (attnviz/explain/ablation.py, Runner.switch_heads): the hooks against a
layer written out by hand, what must and must not change, both runners and tiny architectures,
Michel et al.'s gradient against finite differences, the pruning curve and its figures."""

from __future__ import annotations

import math
import re
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain, views
from attnviz.explain.ablation import IMPORTANCE_MAX_TOKENS, ORDERS
from attnviz.models import Cancelled, Runner
from attnviz.scratch import LayerParts

from .test_views import ZH_TOKENS, att_of, english_words, shown_strings
from .tiny_models import build

TEXT = "The animal didn't cross the street because it was tired."


@pytest.fixture(scope="module")
def importance(minilm: attnviz.PretrainedModel) -> explain.HeadImportance:
    return explain.head_importance(minilm, TEXT)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Runner]:
    root = tmp_path_factory.mktemp("tiny")
    return {arch: attnviz.load_model(str(build(arch, root / arch)), device="cpu") for arch in ("bert", "distilbert")}


# --- a layer written out by hand --------------------------------------------------------------


def layer_by_hand(p: LayerParts, x: torch.Tensor, head: int, mode: str) -> torch.Tensor:
    """One post-LN encoder layer on x (n, d), batch of one without padding, with `head`'s slice
    of the context zeroed or replaced by its mean over positions."""
    n, hs = x.shape[0], p.head_dim
    q, k, v = (f(x).view(n, p.n_heads, hs).transpose(0, 1) for f in (p.query, p.key, p.value))  # (nh, n, hs)
    scores = q @ k.transpose(-1, -2) / math.sqrt(hs)
    context = torch.softmax(scores, dim=-1) @ v  # (nh, n, hs)
    if mode == "zero":
        context[head] = 0.0
    else:
        context[head] = context[head].mean(dim=0, keepdim=True)
    attn_out = p.output(context.transpose(0, 1).reshape(n, p.n_heads * hs))
    mid = p.ln_attention(x + attn_out)
    return p.ln_ff(mid + p.ff_out(p.activation(p.ff_in(mid))))


def _runners(minilm: Runner, scratch: Runner, tiny: dict[str, Runner]) -> dict[str, Runner]:
    return {"minilm": minilm, "scratch": scratch, **tiny}


@pytest.mark.parametrize("name", ["minilm", "scratch", "bert", "distilbert"])
@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_the_hook_equals_the_head_zeroed_by_hand(
    minilm: Runner, scratch: Runner, tiny: dict[str, Runner], name: str, mode: str
) -> None:
    model = _runners(minilm, scratch, tiny)[name]
    inputs = model.encode(TEXT).inputs
    layer, head = model.n_layers - 2, model.n_heads - 1
    with torch.inference_mode():
        before = model.hidden_states(inputs)
        with model.switch_heads([(layer, head)], mode):
            after = model.hidden_states(inputs)
        want = layer_by_hand(model.layers()[layer], before[layer][0], head, mode)
    torch.testing.assert_close(after[layer + 1][0], want, atol=1e-5, rtol=1e-5)
    # the switch did something (a random tiny model attends almost evenly: its means move little)
    assert (after[layer + 1] - before[layer + 1]).abs().max() > 1e-6
    for i in range(layer + 1):  # layers before it: exactly as they were
        assert torch.equal(after[i], before[i])


def test_mean_mode_makes_the_slice_its_mean_over_positions(minilm: Runner) -> None:
    inputs = minilm.encode(TEXT).inputs
    p = minilm.layers()[2]
    seen: list[torch.Tensor] = []
    with torch.inference_mode():
        handle = p.output.register_forward_pre_hook(lambda _m, args: seen.append(args[0][0].clone()))
        try:
            minilm.last_hidden(inputs)
            with minilm.switch_heads([(2, 4)], "mean"):
                # registered after the switch's hook, so it sees what the output projection gets
                inner = p.output.register_forward_pre_hook(lambda _m, args: seen.append(args[0][0].clone()))
                minilm.last_hidden(inputs)
                inner.remove()
        finally:
            handle.remove()
    original, _, switched = seen  # (n, nh*hs) each
    sl = slice(4 * p.head_dim, 5 * p.head_dim)
    torch.testing.assert_close(switched[:, sl], original[:, sl].mean(0, keepdim=True).expand_as(switched[:, sl]))
    keep = torch.ones(original.shape[1], dtype=torch.bool)
    keep[sl] = False
    assert torch.equal(switched[:, keep], original[:, keep])


def test_per_row_gates_equal_one_switch_per_row(minilm: Runner) -> None:
    inputs = minilm.encode(TEXT).inputs
    sets = [[], [(0, 1)], [(1, 3), (4, 7)], [(5, 11)]]
    gates = torch.ones(len(sets), minilm.n_layers, minilm.n_heads)
    for b, heads in enumerate(sets):
        for layer, head in heads:
            gates[b, layer, head] = 0.0
    with torch.inference_mode():
        with minilm.switch_heads(gates=gates):
            batched = minilm.last_hidden({k: v.expand(len(sets), -1) for k, v in inputs.items()})
        for b, heads in enumerate(sets):
            with minilm.switch_heads(heads):
                torch.testing.assert_close(batched[b], minilm.last_hidden(inputs)[0], atol=1e-5, rtol=1e-5)


def test_a_switch_changes_only_the_thread_that_opened_it(minilm: Runner) -> None:
    """Head switches hook the model every visitor shares: a pass in another thread meanwhile
    must see the whole model."""
    original = minilm.attend(TEXT).weights
    seen: list[np.ndarray] = []
    with minilm.switch_heads([(0, h) for h in range(minilm.n_heads)]):
        worker = threading.Thread(target=lambda: seen.append(minilm.attend(TEXT).weights))
        worker.start()
        worker.join()
        here = minilm.attend(TEXT).weights
    assert np.array_equal(seen[0], original)
    assert np.abs(here[1:] - original[1:]).max() > 1e-2


def test_ablate_ignores_a_pass_another_thread_runs_meanwhile(minilm: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    """ablate catches the final states with a hook on the shared model: a visitor's forward in
    another thread during the switched pass must neither be caught nor switched."""
    want = explain.ablate(minilm, TEXT, [(2, 5)])
    other = minilm.encode("dog bites man").inputs
    with torch.inference_mode():
        plain = minilm.last_hidden(other)
    seen: list[torch.Tensor] = []
    real = minilm.attention_array

    def busy(inputs: dict[str, torch.Tensor]) -> np.ndarray:
        def visitor() -> None:
            with torch.inference_mode():
                seen.append(minilm.last_hidden(other))

        worker = threading.Thread(target=visitor)
        worker.start()
        worker.join()
        return real(inputs)

    monkeypatch.setattr(minilm, "attention_array", busy)
    got = explain.ablate(minilm, TEXT, [(2, 5)])
    assert torch.equal(seen[0], plain)
    assert np.array_equal(got.attention.weights, want.attention.weights)
    np.testing.assert_array_equal(got.token_distance, want.token_distance)


# --- ablate -----------------------------------------------------------------------------------


def test_switching_nothing_changes_nothing(minilm: Runner) -> None:
    result = explain.ablate(minilm, TEXT, [])
    assert result.heads == ()
    assert np.array_equal(result.attention.weights, minilm.attend(TEXT).weights)
    assert np.abs(result.token_distance).max() < 1e-6 and abs(result.sentence_distance) < 1e-6
    with torch.inference_mode(), minilm.switch_heads(gates=torch.ones(minilm.n_layers, minilm.n_heads)):
        gated = minilm.last_hidden(minilm.encode(TEXT).inputs)
    with torch.inference_mode():
        assert torch.equal(gated, minilm.last_hidden(minilm.encode(TEXT).inputs))


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_a_head_in_layer_l_leaves_maps_up_to_l_and_changes_later_ones(minilm: Runner, mode: str) -> None:
    original = minilm.attend(TEXT)
    result = explain.ablate(minilm, TEXT, [(2, 5)], mode)
    w = result.attention.weights
    assert np.array_equal(w[:3], original.weights[:3])
    assert all(np.abs(w[layer] - original.weights[layer]).max() > 1e-3 for layer in range(3, 6))
    assert result.attention.tokens == original.tokens and result.heads == ((2, 5),) and result.mode == mode
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-5)


def test_the_effect_is_the_cosine_distance_of_the_final_states(minilm: Runner) -> None:
    heads = [(1, 2), (4, 0)]
    result = explain.ablate(minilm, TEXT, heads)
    inputs = minilm.encode(TEXT).inputs
    with torch.inference_mode():
        base = minilm.last_hidden(inputs)[0].double().numpy()
        with minilm.switch_heads(heads):
            off = minilm.last_hidden(inputs)[0].double().numpy()

    def cos_distance(a: np.ndarray, b: np.ndarray) -> float:
        return float(1 - a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    want = [cos_distance(base[i], off[i]) for i in range(len(base))]
    np.testing.assert_allclose(result.token_distance, want, atol=1e-6)
    assert result.sentence_distance == pytest.approx(cos_distance(base.mean(0), off.mean(0)), abs=1e-6)
    assert 0 < result.sentence_distance < result.token_distance.max()


def test_minilm_and_scratch_switch_heads_alike(minilm: Runner, scratch: Runner) -> None:
    heads = [(0, 3), (3, 8)]
    a, b = explain.ablate(minilm, TEXT, heads, "mean"), explain.ablate(scratch, TEXT, heads, "mean")
    np.testing.assert_allclose(b.attention.weights, a.attention.weights, atol=1e-4)
    np.testing.assert_allclose(b.token_distance, a.token_distance, atol=1e-4)
    assert b.sentence_distance == pytest.approx(a.sentence_distance, abs=1e-4)


@pytest.mark.parametrize("arch", ["bert", "distilbert"])
def test_tiny_bert_and_distilbert_switch_heads(tiny: dict[str, Runner], arch: str) -> None:
    model = tiny[arch]
    result = explain.ablate(model, TEXT, [(0, 1)])
    original = model.attend(TEXT).weights
    np.testing.assert_array_equal(result.attention.weights[0], original[0])
    assert np.abs(result.attention.weights[1] - original[1]).max() > 1e-7  # random weights: small but real
    assert result.sentence_distance > 0
    imp = explain.head_importance(model, TEXT)
    assert imp.shape == (2, 4)
    assert imp.effect[0, 1] == pytest.approx(result.sentence_distance, abs=1e-6)


def test_an_architecture_without_layer_parts_is_a_clear_error(tmp_path: Path) -> None:
    gpt2 = attnviz.load_model(str(build("gpt2", tmp_path / "gpt2")), device="cpu")
    for call in (
        lambda: explain.ablate(gpt2, TEXT, [(0, 0)]),
        lambda: explain.head_importance(gpt2, TEXT),
    ):
        with pytest.raises(ValueError, match="BERT-family encoder"):
            call()


def test_bad_heads_and_modes_are_refused(minilm: Runner) -> None:
    with pytest.raises(IndexError, match="outside 6 layers x 12 heads"):
        explain.ablate(minilm, TEXT, [(6, 0)])
    with pytest.raises(IndexError):
        explain.ablate(minilm, TEXT, [(0, -1)])
    with pytest.raises(ValueError, match="mode"):
        explain.ablate(minilm, TEXT, [(0, 0)], "half")  # type: ignore[arg-type]
    assert explain.ablate(minilm, TEXT, [(1, 1), (1, 1), (0, 2)]).heads == ((0, 2), (1, 1))


# --- head importance --------------------------------------------------------------------------


def test_importance_is_each_head_switched_off_alone(minilm: Runner, importance: explain.HeadImportance) -> None:
    """head_importance restarts each switch at its own layer (post_ln_layer for the rest):
    it must equal the real model run whole with that one head off."""
    assert importance.shape == (6, 12) and np.asarray(importance).shape == (6, 12)
    assert np.array_equal(np.asarray(importance), importance.effect)
    for layer, head in [(0, 0), (2, 7), (5, 11)]:
        real = explain.ablate(minilm, TEXT, [(layer, head)])
        assert importance.effect[layer, head] == pytest.approx(real.sentence_distance, abs=1e-6)
        assert importance.token_effect[layer, head] == pytest.approx(real.token_distance.mean(), abs=1e-6)
    assert (importance.effect > 0).all() and (importance.gradient >= 0).all()
    # Michel et al.: many heads matter little, a few a lot
    assert np.median(importance.effect) < importance.effect.max() / 5


def test_importance_agreement_is_the_rank_agreement_of_effect_and_gradient(
    importance: explain.HeadImportance,
) -> None:
    e, g = importance.effect.ravel(), importance.gradient.ravel()
    assert importance.kendall == explain.kendall_tau(e, g)
    assert importance.spearman == explain.spearman_rho(e, g)
    assert -1 <= importance.kendall <= 1 and importance.kendall != 0


def test_minilm_and_scratch_importance_agree(scratch: Runner, importance: explain.HeadImportance) -> None:
    other = explain.head_importance(scratch, TEXT)
    np.testing.assert_allclose(other.effect, importance.effect, atol=1e-4)
    np.testing.assert_allclose(other.gradient, importance.gradient, atol=1e-4)


def test_the_gradient_estimate_matches_finite_differences() -> None:
    """|dF/d xi_h| at xi = 1, F = <p(xi), u> (mean-pooled final states on their unswitched unit
    direction), against central differences on a float64 copy of the scratch encoder."""
    model = attnviz.load_model("scratch", device="cpu")
    model.encoder.double()
    text = "dog bites man"
    imp = explain.head_importance(model, text)
    inputs = model.encode(text).inputs

    def f(gates: torch.Tensor) -> float:
        with torch.inference_mode(), model.switch_heads(gates=gates):
            pooled = model.last_hidden(inputs)[0].mean(0)
        return float(pooled @ u)

    with torch.inference_mode():
        p0 = model.last_hidden(inputs)[0].mean(0)
    u = p0 / p0.norm()
    eps = 1e-4
    for layer, head in [(0, 1), (2, 2), (3, 9), (5, 11)]:
        up, down = torch.ones(6, 12, dtype=torch.float64), torch.ones(6, 12, dtype=torch.float64)
        up[layer, head], down[layer, head] = 1 + eps, 1 - eps
        fd = (f(up) - f(down)) / (2 * eps)
        assert imp.gradient[layer, head] == pytest.approx(abs(fd), rel=1e-5, abs=1e-9), (layer, head)


def test_a_long_text_is_cut_and_says_so(minilm: Runner) -> None:
    long_text = " ".join([TEXT] * 20)
    imp = explain.head_importance(minilm, long_text, max_tokens=12)
    assert imp.n_tokens == 12 and imp.capped
    assert not explain.head_importance(minilm, "dog bites man", max_tokens=12).capped
    assert IMPORTANCE_MAX_TOKENS <= 128


def test_progress_is_reported_and_a_raise_cancels(minilm: Runner) -> None:
    seen: list[float] = []
    explain.head_importance(minilm, "dog bites man", progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen)

    def cancel(fraction: float) -> None:
        raise Cancelled("stop")

    with pytest.raises(Cancelled):
        explain.head_importance(minilm, "dog bites man", progress=cancel)
    with pytest.raises(Cancelled):
        explain.ablate(minilm, "dog bites man", [(0, 0)], progress=cancel)


# --- pruning curve ----------------------------------------------------------------------------


def test_pruning_curves_switch_off_the_least_important_first(
    minilm: Runner, importance: explain.HeadImportance
) -> None:
    curves = explain.pruning_curves(minilm, TEXT, importance, points=7)
    assert list(curves) == list(ORDERS)
    every = [(layer, head) for layer in range(6) for head in range(12)]
    ks = curves["gradient"].k
    assert ks[0] == 0 and ks[-1] == 72 and len(ks) == 7
    all_off = explain.ablate(minilm, TEXT, every).sentence_distance
    for order, curve in curves.items():
        assert sorted(curve.ranking) == every
        assert curve.distance[0] == 0.0
        assert curve.distance[-1] == pytest.approx(all_off, abs=1e-5)  # every order ends at all heads off
        k = int(curve.k[3])
        assert curve.distance[3] == pytest.approx(
            explain.ablate(minilm, TEXT, curve.ranking[:k]).sentence_distance, abs=1e-5
        ), order
    flat = importance.gradient.ravel()
    assert [flat[layer * 12 + head] for layer, head in curves["gradient"].ranking] == sorted(flat)
    # the real single-head effect is the better guide to what can go (on this sentence)
    assert curves["effect"].distance[1:-1].mean() < curves["random"].distance[1:-1].mean()


def test_pruning_curves_refuse_an_importance_of_another_text(
    minilm: Runner, importance: explain.HeadImportance
) -> None:
    with pytest.raises(ValueError, match="another text"):
        explain.pruning_curves(minilm, "dog bites man", importance)


# --- figures ----------------------------------------------------------------------------------


def test_the_pruning_curve_figure_draws_each_order(minilm: Runner, importance: explain.HeadImportance) -> None:
    curves = explain.pruning_curves(minilm, TEXT, importance, points=5)
    fig = views.pruning_curve(curves, lang="zh")
    assert [list(trace.x) for trace in fig.data] == [c.k.tolist() for c in curves.values()]
    assert [list(trace.y) for trace in fig.data] == [c.distance.tolist() for c in curves.values()]
    assert len({trace.name for trace in fig.data}) == 3


def test_the_importance_grid_marks_heads_switched_off_and_stays_clickable(
    importance: explain.HeadImportance,
) -> None:
    fig = views.importance_grid(importance.gradient, "gradient", off=[(1, 2), (5, 0)], lang="en")
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), importance.gradient)
    crosses = {(round((s.x0 + s.x1) / 2), round((s.y0 + s.y1) / 2)) for s in fig.layout.shapes}
    assert crosses == {(2, 1), (0, 5)}  # (head, layer) of each cell crossed out
    assert views.model_view_pick({"points": [{"customdata": list(fig.data[1].customdata[17])}]}) == (1, 5)


def _figures(lang: str) -> dict[str, object]:
    att = att_of(ZH_TOKENS, layers=2, heads=3)
    other = att_of(ZH_TOKENS, layers=2, heads=3, seed=1)
    k = np.array([0, 3, 6])
    curves = {o: explain.PruningCurve(o, (), k, np.array([0.0, 0.1, 0.3]), np.array([0.0, 0.2, 0.4])) for o in ORDERS}
    imp = explain.HeadImportance(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), 0.5, 0.6, "zero", 9, False)
    return {
        "curve": views.pruning_curve(curves, lang=lang),
        "grid": views.importance_grid(imp.effect, "effect", off=[(0, 1)], lang=lang),
        "grid_gradient": views.importance_grid(imp.gradient, "gradient", lang=lang),
        "effect": views.ablation_effect(att.tokens, np.linspace(0, 1, att.n), 0.25, lang=lang),
        "change": views.attention_change(att, other, off=[(0, 2)], lang=lang),
    }


@pytest.mark.parametrize("name", list(_figures("en")))
def test_a_chinese_ablation_figure_has_no_english_word_left(name: str) -> None:
    strings = shown_strings(_figures("zh")[name])  # type: ignore[arg-type]
    assert any(re.search(r"[\u4e00-\u9fff]", s) for s in strings)
    left = {s: english_words(s, ZH_TOKENS) for s in strings}
    assert {s: words for s, words in left.items() if words} == {}


def test_the_attention_change_grid_is_the_mean_absolute_difference() -> None:
    a, b = att_of(ZH_TOKENS, layers=2, heads=3), att_of(ZH_TOKENS, layers=2, heads=3, seed=1)
    fig = views.attention_change(a, b, off=[], lang="en")
    np.testing.assert_allclose(np.asarray(fig.data[0].z), np.abs(a.weights - b.weights).mean(axis=(2, 3)))


def test_the_effect_bars_escape_tokens() -> None:
    tokens = ["[CLS]", "<script>x</script>", "&", "[SEP]"]
    fig = views.ablation_effect(tokens, np.array([0.0, 0.5, 0.1, 0.0]), 0.2, lang="en")
    assert "&lt;script&gt;x&lt;/script&gt;" in fig.layout.xaxis.ticktext
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), [0.0, 0.5, 0.1, 0.0])


@pytest.mark.slow
def test_the_benchmark_runs_and_writes_its_table(tmp_path: Path) -> None:
    """A smoke run at 16 tokens (timings are figures to read, not to test; the benchmark
    itself checks that head_importance equals the one-pass-per-head reference)."""
    from .benchrun import run_bench

    out = tmp_path / "ablation.md"
    run_bench("bench_ablation.py", "--sizes", "16", "--repeat", "1", "--threads", "1", "--out", str(out))
    row = next(line for line in out.read_text().splitlines() if line.startswith("| 16 |"))
    assert row.count("|") == 11

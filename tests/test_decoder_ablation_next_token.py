"""Heads switched off in a causal decoder are measured on the next token: the drop of the
log-probability of the token the whole model predicts after the text, held equal to
transformers' own LlamaForCausalLM with those heads' slices of o_proj's input zeroed; head
importance's effect is that drop head by head; Michel et al.'s gradient estimate is the
derivative of the same log-probability (held to a finite difference); and the explorer and
Explain pages with a decoder never speak of a sentence embedding."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain, i18n
from attnviz.app.sections.explain import code_span
from attnviz.views.ablation import _token

from .smollm2_model import smollm2
from .test_app import APP, _array, _chart, _ok
from .tiny_llama import build_llama, load_llama

TEXT = "The animal didn't cross the street because it was tired."
SHORT = "dog bites man. man bites dog."
TIMEOUT = 300
SETS = ([(0, 1)], [(1, 2), (1, 3)], [(0, 0), (1, 1)], [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def llama(folder: Path) -> attnviz.PretrainedModel:
    return load_llama(folder)


@pytest.fixture(scope="module")
def causal_lm(folder: Path) -> Any:
    """transformers' own causal LM of the same folder, in float64 (a finite difference needs it)."""
    from transformers import LlamaForCausalLM

    return LlamaForCausalLM.from_pretrained(str(folder), attn_implementation="eager").double().eval()


@contextmanager
def scaled_heads(lm: Any, gates: dict[tuple[int, int], float]) -> Iterator[None]:
    """Each listed query head's slice of o_proj's input multiplied by its gate (0: switched
    off), by forward pre-hooks on transformers' own o_proj."""
    cfg = lm.config
    hs = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads

    def hook(layer: int) -> Any:
        def scale(_m: Any, args: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
            x = args[0].clone()
            for (lay, head), g in gates.items():
                if lay == layer:
                    x[..., head * hs : (head + 1) * hs] *= g
            return (x, *args[1:])

        return scale

    layers = lm.model.layers
    handles = [
        layers[lay].self_attn.o_proj.register_forward_pre_hook(hook(lay)) for lay in sorted({k[0] for k in gates})
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def next_log_probs(lm: Any, ids: torch.Tensor, gates: dict[tuple[int, int], float] | None = None) -> torch.Tensor:
    """log p(. | the text) after its last token (vocab,), float64, through LlamaForCausalLM."""
    with scaled_heads(lm, gates or {}), torch.inference_mode():
        return lm(input_ids=ids).logits[0, -1].double().log_softmax(-1)


def drop(lm: Any, ids: torch.Tensor, off: list[tuple[int, int]]) -> tuple[float, int]:
    """The drop of the log-probability of the unswitched model's first choice, and that token."""
    base = next_log_probs(lm, ids)
    top = int(base.argmax())
    return float(base[top] - next_log_probs(lm, ids, dict.fromkeys(off, 0.0))[top]), top


# --- the package ----------------------------------------------------------------------------------


def test_switching_heads_off_in_a_decoder_drops_the_next_tokens_log_probability_as_transformers_computes_it(
    llama: attnviz.PretrainedModel, causal_lm: Any
) -> None:
    ids = llama.encode(TEXT).inputs["input_ids"]
    for off in SETS:
        got = explain.ablate(llama, TEXT, off)
        want, top = drop(causal_lm, ids, off)
        assert got.measure == "next_token" and got.next_token == llama.vocab_strings([top])[0]
        assert got.effect == pytest.approx(want, abs=1e-4)
        assert abs(want) > 1e-3  # the switch did move the prediction
        with pytest.raises(ValueError, match="no sentence embedding"):
            _ = got.sentence_distance
    # the per-token measure stays the cosine distance of the final hidden states
    final = [causal_lm.model(input_ids=ids).last_hidden_state[0].detach()]
    with scaled_heads(causal_lm, {(0, 1): 0.0}):
        final.append(causal_lm.model(input_ids=ids).last_hidden_state[0].detach())
    cosine = 1 - torch.nn.functional.cosine_similarity(final[0], final[1], dim=-1).clamp(max=1)
    np.testing.assert_allclose(explain.ablate(llama, TEXT, [(0, 1)]).token_distance, cosine.numpy(), atol=1e-5)


def test_head_importance_of_a_decoder_is_that_drop_head_by_head(llama: attnviz.PretrainedModel, causal_lm: Any) -> None:
    ids = llama.encode(TEXT).inputs["input_ids"]
    imp = explain.head_importance(llama, TEXT)
    top = drop(causal_lm, ids, [])[1]
    assert imp.measure == "next_token" and imp.next_token == llama.vocab_strings([top])[0]
    want = [[drop(causal_lm, ids, [(lay, hd)])[0] for hd in range(llama.n_heads)] for lay in range(llama.n_layers)]
    np.testing.assert_allclose(imp.effect, want, atol=1e-4)
    assert (imp.effect < 0).any() or np.ptp(imp.effect) > 0.1  # a signed drop in nats, no distance in [0, 2]
    curves = explain.pruning_curves(llama, TEXT, imp, points=4)
    everything = [(lay, hd) for lay in range(llama.n_layers) for hd in range(llama.n_heads)]
    for curve in curves.values():
        assert curve.measure == "next_token" and curve.next_token == imp.next_token
        assert curve.distance[0] == 0.0
        assert curve.distance[-1] == pytest.approx(drop(causal_lm, ids, everything)[0], abs=1e-4)
        k = int(curve.k[1])
        assert curve.distance[1] == pytest.approx(drop(causal_lm, ids, list(curve.ranking[:k]))[0], abs=1e-4)


def test_the_gradient_estimate_is_the_derivative_of_the_next_tokens_log_probability(
    llama: attnviz.PretrainedModel, causal_lm: Any
) -> None:
    """dF/d xi_h with F = log p(next token) and xi_h a gate on head h's slice of o_proj's input,
    by central differences through transformers' model in float64 with steps 1e-2 and 2e-2,
    Richardson-extrapolated: its eager attention still takes the softmax in float32, so smaller
    steps drown in rounding (1e-4 is off by 1e-3), and one step of 1e-2 keeps a truncation
    error of 1e-4 in layer 0. Extrapolated, the two agree within 3e-5; tolerance 1e-4."""
    ids = llama.encode(TEXT).inputs["input_ids"]
    imp = explain.head_importance(llama, TEXT)
    top = drop(causal_lm, ids, [])[1]

    def central(layer: int, head: int, step: float) -> float:
        up = next_log_probs(causal_lm, ids, {(layer, head): 1 + step})[top]
        down = next_log_probs(causal_lm, ids, {(layer, head): 1 - step})[top]
        return float(up - down) / (2 * step)

    for layer in range(llama.n_layers):
        for head in range(llama.n_heads):
            derivative = (4 * central(layer, head, 1e-2) - central(layer, head, 2e-2)) / 3
            assert imp.gradient[layer, head] == pytest.approx(abs(derivative), abs=1e-4)
    assert imp.gradient.max() > 0.1


def test_encoders_keep_the_sentence_embedding(minilm: attnviz.PretrainedModel) -> None:
    got = explain.ablate(minilm, "dog bites man", [(2, 3)])
    assert got.measure == "embedding" and got.next_token == "" and got.sentence_distance == got.effect > 0


@pytest.mark.slow
def test_smollm2s_next_token_drop_equals_transformers_causal_lm() -> None:
    from transformers import LlamaForCausalLM

    model = smollm2()
    with torch.device("meta"):  # transformers' own head over the runner's weights, no copy
        lm = LlamaForCausalLM(model.hf_model.config)
    lm.model, lm.lm_head = model.hf_model, model.lm_head
    ids = model.encode(TEXT).inputs["input_ids"]
    for off in ([(3, 4)], [(0, 0), (12, 8), (29, 2)]):
        got = explain.ablate(model, TEXT, off)
        want, top = drop(lm.eval(), ids, off)
        assert got.measure == "next_token" and got.next_token == model.vocab_strings([top])[0]
        assert got.effect == pytest.approx(want, abs=1e-4)


# --- the pages ------------------------------------------------------------------------------------


@pytest.fixture
def _deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("ATTNVIZ_EXPLAIN_TOKENS", raising=False)


def _app(model: str, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    _ok(at.run())
    at.selectbox(key="model_choice").set_value("__custom__").run()
    return _ok(at.text_input(key="model_id").set_value(model).run())


def _everything(at: AppTest) -> str:
    """Every text of the main area a visitor can read: messages, metrics and their help,
    widget labels and options, and every chart's JSON (titles, axes, hovers)."""
    parts: list[str] = []
    for kind in ("error", "warning", "info", "success", "subheader", "markdown", "caption"):
        parts += [str(getattr(e, "value", "")) for e in at.main.get(kind)]
    for metric in at.main.metric:
        parts += [metric.label, str(metric.value), str(metric.help or "")]
    for widget in (*at.main.radio, *at.main.selectbox, *at.main.button, *at.main.checkbox, *at.main.slider):
        parts += [str(widget.label), str(getattr(widget, "help", "") or "")]
        parts += [str(o) for o in getattr(widget, "options", [])]
    parts += [e.proto.spec for e in at.main.get("plotly_chart")]
    return "\n".join(parts)


def _sentence_words(lang: str) -> list[str]:
    """How each catalogue names a sentence embedding."""
    return ["sentence embedding", "Sentence embedding"] if lang == "en" else ["句子嵌入", "句向量"]


@pytest.mark.slow
@pytest.mark.usefixtures("_deployment")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_explorer_and_explain_pages_with_a_decoder_name_the_next_token(
    folder: Path, llama: attnviz.PretrainedModel, lang: str
) -> None:
    at = _app(str(folder), text=SHORT, lang=lang, layer="0", head="1")
    _ok(at.button(key="abl_toggle").click().run())
    assert at.session_state["heads_off"] == [[0, 1]]
    # a decoder takes "zero" only (a mean over positions reaches later tokens): no mode to choose
    assert not [r for r in at.radio if r.key == "_abl_mode"]
    assert i18n.t("abl.mode_decoder", lang) in [c.value for c in at.caption]
    switched = explain.ablate(llama, SHORT, [(0, 1)])
    metrics = {m.label: m.value for m in at.metric}
    assert i18n.t("abl.sentence_distance", lang) not in metrics
    assert float(metrics[i18n.t("abl.next_token_drop", lang)]) == pytest.approx(switched.effect, abs=1e-4)
    token = _token(switched.next_token)
    title = _chart(at, "chart_abl_tokens")["layout"]["title"]["text"]
    assert i18n.t("abl.fig.effect_title_lm", lang, token=token, d=f"{switched.effect:.4f}") in title
    text = _everything(at)
    assert not [w for w in _sentence_words(lang) if w in text], text

    _ok(at.switch_page("../pages/explain.py").run())
    imp = explain.head_importance(llama, SHORT)
    grid = _chart(at, "chart_abl_importance")
    np.testing.assert_allclose(_array(grid["data"][0]["z"]), imp.effect, atol=1e-5)
    assert i18n.t("abl.fig.grid_effect_lm", lang) in grid["layout"]["title"]["text"]
    curve = _chart(at, "chart_abl_curve")["layout"]
    assert curve["yaxis"]["title"]["text"] == i18n.t("aware.fig_logprob_drop", lang)
    text = _everything(at)
    assert not [w for w in _sentence_words(lang) if w in text], text
    for key in ("abl.importance_intro_lm", "abl.curve_caption_lm"):
        assert i18n.t(key, lang) in text, key
    assert i18n.t("abl.loss_note_lm", lang, token=code_span(imp.next_token)) in text

"""Decoder paths aware of their model: a decoder's evidence (Explain's occlusion, the scoreboard,
head statistics, the sinks notes) speaks of its first token and the next token's log-probability
(occlusion held to transformers' own causal LM), never of [MASK], [CLS], [SEP] or a sentence
embedding; a model with neither a mask token nor a next-token head says why occlusion is left out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain, i18n, views
from attnviz.explain.removal_lm import lm_occlusion

from .test_app import APP, _chart, _messages, _ok
from .tiny_llama import build_llama, load_llama

TEXT = "The animal didn't cross the street because it was tired."
SHORT = "dog bites man. man bites dog."
TIMEOUT = 300
BANNED = ("[MASK]", "[CLS]", "[SEP]")


pytestmark = pytest.mark.usefixtures("local_deployment")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_llama(tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="module")
def llama(folder: Path) -> attnviz.PretrainedModel:
    return load_llama(folder)


def _log_prob(lm: torch.nn.Module, ids: list[int], target: int) -> float:
    """log p(target | ids) from the causal LM's own logits."""
    with torch.inference_mode():
        return float(lm(input_ids=torch.tensor([ids])).logits[0, -1].double().log_softmax(-1)[target])


# --- the package ----------------------------------------------------------------------------------


def test_decoder_occlusion_is_the_drop_of_the_next_tokens_log_probability(
    llama: attnviz.PretrainedModel, folder: Path
) -> None:
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    ids = llama.encode(TEXT).inputs["input_ids"][0].tolist()
    filler = llama.tokenizer.unk_token_id
    query = 5
    occ, gradient, target = lm_occlusion(llama, TEXT, query)
    assert target.ids.tolist() == [ids[query + 1]] and occ.shape == gradient.shape == (len(ids),)
    base = _log_prob(lm, ids[: query + 1], ids[query + 1])
    for j in range(query + 1):
        changed = [*ids[:j], filler, *ids[j + 1 : query + 1]]
        assert occ[j] == pytest.approx(base - _log_prob(lm, changed, ids[query + 1]), abs=1e-5)
    assert not occ[query + 1 :].any()  # a causal model cannot read later tokens at `query`
    last, _, choice = lm_occlusion(llama, TEXT, len(ids) - 1)  # the last token: the model's own first choice
    with torch.inference_mode():
        top = int(lm(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
    assert choice.ids.tolist() == [top]
    assert last[2] == pytest.approx(
        _log_prob(lm, ids, top) - _log_prob(lm, [*ids[:2], filler, *ids[3:]], top), abs=1e-5
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_decoders_deletion_curves_plot_a_log_probability_drop(
    llama: attnviz.PretrainedModel, minilm: attnviz.PretrainedModel, lang: str
) -> None:
    board = explain.faithfulness(llama, SHORT, steps=3, random_orders=1)
    fig = views.deletion_curves(board, lang=lang)
    assert fig.layout.yaxis.title.text == i18n.t("aware.fig_logprob_drop", lang)
    titles = fig.layout.title.text + views.layer_agreement(board, lang=lang).layout.title.text
    assert i18n.t("fig.output_sentence", lang) not in titles and board.target in titles
    assert max(float(np.max(r.curve)) for r in board.rows) > 2  # not a cosine distance, which stops at 2
    encoder = explain.faithfulness(minilm, "dog bites man", steps=3, random_orders=1)
    assert views.deletion_curves(encoder, lang=lang).layout.yaxis.title.text == i18n.t("fig.output_change", lang)


def test_the_next_token_is_named_as_a_visible_literal_code_span() -> None:
    from attnviz.app.sections.explain import code_span

    assert [code_span(tok) for tok in ("\n", " ", "\x17", "a`b", "[x](javascript:1)")] == [
        "`↵`",
        "`␣`",
        "`\\x17`",
        "`a'b`",
        "`[x](javascript:\u20601)`",
    ]


# --- the pages ------------------------------------------------------------------------------------


def _app(model: str | None = None, **query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    _ok(at.run())
    if model is not None:
        at.selectbox(key="model_choice").set_value("__custom__").run()
        _ok(at.text_input(key="model_id").set_value(model).run())
    return at


def _texts(at: AppTest, lang: str = "en") -> str:
    """Everything a visitor reads in the main area: messages, headings, widget labels and
    options, tables and the charts' text. Head importance (its own section, app/sections/
    ablation.py) is left out: it measures the mean of the last layer's vectors for any model."""
    skip = {i18n.t(k, lang) for k in ("abl.importance_intro", "abl.loss_note", "abl.curve_caption")}
    parts: list[str] = []
    for kind in ("error", "warning", "info", "success", "subheader", "markdown", "caption"):
        parts += [str(e.value) for e in at.main.get(kind) if str(e.value) not in skip]
    for widget in (*at.main.radio, *at.main.selectbox):
        parts += [widget.label, *map(str, widget.options)]
    for frame in at.main.dataframe:
        parts += [*map(str, frame.value.columns), frame.value.to_string()]
    parts += [e.proto.spec for e in at.main.get("plotly_chart") if "-chart_abl_" not in e.proto.id]
    return "\n".join(parts)


def _figure(at: AppTest, key: str) -> dict[str, Any]:
    return _chart(at, key)["layout"]


def _title(layout: dict[str, Any], axis: str = "") -> str:
    node = layout[axis]["title"] if axis else layout["title"]
    return str(node.get("text", "")) if isinstance(node, dict) else str(node)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_explain_with_a_decoder_speaks_of_the_next_token_never_of_mask_cls_sep(folder: Path, lang: str) -> None:
    at = _app(str(folder), text=SHORT, lang=lang)
    grid_caveats = [c.value for c in at.main.caption if c.value == i18n.t("aware.caveat_grid_decoder", lang)]
    assert grid_caveats and i18n.t("caveat.grid", lang) not in _texts(at, lang)  # the explorer's sinks note
    _ok(at.switch_page("../pages/explain.py").run())
    text = _texts(at, lang)
    assert not [b for b in BANNED if b in text]
    for key in ("fx.output_sentence", "fig.output_sentence", "fig.output_change", "fx.intro", "stats.cls"):
        assert i18n.t(key, lang) not in text, key
    assert not [e for e in _messages(at, "error") if i18n.t("explain.unsupported", lang) in e]
    bars = _chart(at, "chart_explain_bars")
    assert i18n.t("aware.occlusion_lm", lang) in [trace["name"] for trace in bars["data"]]
    assert at.radio(key="fx_output").value == "sentence"  # the default: the next token after the text
    assert i18n.t("aware.fx_output_next", lang) in text
    assert _title(_figure(at, "chart_deletion"), "yaxis") == i18n.t("aware.fig_logprob_drop", lang)
    assert i18n.t("aware.stats_first", lang) in text


@pytest.mark.slow
def test_the_caveats_page_with_a_decoder_names_its_first_token(folder: Path, llama: attnviz.PretrainedModel) -> None:
    at = _app(str(folder), text=SHORT)
    _ok(at.switch_page("../pages/caveats.py").run())
    text = _texts(at)
    assert not [b for b in BANNED if b in text]
    assert f"**{i18n.t('aware.sinks_title_decoder', 'en')}**" in [m.value for m in at.markdown]
    att = llama.attend(SHORT)
    rows = next(f.value for f in at.dataframe if "attention weight" in f.value.columns).to_dict("records")
    first = att.weights[..., 0].mean()  # every row of a causal map sees the first token
    assert rows[0]["tokens"] == f"first token ({att.tokens[0]})" and rows[0]["attention weight"] == f"{first:.1%}"
    assert len(at.metric) == 3  # the live agreement with occlusion ran: the decoder's occlusion


@pytest.mark.slow
def test_a_model_with_neither_mask_nor_next_token_head_hides_occlusion_with_a_reason(tmp_path: Path) -> None:
    from .tiny_models import build

    at = _app(str(build("gpt2", tmp_path / "gpt2")), text="dog bites man")
    _ok(at.switch_page("../pages/explain.py").run())
    assert i18n.t("aware.no_occlusion", "en") in [c.value for c in at.caption]
    assert not [e for e in _messages(at, "error") if "MASK" in e or "occlude" in e]
    assert _messages(at, "error")  # the whole-layer maps refuse a model whose layers are not exposed ...
    assert not at.main.get("progress") and not [b for b in at.button if str(b.key).startswith("cancel_")]  # ... alone
    _ok(at.switch_page("../pages/caveats.py").run())
    assert i18n.t("aware.no_occlusion", "en") in [c.value for c in at.caption]

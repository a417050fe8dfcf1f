"""The embedded MiniLM's quick path (attnviz/models/minilm_quick.py, issue 24.2): its first
answers come without transformers and equal the Hugging Face runner's (tokens, special tokens,
word ids, offsets identical; every layer's attention within 1e-5); from the first need of
anything else on, the runner is the Hugging Face one. The lab's scratch encoder reads the same
tokenizer the same way: its first answer comes without transformers too, with the same tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from attnviz.models import EMBEDDED_MODEL, load_model
from attnviz.models.huggingface import PretrainedModel
from attnviz.models.loading import _load_hf, embedded_model_dir
from attnviz.models.minilm_quick import QuickMiniLM
from attnviz.models.tokens import count_tokens
from attnviz.models.unknown_tokens import unknown_tokens
from attnviz.result import Attention

ROOT = Path(__file__).resolve().parents[1]
LONG = " ".join(f"word{i % 97} and the trophy, café {i}" for i in range(200))  # far past 512 tokens
TEXTS = [
    "The trophy would not fit in the brown suitcase because it was too big.",
    "我爱北京天安门，天安门上太阳升。",  # most characters unknown to MiniLM
    "Emoji 🎉🙂 and ñandú, naïve CAFÉ — «quotes» ½ ™",
    "tabs\tand\nnew lines, \u200b zero width and \u00a0 no-break space",
    "x" * 150 + " antidisestablishmentarianism",  # a word past max_input_chars_per_word
    LONG,  # cut to 512 tokens
]


def _same(quick: Attention, full: Attention) -> None:
    assert quick.tokens == full.tokens
    assert np.array_equal(quick.special, full.special)
    assert quick.word_ids == full.word_ids
    assert quick.spans == full.spans
    assert (quick.truncated, quick.n_input_tokens, quick.text) == (full.truncated, full.n_input_tokens, full.text)
    assert quick.weights.shape == full.weights.shape and quick.weights.dtype == np.float32
    np.testing.assert_allclose(quick.weights, full.weights, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def pair() -> tuple[QuickMiniLM, PretrainedModel]:
    quick = load_model(EMBEDDED_MODEL, "cpu")
    assert isinstance(quick, QuickMiniLM) and isinstance(quick, PretrainedModel)
    reference = _load_hf(str(embedded_model_dir()), torch.device("cpu"), 512, EMBEDDED_MODEL)
    return quick, reference


@pytest.mark.parametrize("limit", [None, 16])
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_quick_attention_equals_the_hugging_face_runners(
    pair: tuple[QuickMiniLM, PretrainedModel], text: str, limit: int | None
) -> None:
    quick, reference = pair
    assert quick.quick is not None, "something loaded the Hugging Face model: this test would compare it with itself"
    _same(quick.attend(text, limit), reference.attend(text, limit))
    if text is LONG and limit is None:
        assert reference.attend(text).n == 512


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_quick_tokenizer_answers_as_transformers_does(pair: tuple[QuickMiniLM, PretrainedModel], text: str) -> None:
    quick, reference = pair
    mine, theirs = quick.tokenizer, reference.tokenizer
    assert quick.quick is not None and not isinstance(mine, type(theirs))
    assert count_tokens(mine, text) == count_tokens(theirs, text)
    for limit in (None, 8, 512):
        assert unknown_tokens(mine, text, limit) == unknown_tokens(theirs, text, limit)
        assert quick.fit(text, limit) == reference.fit(text, limit)
    assert (
        mine(text, truncation=True, max_length=20)["input_ids"]
        == theirs(text, truncation=True, max_length=20)["input_ids"]
    )
    ids = theirs(text)["input_ids"]
    assert mine.convert_ids_to_tokens(ids) == theirs.convert_ids_to_tokens(ids)
    assert [mine.convert_tokens_to_string([t]) for t in theirs.convert_ids_to_tokens(ids)] == [
        theirs.convert_tokens_to_string([t]) for t in theirs.convert_ids_to_tokens(ids)
    ]
    assert (mine.unk_token, mine.unk_token_id, mine.model_max_length, mine.is_fast) == (
        theirs.unk_token, theirs.unk_token_id, theirs.model_max_length, theirs.is_fast,
    )  # fmt: skip
    assert quick.max_tokens == reference.max_tokens


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("hello world again", 2),
        ("hello world again", 3),
        ("  \x00\x01 ", 5),
        ("[CLS] [SEP] [MASK] hi", 10),
        ("a" * 3000, 512),
    ],
)
def test_edge_texts_give_the_same_tokens_or_the_same_refusal(
    pair: tuple[QuickMiniLM, PretrainedModel], text: str, limit: int
) -> None:
    quick, reference = pair
    answers = []
    for runner in (quick, reference):
        try:
            att = runner.attend(text, limit)
            answers.append((att.tokens, att.n_input_tokens, att.truncated))
        except ValueError as exc:
            answers.append(str(exc))
    assert answers[0] == answers[1] and quick.quick is not None


def test_anything_else_loads_the_hugging_face_model_once_and_then_is_it() -> None:
    runner = load_model(EMBEDDED_MODEL, "cpu")
    assert isinstance(runner, QuickMiniLM)
    first = runner.attend(TEXTS[0])
    quick_tokenizer = runner.tokenizer
    assert len(runner.layers()) == 6  # the module tree: transformers' model, loaded now
    assert runner.quick is None and runner.tokenizer is runner.loaded().tokenizer
    assert runner.hf_model is runner.loaded().hf_model and runner.config.model_type == "bert"
    _same(first, runner.attend(TEXTS[0]))  # the Hugging Face pass now, writing in place
    assert quick_tokenizer.decode([101, 7592, 102]) == runner.tokenizer.decode([101, 7592, 102])  # forwarded
    assert runner.vocab_strings([7592]) == ["hello"]


def test_loaded_inside_a_pass_its_weights_still_take_gradients() -> None:
    runner = load_model(EMBEDDED_MODEL, "cpu")
    enc = runner.encode(TEXTS[0])
    with torch.inference_mode():
        runner.attention_maps(enc.inputs)  # the first need of the Hugging Face model, in inference mode
    embeds = runner.input_embeddings()(enc.inputs["input_ids"]).detach().requires_grad_(True)
    runner.last_hidden(enc.inputs, inputs_embeds=embeds).sum().backward()
    assert embeds.grad is not None and bool(embeds.grad.abs().sum() > 0)


def test_a_pair_of_texts_goes_to_the_hugging_face_tokenizer() -> None:
    runner = load_model(EMBEDDED_MODEL, "cpu")
    att = runner.attend("A man eats.", pair="Someone is eating.")  # type: ignore[call-arg]
    assert att.tokens.count("[SEP]") == 2 and runner.quick is None


PROBE = textwrap.dedent(
    """
    import json, sys
    from attnviz.app.coldstart import warmup
    from attnviz.app.server.registry import REGISTRY
    from attnviz.app.sections.ablation import _supported
    from attnviz.config import Settings
    from attnviz import views
    from attnviz.models.unknown_tokens import unknown_tokens
    import plotly.io as pio

    warmup.start(Settings())
    warmup.started().join(timeout=600)
    runner = REGISTRY.models[("minilm", "auto", ())]  # the explorer's default model, as the page asks
    text = "The trophy would not fit in the brown suitcase because it was too big."
    att = runner.attend(text, 512)
    unknown_tokens(runner.tokenizer, text, 512)  # the page's unknown-token notice
    supported = _supported(runner)  # the head switch above the views
    pio.to_json(views.heatmap(att, 0, 0), validate=False)
    from attnviz import load_model
    mine = load_model("scratch", "cpu").attend(text, 512)  # the lab's own encoder, its tokens too
    before = "transformers" in sys.modules
    layers = len(runner.layers())
    same = mine.tokens == att.tokens and abs(mine.weights - att.weights).max() < 1e-4
    print(json.dumps([before, supported, att.n, layers, "transformers" in sys.modules, bool(same)]))
    """
)


def test_a_fresh_server_draws_the_first_chart_without_importing_transformers() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[false, true, 17, 6, true, true]", done.stdout[-2000:]


def test_a_padded_batch_gets_the_hugging_face_maps_without_loading_it(
    pair: tuple[QuickMiniLM, PretrainedModel],
) -> None:
    """The corpus analysis (attnviz/corpus/batch.py) pads a batch with the tokenizer's pad id and
    asks `attention_maps`: the quick encoder answers, each layer within 1e-5 of transformers'
    eager BERT, padding columns weighted 0 alike, and nothing loads transformers' model."""
    from attnviz.corpus.batch import encode_all, padded

    quick, reference = pair
    assert quick.tokenizer.pad_token_id == reference.tokenizer.pad_token_id == 0
    items = [it for it in encode_all(quick, TEXTS[:4], 64) if it is not None]
    inputs = padded(quick, items)
    assert int(inputs["attention_mask"].sum()) < inputs["attention_mask"].numel()  # some padding
    with torch.inference_mode():
        got, want = quick.attention_maps(inputs), reference.attention_maps(inputs)
    assert quick.quick is not None and quick._full is None
    assert len(got) == len(want) == 6
    B, width = inputs["input_ids"].shape
    shortest = min(range(B), key=lambda b: items[b].n)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape == (B, 12, width, width)
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-5, rtol=0)
        assert float(g[shortest, :, :, items[shortest].n :].abs().max()) == 0.0


def test_final_states_and_occlusion_come_from_the_quick_encoder(pair: tuple[QuickMiniLM, PretrainedModel]) -> None:
    """Without gradients `last_hidden` runs the quick encoder (a padded batch too): occlusion, the
    caveats' agreement, equals transformers' within 1e-5 and loads nothing; with gradients the
    Hugging Face model answers (tests above: loaded inside a pass)."""
    from attnviz import explain
    from attnviz.corpus.batch import encode_all, padded

    quick, reference = pair
    assert quick.tokenizer.mask_token_id == reference.tokenizer.mask_token_id == 103
    items = [it for it in encode_all(quick, TEXTS[:4], 64) if it is not None]
    inputs = padded(quick, items)
    with torch.inference_mode():
        got, want = quick.last_hidden(inputs), reference.last_hidden(inputs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5, rtol=0)
    text = TEXTS[0]
    np.testing.assert_allclose(explain.occlusion(quick, text, 3), explain.occlusion(reference, text, 3), atol=1e-5)
    assert quick.quick is not None and quick._full is None


CAVEATS_PROBE = textwrap.dedent(
    """
    import json, sys
    from streamlit.testing.v1 import AppTest
    at = AppTest.from_file(sys.argv[1], default_timeout=600)
    at.run()
    at.switch_page("../pages/caveats.py").run()
    print(json.dumps([[str(e.value)[:200] for e in at.exception], len(at.dataframe), "transformers" in sys.modules]))
    """
)


def test_the_caveats_page_needs_no_transformers() -> None:
    """A visit to Caveats (the sink heads' norm-based weights, occlusion's agreement) runs on the
    quick encoder: a cold server's first Caveats view skips transformers' import and its model."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", CAVEATS_PROBE, str(ROOT / "tests" / "app_entry.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    errors, tables, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert errors == [] and tables >= 3 and loaded is False

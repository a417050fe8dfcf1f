"""The embedded MiniLM in numpy (attnviz/models/minilm_numpy.py, issue 24.2): every layer's
attention equal to the torch quick path's (models/minilm_quick.py) within 1e-5, the same
tokens; its erf within its bound of math.erf; its import and first answer free of torch. And
the cold server's first map made from it (app/coldstart/first_map.py): shown until the explorer's own map
replaces it, never where the page says something else first or once torch is in."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attnviz.app.coldstart import first_map
from attnviz.models import EMBEDDED_MODEL, load_model
from attnviz.models.minilm_numpy import ERF_MAX_ERROR, NumpyMiniLM, _blas_setter, erf, gelu, one_blas_thread
from attnviz.models.minilm_quick import QuickMiniLM, quick_attention

from .conftest import SENTENCES
from .test_imports import fresh_python

LONG = " ".join(["attention"] * 126)  # [CLS] + 126 + [SEP]: 128 tokens, no padding
TEXTS = [
    *SENTENCES,
    LONG,
    "我爱北京天安门，天安门上太阳升。",
    "A snowman ☃ and a 🎉 are unknown to MiniLM.",
]


@pytest.fixture(scope="module")
def pair() -> tuple[NumpyMiniLM, QuickMiniLM]:
    quick = load_model(EMBEDDED_MODEL, "cpu")
    assert isinstance(quick, QuickMiniLM)
    return NumpyMiniLM(), quick


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_the_numpy_attention_equals_the_torch_quick_paths(pair: tuple[NumpyMiniLM, QuickMiniLM], text: str) -> None:
    mine, quick = pair
    att, ours = quick.attend(text), mine.attend(text)
    assert quick.quick is not None, "the Hugging Face model was loaded: not the quick path"
    for name in ("tokens", "word_ids", "spans", "truncated", "n_input_tokens", "text", "model", "causal", "device"):
        assert getattr(ours, name) == getattr(att, name), name
    assert np.array_equal(ours.special, att.special) and np.array_equal(ours.kv_heads, att.kv_heads)
    assert ours.weights.dtype == np.float32 and ours.weights.shape == att.weights.shape
    np.testing.assert_allclose(ours.weights, att.weights, atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours.weights.sum(axis=-1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("text", "limit"), [(LONG, 16), (SENTENCES[0], 2), ("  \x00\x01 ", None), ("", None)])
def test_cut_and_refused_texts_as_the_torch_path(
    pair: tuple[NumpyMiniLM, QuickMiniLM], text: str, limit: int | None
) -> None:
    mine, quick = pair
    answers = []
    for runner in (mine, quick):
        try:
            att = runner.attend(text, limit)
            answers.append((att.tokens, att.truncated, att.n_input_tokens, att.weights.shape))
        except ValueError as exc:
            answers.append(str(exc))
    assert answers[0] == answers[1]


def test_the_test_texts_hold_a_long_one_chinese_and_unknown_tokens(pair: tuple[NumpyMiniLM, QuickMiniLM]) -> None:
    mine, _quick = pair
    assert mine.attend(LONG).n == 128
    assert any(token.startswith("[UNK]") for token in mine.attend(TEXTS[-1]).tokens)
    assert mine.attend(TEXTS[-2]).n > 10


def test_a_padding_mask_is_applied_as_the_torch_path_applies_it(pair: tuple[NumpyMiniLM, QuickMiniLM]) -> None:
    mine, quick = pair
    assert quick.quick is not None
    ids = [*quick.encode(SENTENCES[2]).inputs["input_ids"][0].tolist(), 0, 0]
    keep = [1] * (len(ids) - 2) + [0, 0]
    n = len(ids)
    inputs = {
        "input_ids": torch.tensor([ids]),
        "token_type_ids": torch.zeros(1, n, dtype=torch.long),
        "attention_mask": torch.tensor([keep]),
    }
    theirs = np.empty((6, 12, n, n), dtype=np.float32)
    with torch.inference_mode():
        quick_attention(quick.quick, inputs, theirs)
    weights = mine.attention(np.asarray(ids), keep=np.asarray(keep))
    np.testing.assert_allclose(weights, theirs, atol=1e-5, rtol=0)
    assert float(np.abs(weights[..., -2:]).max()) == 0.0  # no weight on the padding


def test_erf_is_within_its_bound_of_math_erf() -> None:
    x = np.linspace(-12.0, 12.0, 480_001)
    exact = np.array([math.erf(v) for v in x])
    error = float(np.abs(erf(x) - exact).max())
    assert error <= ERF_MAX_ERROR
    assert abs(erf(np.zeros(1))[0]) < 1e-8 and np.array_equal(erf(-x), -erf(x))  # odd, exactly
    g = gelu(np.float32([-3.0, 0.0, 1.0, 8.0]))
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, [-3 * 0.5 * math.erfc(3 / math.sqrt(2)), 0.0, 0.8413447, 8.0], atol=1e-6)


def test_a_too_long_input_is_refused(pair: tuple[NumpyMiniLM, QuickMiniLM]) -> None:
    mine, _quick = pair
    with pytest.raises(ValueError, match="at most 512"):
        mine.attention(np.zeros(513, dtype=np.int64))
    assert mine.attend(" ".join(["word"] * 600)).n == 512
    assert mine.attend(" ".join(["word"] * 600), 16).n == mine.attend(" ".join(["word"] * 600), 600, limit=16).n == 16


FIRST_ANSWER = """
import json, sys
import numpy as np
from attnviz.models.minilm_numpy import NumpyMiniLM
model = NumpyMiniLM()
att = model.attend("The trophy would not fit in the brown suitcase because it was too big.")
print(json.dumps([list(att.weights.shape), sorted(m for m in ("torch", "transformers") if m in sys.modules)]))
"""


def test_importing_it_and_a_first_answer_import_neither_torch_nor_transformers() -> None:
    assert fresh_python(FIRST_ANSWER) == [[6, 12, 17, 17], []]


def _first_map_page() -> None:
    import streamlit as st

    from attnviz.app.coldstart import first_map
    from attnviz.app.state import Ctx
    from attnviz.config import Settings

    context = Ctx("en", Settings(), st.session_state.get("model", "minilm"), "auto", st.session_state.get("limit", 512))
    st.session_state["drew"] = first_map.draw(context, st.session_state.get("text", "dog bites man"))
    if st.session_state.get("clear", False):
        first_map.clear()


def _first_maps(at: AppTest) -> list[str]:
    return [e.proto.id for e in at.get("bidi_component") if e.proto.id.endswith(first_map.KEY)]


@pytest.fixture
def cold(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a cold server (this test process has imported torch): a fresh numpy model holder."""
    monkeypatch.setattr(first_map, "_cold", lambda: True)
    monkeypatch.setattr(first_map, "_MODEL", [])
    monkeypatch.setattr(first_map, "_DROPPED", threading.Event())


@pytest.mark.usefixtures("cold")
def test_the_first_map_shows_until_the_run_clears_it_and_never_after_the_drop() -> None:
    at = AppTest.from_function(_first_map_page, default_timeout=120)
    at.run()
    assert at.session_state["drew"] and len(_first_maps(at)) == 1 and first_map.SLOT in at.session_state
    at.session_state["clear"] = True
    at.run()  # drawn again, then emptied in the same run: the explorer's own map came
    assert at.session_state["drew"] and _first_maps(at) == [] and first_map.SLOT not in at.session_state
    first_map.drop()
    assert first_map._MODEL == []
    at.session_state["clear"] = False
    at.run()
    assert not at.session_state["drew"] and _first_maps(at) == []


@pytest.mark.usefixtures("cold")
@pytest.mark.parametrize(
    ("state", "why"),
    [({"text": ""}, "empty"), ({"text": LONG, "limit": 16}, "cut"), ({"model": "scratch"}, "another model")],
)
def test_no_first_map_where_the_page_says_something_else_first(state: dict[str, object], why: str) -> None:
    at = AppTest.from_function(_first_map_page, default_timeout=120)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.session_state["drew"] and _first_maps(at) == [], why


def test_no_first_map_once_torch_is_imported() -> None:
    at = AppTest.from_function(_first_map_page, default_timeout=120)
    at.run()  # this test process has imported torch: not a cold server
    assert not at.session_state["drew"] and _first_maps(at) == []


def test_one_blas_thread_meanwhile_and_the_count_before_restored() -> None:
    setter = _blas_setter()
    assert setter is not None  # numpy's wheels bundle OpenBLAS with this entry point
    before = setter(2)
    setter(before)  # read, and put back
    with one_blas_thread():
        inside = setter(1)
    assert inside == 1 and setter(before) == before

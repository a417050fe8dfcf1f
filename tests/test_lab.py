"""The lab's experiments and the token-focus helpers as plain functions (attnviz/lab.py,
attnviz/focus.py): what the pages show is computed here and checked against references."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz import lab
from attnviz.focus import default_focus, find_token, parse_words

from .conftest import SENTENCES


def _att(tokens: list[str], special: list[bool] | None = None) -> attnviz.Attention:
    n = len(tokens)
    w = np.full((1, 1, n, n), 1.0 / n, dtype=np.float32)
    return attnviz.Attention(tokens=tokens, weights=w, model="hand", special=np.array(special or [False] * n))


def test_max_abs_diff_equals_numpy_in_float64() -> None:
    rng = np.random.default_rng(0)
    a = rng.random((3, 4, 7, 7), dtype=np.float32)
    b = a + rng.normal(0, 1e-3, a.shape).astype(np.float32)
    assert lab.max_abs_diff(a, b) == pytest.approx(float(np.abs(a.astype(np.float64) - b).max()), rel=0, abs=0)
    assert lab.max_abs_diff(a, a) == 0.0
    with pytest.raises(ValueError):
        lab.max_abs_diff(a, b[:, :2])


def test_row_entropy_is_ln_n_for_uniform_rows_and_zero_for_one_hot() -> None:
    n = 9
    assert lab.row_entropy(np.zeros((n, n))) == pytest.approx(np.log(n))
    assert lab.row_entropy(np.eye(n) * 1e4) == pytest.approx(0.0, abs=1e-9)
    causal = np.triu(np.full((n, n), -np.inf), 1)  # row i sees i + 1 tokens, uniformly
    expected = np.mean([np.log(i + 1) for i in range(n)])
    assert lab.row_entropy(np.zeros((n, n)), causal) == pytest.approx(expected)


def test_without_scaling_rows_are_sharper(scratch: attnviz.ScratchModel) -> None:
    scaled, unscaled, uniform = lab.scaling_entropies(scratch.steps(SENTENCES[0], 0, 0))
    assert unscaled < scaled <= uniform


def test_permutation_maps_repeated_tokens_in_order() -> None:
    assert lab.permutation(["a", "b", "a"], ["b", "a", "a"]) == [1, 0, 2]
    assert lab.permutation(["a", "b"], ["a", "c"]) is None


def test_order_demo_without_positions_is_a_relabelling() -> None:
    """A(PX) = P A(X) P^T when positions are off (REFERENCES.md): B put back in A's order
    equals A; with positions on it does not."""
    off = attnviz.load_model("scratch", device="cpu", positions=False)
    on = attnviz.load_model("scratch", device="cpu")
    a, b = "dog bites man", "man bites dog"
    r_off = lab.order_demo(off.attend(a), off.attend(b))
    r_on = lab.order_demo(on.attend(a), on.attend(b))
    assert r_off is not None and r_on is not None
    assert r_off.diff < 1e-5 < 1e-2 < r_on.diff
    np.testing.assert_allclose(r_off.back.weights, off.attend(a).weights, atol=1e-5)
    assert lab.order_demo(on.attend(a), on.attend("cats chase mice")) is None


def test_cost_sweep_memory_is_exactly_layers_heads_n_squared(minilm: attnviz.PretrainedModel) -> None:
    rows = lab.cost_sweep(minilm, "the cat sat on the mat", max_tokens=64)
    assert [r.n for r in rows] == [16, 32, 64]
    for r in rows:
        assert r.mb == pytest.approx(6 * 12 * r.n**2 * 4 / 2**20)
        assert r.forward_s > 0


def test_find_token_matches_case_and_unknown_characters() -> None:
    tokens = ["[CLS]", "The", "animal", "[UNK]:它", "animal", "[SEP]"]
    assert find_token(tokens, "animal") == 2
    assert find_token(tokens, "ANIMAL", start=3) == 4
    assert find_token(tokens, "它") == 3
    assert find_token(tokens, "dog") is None and find_token(tokens, "  ") is None


def test_find_token_finds_a_word_the_model_cut_into_pieces_at_its_first_piece() -> None:
    # MiniLM reads the Chinese minimal pair's 动物 as two unknown characters, e5-small as one token
    tokens = ["[CLS]", "[UNK]:动", "[UNK]:物", "没", "有", "[UNK]:它", "[SEP]"]
    assert find_token(tokens, "动物") == 1 and find_token(tokens, "没有") == 3
    assert find_token(["[CLS]", "walk", "##ing", "home", "[SEP]"], "Walking") == 1
    assert find_token(["[CLS]", "new", "york", "[SEP]"], "new york") == 1
    assert find_token(tokens, "动物们") is None and find_token(tokens, "物有") is None
    assert find_token(tokens, "动物", start=2) is None


def test_default_focus_uses_the_example_words_or_the_ordinary_ends() -> None:
    att = _att(["[CLS]", "it", "was", "the", "animal", "[SEP]"], [True, False, False, False, False, True])
    assert default_focus(att, {"query": "it", "key": "animal"}) == (1, 4)
    assert default_focus(att, {"query": "nothing", "key": "here"}) == (4, 1)  # last and first ordinary
    assert default_focus(att) == (4, 1)
    assert default_focus(_att(["[CLS]", "[SEP]"], [True, True])) == (1, 0)


def test_parse_words_splits_on_both_kinds_of_comma() -> None:
    assert parse_words(" animal, street ，它,, ") == ["animal", "street", "它"]
    assert parse_words("") == []
    assert len(parse_words(",".join(["w"] * 100))) == 20


def test_share_keeps_signs_and_sums_absolute_values_to_one() -> None:
    from attnviz.explain import share

    v = share(np.array([2.0, -1.0, 1.0]))
    assert np.abs(v).sum() == pytest.approx(1.0) and v[1] < 0
    assert np.all(share(np.zeros(3)) == 0)


def test_fit_keeps_exactly_the_tokens_encode_keeps(minilm: attnviz.PretrainedModel) -> None:
    text = SENTENCES[0] + " " + SENTENCES[2]
    for limit in (5, 8, 13):
        fitted = minilm.fit(text, limit)
        assert minilm.encode(fitted).tokens == minilm.encode(text, limit).tokens
    assert minilm.fit(SENTENCES[0], 512) == SENTENCES[0]

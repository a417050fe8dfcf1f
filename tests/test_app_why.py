"""Why a head looks there, in the app without a browser (AppTest): the explorer's "why" shows the
parts of each side and the part-by-part matrix of `explain.score_sources` for the chosen cell,
mapped from the shown tokens to the model's own; the head's card beside it reads its kind, what
it reads most, what switching it off changes and the heads it composes with, each equal to the
method computed here; a text past the bound says so; after an induction run the Training lab's
card of the induction head points at the previous-token head. The views' pieces against numpy."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import explain, i18n
from attnviz.app.sections.training import best_head, induction_cell
from attnviz.app.sections.why import model_cell, positions
from attnviz.app.server import session_models, training_jobs
from attnviz.explain.sources import SCORE_SOURCES_MAX_TOKENS
from attnviz.views import why as why_views

from .app_runs import forget_training_runs
from .smollm2_model import smollm2
from .test_app import APP, TIMEOUT, TIRED, _array, _chart, _ok
from .test_app_training import _train, _training_page

pytestmark = pytest.mark.slow

BYTES = "我爱北京。The cat sat on the mat."  # byte pieces of characters in a decoder
PIECES = "Unbelievably, the tokenizer's output wasn't [CLS] obvious."  # word pieces and a typed "[CLS]"


@pytest.fixture(autouse=True)
def _deployment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("ATTNVIZ_DEMO", "ATTNVIZ_ALLOWED_MODELS", "ATTNVIZ_MAX_CHARS", "ATTNVIZ_MAX_TOKENS"):
        monkeypatch.delenv(key, raising=False)


def _why(query: dict[str, str], cell: tuple[int, int], **state: object) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    _ok(at.run())
    at.session_state["why_open"], at.session_state["why_query"], at.session_state["why_key"] = True, *cell
    for name, value in state.items():
        at.session_state[name] = value
    return _ok(at.run())


def _tables(at: AppTest) -> list[list[list[str]]]:
    return [[[str(v) for v in row] for row in table.value.values.tolist()] for table in at.get("table")]


def assert_parts(shown: list[list[str]], s: explain.ScoreSources, side: str, lang: str = "en") -> None:
    """One side's table as shown equals `s.top(side, 5)`: the parts' names in order, each value
    and share as written, up to the last digit shown (the page's model ran its own forward, whose
    float32 rounding can move a value across a rounding edge)."""
    top = s.top(side, why_views.SIDE_TOP)
    assert [row[0] for row in shown] == [why_views.part_label(name, lang) for name, _, _ in top], side
    for (_, value, share), (_, value_text, share_text) in zip(top, [row[:3] for row in shown], strict=True):
        assert float(value_text) == pytest.approx(value, abs=6e-4), (side, value_text, value)
        assert float(share_text.rstrip("%")) == pytest.approx(100 * share, abs=0.06), (side, share_text, share)


def test_why_shows_the_parts_of_the_chosen_cell(minilm: attnviz.PretrainedModel) -> None:
    att = minilm.attend(TIRED)
    query, key = att.tokens.index("it"), att.tokens.index("animal")
    at = _why({"layer": "2", "head": "3"}, (query, key))
    s = explain.score_sources(minilm, TIRED, 2, 3, query, key)
    assert abs(s.score - s.model_score) < 1e-4
    tables = _tables(at)
    assert_parts(tables[0], s, "query")
    assert_parts(tables[1], s, "key")
    fig = _chart(at, "chart_why")
    z = _array(fig["data"][0]["z"])
    rows, cols, values = why_views.top_matrix(s)
    np.testing.assert_allclose(z, values, atol=1e-5)  # the app's model ran its own forward: float32 rounding
    assert z.shape == (9, 9) and z.sum() == pytest.approx(s.score, abs=1e-4)  # 8 parts and "other" a side
    assert rows[-1] == cols[-1] == why_views.OTHER
    cell = next(m.value for m in at.markdown if "from `it`" in str(m.value))
    assert f"weight {s.weight:.3f}" in cell and f"{s.score:.3f}" in cell
    card = next(str(m.value) for m in at.markdown if "Kind on this sentence" in str(m.value))
    switched = explain.ablate(minilm, TIRED, [(2, 3)])
    assert f"{switched.effect:.4f}" in card
    layer, head, moved = why_views.map_change(att, switched.attention, 2) or (0, 0, 0.0)
    assert f"L{layer}H{head}" in card and f"{moved:.0%}" in card
    comp = explain.composition(minilm)
    assert all(f"L{a}H{b}" in card for a, b, _ in comp.top(2, 3, "k", 3))
    assert all(f"{w:.0%}" in card for _, w in why_views.reads_most(att, 2, 3))


def test_why_maps_merged_words_to_the_models_own_positions(minilm: attnviz.PretrainedModel) -> None:
    """Hidden specials and merged words: the shown cell's parts are those of its query's last
    piece and the key piece it looks at most."""
    raw = minilm.attend(PIECES)
    shown = raw.without_special().merge_words()
    i, j = next(k for k, tok in enumerate(shown.tokens) if tok.lower().startswith("obvious")), 1
    groups = positions(raw, True, True)
    query, key = model_cell(raw, groups, 1, 0, i, j)
    assert query == groups[i][-1] and key in groups[j]
    at = _why({"text": PIECES, "layer": "1", "head": "0"}, (i, j), hide_special=True, merge_words=True)
    s = explain.score_sources(minilm, PIECES, 1, 0, query, key)
    for table, side in zip(_tables(at)[:2], ("query", "key"), strict=True):
        assert_parts(table, s, side)


def test_a_decoders_characters_read_at_their_last_piece() -> None:
    """SmolLM2 cuts 爱 into byte pieces: the shown character's query is its last piece, its key
    the piece the query looks at most; a key after the query is never scored, and the page says so."""
    model = smollm2()
    raw = model.attend(BYTES)
    groups = positions(raw, False, False)
    assert len(groups[1]) > 1  # 爱: byte pieces
    query, key = model_cell(raw, groups, 5, 2, 6, 1)
    assert query == groups[6][-1] and key == max(groups[1], key=lambda p: raw.weights[5, 2, query, p])
    at = _why({"text": BYTES, "model": "smollm2", "layer": "5", "head": "2"}, (6, 1))
    s = explain.score_sources(model, BYTES, 5, 2, query, key)
    for table, side in zip(_tables(at)[:2], ("query", "key"), strict=True):
        assert_parts(table, s, side)
    at.session_state["why_query"], at.session_state["why_key"] = 1, 3
    _ok(at.run())
    assert i18n.t("why.ahead", "en") in [str(c.value) for c in at.caption]


@pytest.mark.parametrize(("hide", "merge"), [(False, False), (True, False), (False, True), (True, True)])
def test_positions_are_the_shown_tokens_pieces(minilm: attnviz.PretrainedModel, hide: bool, merge: bool) -> None:
    raw = minilm.attend(PIECES)
    shown = raw.without_special() if hide else raw
    shown = (shown.merge_words() if merge else shown).merge_characters()
    groups = positions(raw, hide, merge)
    assert len(groups) == shown.n and sorted(p for g in groups for p in g) == sorted(set(p for g in groups for p in g))
    for g, span in zip(groups, shown.spans, strict=True):
        assert span == (min(raw.spans[p][0] for p in g), max(raw.spans[p][1] for p in g))
    if not hide:  # the map of the shown tokens is the raw one merged over these groups (rows averaged)
        merged = np.array([[raw.weights[0, 0][np.ix_(a, b)].sum(1).mean() for b in groups] for a in groups])
        np.testing.assert_allclose(shown.weights[0, 0], merged, atol=1e-6)


def test_a_text_past_the_bound_says_where_it_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(["word"] * (SCORE_SOURCES_MAX_TOKENS + 20))
    at = _why({"text": text, "layer": "0", "head": "0"}, (3, 1))
    info = [str(m.value) for m in at.info]
    n = attnviz.load_model("minilm", device="cpu").attend(text).n
    assert i18n.t("why.too_long", "en", n=f"{n:,}", limit=SCORE_SOURCES_MAX_TOKENS) in info
    assert not at.get("table")


def test_why_speaks_chinese(minilm: attnviz.PretrainedModel) -> None:
    at = _why({"text": TIRED, "model": "minilm", "layer": "1", "head": "0", "lang": "zh"}, (4, 2))
    assert at.get("table") and any(i18n.t("why.title", "zh") in str(h.value) for h in at.subheader)
    s = explain.score_sources(minilm, TIRED, 1, 0, 4, 2)
    shown = [row[0] for row in _tables(at)[1]]
    assert shown == [why_views.part_label(name, "zh") for name, _, _ in s.top("key", 5)]


def test_top_matrix_keeps_the_sum_and_the_largest_parts(minilm: attnviz.PretrainedModel) -> None:
    s = explain.score_sources(minilm, TIRED, 3, 5, 6, 2)
    rows, cols, values = why_views.top_matrix(s, 4)
    assert values.sum() == pytest.approx(s.score, abs=1e-9)
    by_size = [s.query_parts[i] for i in np.argsort(-np.abs(s.query_side), kind="stable")]
    assert rows == [*by_size[:4], why_views.OTHER]
    rest = [s.query_parts.index(n) for n in by_size[4:]]
    np.testing.assert_allclose(values[-1].sum(), s.matrix[rest].sum(), atol=1e-9)
    named = [s.key_parts.index(c) for c in cols[:-1]]
    np.testing.assert_allclose(values[0, :-1], s.matrix[s.query_parts.index(rows[0]), named], atol=1e-12)
    whole = why_views.top_matrix(s, 100)  # every part kept: no "other", the matrix itself reordered
    assert why_views.OTHER not in whole[0] and whole[2].shape == s.matrix.shape


def test_map_change_is_the_head_whose_attention_moves_most(tired: attnviz.Attention) -> None:
    rng = np.random.default_rng(0)
    w = tired.weights.copy()
    w[4, 7] = rng.dirichlet(np.ones(tired.n), size=tired.n)
    moved = attnviz.Attention(tired.tokens, w, tired.model, special=tired.special)
    layer, head, share = why_views.map_change(tired, moved, 2) or (0, 0, 0.0)
    assert (layer, head) == (4, 7)
    assert share == pytest.approx(
        0.5 * np.abs(moved.weights[4, 7].astype(np.float64) - tired.weights[4, 7]).sum(-1).mean(), abs=1e-9
    )
    assert why_views.map_change(tired, moved, tired.n_layers - 1) is None


@pytest.fixture
def _training_cleanup() -> Iterator[None]:
    """AppTest gives every session the same id: this test's runs and models go at its end (as
    tests/test_app_training.py clears them)."""
    yield
    forget_training_runs()


@pytest.mark.usefixtures("_training_cleanup")
def test_the_training_labs_induction_card_points_at_the_previous_token_head() -> None:
    """Seed 0, 200 steps, 2 layers x 2 heads (the lab's defaults; tests/test_score_sources_induction.py
    reads the same circuit off the library): the card's key side leads with a layer-0 head whose
    kind on the probe is "previous token", as score_sources on the trained model says."""
    at = _train(_training_page(), "induction", 200)
    deadline = time.monotonic() + 300
    while not [c for c in at.get("markdown") if "Kind on this sentence" in str(c.value)]:
        assert time.monotonic() < deadline, "no card after the run"
        time.sleep(0.5)
        _ok(at.run())
    job = list(training_jobs._JOBS.values())[-1]
    assert job.run is not None and job.model_name is not None
    runner = session_models.get(job.model_name, job.session)
    assert runner is not None
    probe = job.run.probe.text
    raw = runner.attend(probe)
    layer, head, _ = best_head(job.run.snapshot_scores[-1]["induction"], 1)
    cell = induction_cell(job.run, raw.head(layer, head))
    assert cell is not None
    s = explain.score_sources(runner, probe, layer, head, *cell)
    kinds = explain.head_kinds(explain.head_stats(raw))
    first = s.top("key", 1)[0][0]
    assert first.startswith("L0H") and kinds[0, int(first[3:])] == "prev", (first, kinds)
    card = next(str(c.value) for c in at.get("markdown") if "Kind on this sentence" in str(c.value))
    named = i18n.t("why.head_kind", "en", head=first, kind=i18n.t("why.kind_prev", "en"))
    share = why_views.share_text(s.top("key", 1)[0][2])
    assert f"its key by {named} {share}" in card, card
    assert f"through its keys: {named}" in card  # K-composition from the weights: the same head first

"""The faithfulness scoreboard (attnviz.explain.faithfulness): leave-one-out, deletion curves,
AOPC and the random floor, each checked against a plain forward of the masked text; rank
agreement against explain.agreement; and the benchmarks that produce the recorded tables."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from attnviz import explain
from attnviz.explain.scoreboard import _masks, _order, _steps
from attnviz.models import PretrainedModel

from .benchrun import run_bench
from .conftest import SENTENCES

TIRED = SENTENCES[0]
ROOT = Path(__file__).resolve().parents[1]


def masked_output(
    model: PretrainedModel, text: str, masked: list[int], query: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain measure: the text's output and the output with `masked` replaced by [MASK]:
    position `query`'s last hidden state, or the mean over positions (the sentence embedding)."""
    enc = model.encode(text)
    ids = enc.inputs["input_ids"].clone()
    ids[0, masked] = model.tokenizer.mask_token_id
    with torch.inference_mode():
        h0 = model.last_hidden(enc.inputs)[0].double()
        h = model.last_hidden({**enc.inputs, "input_ids": ids})[0].double()
    pick = (lambda t: t.mean(0)) if query is None else (lambda t: t[query])
    return pick(h0), pick(h)


def cos_distance(a: torch.Tensor, b: torch.Tensor) -> float:
    return 1 - float(torch.nn.functional.cosine_similarity(a, b, dim=0))


@pytest.fixture(scope="module")
def board_it(minilm: PretrainedModel) -> explain.Scoreboard:
    return explain.faithfulness(minilm, TIRED, 10)  # "it"


@pytest.fixture(scope="module")
def board_sentence(minilm: PretrainedModel) -> explain.Scoreboard:
    return explain.faithfulness(minilm, TIRED)


# ---------------------------------------------------------------- the pieces


def test_steps_cover_every_count_for_short_texts_and_ten_strides_otherwise() -> None:
    assert _steps(4, 10).tolist() == [0, 1, 2, 3, 4]
    assert _steps(100, 10).tolist() == list(range(0, 101, 10))
    assert _steps(13, 10).tolist()[0] == 0 and _steps(13, 10).tolist()[-1] == 13 and len(_steps(13, 10)) == 11


def test_orders_put_the_highest_score_first_and_skip_special_tokens() -> None:
    keep = np.array([False, True, True, True, False])
    assert _order(np.array([9.0, 0.1, 0.5, 0.5, 9.0]), keep).tolist() == [2, 3, 1]


def test_masks_start_with_leave_one_out_and_run_each_distinct_text_once() -> None:
    keep = np.array([False, True, True, True, False])
    orders = [np.array([2, 1, 3]), np.array([2, 3, 1])]
    masks, where = _masks(5, keep, orders, np.array([0, 1, 2, 3]))
    assert masks[:3].tolist() == [
        [False, True, False, False, False],
        [False, False, True, False, False],
        [False, False, False, True, False],
    ]
    # step 1 of both orders is "token 2 alone", already a leave-one-out row; step 3 is all three
    assert where[0, 0] == where[1, 0] == 1 and where[0, 2] == where[1, 2]
    assert len({m.tobytes() for m in masks}) == len(masks) == 6


# ---------------------------------------------------------------- against plain forwards


def test_leave_one_out_of_a_token_equals_occlusion(minilm: PretrainedModel, board_it: explain.Scoreboard) -> None:
    np.testing.assert_allclose(board_it.loo, explain.occlusion(minilm, TIRED, 10), atol=2e-5)
    assert (board_it.loo[board_it.special] == 0).all()


def test_leave_one_out_of_the_sentence_is_the_mean_pooled_embedding_moving(
    minilm: PretrainedModel, board_sentence: explain.Scoreboard
) -> None:
    for j in (1, 6, 13):
        expected = cos_distance(*masked_output(minilm, TIRED, [j], None))
        assert board_sentence.loo[j] == pytest.approx(expected, abs=2e-5)
    # the same measure at every layer's output, ending with the final one
    np.testing.assert_allclose(board_sentence.loo_layers[-1], board_sentence.loo)
    assert board_sentence.loo_layers.shape == (6, 15)


@pytest.mark.parametrize("method", ["globenc", "attention_last"])
def test_a_deletion_curve_removes_tokens_in_the_methods_order(minilm: PretrainedModel, board_it, method: str) -> None:
    row = board_it.row(method)
    order = _order(row.scores, ~board_it.special)
    assert row.curve[0] == 0.0 and row.curve.shape == board_it.removed.shape
    for step in (1, 3, len(board_it.removed) - 1):
        k = int(board_it.removed[step])
        expected = cos_distance(*masked_output(minilm, TIRED, order[:k].tolist(), 10))
        assert row.curve[step] == pytest.approx(expected, abs=3e-5), (method, k)
    assert row.aopc == pytest.approx(row.curve.mean())


def test_the_random_floor_is_the_mean_of_its_orders(board_sentence: explain.Scoreboard) -> None:
    floor = board_sentence.row("random")
    assert math.isnan(floor.spearman) and floor.aopc == pytest.approx(floor.curve.mean())
    assert board_sentence.random_aopc_std >= 0
    # every curve ends where everything ordinary is masked: the same text for every order
    ends = {round(float(r.curve[-1]), 6) for r in board_sentence.rows}
    assert len(ends) == 1


def test_rank_agreement_is_spearman_and_kendall_over_ordinary_tokens(board_it: explain.Scoreboard) -> None:
    keep = ~board_it.special
    for row in board_it.rows[:-1]:
        expected = explain.agreement(row.scores, board_it.loo, keep=keep)
        assert row.spearman == pytest.approx(expected["spearman"])
        assert row.kendall == pytest.approx(expected["kendall"])


def test_method_scores_are_the_rows_of_the_contributions(minilm: PretrainedModel, board_it, board_sentence) -> None:
    c = explain.contributions(minilm, TIRED, "alti")
    np.testing.assert_allclose(board_it.row("alti").scores, c.rolled[10], atol=1e-6)
    np.testing.assert_allclose(board_sentence.row("alti").scores, c.rolled.mean(0), atol=1e-6)
    att = minilm.attend(TIRED)
    np.testing.assert_allclose(board_it.row("attention_last").scores, att.head(5)[10], atol=1e-6)


def test_per_layer_agreement_ends_with_the_final_one(board_it: explain.Scoreboard) -> None:
    for method in explain.CONTRIBUTION_METHODS:
        row = board_it.row(method)
        assert row.layer_rolled is not None and row.layer_single is not None
        assert row.layer_rolled.shape == (6,) and row.layer_rolled[-1] == pytest.approx(row.spearman)
        assert row.layer_rolled[0] == pytest.approx(
            row.layer_single[0] if method in ("globenc", "alti", "value_zeroing") else row.layer_rolled[0]
        )
    assert board_it.row("gradient").layer_rolled is None


def test_an_oracle_ranking_agrees_perfectly_and_its_reverse_not_at_all(minilm: PretrainedModel, board_it) -> None:
    loo = board_it.loo
    board = explain.faithfulness(
        minilm, TIRED, 10, methods=[], extra={"oracle": loo, "backwards": -loo}, random_orders=8
    )
    assert board.row("oracle").spearman == pytest.approx(1.0) and board.row("oracle").kendall == pytest.approx(1.0)
    assert board.row("backwards").spearman == pytest.approx(-1.0)
    assert board.row("oracle").aopc > board.row("random").aopc > board.row("backwards").aopc
    assert board.best == "oracle" and board.best_by_rank == "oracle"


def test_the_table_has_one_row_a_method_and_the_floor_last(board_it: explain.Scoreboard) -> None:
    table = board_it.table()
    assert [r["method"] for r in table] == [*explain.SCOREBOARD_METHODS, "random"]
    floor = table[-1]["aopc"]
    for r in table:
        assert r["aopc_over_random"] == pytest.approx(float(r["aopc"]) - float(floor))
    assert board_it.best in explain.SCOREBOARD_METHODS
    np.testing.assert_allclose(board_it.fractions[[0, -1]], [0.0, 1.0])


def test_scratch_and_pretrained_give_the_same_scoreboard(minilm: PretrainedModel, scratch) -> None:
    a = explain.faithfulness(minilm, SENTENCES[4], 2)
    b = explain.faithfulness(scratch, SENTENCES[4], 2)
    for ra, rb in zip(a.rows, b.rows, strict=True):
        assert ra.method == rb.method
        np.testing.assert_allclose(ra.curve, rb.curve, atol=1e-4)
        np.testing.assert_allclose(ra.scores, rb.scores, atol=1e-4)
    np.testing.assert_allclose(a.loo_layers, b.loo_layers, atol=1e-4)


# ---------------------------------------------------------------- limits and errors


def test_a_long_text_is_cut_with_a_note(minilm: PretrainedModel) -> None:
    board = explain.faithfulness(minilm, TIRED * 3, None, max_tokens=12, methods=["attention", "alti"])
    assert len(board.tokens) == 12 and board.truncated and board.n_input_tokens > 12
    assert board.notes and "12 of" in board.notes[0]


def test_bad_requests_are_refused(minilm: PretrainedModel) -> None:
    with pytest.raises(IndexError):
        explain.faithfulness(minilm, TIRED, 99)
    with pytest.raises(ValueError, match="unknown method"):
        explain.faithfulness(minilm, TIRED, methods=["lime"])
    with pytest.raises(ValueError, match="reuse the name"):
        explain.faithfulness(minilm, TIRED, extra={"random": np.zeros(15)})
    with pytest.raises(ValueError, match="values for 15 tokens"):
        explain.faithfulness(minilm, TIRED, methods=[], extra={"mine": np.zeros(3)})


def test_progress_rises_to_one(minilm: PretrainedModel) -> None:
    seen: list[float] = []
    explain.faithfulness(minilm, SENTENCES[4], methods=["alti", "value_zeroing"], progress=seen.append)
    assert seen and seen[-1] == pytest.approx(1.0) and seen == sorted(seen)


# ---------------------------------------------------------------- benchmarks and the bundled set


def _bench(script: str, *args: str) -> str:
    return run_bench(script, *args)


@pytest.mark.slow
def test_contributions_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "contributions.md"
    _bench("bench_contributions.py", "--sizes", "16", "--repeat", "1", "--out", str(out))
    text = out.read_text()
    assert "| 16 |" in text and "value_zeroing" in text and "scoreboard" in text


@pytest.mark.slow
def test_faithfulness_benchmark_writes_the_average_table(tmp_path: Path) -> None:
    out = tmp_path / "average.json"
    _bench("bench_faithfulness.py", "--limit", "2", "--out", str(out), "--md", str(tmp_path / "f.md"))
    data = json.loads(out.read_text())
    assert data["sentences"] == 2 and {r["method"] for r in data["rows"]} >= {"globenc", "random"}
    assert "bench/bench_faithfulness.py" in data["command"]


def test_the_bundled_average_table_matches_the_bundled_sentences() -> None:
    sentences = json.loads((ROOT / "assets" / "faithfulness_sentences.json").read_text(encoding="utf-8"))
    average = json.loads((ROOT / "assets" / "faithfulness_average.json").read_text(encoding="utf-8"))
    assert 45 <= len(sentences["en"]) + len(sentences["zh"]) <= 60 and len(sentences["zh"]) >= 15
    assert average["sentences"] == len(sentences["en"]) + len(sentences["zh"])
    assert [r["method"] for r in average["rows"]] == [*explain.SCOREBOARD_METHODS, "random"]


def test_bundled_chinese_sentences_use_characters_the_model_knows(minilm: PretrainedModel) -> None:
    """MiniLM's vocabulary holds about 240 CJK characters; the set must use those."""
    sentences = json.loads((ROOT / "assets" / "faithfulness_sentences.json").read_text(encoding="utf-8"))
    for text in sentences["zh"]:
        enc = minilm.encode(text)
        tokens = [t for t, special in zip(enc.tokens, enc.special, strict=True) if not special]
        unknown = [t for t in tokens if t.startswith("[UNK]")]
        assert len(unknown) <= len(tokens) / 5, (text, unknown)
    assert all(4 <= len(minilm.encode(t).tokens) <= 64 for t in sentences["en"] + sentences["zh"])


# ---------------------------------------------------------------- command line (python -m attnviz evidence)


@pytest.fixture(autouse=True)
def _loaded_once(minilm: PretrainedModel, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line loads its model by name; here it gets the session's copy (the loading
    itself is tested in tests/test_cli.py)."""
    monkeypatch.setattr("attnviz.explain.cli.load_model", lambda name, device="auto": minilm)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from attnviz.explain.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_the_scoreboard_and_writes_it_as_json(
    minilm: PretrainedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, SENTENCES[4], "--json", "-", "--methods", "globenc,alti")
    assert code == 0
    data = json.loads(out)
    board = explain.faithfulness(minilm, SENTENCES[4], None, methods=["globenc", "alti"])
    assert [r["method"] for r in data["rows"]] == ["globenc", "alti", "random"]
    for got, want in zip(data["rows"], board.table(), strict=True):
        assert got["aopc"] == pytest.approx(want["aopc"], abs=1e-5)
        assert (got["spearman"] is None) == math.isnan(float(want["spearman"]))
    code, out, _ = _cli(capsys, SENTENCES[4], "--query", "bites", "--methods", "alti")
    assert code == 0 and "scoreboard for the token bites" in out and "random" in out


def test_cli_prints_a_contribution_map_and_the_sink_heads(
    minilm: PretrainedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, SENTENCES[4], "--map", "alti", "--json", "-")
    assert code == 0
    np.testing.assert_allclose(
        json.loads(out)["rolled"], explain.contributions(minilm, SENTENCES[4], "alti").rolled, atol=1e-5
    )
    code, out, _ = _cli(capsys, SENTENCES[4], "--sinks", "--json", "-")
    data = json.loads(out)
    assert code == 0 and "[CLS]" in data["parked"] and data["heads"][0]["value_norm_ratio"] is not None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((SENTENCES[4], "--query", "cat"), "not among the tokens"),
        ((SENTENCES[4], "--query", "9"), "outside 0..4"),
        ((SENTENCES[4], "--methods", "lime"), "unknown method"),
        (("   ",), "empty"),
        ((SENTENCES[4], "--max-tokens", "1"), "at least 2"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, _, err = _cli(capsys, *argv)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_python_m_attnviz_dispatches_evidence_to_its_command(
    minilm: PretrainedModel, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m attnviz evidence ...` is this command, not an analysis of the word "evidence"."""
    from attnviz.__main__ import main

    assert main(["evidence", SENTENCES[4], "--sinks", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "[CLS]" in data["parked"] and "heads" in data

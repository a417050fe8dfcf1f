"""attnviz.training: the tasks' sequences and patterns, the head scores against plain loops, the
learned patterns of short seeded runs (copy, induction), determinism, stopping, Chinese text,
and the trained model as a Runner (views, head statistics, head switches)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz import explain, views
from attnviz.config import Settings, settings_from_env
from attnviz.models import Cancelled, Runner, gate_for
from attnviz.models import gate as gate_module
from attnviz.training import (
    TrainConfig,
    TrainingRun,
    induction_cols,
    make_task,
    pattern_score,
    prepare,
    previous_cols,
    resume,
    score_attention,
    train,
)
from attnviz.training.tasks import IGNORE

from .benchrun import run_bench

ROOT = Path(__file__).resolve().parents[1]
ZH = "注意力让每个字都去看句子里的其他字。看得多，权重就大；看得少，权重就小。小猫坐在垫子上，小狗坐在木头上。"


def quick(task: str, steps: int, seed: int = 0, **options: object) -> TrainingRun:
    return train(task, steps, seed, batch_size=32, **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def copy_run() -> TrainingRun:
    return quick("copy", 60, snapshot_every=10)


@pytest.fixture(scope="module")
def induction_run() -> TrainingRun:
    return quick("induction", 200, snapshot_every=20)


# --- tasks: the column a pattern names holds the token to predict ------------------------------


@pytest.mark.parametrize("name", ["copy", "reverse", "induction"])
def test_the_expected_column_holds_the_next_token(name: str) -> None:
    """For every scored row t of the expected pattern, the key it should look at carries exactly
    the token the model must predict at t (seq[t + 1]); for induction, the key's previous token
    is also the query's own token (Olsson et al. 2022)."""
    task = make_task(name)
    seqs, cols = task.sequences(64, np.random.default_rng(3))
    want = cols[task.expected]
    rows = 0
    for b, t in zip(*np.nonzero(want >= 0), strict=True):
        c = want[b, t]
        assert 0 < c <= t and seqs[b, c] == seqs[b, t + 1]
        if name == "induction":
            assert seqs[b, c - 1] == seqs[b, t]
        rows += 1
    assert rows >= 64 * 5


def test_copy_is_a_shifted_diagonal_and_reverse_an_anti_diagonal() -> None:
    m = 8
    rows = np.arange(m + 1, 2 * m + 1)  # the target rows: ">" and the copies so far
    copy = make_task("copy", length=m).probe(0).patterns["diagonal"]
    reverse = make_task("reverse", length=m).probe(0).patterns["diagonal"]
    assert (rows - copy[rows] == m).all() and (copy[: m + 1] == -1).all()
    assert (rows + reverse[rows] == 2 * m + 1).all() and (reverse[: m + 1] == -1).all()


def test_induction_periods_vary_so_no_fixed_offset_solves_it() -> None:
    task = make_task("induction", periods=(6, 14))
    batch = task.batch(256, np.random.default_rng(0))
    cols = batch.patterns["induction"]
    offsets = {int(t - c) for b, t in zip(*np.nonzero(cols >= 0), strict=True) for c in [cols[b, t]]}
    assert offsets == set(range(5, 14))  # t - (t - r + 1) = r - 1 for every r in 6..14
    scored = batch.targets != IGNORE
    assert torch.equal(scored, torch.as_tensor(cols >= 0))


def test_bad_task_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown task"):
        make_task("sort")
    with pytest.raises(ValueError, match="too short"):
        make_task("text", text="short")
    with pytest.raises(ValueError, match="periods"):
        make_task("induction", symbols=8, periods=(6, 14))
    with pytest.raises(ValueError, match="multiple of heads"):
        TrainConfig(heads=3, d_model=64).check()
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0).check()


# --- scores against a plain loop -----------------------------------------------------------------


def _loop_score(w: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(B, H, n, n), (B, n) -> (H,), written out."""
    out = np.zeros(w.shape[1])
    for h in range(w.shape[1]):
        values = [w[b, h, t, cols[b, t]] for b in range(w.shape[0]) for t in range(w.shape[2]) if cols[b, t] >= 0]
        out[h] = np.mean(values)
    return out


def test_pattern_score_equals_a_plain_loop() -> None:
    rng = np.random.default_rng(1)
    w = rng.random((2, 5, 3, 9, 9))  # (L, B, H, n, n)
    cols = rng.integers(-1, 9, size=(5, 9))
    got = pattern_score(w, cols)
    assert got.shape == (2, 3)
    for layer in range(2):
        np.testing.assert_allclose(got[layer], _loop_score(w[layer], cols), rtol=1e-12)


def test_a_shift_matrix_scores_one_as_previous_token_and_uniform_rows_score_one_over_t() -> None:
    n = 10
    shift = np.eye(n, k=-1)
    shift[0, 0] = 1.0
    assert pattern_score(shift[None], previous_cols(n))[0] == pytest.approx(1.0)
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]  # a causal head that looks everywhere
    expected = np.mean([1 / (t + 1) for t in range(1, n)])
    assert pattern_score(uniform[None], previous_cols(n))[0] == pytest.approx(expected)
    ind = induction_cols(n, period=4)  # <s> a b c d a b c d .
    assert [(t, int(ind[t])) for t in np.flatnonzero(ind >= 0)] == [(5, 2), (6, 3), (7, 4)]


# --- learned patterns of short seeded runs -------------------------------------------------------


def test_copy_learns_and_its_target_rows_peak_on_the_shifted_diagonal(copy_run: TrainingRun) -> None:
    first, last = copy_run.snapshots[0], copy_run.snapshots[-1]
    assert first.accuracy < 0.2 and last.accuracy >= 0.95
    att = last.attention
    cols = copy_run.probe.patterns["diagonal"]
    rows = np.flatnonzero(cols >= 0)
    scores = score_attention(att, {"diagonal": cols})["diagonal"]  # (L, H)
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    peaks = att.weights[layer, head, rows].argmax(-1)
    assert (peaks == cols[rows]).mean() >= 0.9  # row - col = m: the shifted diagonal
    assert scores.max() >= 0.7 and scores.max() > 3 * score_attention(first.attention, {"d": cols})["d"].max()


def test_induction_forms_a_previous_token_head_then_an_induction_head(induction_run: TrainingRun) -> None:
    """REFERENCES.md: previous-token score = mean A[t, t-1] in the first layer; induction score
    = mean attention from t to t - r + 1 in the second layer over the repeated part."""
    run = induction_run
    scores = run.scores  # name -> (snapshots, L, H), measured on held-out sequences
    prev, ind = scores["previous"][:, 0].max(-1), scores["induction"][:, 1].max(-1)
    assert ind[0] < 0.15 and ind[-1] >= 0.5  # about 0.1 at initialisation
    assert prev[-1] >= 0.35 and prev[-1] >= 2 * prev[0]
    assert run.snapshots[-1].accuracy >= 0.8
    # the probe's own maps tell the same story as the held-out scores
    probe = score_attention(run.snapshots[-1].attention, run.probe.patterns)
    assert probe["induction"][1].max() >= 0.5


def test_switching_off_the_induction_head_breaks_the_task(induction_run: TrainingRun) -> None:
    model = induction_run.model
    batch = induction_run.task.batch(128, np.random.default_rng(11))
    scored = batch.targets != IGNORE

    def accuracy() -> float:
        with torch.inference_mode():
            logits, _ = model.decoder(batch.ids)
        return float((logits.argmax(-1)[scored] == batch.targets[scored]).float().mean())

    head = int(np.argmax(induction_run.scores["induction"][-1, 1]))
    before = accuracy()
    with model.switch_heads([(1, head)]):
        one_off = accuracy()
    with model.switch_heads([(1, 0), (1, 1)]):
        layer_off = accuracy()
    assert before >= 0.8 and one_off < before - 0.1 and layer_off < 0.3
    assert accuracy() == before  # the hooks are gone on leaving


def test_the_same_seed_gives_the_same_run_and_another_seed_does_not() -> None:
    a, b, c = quick("induction", 20, seed=5), quick("induction", 20, seed=5), quick("induction", 20, seed=6)
    assert [s[:3] for s in a.snapshots] == [s[:3] for s in b.snapshots]
    assert all(
        np.array_equal(x.attention.weights, y.attention.weights) for x, y in zip(a.snapshots, b.snapshots, strict=True)
    )
    assert a.history == b.history
    assert not np.array_equal(a.snapshots[-1].attention.weights, c.snapshots[-1].attention.weights)


def test_stopping_keeps_what_was_learned() -> None:
    seen: list[float] = []

    def progress(fraction: float) -> None:
        seen.append(fraction)
        if fraction >= 0.3:
            raise Cancelled

    run = train("copy", 100, 0, batch_size=32, progress=progress)
    assert run.stopped and run.step == 30  # chunks of 10 steps: it stops at the first look past 30%
    assert run.snapshots[-1].step == 30 and run.snapshots[-1].accuracy > run.snapshots[0].accuracy
    assert run.model.attend(run.probe.text).n == len(run.probe.ids)
    assert seen == sorted(seen)


def test_training_waits_while_a_visitor_s_interactive_pass_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk of steps goes through the background lane: while an interactive pass is running
    (another visitor's sentence), not one step is taken; once it ends, training goes on."""
    run = prepare(TrainConfig("copy", 20, 0, batch_size=8))
    gate = gate_for(("test_training", "interactive"))
    refused = threading.Event()  # set once the lane has looked and found the interactive pass
    wait_until_idle = gate_module._ACTIVITY.wait_until_idle

    def watched(timeout: float | None = None) -> bool:
        idle = wait_until_idle(timeout)
        if not idle:
            refused.set()
        return idle

    monkeypatch.setattr(gate_module._ACTIVITY, "wait_until_idle", watched)
    with gate.interactive():
        worker = threading.Thread(target=resume, args=(run,))
        worker.start()
        assert refused.wait(timeout=120), "training never reached the background lane"
        assert run.step == 0 and run.snapshots == []  # it is held in the lane's loop: nothing ran
    worker.join(timeout=120)
    assert not worker.is_alive() and run.step == 20


# --- text, in any script ------------------------------------------------------------------------


def test_chinese_text_reads_one_character_a_token_and_trains() -> None:
    run = quick("text", 40, text=ZH * 2, block=32)
    att = run.model.attend("小猫坐在垫子上")
    assert att.tokens == ["<s>", "小", "猫", "坐", "在", "垫", "子", "上"]
    assert att.special.tolist() == [True] + [False] * 7
    assert run.snapshots[-1].loss < run.snapshots[0].loss - 1.0
    unknown = run.model.attend("小猫 cat")  # characters it never saw are <unk>, shown with the character
    assert unknown.tokens[-3:] == ["<unk>:c", "<unk>:a", "<unk>:t"]


@pytest.mark.parametrize(
    ("task", "text", "sample"),
    [
        ("copy", None, "t03 t17 > t03 t17 t99 unknown"),
        ("text", ZH * 2, "小猫 cat\t坐在\n垫子上。🎉"),
    ],
)
def test_the_trained_models_quick_tokenizer_answers_as_transformers_does(
    task: str, text: str | None, sample: str
) -> None:
    """A trained model's tokenizer answers one text itself (training/runner.py: no transformers
    import) and anything else through transformers' PreTrainedTokenizerFast on the same
    vocabulary: the same ids, special tokens, offsets and word ids either way, cut or not."""
    from transformers import BatchEncoding, PreTrainedTokenizerFast

    tokenizer = prepare(TrainConfig(task, 1, 2, 1, 1, 16, batch_size=4), text).model.tokenizer
    real = tokenizer._real()
    assert isinstance(real, PreTrainedTokenizerFast) and type(tokenizer).__name__ == "QuickTokenizer"
    for cut in ({}, {"truncation": True, "max_length": 4}):
        kwargs = {"return_offsets_mapping": True, "return_special_tokens_mask": True, "return_tensors": "pt", **cut}
        got, want = tokenizer(sample, **kwargs), real(sample, **kwargs)
        assert isinstance(want, BatchEncoding) and sorted(got) == sorted(want)
        for key in want:
            assert torch.equal(got[key], want[key]), (key, cut)
        assert got.word_ids() == want.word_ids()
    ids = real(sample)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == real.convert_ids_to_tokens(ids)
    assert (tokenizer.unk_token_id, tokenizer.pad_token_id) == (real.unk_token_id, real.pad_token_id)
    assert tokenizer.decode(ids) == real.decode(ids)  # anything else: transformers' own


# --- the trained model is a Runner like any other ------------------------------------------------


def test_the_trained_model_is_a_runner_whose_attend_matches_its_snapshots(induction_run: TrainingRun) -> None:
    model, snap = induction_run.model, induction_run.snapshots[-1]
    assert isinstance(model, Runner) and model.causal
    att = model.attend(induction_run.probe.text)
    assert att.tokens == snap.attention.tokens and att.causal
    np.testing.assert_allclose(att.weights, snap.attention.weights, atol=1e-6)
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)
    assert np.abs(np.triu(att.weights, k=1)).max() == 0.0  # the causal mask
    batch = model.attend_batch([induction_run.probe.text, "t03 t04 t03"])
    np.testing.assert_allclose(batch[0].weights, att.weights, atol=1e-6)


def test_views_and_head_statistics_work_on_a_trained_model(induction_run: TrainingRun) -> None:
    att = induction_run.model.attend(induction_run.probe.text)
    stats = explain.head_stats(att)
    np.testing.assert_allclose(stats["prev"], pattern_score(att.weights, previous_cols(att.n)), atol=1e-6)
    fig = views.heatmap(att, 1, 0)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), att.weights[1, 0])
    assert views.model_view(att).layout.meta["thumb"] == att.n


def test_bert_layer_methods_say_they_do_not_apply(induction_run: TrainingRun) -> None:
    with pytest.raises(ValueError, match="not a BERT-family encoder"):
        induction_run.model.layers()
    # a pre-norm decoder's parts instead (runner.prenorm_layers): norm-based weights read them, causal as the model
    norms = explain.norm_weights(induction_run.model, induction_run.probe.text)
    n = norms.per_head.shape[-1]
    assert norms.per_head.shape[:2] == (2, 2) and (norms.per_head >= 0).all()
    assert not norms.per_head[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]].any()
    with pytest.raises(ValueError, match="no token of this text is in the vocabulary"):
        induction_run.model.attend("words it never saw")


def test_the_package_is_reachable_from_import_attnviz() -> None:
    assert attnviz.training.train is train


# --- deployment limits ---------------------------------------------------------------------------


def test_a_demo_deployment_caps_steps_and_size() -> None:
    demo = settings_from_env({"ATTNVIZ_DEMO": "1"})
    assert (demo.train_max_steps, demo.train_max_d_model, demo.train_max_layers) == (2000, 64, 2)
    demo.check_training(1500, 2, 2, 64)
    with pytest.raises(ValueError, match="steps is 5,000; the limit here is 2,000"):
        demo.check_training(5000, 2, 2, 64)
    with pytest.raises(ValueError, match="d_model"):
        demo.check_training(100, 2, 2, 128)
    assert settings_from_env({"ATTNVIZ_TRAIN_MAX_STEPS": "300"}).train_max_steps == 300
    Settings().check_training(20_000, 4, 8, 256)


@pytest.mark.slow
def test_training_benchmark_smoke(tmp_path: Path) -> None:
    """bench/bench_training.py keeps working and prints its table (timings are read, not tested)."""
    out = tmp_path / "training.md"
    args = ["--tasks", "copy", "--scale", "0.04", "--threads", "1", "--no-step-times", "--out", str(out)]
    run_bench("bench_training.py", *args)
    rows = [line for line in out.read_text().splitlines() if line.startswith("| copy |")]
    assert len(rows) == 2 and "attnviz" in rows[0] and "GPT-2 style" in rows[1]


def test_training_runs_on_one_thread_and_gives_the_caller_its_threads_back() -> None:
    seen: list[int] = []
    before = torch.get_num_threads()
    train("copy", 10, 0, batch_size=8, on_snapshot=lambda _run: seen.append(torch.get_num_threads()))
    assert set(seen) == {1} and torch.get_num_threads() == before

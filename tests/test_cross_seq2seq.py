"""The encoder-decoder of the Training lab: its tasks and their alignments, cross-attention from
the project's own softmax, seeded runs that reach their targets, and `snapshot.cross`."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz.training
from attnviz.models import Cancelled
from attnviz.training import Seq2SeqRun, train
from attnviz.training.seq2seq import alignment_scores
from attnviz.training.seq2seq_model import Seq2Seq, Seq2SeqConfig
from attnviz.training.seq2seq_tasks import SEQ2SEQ_TASKS, date_text, make_pair_task


@pytest.fixture(scope="module")
def reverse_run() -> Seq2SeqRun:
    return train(task="reverse", arch="seq2seq", steps=100, seed=0, snapshot_every=50)


@pytest.mark.parametrize("name", SEQ2SEQ_TASKS)
def test_every_aligned_position_holds_the_token_written(name: str) -> None:
    task = make_pair_task(name)
    src, tgt, align = task.examples(64, np.random.default_rng(3))
    assert src.shape == (64, task.src_len) and tgt.shape == (64, task.tgt_len)
    b, t, s = np.nonzero(align)
    assert len(b) and (src[b, s] == tgt[b, t]).all() if name != "date" else len(b)
    if name in ("copy", "reverse"):
        assert (align.sum(-1) == 1).all()
        want = np.arange(task.src_len)[::-1] if name == "reverse" else np.arange(task.src_len)
        assert (np.argmax(align, -1) == want).all()
    if name == "sort":
        assert (np.diff(tgt, axis=1) >= 0).all()


def test_date_reorders_english_into_chinese_order() -> None:
    task = make_pair_task("date")
    src, tgt, align = task.examples(20, np.random.default_rng(0))
    for s, t in zip(src, tgt, strict=True):
        day, month, *year = task.tokens(s)
        number = 1 + (["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].index(month))
        assert "".join(task.tokens(t)) == f"{''.join(year)}年{number}月{day}日"
    assert task.parse("3 May 2026") == task.parse(date_text(3, 5, 2026))
    assert task.tokens(task.parse("3 may 2026")) == ["3", "May", "2", "0", "2", "6"]
    assert not align[:, [4, 6, 8]].any()  # 年 月 日 copy nothing
    with pytest.raises(ValueError, match="not in the vocabulary"):
        task.parse("3 <script> 2026")
    with pytest.raises(ValueError, match="reads 8 source tokens"):
        make_pair_task("reverse").parse("t01 t02")


def test_cross_attention_is_the_explicit_softmax() -> None:
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(vocab_size=20, src_len=5, tgt_len=4, d_model=16, n_heads=2))
    src, dec_in = torch.randint(3, 20, (2, 5)), torch.randint(3, 20, (2, 4))
    with torch.no_grad():
        logits, maps = model(src, dec_in)
        memory, _ = model.encode(src)
        block = model.decoder[0]
        y = model.token_embeddings(dec_in) + model.tgt_positions(torch.arange(4))[None]
        y = y + block.attention(block.ln1(y), causal=True)[0]
        x = block.ln2(y)
        ca = block.cross
        q = ca.query(x).view(2, 4, 2, 8).transpose(1, 2).double()
        k = ca.key(memory).view(2, 5, 2, 8).transpose(1, 2).double()
        want = torch.softmax(q @ k.transpose(-1, -2) / 8**0.5, dim=-1)
    assert logits.shape == (2, 4, 20) and maps.cross[0].shape == (2, 2, 4, 5)
    np.testing.assert_allclose(maps.cross[0].numpy(), want.numpy(), atol=1e-6)
    assert np.allclose(np.triu(maps.decoder[0].numpy(), 1), 0)  # the decoder sees no later token


def test_alignment_score_by_hand() -> None:
    cross = np.zeros((1, 1, 2, 3))
    cross[0, 0, 0] = [0.7, 0.2, 0.1]
    cross[0, 0, 1] = [0.1, 0.3, 0.6]
    align = np.array([[[True, False, False], [False, True, True]]])
    assert np.isclose(alignment_scores(cross, align)[0], (0.7 + 0.9) / 2)


def test_reverse_reaches_its_target_with_the_anti_diagonal(reverse_run: Seq2SeqRun) -> None:
    last = reverse_run.snapshots[-1]
    assert last.step == 100 and reverse_run.steps.tolist() == [0, 50, 100]
    assert last.exact >= 0.95 and last.alignment >= 0.8
    cross = last.cross
    m = reverse_run.task.src_len
    assert cross.cross and cross.weights.shape == (1, 2, m, m)
    src, tgt = reverse_run.probe
    assert cross.keys == reverse_run.task.tokens(src) and cross.tokens == reverse_run.task.tokens(tgt)
    best = int(np.argmax(last.heads[0]))
    assert (cross.weights[0, best].argmax(-1) == np.arange(m)[::-1]).all()  # the anti-diagonal
    assert last.encoder.weights.shape == (1, 2, m, m) and not last.encoder.cross
    assert last.decoder.causal and last.decoder.tokens[0] == "<s>"
    assert reverse_run.alignment[0] < 0.5 < reverse_run.alignment[-1]  # it formed while training


def test_the_same_seed_gives_the_same_run() -> None:
    a = train(task="copy", arch="seq2seq", steps=20, seed=4, snapshot_every=10)
    b = train(task="copy", arch="seq2seq", steps=20, seed=4, snapshot_every=10)
    assert [s.loss for s in a.snapshots] == [s.loss for s in b.snapshots]
    np.testing.assert_array_equal(a.snapshots[-1].cross.weights, b.snapshots[-1].cross.weights)


@pytest.mark.parametrize(("task", "options"), [("copy", {}), ("date", {}), ("sort", {"length": 4, "symbols": 10})])
def test_the_other_tasks_reach_their_targets(task: str, options: dict[str, int]) -> None:
    steps = 300 if task == "sort" else 150
    run = train(task=task, arch="seq2seq", steps=steps, seed=0, snapshot_every=150, **options)
    last = run.snapshots[-1]
    assert last.exact >= 0.9, (task, last.exact)
    assert last.alignment >= (0.5 if task == "sort" else 0.8), (task, last.alignment)
    if task == "date":
        out = run.translate("3 May 2026")
        assert "".join(out.output) == "2026年5月3日"
        assert out.cross.keys == ["3", "May", "2", "0", "2", "6"]


def test_a_stopped_run_keeps_what_it_learned() -> None:
    def stop(fraction: float) -> None:
        if fraction >= 0.2:
            raise Cancelled

    run = train(task="reverse", arch="seq2seq", steps=50, seed=0, snapshot_every=100, progress=stop)
    assert run.stopped and run.step == 10 and run.snapshots[-1].step == 10


def test_bad_arguments_say_why() -> None:
    with pytest.raises(ValueError, match="unknown arch"):
        attnviz.training.train(task="reverse", arch="lstm")
    with pytest.raises(ValueError, match="unknown seq2seq task"):
        train(task="induction", arch="seq2seq")
    with pytest.raises(ValueError, match="heads"):
        train(task="reverse", arch="seq2seq", heads=0)

"""The textbook circuit read off score_sources: on the Training lab's induction model (seed 0,
200 steps, the quick run tests/test_training.py trains, about 11 CPU-s), the induction head's
score on the matching key is written on the key side mostly by the previous-token head
(Olsson et al. 2022; Elhage et al. 2021's K-composition), and switching that head off lowers
the score by what the decomposition says passes through it."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz import explain
from attnviz.training import TrainingRun, train


@pytest.fixture(scope="module")
def induction_run() -> TrainingRun:
    return train("induction", 200, 0, batch_size=32)


def _heads(run: TrainingRun) -> tuple[int, int]:
    """(previous-token head of layer 0, induction head of layer 1) by the lab's own scores."""
    return int(np.argmax(run.scores["previous"][-1, 0])), int(np.argmax(run.scores["induction"][-1, 1]))


def _rows(run: TrainingRun) -> list[tuple[int, int]]:
    """(query, matching key) of the probe's second copy: the key after the query token's first
    occurrence."""
    cols = run.probe.patterns["induction"]
    return [(int(q), int(cols[q])) for q in np.flatnonzero(cols >= 0)]


def test_the_induction_heads_keys_are_written_by_the_previous_token_head(induction_run: TrainingRun) -> None:
    run = induction_run
    model, text = run.model, run.probe.text
    prev, ind = _heads(run)
    kinds = explain.head_kinds(explain.head_stats(model.attend(text)))
    assert kinds[0, prev] == "prev" and run.scores["induction"][-1, 1, ind] >= 0.5
    rows = _rows(run)
    assert len(rows) >= 6
    shares: dict[str, list[float]] = {}
    first = 0
    for query, key in rows:
        s = explain.score_sources(model, text, 1, ind, query, key)
        assert s.weight > 0.5  # the head does look there
        for name, value in zip(s.key_parts, s.key_side, strict=True):
            shares.setdefault(name, []).append(value / s.score)
        first += s.top("key", 1)[0][0] == f"L0H{prev}"
    mean = {name: float(np.mean(v)) for name, v in shares.items()}
    assert max(mean, key=mean.__getitem__) == f"L0H{prev}" and mean[f"L0H{prev}"] >= 0.4, mean
    assert first >= 2 * len(rows) / 3  # the largest key-side part on most rows
    c = explain.composition(model)  # the weights say the same: K-composition, through this head most
    assert c.top(1, ind, "k", 1)[0][:2] == (0, prev) and c.k[1, ind, 0, prev] > c.q[1, ind, 0, prev]


def test_switching_off_the_previous_token_head_takes_what_passes_through_it(induction_run: TrainingRun) -> None:
    """Per row, the drop equals what passes through the head on either side (1e-4): the model is
    attention-only without a norm inside, so the stream layer 1 reads is exactly the sum of the
    parts, and switching the head off removes exactly its part at the query and at the key (the
    other layer-0 head does not read it). The key side alone, the share the decomposition gives
    the head in the induction head's keys, is the drop to within 25 % over the rows (this seed:
    10 %): the rest is the same head's part at the query position, which the switch also takes."""
    run = induction_run
    model, text = run.model, run.probe.text
    prev, ind = _heads(run)
    drops, keys = [], []
    for query, key in _rows(run):
        s = explain.score_sources(model, text, 1, ind, query, key)
        with model.switch_heads([(0, prev)]):
            off = explain.score_sources(model, text, 1, ind, query, key)  # its model_score: the model's own q, k
        _, key_side, either = s.through(f"L0H{prev}")
        drop = s.model_score - off.model_score
        assert drop == pytest.approx(either, abs=1e-4)
        assert off.weight < s.weight
        drops.append(drop)
        keys.append(key_side)
    assert min(drops) > 0
    assert sum(keys) == pytest.approx(sum(drops), rel=0.25)

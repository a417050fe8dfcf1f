"""How many forward passes run at once and which go first (attnviz/models/gate.py), and how
an explanation stops between batches."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import attnviz
from attnviz import explain
from attnviz.models import Cancelled, gate
from attnviz.models.gate import ForwardGate, gate_for
from tests.waiting import until as _until

from .conftest import SENTENCES


def test_a_gate_is_the_same_object_for_a_model_whoever_loads_it_again() -> None:
    """A cleared cache (Streamlit's clear_cache) reloads a model: its limit must not reset."""
    a = attnviz.load_model("minilm", device="cpu")
    b = attnviz.load_model("minilm", device="cpu")
    assert a is not b and a.gate is b.gate
    assert gate_for(("x", "cpu")) is gate_for(("x", "cpu"))
    s1 = attnviz.load_model("scratch", device="cpu", positions=False)
    assert s1.gate is not a.gate  # another model, another bound


def test_at_most_two_interactive_passes_run_at_once_per_model() -> None:
    """Six passes at once: two inside, four provably queued at the gate, never a third inside."""
    g = ForwardGate(slots=2)
    running, peak, lock = [0], [0], threading.Lock()
    release = threading.Semaphore(0)

    def work() -> None:
        with g.interactive():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            release.acquire()
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(6)]
    for th in threads:
        th.start()
    _until(lambda: running[0] == 2 and len(g._slots.waiting) == 4, "two inside, four queued")
    assert peak[0] == 2
    for _ in threads:
        release.release()
    for th in threads:
        th.join(10)
    assert peak[0] == 2 and not any(th.is_alive() for th in threads)


def test_an_explanation_batch_waits_while_an_interactive_pass_runs() -> None:
    g = ForwardGate()
    order: list[str] = []
    inside = threading.Event()
    release = threading.Event()

    def interactive() -> None:
        with g.interactive():
            inside.set()
            release.wait(10)
            order.append("interactive done")

    def background() -> None:
        inside.wait(10)
        with g.background():
            order.append("batch ran")

    t1, t2 = threading.Thread(target=interactive), threading.Thread(target=background)
    t1.start()
    t2.start()
    # the batch has the lane and is waiting for the interactive pass: proven, not slept on
    _until(lambda: inside.is_set() and gate._LANE.busy == 1, "the batch holds the lane and waits")
    assert order == [], "the batch must not start while an interactive pass is in flight"
    release.set()
    t1.join(10)
    t2.join(10)
    assert order == ["interactive done", "batch ran"]
    assert gate.interactive_waiting() == 0


def test_one_explanation_batch_at_a_time_process_wide() -> None:
    running, peak, lock = [0], [0], threading.Lock()
    release = threading.Semaphore(0)

    def batch(g: ForwardGate) -> None:
        with g.background():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            release.acquire()
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=batch, args=(gate_for(("model", i)),)) for i in range(4)]
    for th in threads:
        th.start()
    _until(lambda: running[0] == 1 and len(gate._LANE.waiting) == 3, "one batch in, three queued")
    for _ in threads:
        release.release()
    for th in threads:
        th.join(10)
    assert peak[0] == 1 and not any(th.is_alive() for th in threads)


def test_an_explanation_reports_progress_between_batches_and_stops_when_told(
    minilm: attnviz.PretrainedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attnviz.explain import _model

    monkeypatch.setattr(_model, "BATCH_BUDGET", 1)  # one variant a batch: a progress call each
    seen: list[float] = []
    full = explain.occlusion(minilm, SENTENCES[4], 2, progress=seen.append)
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen) and len(seen) >= 4
    np.testing.assert_allclose(full, explain.occlusion(minilm, SENTENCES[4], 2), atol=1e-6)

    calls: list[float] = []

    def stop_after_two(fraction: float) -> None:
        calls.append(fraction)
        if len(calls) == 2:
            raise Cancelled("visitor pressed Cancel")

    with pytest.raises(Cancelled):
        explain.occlusion(minilm, SENTENCES[0], 3, progress=stop_after_two)
    assert len(calls) == 2  # nothing ran after the cancel
    calls.clear()
    with pytest.raises(Cancelled):
        explain.integrated_gradients(minilm, SENTENCES[0], 3, steps=8, progress=stop_after_two)


def test_a_trace_records_only_its_own_threads_forward(minilm: attnviz.PretrainedModel) -> None:
    """trace() hooks the shared model; a visitor's forward in another thread while it runs must
    neither change what it records nor see anything of it."""
    import torch

    enc = minilm.encode(SENTENCES[0])
    with torch.inference_mode():
        _, alone = minilm.trace(enc.inputs)
    other = minilm.encode(SENTENCES[2])
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            with torch.inference_mode():
                minilm.attention_array(other.inputs)

    th = threading.Thread(target=busy)
    th.start()
    try:
        for _ in range(3):
            with torch.inference_mode():
                _, records = minilm.trace(enc.inputs)
            for got, want in zip(records, alone, strict=True):
                for name in ("x", "values", "attn_out"):
                    assert got[name].shape == want[name].shape
                    assert torch.allclose(got[name], want[name], atol=1e-6)
    finally:
        stop.set()
        th.join()


@pytest.mark.parametrize("grad", [False, True])
def test_an_explanation_batch_is_bounded_by_tokens_and_attention_entries(
    minilm: attnviz.PretrainedModel, monkeypatch: pytest.MonkeyPatch, grad: bool
) -> None:
    """What an interactive pass can wait behind, and what one batch holds in memory, stay bounded
    at every length: at most TOKEN_BUDGET tokens and BATCH_BUDGET attention entries a batch (x4
    with gradients), never fewer than one variant. The slices cover every variant once."""
    from attnviz.explain import _model

    scale = 4 if grad else 1
    for n in (2, 16, 100, 128, 512):
        step = _model.batch_size(minilm, n, grad)
        assert step == 1 or step * n * scale <= _model.TOKEN_BUDGET, n
        assert step == 1 or step * minilm.n_heads * n * n * scale <= _model.BATCH_BUDGET, n
        parts = list(_model.in_batches(minilm, 1000, n, grad=grad))
        assert [i for p in parts for i in range(p.start, p.stop)] == list(range(1000))
        assert max(p.stop - p.start for p in parts) == min(step, 1000)
    assert _model.batch_size(minilm, 128, False) == 16  # 170 by attention entries alone: 4 s of forward
    monkeypatch.setattr(_model, "TOKEN_BUDGET", 1)
    assert _model.batch_size(minilm, 16, grad) == 1

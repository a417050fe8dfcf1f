"""A memory budget that holds (models/admission.py): past it, once the server has given back what
it can (the `relieve` hook), the largest waiting piece of heavy work is refused, its page says
why in one sentence of the visitor's language, and the smaller work (under REFUSE_MIN_MB) keeps
waiting and goes once the memory is back; a relief that is enough refuses nothing. The resident memory is faked here
(gate.rss_mb): what is tested is the queue's decision, not the machine's memory."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.app import work
from attnviz.app.server import registry
from attnviz.models import gate
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[1]

BUDGET = 1500.0


@pytest.fixture
def over_budget(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[float], list[float]]]:
    """The server at 1,600 MB of a 1,500 MB budget ([resident MB]) and a relief that gives back
    nothing (the budgets it was called with); one piece of heavy work admitted and running."""
    rss, relieved = [BUDGET + 100.0], []

    def relieve(budget: float) -> float:
        relieved.append(budget)
        return rss[0]

    monkeypatch.setattr(gate, "rss_mb", lambda: rss[0])
    monkeypatch.setattr(gate._HOOKS, "relieve", relieve)
    monkeypatch.setattr(gate.HEAVY_QUEUE, "refused_at", float("-inf"))
    gate.configure(memory_mb=BUDGET)
    queue = gate.heavy_queue()
    assert queue.counts() == (0, 0)
    running = queue.enter("running", 10.0)  # the first always goes, whatever the memory
    try:
        assert running.admitted
        yield rss, relieved
    finally:
        queue.leave(running)
        gate.configure(memory_mb=0)


def _piece(visitor: str, size_mb: float, outcome: dict[str, str]) -> threading.Thread:
    def run() -> None:
        try:
            with gate.heavy(visitor, size_mb=size_mb, poll_s=0.02):
                outcome[visitor] = "ran"
        except gate.OutOfMemory:
            outcome[visitor] = "refused"

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_the_largest_waiting_piece_is_refused_and_the_smaller_goes_once_under(
    over_budget: tuple[list[float], list[float]],
) -> None:
    rss, relieved = over_budget
    queue, outcome = gate.heavy_queue(), dict[str, str]()
    small = _piece("small", 5.0, outcome)  # an explanation at the demo's 128 tokens
    until(lambda: queue.counts() == (1, 1) and bool(relieved), "the small piece waits past a relief")
    medium = _piece("medium", 100.0, outcome)
    large = _piece("large", 300.0, outcome)
    until(lambda: queue.counts() == (1, 3), "three pieces wait")  # none refused within REFUSE_EVERY_S
    gate.HEAVY_QUEUE.refused_at = float("-inf")  # the next relief now, not REFUSE_EVERY_S later
    large.join(10)
    assert outcome == {"large": "refused"}
    assert set(relieved) == {BUDGET}  # the server gave back before it refused
    assert queue.counts() == (1, 2)  # one refusal a relief: the others wait
    gate.HEAVY_QUEUE.refused_at = float("-inf")
    medium.join(10)
    assert outcome == {"large": "refused", "medium": "refused"}
    assert queue.counts() == (1, 1)  # the small one is never refused: it waits
    rss[0] = BUDGET - 200.0  # the running work's memory back
    small.join(10)
    assert outcome == {"large": "refused", "medium": "refused", "small": "ran"}


def test_a_relief_that_is_enough_refuses_nothing(over_budget: tuple[list[float], list[float]]) -> None:
    rss, relieved = over_budget

    def enough(budget: float) -> float:  # the cached results were what held the memory
        relieved.append(budget)
        rss[0] = budget - 100.0
        return rss[0]

    gate._HOOKS.relieve = enough
    outcome: dict[str, str] = {}
    _piece("large", 300.0, outcome).join(10)
    assert relieved == [BUDGET]
    assert outcome == {"large": "ran"}


def test_work_without_an_estimate_is_never_refused(over_budget: tuple[list[float], list[float]]) -> None:
    rss, relieved = over_budget
    outcome: dict[str, str] = {}
    unsized = _piece("training", 0.0, outcome)
    until(lambda: bool(relieved), "a relief was tried")
    assert outcome == {} and gate.heavy_queue().counts() == (1, 1)
    rss[0] = BUDGET - 200.0
    unsized.join(10)
    assert outcome == {"training": "ran"}


def _long_work_page() -> None:
    import streamlit as st

    from attnviz.app import work
    from attnviz.app.state import Ctx
    from attnviz.config import Settings

    context = Ctx(st.session_state["lang"], Settings(), "minilm", "cpu", 512)
    got = work.run_long(context, "refused-piece", "Computing", lambda _progress: "ran", size_mb=300.0)
    st.write(f"result: {got}")


def test_the_refused_page_says_why_in_its_language(over_budget: tuple[list[float], list[float]]) -> None:
    """In the page: the catalogue's sentence as its one error, no traceback, no progress bar or
    Cancel left behind, and nothing run."""
    for lang in ("en", "zh"):
        gate.HEAVY_QUEUE.refused_at = float("-inf")
        at = AppTest.from_function(_long_work_page, default_timeout=30)
        at.session_state["lang"] = lang
        at.run()
        assert not at.exception
        assert [e.value for e in at.error] == [i18n.t("fair.no_memory", lang)]
        assert [m.value for m in at.markdown] == ["result: None"]
        assert not at.button and not at.get("progress")


def test_estimates_order_the_work_as_its_memory() -> None:
    """A 512-token result of a 6 x 12 model is 75 MB (ATTNVIZ_CACHE_MB's figure); SmolLM2's 30 x 9
    at 512 tokens is larger than MiniLM's at the demo's 128; a Chinese character is 3 bytes; a
    model's rebuild is as large as its weights when it was last loaded, unknown before."""
    assert work.attention_mb(6, 12, "x" * 600, 512) == pytest.approx(72.0)
    assert work.attention_mb(30, 9, "x" * 600, 512) > work.attention_mb(6, 12, "x" * 600, 128)
    assert work.attention_mb(6, 12, "注意", 512) == work.attention_mb(6, 12, "x" * 6, 512)
    assert registry.REGISTRY.known_mb("no-such-model") == 0.0


def test_near_the_budget_passes_of_all_models_go_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within PASS_HEADROOM_MB of the budget a second model's pass waits for the first to end
    (two at once could take the server past it); with room again it goes beside it."""
    rss = [BUDGET - gate.PASS_HEADROOM_MB + 10.0]
    monkeypatch.setattr(gate, "rss_mb", lambda: rss[0])
    gate.configure(memory_mb=BUDGET)
    inside: list[str] = []
    release = threading.Event()

    def one_pass(model: gate.ForwardGate, name: str) -> None:
        with model.interactive():
            inside.append(name)
            release.wait(10)

    threads = [threading.Thread(target=one_pass, args=(gate.ForwardGate(), n), daemon=True) for n in "ab"]
    try:
        threads[0].start()
        until(lambda: inside == ["a"], "the first pass runs")
        threads[1].start()
        until(lambda: gate.interactive_waiting() == 2, "the second pass asks")
        release.wait(0.3)
        assert inside == ["a"]  # it waits: no room for two
        rss[0] = BUDGET - gate.PASS_HEADROOM_MB - 10.0
        until(lambda: inside == ["a", "b"], "with room, the second goes beside the first")
    finally:
        release.set()
        for thread in threads:
            thread.join(10)
        gate.configure(memory_mb=0)


_FREED_HEAP = """
import gc, json, threading
from attnviz.app.server import registry
from attnviz.models import gate
registry._RELIEVED[:] = [float("-inf")]
kept = []
before = gate.rss_mb()

def page_run():
    held = []
    for _ in range(4000):
        held.append(bytearray(64 * 1024))
        kept.append(bytearray(600))

thread = threading.Thread(target=page_run)
thread.start()
thread.join()
gc.collect()
freed = gate.rss_mb()
print(json.dumps([before, freed, registry.relieve(freed + 1000.0, gate.rss_mb)]))
"""


def test_a_relief_hands_the_freed_heap_back() -> None:
    """What a session's thread freed stays resident in glibc's arena while small live pieces sit
    between (250 MB of 64 KB buffers, a 600-byte one kept after each: past Python's own small-object
    allocator, so in the same arena, as a page run leaves them); a relief hands it back
    (malloc_trim). In a fresh interpreter: a test worker that ran other tests has freed arenas
    that the buffers reuse, so nothing new would be resident to give back."""
    if platform.libc_ver()[0] != "glibc" or gate.rss_mb() == 0:
        pytest.skip("glibc's arenas and /proc only")
    out = subprocess.run([sys.executable, "-c", _FREED_HEAP], capture_output=True, text=True, check=True, cwd=ROOT)
    before, freed, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert freed > before + 150.0, (before, freed)  # still resident: what the relief has to give back
    assert after < freed - 150.0, (freed, after)

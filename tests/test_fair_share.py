"""One budget per visitor and a fair share of the server (attnviz/models/gate.py, app/server/budget.py):
every pass is charged to its visitor, the least-spent visitor goes first in every queue, heavy
work is admitted a few at a time and none past the first over the memory budget, and inside
heavy work a model pass goes through the background lane (behind everyone's interactive ones).
Event-based: each test waits for a state the threads reach, with a deadline."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from attnviz.app.server import budget
from attnviz.models import gate
from attnviz.models.gate import ForwardGate
from tests.waiting import until as _until


@pytest.fixture
def spending() -> Iterator[dict[str, float]]:
    """Plug a known spending table into the gate (the app's is app/server/budget.py); put it back after."""
    table: dict[str, float] = {}
    hooks = gate._HOOKS
    saved = (hooks.priority, hooks.charge, hooks.memory_mb)

    def charge(visitor: str, seconds: float) -> None:
        table[visitor] = table.get(visitor, 0.0) + seconds

    gate.configure(priority=lambda v: table.get(v, 0.0), charge=charge)
    yield table
    hooks.priority, hooks.charge, hooks.memory_mb = saved


def test_every_pass_is_charged_to_the_visitor_it_runs_for(spending: dict[str, float]) -> None:
    g = ForwardGate()
    with gate.visiting("alice"), g.interactive():
        pass
    with gate.visiting("bob"), gate.background_lane():
        pass
    assert set(spending) == {"alice", "bob"}
    assert gate.current_visitor() == "anonymous"  # outside `visiting`, with no script run


def test_the_least_spent_visitor_goes_first_whoever_came_first(spending: dict[str, float]) -> None:
    """A visitor past their share is not refused: they wait behind everyone who spent less."""
    spending.update({"flooder": 500.0, "newcomer": 0.0})
    g = ForwardGate(slots=1)
    order: list[str] = []
    hold, release = threading.Event(), threading.Event()

    def holder() -> None:
        with gate.visiting("someone"), g.interactive():
            hold.set()
            release.wait(10)

    def visitor(name: str) -> None:
        with gate.visiting(name), g.interactive():
            order.append(name)

    first = threading.Thread(target=holder)
    first.start()
    hold.wait(10)
    flooders = [threading.Thread(target=visitor, args=("flooder",)) for _ in range(3)]
    for th in flooders:
        th.start()
    _until(lambda: len(g._slots.waiting) == 3, "the flooder's passes queued")
    newcomer = threading.Thread(target=visitor, args=("newcomer",))
    newcomer.start()
    _until(lambda: len(g._slots.waiting) == 4, "the newcomer queued last")
    release.set()
    for th in [first, *flooders, newcomer]:
        th.join(10)
    assert order[0] == "newcomer" and order.count("flooder") == 3


def test_sessions_of_one_visitor_share_one_budget() -> None:
    budget.clear()
    budget.bind("tab-1", "c:" + "a" * 32)
    budget.bind("tab-2", "c:" + "a" * 32)
    budget.charge(budget.visitor_of("tab-1"), 100.0)
    assert budget.left(120, budget.visitor_of("tab-2")) == pytest.approx(20.0)
    assert budget.left(120, budget.visitor_of("tab-3")) == 120  # not told apart: its own visitor
    assert budget.visitor_of("tab-3") == "s:tab-3"
    budget.clear()


def test_heavy_work_waits_in_the_queue_past_the_memory_budget(
    spending: dict[str, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over the memory budget the first piece still runs (nothing would otherwise), the next
    waits with its place; under the budget the queue admits HEAVY_SLOTS at once."""
    rss = [5000.0]
    monkeypatch.setattr(gate, "rss_mb", lambda: rss[0])
    gate.configure(memory_mb=1500)
    queue = gate.heavy_queue()
    first = queue.enter("a")
    second = queue.enter("b")
    third = queue.enter("c")
    try:
        assert first.admitted and not second.admitted
        assert (second.place, third.place) == (1, 2)
        assert not queue.wait(second, 0.01)
        rss[0] = 100.0  # memory back under the budget: the next one goes in, up to the slots
        assert queue.wait(second, 1.0) and second.place == 0
        assert not third.admitted and third.place == 1  # HEAVY_SLOTS (2) admitted already
        queue.leave(first)
        assert queue.wait(third, 1.0)
    finally:
        for ticket in (first, second, third):
            queue.leave(ticket)
    assert queue.counts() == (0, 0)


def test_a_pass_inside_heavy_work_goes_through_the_background_lane(spending: dict[str, float]) -> None:
    """The cost measurement runs ordinary passes: inside heavy work they must queue behind
    everyone's interactive passes, not take an interactive slot."""
    g = ForwardGate()
    lane: list[int] = []
    with gate.visiting("v"), gate.heavy("v"), g.interactive():
        lane.append(gate._LANE.busy)
        assert gate.interactive_waiting() == 0
        with g.interactive(), gate.background_lane():  # nested: no deadlock, no second hold
            lane.append(gate._LANE.busy)
    assert lane == [1, 1] and gate._LANE.busy == 0
    assert gate.heavy_queue().counts() == (0, 0)


def test_the_labs_random_seeds_are_cached_and_bounded_like_other_models() -> None:
    """A new random seed each run built a model each run (106 builds in 150 s): builds are cached
    by key, and at most MAX_RANDOM random-weight encoders are kept, so stepping through seeds
    evicts the stepper's own old seeds, never the models everyone uses."""
    from attnviz.app.server import registry

    reg = registry._Registry()
    built: list[tuple[object, ...]] = []

    def key(seed: int | None) -> registry.ModelKey:
        weights = "pretrained" if seed is None else "random"
        return ("scratch", "cpu", (("seed", seed or 0), ("weights", weights)))

    def load(k: registry.ModelKey) -> object:
        built.append(k)
        return object()

    shared = reg.get(key(None), lambda: load(key(None)))  # type: ignore[arg-type, return-value]
    for seed in range(1, 11):
        reg.get(key(seed), lambda s=seed: load(key(s)))  # type: ignore[misc, return-value]
        reg.get(key(seed), lambda s=seed: load(key(s)))  # type: ignore[misc, return-value]  # cached
    assert len(built) == 11 and reg.loads == 11
    assert sum(registry.is_random(k) for k in reg.models) == registry.MAX_RANDOM
    assert reg.models[key(None)] is shared

"""The one fair queue (attnviz/models/fair.py) against a reference written here: the visitor who
has spent least goes first, equal spenders in arrival order, and each waiter's place is its
position in that order; the gate's heavy-work queue, where corpus and training runs wait, shows
the same places."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from attnviz.models import fair, gate


@dataclass(eq=False)
class Waiter:
    visitor: str
    seq: int = field(default_factory=fair.arrival)


def reference(waiting: list[Waiter], spent: dict[str, float]) -> list[Waiter]:
    """Take turns one by one: each time, scan for whoever spent least, the earliest to arrive
    among equals (arrival: position in `waiting`, which is in arrival order)."""
    left, order = list(waiting), []
    while left:
        best = 0
        for i, w in enumerate(left):
            if spent.get(w.visitor, 0.0) < spent.get(left[best].visitor, 0.0):
                best = i
        order.append(left.pop(best))
    return order


def _case(rng: random.Random) -> tuple[list[Waiter], dict[str, float]]:
    visitors = [f"v{i}" for i in range(rng.randint(1, 5))]
    spent = {v: float(rng.choice([0, 0, 1, 2.5, 30])) for v in visitors}  # ties on purpose
    return [Waiter(rng.choice(visitors)) for _ in range(rng.randint(0, 12))], spent


@pytest.mark.parametrize("seed", range(40))
def test_the_order_is_least_spent_first_then_arrival_and_places_follow_it(seed: int) -> None:
    rng = random.Random(seed)
    waiting, spent = _case(rng)
    queue: fair.FairQueue[Waiter] = fair.FairQueue(lambda v: spent[v])
    shuffled = list(waiting)
    rng.shuffle(shuffled)  # the list's own order must not matter: arrival is `seq`
    queue.waiting.extend(shuffled)
    expected = reference(waiting, spent)
    with queue.cond:
        assert queue.order() == expected
        assert queue.first() is (expected[0] if expected else None)
    assert [queue.place(w) for w in expected] == list(range(1, len(expected) + 1))
    assert queue.place(Waiter("v0")) == 0  # not waiting
    for w in waiting:
        assert queue.others_waiting(w.visitor) == any(o.visitor != w.visitor for o in waiting)


def test_spending_while_waiting_moves_a_visitor_back() -> None:
    """The order is read afresh: a visitor who spends while they wait falls behind."""
    spent = {"a": 0.0, "b": 1.0}
    queue: fair.FairQueue[Waiter] = fair.FairQueue(lambda v: spent[v])
    a, b = Waiter("a"), Waiter("b")
    queue.waiting += [a, b]
    assert (queue.place(a), queue.place(b)) == (1, 2)
    spent["a"] = 5.0
    assert (queue.place(a), queue.place(b)) == (2, 1)


@pytest.fixture
def heavy_full(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, float]]:
    """The heavy-work queue with both places taken and a known spending table."""
    spent: dict[str, float] = {}
    monkeypatch.setattr(gate._HOOKS, "priority", lambda v: spent.get(v, 0.0))
    queue = gate.heavy_queue()
    holders = [queue.enter("holder") for _ in range(gate.HEAVY_SLOTS)]
    assert all(t.admitted for t in holders)
    yield spent
    for ticket in holders:
        queue.leave(ticket)
    assert queue.counts() == (0, 0)


@pytest.mark.parametrize("seed", range(10))
def test_the_heavy_queue_shows_the_reference_places(heavy_full: dict[str, float], seed: int) -> None:
    rng = random.Random(seed)
    waiting, spent = _case(rng)
    heavy_full.update(spent)
    queue = gate.heavy_queue()
    tickets = [queue.enter(w.visitor) for w in waiting]
    try:
        expected = reference([Waiter(t.visitor, t.seq) for t in tickets], spent)
        places = sorted(tickets, key=lambda t: t.place)
        assert [(t.visitor, t.seq) for t in places] == [(w.visitor, w.seq) for w in expected]
        assert [t.place for t in places] == list(range(1, len(tickets) + 1))
    finally:
        for ticket in tickets:
            queue.leave(ticket)

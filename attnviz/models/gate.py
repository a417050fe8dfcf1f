"""How many forward passes run at once, which go first, and whose turn it is (two CPU cores
shared by every visitor of a public demo):

- at most `INTERACTIVE_SLOTS` interactive passes (a visitor's new sentence) per model, and one at
  a time across all models while the process is within PASS_HEADROOM_MB of its memory budget,
  after the server has given back what it can (`relieve`);
- heavy work (explanations, training, corpus runs, model builds) is admitted as a whole through
  one process-wide queue (`heavy()`, admission.py), and inside it each batch goes through one
  process-wide lane (`background_lane()`) that waits while any interactive pass runs or waits;
- every wait is a fair queue (fair.py): the visitor who has spent least (the `priority` hook)
  goes first, equal spenders in arrival order;
- every pass and batch is charged (the `charge` hook) to the visitor of this thread
  (`visiting()`), else the `resolver` hook's, else "anonymous".

The gates live in module state keyed by model, not in a Streamlit cache: a cleared cache costs a
model reload, never a broken limit. The app plugs its visitor table in through `configure`.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from . import fair
from .admission import Admission, Memory, OutOfMemory, Ticket
from .fair import FairQueue

INTERACTIVE_SLOTS = 2
# What one interactive pass may add at its peak: SmolLM2 at 512 tokens, +430 MB over its weights
# (its attention maps alone 270 MB), MiniLM +140 MB; measured by RSS on one pass each.
PASS_HEADROOM_MB = 450.0
HEAVY_SLOTS = 2  # pieces of heavy work admitted at once, process-wide
MAX_GATES = 64  # distinct (model, device) keys remembered; beyond that the oldest idle one goes
YIELD_WAIT_S = 0.05  # how often a waiting explanation batch looks again
ANONYMOUS = "anonymous"

Progress = Callable[[float], None]  # called with the fraction done, between batches


class Cancelled(RuntimeError):
    """An explanation stopped between two batches (its progress callback said so)."""


@dataclass
class _Hooks:
    priority: Callable[[str], float] = lambda _visitor: 0.0
    charge: Callable[[str, float], None] = lambda _visitor, _seconds: None
    resolver: Callable[[], str | None] = lambda: None
    memory_mb: float = 0.0  # 0: no memory budget
    relieve: Callable[[float], float] = lambda _budget: rss_mb()  # gives back; the resident MB after


_HOOKS = _Hooks()
_VISITOR: contextvars.ContextVar[str | None] = contextvars.ContextVar("attnviz_visitor", default=None)
_HOLDING: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar("attnviz_heavy", default=None)


def configure(
    *,
    priority: Callable[[str], float] | None = None,
    charge: Callable[[str, float], None] | None = None,
    resolver: Callable[[], str | None] | None = None,
    memory_mb: float | None = None,
    relieve: Callable[[float], float] | None = None,
) -> None:
    """Plug in who is spending what (the app's budget table), the server's memory budget and
    what it gives back past it (`relieve(budget)`: the resident MB after); None keeps what is there."""
    given: dict[str, object] = {"priority": priority, "charge": charge, "resolver": resolver, "relieve": relieve}
    given["memory_mb"] = None if memory_mb is None else float(memory_mb)
    for name, value in given.items():
        if value is not None:
            setattr(_HOOKS, name, value)


def current_visitor() -> str:
    return _VISITOR.get() or _HOOKS.resolver() or ANONYMOUS


@contextlib.contextmanager
def visiting(visitor: str) -> Iterator[None]:
    """Passes in this block (this thread) are charged to `visitor`."""
    token = _VISITOR.set(visitor)
    try:
        yield
    finally:
        _VISITOR.reset(token)


def _priority(visitor: str) -> float:
    try:
        return float(_HOOKS.priority(visitor))
    except Exception:  # a broken hook must never stop a model pass
        return 0.0


def memory_budget_mb() -> float:
    """The server's memory budget in MB (`configure(memory_mb=...)`; 0: none)."""
    return _HOOKS.memory_mb


def rss_mb() -> float:
    """This process's resident memory in MB (0 where /proc is not there: no budget applies)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    import resource

    return pages * resource.getpagesize() / 2**20


_HOLDS: contextvars.ContextVar[int] = contextvars.ContextVar("attnviz_holds", default=0)


def holding_a_pass() -> bool:
    """Whether this thread holds a model pass's slot or the background lane now (a page run
    does not pause for another there: app/server/budget.py)."""
    return _HOLDS.get() > 0


@dataclass(eq=False)
class _Hold:
    visitor: str
    seq: int = field(default_factory=fair.arrival)


class _FairSlots(FairQueue[_Hold]):
    """`slots` holders at once, in the fair queue's order; with `roomy`, a second holder and more
    only while `roomy()` (looked at again every YIELD_WAIT_S)."""

    def __init__(self, slots: int, roomy: Callable[[], bool] | None = None) -> None:
        super().__init__(_priority)
        self.slots = slots
        self.busy = 0
        self.roomy = roomy

    @contextlib.contextmanager
    def hold(self, visitor: str) -> Iterator[None]:
        entry = _Hold(visitor)
        roomy, poll = (self.roomy, YIELD_WAIT_S) if self.roomy is not None else (lambda: True, None)

        def may() -> bool:
            return self.busy < self.slots and self.first() is entry and (self.busy == 0 or roomy())

        with self.cond:
            self.waiting.append(entry)
            try:
                while not self.cond.wait_for(may, poll):
                    pass
            finally:
                self.waiting.remove(entry)
            self.busy += 1
            self.cond.notify_all()
        held = _HOLDS.set(_HOLDS.get() + 1)
        try:
            yield
        finally:
            _HOLDS.reset(held)
            with self.cond:
                self.busy -= 1
                self.cond.notify_all()


class _Activity:
    """Counts interactive passes running or waiting anywhere in the process."""

    def __init__(self) -> None:
        self._count = 0
        self._cond = threading.Condition()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        with self._cond:
            self._count += 1
        try:
            yield
        finally:
            with self._cond:
                self._count -= 1
                self._cond.notify_all()

    def wait_until_idle(self, timeout: float | None = None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._count == 0, timeout)

    @property
    def count(self) -> int:
        return self._count


_ACTIVITY = _Activity()


def _roomy() -> bool:
    """Whether one more interactive pass fits under the memory budget (0: none) now."""
    budget = _HOOKS.memory_mb
    return budget <= 0 or rss_mb() + PASS_HEADROOM_MB <= budget


_PASSES = _FairSlots(MAX_GATES * INTERACTIVE_SLOTS, _roomy)  # every model's passes: memory's turn
_IN_PASS: contextvars.ContextVar[bool] = contextvars.ContextVar("attnviz_in_pass", default=False)
_IN_LANE: contextvars.ContextVar[bool] = contextvars.ContextVar("attnviz_in_lane", default=False)
_LANE = _FairSlots(1)  # one explanation batch at a time, process-wide


@contextlib.contextmanager
def charged(visitor: str) -> Iterator[None]:
    """Charge the time spent in this block to `visitor`."""
    start = time.monotonic()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # a broken hook must never stop a model pass
            _HOOKS.charge(visitor, time.monotonic() - start)


@contextlib.contextmanager
def background_lane() -> Iterator[None]:
    """One batch of heavy work: waits its turn in the process-wide lane, then for interactive
    passes to finish, and holds the lane (charged to its visitor) while the batch runs."""
    if _IN_LANE.get():  # a batch within a batch (a pass inside an explanation's batch)
        yield
        return
    visitor = current_visitor()
    with _LANE.hold(visitor):
        while not _ACTIVITY.wait_until_idle(YIELD_WAIT_S):
            pass
        token = _IN_LANE.set(True)
        try:
            with charged(visitor):
                yield
        finally:
            _IN_LANE.reset(token)


class ForwardGate:
    """One model's bound: `interactive()` around a visitor's pass, `background()` around a batch."""

    def __init__(self, slots: int = INTERACTIVE_SLOTS):
        self._slots = _FairSlots(slots)

    @contextlib.contextmanager
    def interactive(self) -> Iterator[None]:
        """A visitor's pass; inside heavy work (a measurement's passes, say) it is a batch of
        that work and goes through the background lane instead."""
        if _HOLDING.get() is not None:
            with background_lane():
                yield
            return
        visitor = current_visitor()
        if _IN_PASS.get():  # a pass within a pass (this thread holds its turn already)
            yield
            return
        if not _roomy():  # the least recently used models and cached results go before it waits
            _HOOKS.relieve(_HOOKS.memory_mb)
        with _ACTIVITY.active(), self._slots.hold(visitor), _PASSES.hold(visitor), charged(visitor):
            token = _IN_PASS.set(True)
            try:
                yield
            finally:
                _IN_PASS.reset(token)

    background = staticmethod(background_lane)


def interactive_waiting() -> int:
    """Interactive passes running or waiting now."""
    return _ACTIVITY.count


# rss_mb and the hooks read when called: tests replace them
_MEMORY = Memory(lambda: memory_budget_mb(), lambda: rss_mb(), lambda budget: _HOOKS.relieve(budget))
HEAVY_QUEUE = Admission(_priority, _MEMORY, HEAVY_SLOTS)


def heavy_queue() -> Admission:
    return HEAVY_QUEUE


@contextlib.contextmanager
def heavy(
    visitor: str | None = None,
    *,
    wait: Callable[[Ticket], None] | None = None,
    poll_s: float = 0.25,
    ticket: Ticket | None = None,
    size_mb: float = 0.0,
) -> Iterator[Ticket]:
    """Admission of one piece of heavy work: blocks until its turn, calling `wait(ticket)` every
    `poll_s` while it waits (where the app shows the place and may raise to give up). `ticket`:
    its place taken earlier (`heavy_queue().enter`), where it has waited since. `size_mb`: the
    memory it takes, estimated; raises `OutOfMemory` when the queue refuses it (admission.py)."""
    held = _HOLDING.get()
    if held is not None:  # already admitted in this thread: nested work is part of it
        yield held
        return
    ticket = ticket or HEAVY_QUEUE.enter(visitor or current_visitor(), size_mb)
    token = _HOLDING.set(ticket)
    try:
        while not HEAVY_QUEUE.wait(ticket, poll_s):
            if ticket.refused:
                raise OutOfMemory("past the server's memory budget")
            if wait is not None:
                wait(ticket)
        yield ticket
    finally:
        _HOLDING.reset(token)
        HEAVY_QUEUE.leave(ticket)


_GATES: OrderedDict[Hashable, ForwardGate] = OrderedDict()
_GATES_LOCK = threading.Lock()


def gate_for(key: Hashable) -> ForwardGate:
    """The gate of one model (key: name and device), the same object for the life of the
    process whatever cache holds the model."""
    with _GATES_LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = ForwardGate()
            while len(_GATES) > MAX_GATES:
                _GATES.popitem(last=False)
        else:
            _GATES.move_to_end(key)
        return gate

"""A lecture hall beside heavy work (app/server/budget.py `_room`, spending.py `expected_cpu`): a
run's expected cost is what its visitor's last runs cost in CPU; cheap runs (a short sentence's
page) go at once while the cores have room for them, whatever the heavy runs' slots and
MAX_UNDER_WAY; heavy runs keep both caps and the fair order. Event-based, like test_flood_turns."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from attnviz.app.server import budget, spending
from tests.test_flood_turns import Runs, clean_page_runs
from tests.waiting import until as _until

FLOODER = "c:" + "f" * 32


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    yield from clean_page_runs()


def students(n: int, cpu_s: float) -> list[str]:
    """`n` visitors past their first seconds whose last runs each took `cpu_s` CPU seconds."""
    names = [f"c:{i:032x}" for i in range(1, n + 1)]
    for name in names:
        budget.charge(name, budget.NEWCOMER_S + 3.0)
        spending._ran(name, cpu_s)
    return names


def start_students(runs: Runs, n: int, cpu_s: float) -> None:
    """`n` students (`students`) each start a run, named s0, s1, ..."""
    for i, name in enumerate(students(n, cpu_s)):
        runs.start(f"s{i}", name)


def heavy_runs_fill_the_server(runs: Runs) -> None:
    """MAX_UNDER_WAY heavy runs under way: two flooders' runs went, then paused for two lighter
    heavy visitors' runs, which go (PAGE_SLOTS)."""
    for i, cost in enumerate((60.0, 60.0, 30.0, 30.0)):
        visitor = f"c:{'e' * 31}{i}"
        budget.charge(visitor, cost)
        spending._ran(visitor, 3.0)
        runs.start(f"heavy{i}", visitor)
        if i == 1:
            _until(lambda: budget.PAGE_RUNS.counts() == (2, 0, 0), "the flooders' runs go")
    _until(lambda: budget.PAGE_RUNS.counts() == (2, 2, 0), "four heavy runs under way, two going")
    assert budget.MAX_UNDER_WAY == 4


def test_a_cheap_run_goes_at_once_beside_heavy_runs_that_fill_their_caps() -> None:
    """Four heavy runs under way (the cap a 512-token run needs) and a student's short sentence:
    the student's run goes at once, and the heavy runs it passed are still under way."""
    runs = Runs()
    heavy_runs_fill_the_server(runs)
    (student,) = students(1, 0.05)
    runs.start("student", student)
    _until(lambda: runs.has("go student"), "the cheap run goes without waiting for a heavy run to end")
    going, paused, waiting = budget.PAGE_RUNS.counts()
    assert (going + paused, waiting) == (5, 0)  # the heavy runs it passed are all still under way
    runs.join()


def test_how_many_cheap_runs_go_at_once_follows_their_measured_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    """Visitors whose runs cost 0.05 CPU-s: twelve go at once on two cores (0.6 of the 1.0 CPU-s
    the horizon holds); at 0.2 CPU-s each, five go and the sixth waits for one of them to end."""
    monkeypatch.setattr(budget, "CORES", 2)
    runs = Runs()
    start_students(runs, 12, 0.05)
    _until(lambda: budget.PAGE_RUNS.counts() == (12, 0, 0), "twelve cheap runs go at once")
    runs.join()
    budget.clear()
    more = Runs()
    for i, name in enumerate(students(6, 0.2)):
        more.start(f"mid{i}", name)
    _until(lambda: budget.PAGE_RUNS.counts() == (5, 0, 1), "five go, the sixth waits")
    first = next(line for line in more.log if line.startswith("go"))[3:]
    more.finish(first)
    _until(lambda: sum(line.startswith("go") for line in more.log) == 6, "the sixth goes once one ends")
    more.join()


def test_two_long_texts_in_a_row_make_the_next_run_heavy_and_a_first_page_does_not() -> None:
    """The expected cost is the lower median of the visitor's last RECENT_RUNS runs: a first page
    (every widget built) followed by a short sentence leaves the visitor cheap; two long texts in
    a row make the next run heavy, until short ones outnumber them again; unmeasured is heavy."""

    def cheap(visitor: str) -> bool:
        return budget.PageRun(visitor, cpu_s=budget.expected_cpu(visitor)).cheap

    student = "c:" + "5" * 32
    spending._ran(student, 0.6)  # the lesson's first run
    assert not cheap(student)
    spending._ran(student, 0.04)
    assert cheap(student) and budget.expected_cpu(student) == 0.04
    spending._ran(student, 0.04)
    spending._ran(student, 2.0)
    assert cheap(student)  # one long text among short ones
    spending._ran(student, 2.5)
    assert not cheap(student) and budget.expected_cpu(student) == 2.0
    spending._ran(student, 0.04)
    spending._ran(student, 0.05)
    assert cheap(student)
    assert not cheap("c:" + "9" * 32)  # never measured


def test_a_page_turn_keeps_what_its_thread_spent_in_cpu_not_its_wall_time() -> None:
    """A run that computes for 0.3 s is expected to cost about that next time; one that waits 0.3 s
    (a pause, the websocket) costs next to nothing."""
    busy, idle = "c:" + "b" * 32, "c:" + "a" * 32
    with budget.page_turn(busy):
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.3:
            sum(range(1000))
    with budget.page_turn(idle):
        time.sleep(0.3)
    busy_s, idle_s = budget.expected_cpu(busy), budget.expected_cpu(idle)
    assert busy_s is not None and busy_s >= 0.3
    assert idle_s is not None and idle_s < 0.05


def test_a_flood_gives_way_to_a_class_and_students_who_spent_alike_do_not_hold_each_other() -> None:
    """A flooder's cheap run (a 128-token page costs 0.18 CPU-s) going while students' runs
    arrive: it pauses while they go; students who have cost 5 and 8 s all go at once (less than
    half as much is what makes a run give way)."""
    runs = Runs()
    budget.charge(FLOODER, 60.0)
    spending._ran(FLOODER, 0.18)
    runs.start("flood", FLOODER)
    _until(lambda: runs.has("go flood"), "the flooder's run goes")
    names = students(3, 0.05)
    budget.charge(names[2], 3.0)  # 8 s against the others' 5 s
    for i, name in enumerate(names):
        runs.start(f"s{i}", name)
    _until(lambda: all(runs.has(f"go s{i}") for i in range(3)), "the students' runs all go")
    _until(lambda: budget.PAGE_RUNS.counts() == (3, 1, 0), "the flooder's run pauses while theirs go")
    runs.finish("s0", "s1", "s2")
    _until(lambda: runs.has("resumed flood"), "the flooder's run goes on after them")
    runs.join()


def test_a_hall_of_120_light_runs_all_go_at_once_when_the_cores_have_room(monkeypatch: pytest.MonkeyPatch) -> None:
    """120 students whose runs cost 5 ms of CPU each (0.6 CPU-s together, within two cores' 0.5 s):
    every run goes at once, none waits for a slot or for another student."""
    monkeypatch.setattr(budget, "CORES", 2)
    runs = Runs()
    start_students(runs, 120, 0.005)
    _until(lambda: budget.PAGE_RUNS.counts() == (120, 0, 0), "all 120 go at once")
    runs.join()


def test_a_runs_model_time_counts_in_what_it_costs() -> None:
    """A forward's torch threads are not the page run's thread: the model time the gate charges
    during the run is added, so a long text's page (little CPU of its own, a long pass) is heavy."""
    reader = "c:" + "d" * 32
    with budget.page_turn(reader):
        budget.charge(reader, 0.4)  # what the gate charges for a 512-token pass
    cost = budget.expected_cpu(reader)
    assert cost is not None and 0.4 <= cost < 0.45
    assert not budget.PageRun(reader, cpu_s=cost).cheap


def test_a_run_whose_heavy_work_failed_is_back_under_way_and_goes_on() -> None:
    """Heavy work that raises (a method the model cannot do; the page shows the error and draws
    on): the run is back among the page runs at once, going, and its next messages' checkpoints
    ask about a run the page runs know."""
    reader = "c:" + "7" * 32
    with budget.page_turn(reader) as turn:
        with pytest.raises(ValueError), budget.aside():
            raise ValueError("this needs a BERT-family encoder")
        assert budget.PAGE_RUNS.counts() == (1, 0, 0)
        turn.asked = (-1, 0.0)  # ask now, whatever was asked before
        turn.checkpoint()
        assert turn.pauses == 0


def test_heavy_runs_of_visitors_who_spent_alike_do_not_pause_each_other() -> None:
    """Two heavy visitors (3 CPU-s a run) who have cost 8 s and 5 s: 2 s apart but not less than
    half, so both go and neither pauses for the other (a margin alone would swap them back and
    forth as their costs cross)."""
    runs = Runs()
    for name, cost in (("eight", 8.0), ("five", 5.0)):
        visitor = "c:" + name[0] * 32
        budget.charge(visitor, cost)
        spending._ran(visitor, 3.0)
        runs.start(name, visitor)
        _until(lambda name=name: runs.has(f"go {name}"), f"the {name}-second visitor's run goes")
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        assert budget.PAGE_RUNS.counts() == (2, 0, 0)
        time.sleep(0.01)
    assert not runs.has("resumed eight")
    runs.join()

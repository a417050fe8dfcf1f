"""Where a page run pauses for a newcomer (app/server/visitor.py `turn`): every message the run's own
thread sends to the browser passes the turn's checkpoint first, messages of other threads pass
straight through, and while paused the session's own rerun or stop request (Streamlit's
`yield_check`) still ends the run. A stand-in script-run context: no server needed."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import streamlit.runtime.scriptrunner as scriptrunner

from attnviz.app.server import budget, visitor
from tests.waiting import until as _until

FLOODER, NEWCOMER = "c:" + "f" * 32, "c:" + "0" * 32


class FakeRun:
    """The two things `_checkpoints` uses of Streamlit's ScriptRunContext."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.stop = threading.Event()
        self.checks = 0

    def _enqueue(self, msg: object) -> None:
        self.sent.append(str(msg))

    def yield_check(self) -> None:
        self.checks += 1
        if self.stop.is_set():
            raise InterruptedError("rerun requested")


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeRun]:
    budget.clear()
    fake = FakeRun()
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda *a, **k: fake)
    yield fake
    assert budget.PAGE_RUNS.counts() == (0, 0, 0)
    budget.clear()


def _newcomer(started: threading.Event, release: threading.Event) -> threading.Thread:
    def body() -> None:
        with budget.page_turn(NEWCOMER, poll_s=0.01):
            started.set()
            release.wait(10)

    th = threading.Thread(target=body, daemon=True)
    th.start()
    return th


def test_a_message_of_the_run_waits_while_a_newcomer_goes_and_others_pass(run: FakeRun) -> None:
    budget.charge(FLOODER, 60.0)
    turn_ctx = budget.page_turn(FLOODER, poll_s=0.01)
    started, release = threading.Event(), threading.Event()
    with turn_ctx as turn, visitor._checkpoints(turn):
        run._enqueue("before")
        newcomer = _newcomer(started, release)
        assert started.wait(10)
        other = threading.Thread(target=run._enqueue, args=("from another thread",))
        other.start()
        other.join(10)
        assert run.sent == ["before", "from another thread"]  # not held: not the run's thread
        sender = threading.main_thread()
        assert threading.current_thread() is sender
        done = threading.Event()

        def release_later() -> None:
            _until(lambda: budget.PAGE_RUNS.counts()[1] == 1, "the run paused at its message")
            assert run.sent == ["before", "from another thread"]  # held while the newcomer goes
            release.set()
            done.set()

        helper = threading.Thread(target=release_later, daemon=True)
        helper.start()
        run._enqueue("after")  # pauses here until the newcomer's run is over
        assert done.is_set() and run.sent[-1] == "after" and turn.pauses == 1
        helper.join(10)
        newcomer.join(10)
    assert getattr(run._enqueue, "__func__", None) is FakeRun._enqueue  # the context's own sender is back


def test_a_rerun_request_ends_a_paused_run(run: FakeRun) -> None:
    budget.charge(FLOODER, 60.0)
    started, release = threading.Event(), threading.Event()
    with budget.page_turn(FLOODER, poll_s=0.01) as turn, visitor._checkpoints(turn):
        newcomer = _newcomer(started, release)
        assert started.wait(10)

        def stop_when_paused() -> None:
            _until(lambda: budget.PAGE_RUNS.counts()[1] == 1, "paused")
            run.stop.set()

        stopper = threading.Thread(target=stop_when_paused, daemon=True)
        stopper.start()
        with pytest.raises(InterruptedError):
            run._enqueue("never sent")
        assert "never sent" not in run.sent and run.checks >= 1
        stopper.join(10)
    release.set()
    newcomer.join(10)

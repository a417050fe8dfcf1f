"""What AppTest modules clear after a test: AppTest gives every session the same id, so one
test's training runs, session models and charged time would be found by the next."""

from __future__ import annotations

import time

from attnviz.app.server import budget, session_models, training_jobs


def forget_training_runs() -> None:
    """Stop this id's training runs (waiting up to 60 s), forget them, its models and its budget."""
    for job in list(training_jobs._JOBS.values()):
        job.stop_event.set()
    deadline = time.monotonic() + 60
    while training_jobs.running_count() and time.monotonic() < deadline:
        time.sleep(0.1)
    training_jobs._JOBS.clear()
    session_models._MODELS.clear()
    budget.clear()  # the time training charged to that shared id

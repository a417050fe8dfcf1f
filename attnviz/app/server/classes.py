"""The class store of this server process (opened and migrated on first use, old classes purged
then and at most hourly after), and the bound on wrong class codes and teacher secrets per
visitor: FREE_TRIES, then a wait that doubles with each wrong one, up to WAIT_MAX_S.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from ...classes import ClassStore, database_url
from ...classes.engine import shown_url
from ...config import Settings
from .spending import newest

LOG = logging.getLogger("attnviz")
FREE_TRIES = 5
WAIT_MAX_S = 300.0
VISITORS_MAX = 10_000
PURGE_EVERY_S = 3600.0

_LOCK = threading.Lock()
_STORE: dict[str, ClassStore] = {}  # by URL: the settings a process runs with name one
_PURGED: dict[str, float] = {}


def store(settings: Settings) -> ClassStore:
    """The process's store for these settings (opened, migrated, purged of old classes on first use)."""
    url = database_url(settings.database_url, settings.data_dir)
    with _LOCK:
        opened = _STORE.get(url)
        if opened is None:
            opened = _STORE[url] = ClassStore(url, answers_per_minute=settings.class_answers_per_minute)
            LOG.info("classes kept in %s", shown_url(url))
        due = time.monotonic() - _PURGED.get(url, -PURGE_EVERY_S) >= PURGE_EVERY_S
        if due:
            _PURGED[url] = time.monotonic()
    if due:
        gone = opened.purge(settings.class_retention_days)
        if gone:
            LOG.info("deleted %d classes past %d days", gone, settings.class_retention_days)
    return opened


class Throttle:
    """Wrong tries per visitor: `wait(visitor)` is how many seconds they must still wait (0: go),
    `wrong(visitor)` counts one, `right(visitor)` forgets them."""

    def __init__(
        self, free: int = FREE_TRIES, most: float = WAIT_MAX_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.free, self.most, self.clock = free, most, clock
        self._book: OrderedDict[str, tuple[int, float]] = OrderedDict()  # visitor -> (wrong tries, may try again at)
        self._lock = threading.Lock()

    def wait(self, visitor: str) -> float:
        with self._lock:
            _n, until = self._book.get(visitor, (0, 0.0))
        return max(0.0, until - self.clock())

    def wrong(self, visitor: str) -> float:
        """Count a wrong try; the wait it brings (seconds)."""
        with self._lock:
            n = self._book.get(visitor, (0, 0.0))[0] + 1
            delay = 0.0 if n < self.free else min(self.most, 2.0 ** (n - self.free))
            newest(self._book, visitor, (n, self.clock() + delay), VISITORS_MAX)
        return delay

    def right(self, visitor: str) -> None:
        with self._lock:
            self._book.pop(visitor, None)


throttle = Throttle()

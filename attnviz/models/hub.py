"""Fail fast when the Hugging Face hub is out of reach: without a network, `from_pretrained("some/id")`
retries five times with backoff and logs two warnings a try. `prepare` goes around one model's
from_pretrained calls: when the hub does not answer (`reachable`, probed once a minute at most) or
HF_HUB_OFFLINE is set, the load runs from the local cache only, and the retry chatter is kept off
the terminal either way. `load_failure` says in one line why a load failed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

PROBE_TIMEOUT_S = 1.5  # DNS, connect and the first response byte together
PROBE_TTL_S = 60.0  # how long an answer (either way) is believed
# huggingface_hub/utils/_http.py (`_http_backoff_base`) logs these as warnings on its own logger
RETRY_LOGGER = "huggingface_hub.utils._http"
_CHATTER = ("thrown while requesting", "Retrying in ", "Rate limited. Waiting")
_TRUE = {"1", "on", "yes", "true"}
_state_lock = threading.Lock()  # guards the counters below (quiet and offline are re-entrant)
_quiet_users = 0
_verbosity, _progress = logging.WARNING, True  # transformers' settings before the first `quiet()`
_offline_users = 0
_offline_before = False  # huggingface_hub's switch before the first `offline()` took it


class NotCachedError(OSError):
    """The hub is out of reach (or offline mode is on) and the model is not in the local cache."""


def endpoint() -> str:
    """The hub the client talks to: HF_ENDPOINT as huggingface_hub read it (default huggingface.co)."""
    from huggingface_hub import constants

    return str(constants.ENDPOINT).rstrip("/")


def is_offline() -> bool:
    """Whether offline mode was asked for: HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, or `offline()`."""
    if any(os.environ.get(k, "").strip().lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")):
        return True
    from huggingface_hub import constants

    with _state_lock:  # while `offline()` holds the switch, what it was before is what was asked for
        return _offline_before if _offline_users else bool(constants.HF_HUB_OFFLINE)


# --- is the hub there? ---------------------------------------------------------------------------
_probe_lock = threading.Lock()
_probed: dict[str, tuple[float, bool]] = {}  # endpoint -> (monotonic time, reachable)


def reachable(url: str | None = None, timeout: float = PROBE_TIMEOUT_S, ttl: float = PROBE_TTL_S) -> bool:
    """Whether the hub answers HTTP at all within `timeout` seconds (any status below 500).
    The answer is cached per endpoint for `ttl` seconds, so a busy app probes once a minute."""
    url = (url or endpoint()).rstrip("/")
    now = time.monotonic()
    with _probe_lock:
        hit = _probed.get(url)
        if hit is not None and now - hit[0] < ttl:
            return hit[1]
    answer = _probe(url, timeout)
    with _probe_lock:
        _probed[url] = (time.monotonic(), answer)
    return answer


def forget() -> None:
    """Drop cached probe answers (tests, or after the network changed)."""
    with _probe_lock:
        _probed.clear()


def _probe(url: str, timeout: float) -> bool:
    """HEAD the endpoint in a daemon thread: name resolution has no timeout of its own, so the
    thread is given `timeout` seconds in all and abandoned after that."""
    answer: list[bool] = []

    def ask() -> None:
        try:
            with urllib.request.urlopen(urllib.request.Request(url + "/", method="HEAD"), timeout=timeout):
                answer.append(True)
        except urllib.error.HTTPError as exc:
            answer.append(exc.code < 500)  # a 404 from a mirror is an answer; a 503 is not
        except ssl.SSLError:
            answer.append(True)  # a server spoke TLS: leave the verdict to the hub client
        except (urllib.error.URLError, OSError, ValueError):
            answer.append(False)  # refused, no route, no name, timed out, bad URL

    worker = threading.Thread(target=ask, name="attnviz-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(answer and answer[0])


# --- quiet and offline, for the duration of a load ----------------------------------------------
def _not_chatter(record: logging.LogRecord) -> bool:
    """A logging filter (a callable is one) that drops the hub client's retry warnings."""
    return not any(s in record.getMessage() for s in _CHATTER)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Keep a model load off the terminal while the block runs: transformers' load reports and
    progress bars, and the hub client's retry warnings. Re-entrant and thread-safe: the first
    user turns them off, the last one restores what was there."""
    global _quiet_users, _verbosity, _progress
    from transformers.utils import logging as hf_logging

    log = logging.getLogger(RETRY_LOGGER)
    with _state_lock:
        _quiet_users += 1
        if _quiet_users == 1:
            _verbosity, _progress = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            log.addFilter(_not_chatter)
    try:
        yield
    finally:
        with _state_lock:
            _quiet_users -= 1
            if _quiet_users == 0:
                log.removeFilter(_not_chatter)
                hf_logging.set_verbosity(_verbosity)
                if _progress:
                    hf_logging.enable_progress_bar()


@contextlib.contextmanager
def offline() -> Iterator[None]:
    """huggingface_hub's offline switch (what HF_HUB_OFFLINE=1 sets at import) on for the block:
    every hub request raises at once and transformers reads the local cache only."""
    global _offline_users, _offline_before
    from huggingface_hub import constants

    with _state_lock:
        _offline_users += 1
        if _offline_users == 1:
            _offline_before = bool(constants.HF_HUB_OFFLINE)
            constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        with _state_lock:
            _offline_users -= 1
            if _offline_users == 0:
                constants.HF_HUB_OFFLINE = _offline_before


@contextlib.contextmanager
def prepare(source: str) -> Iterator[None]:
    """Around the from_pretrained calls for `source` (a local directory or a hub id): quiet.
    For an id while the hub is out of reach (or offline mode is on): offline, and an id that is
    not in the local cache raises NotCachedError at once, before transformers is even imported."""
    if Path(source).expanduser().is_dir() or (not is_offline() and reachable()):
        with quiet():
            yield
        return
    from huggingface_hub import try_to_load_from_cache

    if not isinstance(try_to_load_from_cache(source, "config.json"), str):
        raise NotCachedError(f"'{source}' is not in the local Hugging Face cache")
    with quiet(), offline():
        yield


# --- what to tell the user ---------------------------------------------------------------------
def load_failure(name: str, is_dir: bool, exc: BaseException) -> str:
    """One line that says why `name` did not load and what to do about it."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if len(reason) > 200:
        reason = reason[:200] + "..."
    if is_dir:
        return f"could not load a model from directory '{name}' ({reason}); it needs config.json, weights and tokenizer files"
    todo = (
        f"give the path of a local model directory instead, bake it into the Docker image "
        f"(docker build --build-arg EXTRA_MODELS={name} ...), or run where the network reaches the hub; "
        f"the embedded model 'minilm' works offline"
    )
    offline_asked = is_offline()
    if isinstance(exc, NotCachedError):
        away = f"the Hugging Face hub ({endpoint()}) is out of reach"
        why = "offline mode is on (HF_HUB_OFFLINE)" if offline_asked else away
        return f"could not load '{name}': {why} and it is not in the local Hugging Face cache; {todo}"
    if offline_asked or not reachable():
        return f"could not load '{name}' from the local Hugging Face cache ({reason}); {todo}"
    return (
        f"could not load Hugging Face model '{name}' ({reason}); check the id on the hub, or give a local "
        f"model directory; the embedded model 'minilm' works offline"
    )

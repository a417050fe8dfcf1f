"""The hub out of reach: one line at once, not 25 s of retries (attnviz/hub.py).

The hub is pointed (HF_ENDPOINT) at loopback addresses only: a closed port (refused at once)
and a listener that accepts connections and never answers (what a dead network or a
firewall that drops packets looks like). No traffic leaves the machine. HF_HUB_OFFLINE and
TRANSFORMERS_OFFLINE are unset in the child processes, so it is attnviz, not the environment,
that has to notice.
"""

from __future__ import annotations

import http.server
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnviz import hub

from .browser import free_port
from .tiny_models import build

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 5.0  # the whole command, Python, torch and attnviz imports included, on a quiet machine
# On a busy shared machine imports alone can take 4 s or more. Then the bound is the same command
# in offline mode (the same work, no probe) plus the probe's timeout where it is waited out, plus
# 3 s: still far below the 23 s of sleeps that the hub client's five retries add.
WAIT_S = 3.0


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that completes TCP handshakes and then never says a word."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield int(s.getsockname()[1])


@pytest.fixture
def http_port() -> Iterator[int]:
    """A loopback HTTP server that answers every request with 404 (as a hub mirror may)."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def child_env(endpoint: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf-home"), PYTHONPATH=str(ROOT))
    return env


def run_timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    out = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return out, time.monotonic() - start


def limit_s(args: list[str], env: dict[str, str], cwd: Path, probe_s: float = 0.0) -> float:
    _, offline = run_timed(args, {**env, "HF_HUB_OFFLINE": "1"}, cwd)
    return max(LIMIT_S, offline + probe_s + WAIT_S)


def assert_says_what_to_do(line: str) -> None:
    assert "no-such/model-xyz" in line
    assert "out of reach" in line
    assert "local model directory" in line and "EXTRA_MODELS=no-such/model-xyz" in line and "network" in line


# --- the pieces -----------------------------------------------------------------------------------
def test_probe_says_refused_and_silent_endpoints_are_out_of_reach_and_caches_the_answer(silent_port: int) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    assert hub.reachable(closed, ttl=0) is False
    assert time.monotonic() - start < 1.0  # refused: no waiting

    silent = f"http://127.0.0.1:{silent_port}"
    start = time.monotonic()
    assert hub.reachable(silent, timeout=0.5, ttl=60) is False
    took = time.monotonic() - start
    assert 0.4 < took < 1.5  # waited for the timeout, not longer
    start = time.monotonic()
    assert hub.reachable(silent, timeout=0.5) is False
    assert time.monotonic() - start < 0.05  # cached
    hub.forget()


def test_probe_takes_any_http_answer_as_reachable(http_port: int) -> None:
    assert hub.reachable(f"http://127.0.0.1:{http_port}", ttl=0) is True


def test_quiet_drops_the_hub_clients_own_retry_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real retry loop of the installed huggingface_hub, against a closed port: outside
    `quiet` it warns 'Retrying in ...'; inside, nothing reaches a handler."""
    from huggingface_hub import constants
    from huggingface_hub.utils import _http

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # conftest makes the test process offline

    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    handler = Keep()
    top = logging.getLogger("huggingface_hub")
    top.addHandler(handler)
    url = f"http://127.0.0.1:{free_port()}/x"
    try:
        with pytest.raises(Exception):  # noqa: B017 - whichever connection error the client raises
            _http.http_backoff("HEAD", url, max_retries=1, base_wait_time=0.01, max_wait_time=0.01)
        assert any("Retrying in" in r for r in records), records  # the chatter exists and comes from there
        records.clear()
        with hub.quiet(), pytest.raises(Exception):  # noqa: B017
            _http.http_backoff("HEAD", url, max_retries=1, base_wait_time=0.01, max_wait_time=0.01)
        assert records == []
        assert logging.getLogger(hub.RETRY_LOGGER).filters == []  # removed again afterwards
    finally:
        top.removeHandler(handler)


def test_offline_switch_is_restored_after_nested_and_failing_blocks() -> None:
    from huggingface_hub import constants, is_offline_mode

    before = constants.HF_HUB_OFFLINE
    with hub.offline():
        assert is_offline_mode()
        with pytest.raises(RuntimeError), hub.offline():
            raise RuntimeError
        assert is_offline_mode()  # the inner block's exit did not turn it back
    assert constants.HF_HUB_OFFLINE is before


# --- the command line and the API -----------------------------------------------------------------
@pytest.mark.slow
def test_cli_fails_in_one_line_at_once_when_the_hub_refuses(tmp_path: Path) -> None:
    env = child_env(f"http://127.0.0.1:{free_port()}", tmp_path)
    args = [sys.executable, "-m", "attnviz", "hi", "--model", "no-such/model-xyz"]
    out, took = run_timed(args, env, tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("attnviz: error:")
    assert_says_what_to_do(lines[0])
    assert took < limit_s(args, env, tmp_path), f"took {took:.1f}s"


@pytest.mark.slow
def test_cli_fails_in_one_line_at_once_when_the_hub_never_answers(tmp_path: Path, silent_port: int) -> None:
    env = child_env(f"http://127.0.0.1:{silent_port}", tmp_path)
    args = [sys.executable, "-m", "attnviz", "hi", "--model", "no-such/model-xyz"]
    out, took = run_timed(args, env, tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert_says_what_to_do(lines[0])
    assert took < limit_s(args, env, tmp_path, hub.PROBE_TIMEOUT_S), f"took {took:.1f}s"


@pytest.mark.slow
def test_load_model_raises_model_load_error_at_once_and_quietly(tmp_path: Path) -> None:
    code = (
        "import attnviz, time\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    attnviz.load_model('no-such/model-xyz')\n"
        "except attnviz.ModelLoadError as exc:\n"
        "    print(f'{time.monotonic() - t:.2f}')\n"
        "    print(exc)\n"
    )
    env = child_env(f"http://127.0.0.1:{free_port()}", tmp_path)
    out, _ = run_timed([sys.executable, "-c", code], env, tmp_path)
    assert out.returncode == 0, out.stderr
    took, message = out.stdout.strip().splitlines()
    assert float(took) < WAIT_S  # the load itself, imports of torch and attnviz excluded
    assert_says_what_to_do(message)
    assert out.stderr == ""  # no retry chatter, no warnings


@pytest.mark.slow
def test_local_directory_loads_while_the_hub_is_out_of_reach(tmp_path: Path) -> None:
    folder = build("bert", tmp_path / "tiny-bert")
    code = (
        f"import attnviz; att = attnviz.load_model({str(folder)!r}).attend('dog bites man'); print(att.weights.shape)"
    )
    env = child_env(f"http://127.0.0.1:{free_port()}", tmp_path)
    out, _ = run_timed([sys.executable, "-c", code], env, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(2, 4, 5, 5)"

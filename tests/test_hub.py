"""The hub out of reach: one line at once, not 25 s of retries (attnviz/hub.py).

What is asserted is the behaviour that makes it quick, not a time: the probe's answer and its
cache, the offline path taken (NotCachedError before transformers is imported), and exactly one
connection (the probe) reaching a hub that never answers, so no retries were made.

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
from collections.abc import Iterator
from pathlib import Path

import pytest

from attnviz.models import hub

from .browser import free_port
from .tiny_models import build

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def silent() -> Iterator[socket.socket]:
    """A loopback listener that completes TCP handshakes and then never says a word; the
    connections made to it wait in its backlog, to be counted (`connections`)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield s


def connections(listener: socket.socket) -> int:
    """How many connections were made to `listener` so far (its backlog, drained)."""
    listener.setblocking(False)
    count = 0
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


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


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def assert_says_what_to_do(line: str) -> None:
    """The NotCachedError message: the offline path was taken, nothing asked of the hub client."""
    assert "no-such/model-xyz" in line
    assert "out of reach and it is not in the local Hugging Face cache" in line
    assert "local model directory" in line and "EXTRA_MODELS=no-such/model-xyz" in line and "network" in line


# --- the pieces -----------------------------------------------------------------------------------
def test_probe_says_refused_and_silent_endpoints_are_out_of_reach_and_caches_the_answer(
    silent: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[str] = []
    probe = hub._probe

    def counted(url: str, timeout: float) -> bool:
        probes.append(url)
        return probe(url, timeout)

    monkeypatch.setattr(hub, "_probe", counted)
    closed = f"http://127.0.0.1:{free_port()}"
    assert hub.reachable(closed, ttl=0) is False
    assert hub.reachable(closed, ttl=0) is False  # ttl 0: asked again
    assert probes == [closed, closed]

    quiet = f"http://127.0.0.1:{silent.getsockname()[1]}"
    assert hub.reachable(quiet, timeout=0.5, ttl=60) is False  # connected, no answer: given up
    assert connections(silent) == 1  # the probe did reach it, once
    assert hub.reachable(quiet, timeout=0.5) is False  # cached: no second probe
    assert probes == [closed, closed, quiet] and connections(silent) == 0
    hub.forget()
    assert hub.reachable(quiet, timeout=0.5) is False and probes[-1] == quiet  # forgotten: probed again
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
    out = run(args, env, tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("attnviz: error:")
    assert_says_what_to_do(lines[0])


@pytest.mark.slow
def test_cli_fails_in_one_line_at_once_when_the_hub_never_answers(tmp_path: Path, silent: socket.socket) -> None:
    env = child_env(f"http://127.0.0.1:{silent.getsockname()[1]}", tmp_path)
    args = [sys.executable, "-m", "attnviz", "hi", "--model", "no-such/model-xyz"]
    out = run(args, env, tmp_path)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert_says_what_to_do(lines[0])
    assert connections(silent) == 1  # the probe; the hub client's retries would each add one


@pytest.mark.slow
def test_load_model_raises_model_load_error_at_once_and_quietly(tmp_path: Path) -> None:
    code = (
        "import sys, attnviz\n"
        "try:\n"
        "    attnviz.load_model('no-such/model-xyz')\n"
        "except attnviz.ModelLoadError as exc:\n"
        "    print(type(exc.__cause__).__name__, 'transformers' in sys.modules)\n"
        "    print(exc)\n"
    )
    env = child_env(f"http://127.0.0.1:{free_port()}", tmp_path)
    out = run([sys.executable, "-c", code], env, tmp_path)
    assert out.returncode == 0, out.stderr
    path, message = out.stdout.strip().splitlines()
    assert path == "NotCachedError False"  # refused before transformers (and its retries) were imported
    assert_says_what_to_do(message)
    assert out.stderr == ""  # no retry chatter, no warnings


@pytest.mark.slow
def test_local_directory_loads_while_the_hub_is_out_of_reach(tmp_path: Path) -> None:
    folder = build("bert", tmp_path / "tiny-bert")
    code = (
        f"import attnviz; att = attnviz.load_model({str(folder)!r}).attend('dog bites man'); print(att.weights.shape)"
    )
    env = child_env(f"http://127.0.0.1:{free_port()}", tmp_path)
    out = run([sys.executable, "-c", code], env, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(2, 4, 5, 5)"

"""The classroom image, checked without a Docker engine: hadolint on the Dockerfile, its
promises read from the file, and its own install and start scripts (scripts/install, the
README's and CI's too, and docker/start.sh) run in a fresh virtual environment (server up,
health green, page served)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import urllib.request
import venv
from pathlib import Path

import pytest

from .browser import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def _hadolint() -> str:
    exe = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(exe).exists():
        pytest.fail("hadolint is not installed: pip install -r requirements-dev.txt")
    return exe


def test_hadolint_passes() -> None:
    out = subprocess.run([_hadolint(), "Dockerfile"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_dockerfile_keeps_its_promises() -> None:
    assert re.search(r"^FROM python:3\.\d+-slim\b", DOCKERFILE, re.M), "slim official Python base"
    user = re.findall(r"^USER\s+(\S+)", DOCKERFILE, re.M)
    assert user and user[-1] not in ("root", "0"), "runs as a non-root user"
    assert re.search(r"HF_HUB_OFFLINE=1", DOCKERFILE), "offline at run time"
    assert re.search(r"^EXPOSE 8501$", DOCKERFILE, re.M)
    assert re.search(r"^HEALTHCHECK .*", DOCKERFILE, re.M) and "/_stcore/health" in DOCKERFILE
    assert re.search(r"^WORKDIR /app$", DOCKERFILE, re.M)
    # one install script for README, CI and image: packages in a cached layer, then attnviz
    assert "scripts/install --deps-only" in DOCKERFILE and "scripts/install --project-only" in DOCKERFILE
    assert 'ENTRYPOINT ["/app/docker/start.sh"]' in DOCKERFILE
    start = (ROOT / "docker" / "start.sh").read_text()
    assert "streamlit run app.py --server.address=0.0.0.0 --server.port=" in start
    assert "--browser.serverAddress=localhost" in start  # no external-IP lookup at start
    assert "ARG EXTRA_MODELS" in DOCKERFILE and "bake_models.py $EXTRA_MODELS" in DOCKERFILE
    ignored = (ROOT / ".dockerignore").read_text().split()
    for path in ("tests", ".venv", ".git", "**/__pycache__"):
        assert path in ignored
    for needed in ("README.md", "pyproject.toml", "requirements.txt", "requirements.lock", "scripts", "assets"):
        assert needed not in ignored, f"the image's install or app needs {needed}"


def test_bake_models_checks_ids_and_fails_cleanly_offline() -> None:
    script = [sys.executable, str(ROOT / "docker" / "bake_models.py")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": "/nonexistent-hf-home"}
    assert subprocess.run(script, env=env, capture_output=True, timeout=60).returncode == 0
    bad = subprocess.run([*script, "not an id!"], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a Hugging Face model id" in bad.stderr
    offline = subprocess.run([*script, "bert-base-uncased"], env=env, capture_output=True, text=True, timeout=120)
    assert offline.returncode == 2 and "could not fetch bert-base-uncased" in offline.stderr
    assert "Traceback" not in offline.stderr


@pytest.mark.slow
def test_image_install_and_start_scripts_work_in_a_fresh_environment(tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))},
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PIP": str(bin_dir / "pip"),
        # torch from the default index (our machines serve the CPU build from it); the image
        # itself uses the PyTorch CPU index, which this machine cannot reach
        "TORCH_INDEX_URL": "",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
    }
    # what the Dockerfile runs: the packages, then attnviz itself
    for stage in ("--deps-only", "--project-only"):
        install = subprocess.run(
            ["sh", "scripts/install", stage], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500
        )
        assert install.returncode == 0, install.stderr[-3000:]
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            ["sh", "docker/start.sh", "--server.headless=true"],
            cwd=ROOT,
            env={**env, "PORT": str(port)},
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, timeout=120)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            page = r.read().decode()
        assert r.status == 200 and '<div id="root">' in page
        # the embedded model loads offline inside that environment, attnviz comes from the
        # install (not the working directory), and the model wheel came without its declared deps
        code = (
            "import importlib.util, attnviz\n"
            "print(attnviz.load_model('minilm').attend('hello').tokens)\n"
            "print([m for m in ('sentence_transformers', 'sklearn', 'scipy') if importlib.util.find_spec(m)])\n"
        )
        probe = subprocess.run(
            [str(bin_dir / "python"), "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert probe.stdout.splitlines() == ["['[CLS]', 'hello', '[SEP]']", "[]"], probe.stderr[-2000:]
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    text = log.read_text()
    assert "Traceback" not in text
    assert "URL: http://localhost:" in text and "external IP" not in text  # nothing asked of the outside

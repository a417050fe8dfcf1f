"""The README, pasted line by line as a new user would, after its first set-up command.

Every code block is extracted and run: each shell line in a fresh `bash` process, the lines of
one block in order in one new temporary directory (so `mkdir -p out` comes before the commands
that write there), and the Python snippet in a fresh `.venv/bin/python` there. Nothing runs
from the repository and PYTHONPATH is unset, so `import attnviz`, `.venv/bin/attnviz` and
`python -m attnviz` must come from the package that scripts/install put into the environment
these tests run in. `.venv/bin/` is that environment's bin directory.

Not run here, and why:
- the two set-up commands at the top (they create .venv and install into it): CI runs the test
  one verbatim (.ci/run, checked below), and the app one differs only in `scripts/install`
  without `--dev` and `streamlit run app.py`; so is the CPU-only variant, which needs PyTorch's
  index that this machine cannot reach;
- `docker` lines: there is no Docker engine here; tests/test_docker.py lints the Dockerfile and
  runs the image's install and start scripts in a fresh virtual environment;
- `streamlit run` lines: a server that runs until stopped; tests/browser.py starts it the same
  way for the browser tests.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.config import Settings

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent  # the environment the tests run in: the README's .venv
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def code_blocks() -> list[tuple[str, str]]:
    return [(lang, body) for lang, body in FENCE.findall(README)]


def is_setup(line: str) -> bool:
    return "python3 -m venv" in line


def skipped(line: str) -> bool:
    return is_setup(line) or line.startswith("docker ") or "streamlit run" in line


def shell_lines(body: str) -> list[str]:
    lines = [line.strip() for line in body.splitlines()]
    return [line for line in lines if line and not line.startswith("#") and not skipped(line)]


def runnable_blocks() -> list[tuple[str, str]]:
    out = []
    for lang, body in code_blocks():
        if lang == "bash" and shell_lines(body):
            out.append(("bash", body))
        elif lang == "python":
            out.append(("python", body))
    return out


def child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "HOME": str(home), "HF_HUB_OFFLINE": "1"}  # the README's examples need no network


def test_readme_opens_with_exactly_two_setup_commands_and_ci_runs_the_second() -> None:
    blocks = code_blocks()
    first, second = (body.strip() for _, body in blocks[:2])
    assert first == "python3 -m venv .venv && scripts/install && .venv/bin/streamlit run app.py"
    assert second == "python3 -m venv .venv && scripts/install --dev && scripts/check"
    later = [body for _, body in blocks[2:] if any(is_setup(line) for line in body.splitlines())]
    assert all("TORCH_INDEX_URL=" in body for body in later), "only the CPU-only variant may repeat a set-up"
    ci = (ROOT / ".ci" / "run").read_text()
    assert second in ci.splitlines(), ".ci/run must run the README's test command verbatim"


def test_readme_says_where_the_app_is_how_to_stop_it_and_how_to_keep_it_local() -> None:
    assert "http://localhost:8501" in README
    assert "Ctrl+C" in README
    assert "--server.address 127.0.0.1" in README


def test_readme_states_the_settings_defaults_the_code_has() -> None:
    defaults = Settings()
    assert f"`ATTNVIZ_CACHE_MB` ({defaults.cache_mb})" in README
    assert f"`ATTNVIZ_CACHE_ENTRIES` ({defaults.cache_entries})" in README
    assert f"`ATTNVIZ_MAX_TOKENS` ({defaults.max_tokens})" in README


def test_command_line_examples_write_into_a_git_ignored_folder() -> None:
    outputs = []
    for lang, body in runnable_blocks():
        if lang != "bash":
            continue
        for line in shell_lines(body):
            words = shlex.split(line, comments=True)
            outputs += [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("--json", "--html")]
    files = [o for o in outputs if o != "-"]
    assert files and all(f.startswith("out/") for f in files), files
    assert "out/" in (ROOT / ".gitignore").read_text().splitlines()


@pytest.mark.slow
@pytest.mark.parametrize(("lang", "body"), runnable_blocks(), ids=lambda v: v.strip().splitlines()[0][:40])
def test_readme_block_runs_as_written_from_a_fresh_directory(lang: str, body: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = child_env(tmp_path)
    if lang == "python":
        commands = [[str(BIN / "python"), "-c", body]]
    else:
        commands = [["bash", "-c", line.replace(".venv/bin/", f"{BIN}/")] for line in shell_lines(body)]
    for command in commands:
        out = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=300)
        shown = command[-1]
        assert out.returncode == 0, f"{shown}\n{out.stderr[-2000:]}"
        assert "Traceback" not in out.stderr and "error" not in out.stderr.lower(), f"{shown}\n{out.stderr[-2000:]}"
        for word in shlex.split(shown, comments=True):
            if word.startswith("out/"):
                written = work / word  # a file, or a folder of files (the corpus command's --out)
                files = [p for p in written.iterdir() if p.is_file()] if written.is_dir() else [written]
                assert files and all(p.is_file() and p.stat().st_size > 0 for p in files), f"{shown} wrote no {word}"
        if "--json -" in shown:
            assert out.stdout.startswith('{"model": "minilm"'), out.stdout[:200]

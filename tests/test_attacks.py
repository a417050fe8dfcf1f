"""The load test's heavy recipe (scripts/attacks.py) reads what the app really shows: the queue
place it looks for is the one the English messages carry, and its corpus is the demo's whole
allowance (more lines than are analysed, a file the upload accepts)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attnviz import i18n
from attnviz.config import settings_from_env
from scripts import attacks


@pytest.mark.parametrize("key", ["fair.queued", "train.queued"])
def test_queue_place_is_read_from_the_english_messages(key: str) -> None:
    shown = i18n.t(key, "en", place=7)
    match = re.search(attacks.QUEUE_PLACE, shown)
    assert match is not None, shown
    assert int(match.group(1)) == 7
    assert re.search(attacks.QUEUE_PLACE, i18n.t(key, "en", place=12)).group(1) == "12"  # type: ignore[union-attr]


def test_queue_place_script_is_called_when_the_page_loads() -> None:
    # add_init_script evaluates its text; a bare arrow function would only be defined, never run
    assert attacks.QUEUE_JS.startswith("(() =>") and attacks.QUEUE_JS.endswith("})()")
    assert attacks.QUEUE_PLACE in attacks.QUEUE_JS


def test_heavy_corpus_is_the_demo_allowance(tmp_path: Path) -> None:
    demo = settings_from_env({"ATTNVIZ_DEMO": "1"})
    path = attacks.corpus_file(tmp_path / "c.txt", 600, 3)
    lines = path.read_text().splitlines()
    assert len(lines) == 600 and len(set(lines)) == 600 and all(line.strip() for line in lines)
    assert len(lines) > demo.corpus_sentences  # the demo cuts it: its whole allowance is analysed
    assert path.stat().st_size < demo.corpus_upload_mb * 1024 * 1024  # and the upload accepts it
    assert attacks.corpus_file(tmp_path / "d.txt", 600, 4).read_text() != path.read_text()


def test_heavy_runs_every_heavy_kind() -> None:
    assert "heavy" in attacks.RECIPES
    kinds = {attacks.HEAVY_KINDS[i % len(attacks.HEAVY_KINDS)] for i in range(10)}
    assert kinds == {"scoreboard", "value_zeroing", "importance", "training", "corpus"}

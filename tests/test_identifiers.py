"""The core hands the app identifiers, not English, and the app matches identifiers, never text:
head kinds are keys the catalogues translate, and a result's notes carry a key beside their
readable words."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np

from attnviz import explain, i18n
from attnviz.models.base import OOM_NOTE, oom_note
from attnviz.result import OOM_CPU, Attention, Note, note_key

APP = Path(__file__).resolve().parents[1] / "attnviz" / "app"


def _stats(**shares: float) -> dict[str, np.ndarray]:
    names = ("prev", "next", "self", "cls", "sep", "punct", "entropy_rel")
    return {k: np.full((1, 1), shares.get(k, 0.0)) for k in names}


def test_head_kinds_are_identifiers_and_labels_are_their_english() -> None:
    cases = {"prev": _stats(prev=0.9), "sep": _stats(sep=0.6, cls=0.3), "broad": _stats(entropy_rel=0.95), "": _stats()}
    for kind, stats in cases.items():
        assert explain.head_kinds(stats).tolist() == [[kind]]
        assert explain.head_labels(stats).tolist() == [[explain.HEAD_KINDS.get(kind, "")]]
    assert explain.head_kinds(_stats(prev=0.5)).tolist() == [[""]]  # over LABEL_SHARE, not at it


def test_every_head_kind_has_words_in_every_language() -> None:
    for lang in i18n.LANGUAGES:
        for kind in explain.HEAD_KINDS:
            assert i18n.t(f"stats.l_{kind}", lang) != f"stats.l_{kind}", (lang, kind)


def test_the_out_of_memory_note_is_readable_and_keyed() -> None:
    note = oom_note("cuda")
    assert note == OOM_NOTE.format(device="cuda") and isinstance(note, str)  # the CLI prints it as is
    assert note_key(note) == OOM_CPU and note_key("cuda ran out of memory") == ""  # words are not a key
    again = pickle.loads(pickle.dumps(note))  # results travel through caches and processes
    assert again == note and note_key(again) == OOM_CPU
    att = Attention(tokens=["a"], weights=np.ones((1, 1, 1, 1), dtype=np.float32), model="m")
    noted = replace(att, notes=(note,))
    assert [note_key(n) for n in noted.notes] == [OOM_CPU]
    assert Note("plain").key == ""


def test_the_app_matches_no_message_text() -> None:
    """Notes and labels are matched by key: no `"..." in note` or English label lookups in the app."""
    for path in APP.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert '"out of memory" in' not in text, path
        assert '"previous token"' not in text, path

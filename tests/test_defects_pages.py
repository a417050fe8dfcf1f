"""Every page as a Chinese-reading student sees it (issue 23.8), through AppTest: no English word
beyond names and formats (the allow-list of tests/test_defects.py), and no Python `None` in any
text or table cell. References (paper titles with their links) stay in their own language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.app import nav
from attnviz.app.sidebar import LANGUAGE_NAMES
from attnviz.app.widgets import MEAN_LABEL

from .test_app import _ok
from .test_defects import english_in

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 300
TEXT = "春天山上有花。"
# Bilingual on purpose: the language switch (each language in its own words) and the mean-of-heads option.
BILINGUAL = {"Language / 语言", MEAN_LABEL, *LANGUAGE_NAMES.values()}


def _shown(at: AppTest) -> tuple[list[str], list[Any]]:
    """The page's words (text elements and widget labels and options) and its table cells."""
    words: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "error"):
        words += [str(e.value) for e in getattr(at, kind)]
    for kind in ("button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "number_input", "text_area"):
        for w in getattr(at, kind):
            words.append(str(w.label))
            words += [str(o) for o in getattr(w, "options", [])]
    words += [str(m.label) for m in at.metric] + [str(e.label) for e in at.expander]
    cells: list[Any] = []
    for frame in at.dataframe:
        words += [str(c) for c in frame.value.columns]
        cells += list(frame.value.to_numpy().ravel())
    return words, cells


@pytest.mark.parametrize("page", [p.name for p in nav.PAGES])
def test_a_chinese_page_has_no_english_and_no_none(page: str) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"lang": "zh", "text": TEXT, "views": "1"})  # the head and graph views open too
    at.run()
    if page != nav.DEFAULT:
        at.switch_page(f"../pages/{page}.py").run()
    _ok(at)
    words, cells = _shown(at)
    assert words
    # references keep their titles as published; Markdown's backslash escapes (e5\-small) are read as the text shown
    prose = [re.sub(r"\\(.)", r"\1", w) for w in words if "arxiv.org" not in w and w not in BILINGUAL]
    assert {w: english_in(w) for w in prose if english_in(w)} == {}
    assert not [w for w in words if "None" in w]
    assert not [c for c in cells if c is None or str(c) == "None"]

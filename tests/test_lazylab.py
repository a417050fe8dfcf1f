"""Issue 24.1 on the lab: below the side-by-side maps and the step-by-step walk, the order demo,
sparse attention, cross-attention, sentence pairs and FlashAttention each sit in an expander,
closed by default, run and sent only while open. Spies on the five section functions count the
calls (the real ones still run): none while closed and none of their charts sent; an opened one
runs alone, stays open for another page and back, and closing it stops it again. A real
browser: tests/test_browser_lazyviews.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.app.sections import cross, flash, lab, sparse
from attnviz.app.state import LAB_SECTIONS

from .test_app import APP, TIMEOUT, _lab, _ok
from .test_lazyviews import spy_on

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]

# Each expander's key, its title (its label), the section function it runs, and a chart it draws.
SECTIONS = {
    "lab_order_open": ("lab.order_title", (lab, "order_demo"), "chart_order_a"),
    "lab_sparse_open": ("sparse.title", (sparse, "show"), "chart_sparse_patterns"),
    "lab_cross_open": ("cross.title", (cross, "cross_lab"), "chart_cross_lab"),
    "lab_pairs_open": ("pairs.title", (cross, "pairs"), "chart_pairs_grid"),
    "lab_flash_open": ("flash.title", (flash, "show"), "chart_flash_tiles"),
}
ALWAYS = {"chart_lab_scratch"}  # the side-by-side maps: drawn on every visit


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    yield spy_on(monkeypatch, {key: target for key, (_, target, _) in SECTIONS.items()})


def _charts(at: AppTest) -> set[str]:
    return {e.proto.id.rsplit("-", 1)[-1] for e in at.get("plotly_chart")}


def _expanded(at: AppTest, lang: str = "en") -> dict[str, bool]:
    """Each section's expander, found by its title in LANG: open or not."""
    boxes = {e.label: e.proto.expanded for e in at.expander}
    return {key: boxes[i18n.t(title, lang)] for key, (title, _, _) in SECTIONS.items()}


def test_the_page_names_the_keys_the_session_keeps() -> None:
    assert tuple(SECTIONS) == LAB_SECTIONS


def test_closed_runs_nothing_and_an_opened_section_runs_alone_for_the_session(calls: Counter[str]) -> None:
    at = _ok(AppTest.from_file(APP, default_timeout=TIMEOUT).run())
    _ok(at.switch_page("../pages/lab.py").run())
    assert _expanded(at) == dict.fromkeys(SECTIONS, False)  # all there, titled, closed
    assert calls == Counter()
    assert _charts(at) >= ALWAYS and not _charts(at) & {chart for _, _, chart in SECTIONS.values()}

    at.session_state["lab_sparse_open"] = True  # what a click on its expander sends
    _ok(at.run())
    assert calls == Counter(lab_sparse_open=1)
    assert _expanded(at) == {key: key == "lab_sparse_open" for key in SECTIONS}
    assert "chart_sparse_patterns" in _charts(at) and "chart_flash_tiles" not in _charts(at)

    _ok(at.radio(key="lang").set_value("zh").run())  # another language, another page and back
    _ok(at.switch_page("../pages/explorer.py").run())
    _ok(at.switch_page("../pages/lab.py").run())
    assert _expanded(at, "zh") == {key: key == "lab_sparse_open" for key in SECTIONS}
    assert calls == Counter(lab_sparse_open=3) and "chart_sparse_patterns" in _charts(at)

    at.session_state["lab_sparse_open"] = False  # closed again: it runs no more
    _ok(at.run())
    assert calls == Counter(lab_sparse_open=3) and "chart_sparse_patterns" not in _charts(at)


def test_each_section_opens_on_its_own_key(calls: Counter[str]) -> None:
    at = _lab(_ok(AppTest.from_file(APP, default_timeout=TIMEOUT).run()), *SECTIONS)
    assert _expanded(at) == dict.fromkeys(SECTIONS, True)
    assert calls == Counter(dict.fromkeys(SECTIONS, 1))
    assert _charts(at) >= ALWAYS | {chart for _, _, chart in SECTIONS.values()}

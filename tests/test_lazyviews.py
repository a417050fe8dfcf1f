"""Issue 24.1: the explorer's head view and graph view sit below the fold in one expander, closed
by default, and are computed and sent only while it is open. Spies on `views.head_view` and
`views.graph_view` count the calls: none while closed (no chart, no head picker, no highlight
box, no threshold slider sent), one each per run once opened. The expander stays open for a new
sentence, another language and another page; the link says so (`views=1`, the views' threshold
and highlight written only while it is open), and a link that carries the threshold or the
highlight opens them. A real browser: test_browser_lazyviews.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n, views
from attnviz.app import urls

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 240
TIRED = "The animal didn't cross the street because it was tired."
LAZY_CHARTS = {"chart_head_view", "chart_graph"}
LAZY_WIDGETS = ("hv_heads", "highlight", "threshold")  # what only the two views draw


pytestmark = pytest.mark.usefixtures("local_deployment")


def spy_on(monkeypatch: pytest.MonkeyPatch, targets: dict[str, tuple[object, str]]) -> Counter[str]:
    """Count the calls of each `module.name` under its label (the real function still runs)."""
    counted: Counter[str] = Counter()

    def spy(label: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counting(*args: Any, **kwargs: Any) -> Any:
            counted[label] += 1
            return real(*args, **kwargs)

        return counting

    for label, (module, name) in targets.items():
        monkeypatch.setattr(module, name, spy(label, getattr(module, name)))
    return counted


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How often the page built each of the two views (the real builders still run)."""
    yield spy_on(monkeypatch, {"head": (views, "head_view"), "graph": (views, "graph_view")})


def _run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _charts(at: AppTest) -> set[str]:
    return {e.proto.id.rsplit("-", 1)[-1] for kind in ("plotly_chart", "bidi_component") for e in at.get(kind)}


def _widget_keys(at: AppTest) -> set[str]:
    return {w.key for kind in ("multiselect", "selectbox", "slider") for w in at.get(kind) if w.key}


def _views_expander(at: AppTest, lang: str = "en") -> Any:
    (box,) = [e for e in at.expander if e.label == i18n.t("lazy.views", lang)]
    return box


def _query(at: AppTest) -> dict[str, str]:
    return {
        k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
        for k in at.query_params
    }


@pytest.mark.slow
def test_closed_computes_nothing_and_opened_draws_both_views_for_the_session(calls: Counter[str]) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"text": TIRED})
    _run(at)
    assert _views_expander(at).proto.expanded is False  # closed by default, labelled in English
    assert calls == Counter()  # neither view built
    assert _charts(at) >= {"chart_heatmap", "chart_grid"} and not _charts(at) & LAZY_CHARTS
    assert not _widget_keys(at) & set(LAZY_WIDGETS)
    assert not {"views", "thr", "hl"} & set(_query(at))

    at.session_state[urls.VIEWS_OPEN] = True  # what a click on the expander sends
    _run(at)
    assert calls == Counter(head=1, graph=1)
    assert _charts(at) >= LAZY_CHARTS and _widget_keys(at) >= set(LAZY_WIDGETS)
    assert _views_expander(at).proto.expanded is True
    assert _query(at)["views"] == "1"

    at.text_area(key="sentence_input").set_value("dog bites man")
    _run(at)  # a new sentence: still open, both views built once more
    assert calls == Counter(head=2, graph=2) and _charts(at) >= LAZY_CHARTS
    at.radio(key="lang").set_value("zh")
    _run(at)  # another language: the label changes, the expander stays open
    assert _views_expander(at, "zh").proto.expanded is True and _charts(at) >= LAZY_CHARTS
    at.switch_page("../pages/lab.py")
    _run(at)
    at.switch_page("../pages/explorer.py")
    _run(at)  # another page and back
    assert _views_expander(at, "zh").proto.expanded is True and _charts(at) >= LAZY_CHARTS

    at.session_state[urls.VIEWS_OPEN] = False  # closed again: nothing more is built
    before = calls.copy()
    _run(at)
    assert calls == before and not _charts(at) & LAZY_CHARTS
    assert "views" not in _query(at)


@pytest.mark.slow
@pytest.mark.parametrize("query", [{"views": "1"}, {"hl": "3"}, {"thr": "0.3"}])
def test_a_link_that_names_the_views_opens_them(calls: Counter[str], query: dict[str, str]) -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update({"text": TIRED, **query})
    _run(at)
    assert _views_expander(at).proto.expanded is True
    assert calls == Counter(head=1, graph=1) and _charts(at) >= LAZY_CHARTS
    written = _query(at)
    assert written["views"] == "1" and all(written[k] == v for k, v in query.items())


def test_the_views_threshold_and_highlight_are_in_the_link_while_open() -> None:
    shown = {"threshold": 0.35, "highlight": 4}
    assert urls.view_params(shown)["thr"] is None and urls.view_params(shown)["hl"] is None
    opened = urls.view_params({**shown, urls.VIEWS_OPEN: True})
    assert (opened["views"], opened["thr"], opened["hl"]) == ("1", "0.35", "4")
    for query, opens in (({"hl": "4"}, True), ({"thr": "0.35"}, True), ({"views": "1"}, True), ({"q": "1"}, False)):
        session: dict[str, Any] = {}
        urls.apply_view(session, urls.parse_link(query, 100))
        assert session.get(urls.VIEWS_OPEN, False) is opens, query
    session = {}
    urls.apply_view(session, urls.parse_link({"views": "2", "hl": "x"}, 100))  # unreadable: stays closed
    assert urls.VIEWS_OPEN not in session

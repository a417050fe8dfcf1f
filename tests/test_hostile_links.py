"""Links round 3 (issue 26, item 5 of the delivery), through AppTest: what a link carries and
nothing uses is removed from the URL at once and said on the page; a layer or head clamped to the
model is written back into the link in the same run (before, `layer=12` stayed in the link until
the next run). Pure parts in tests/test_urls.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 180

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _page_text(at: AppTest) -> str:
    return " ".join(str(e.value) for e in [*at.error, *at.warning, *at.info, *at.markdown, *at.caption])


def test_a_clamped_layer_and_head_are_written_back_into_the_link_at_once() -> None:
    at = _app(text="dog bites man", layer="12", head="40")  # MiniLM: 6 layers, 12 heads
    assert at.selectbox(key="layer").value == 5 and at.selectbox(key="head").value == 0
    assert at.query_params["layer"] == ["5"] or at.query_params["layer"] == "5", at.query_params
    assert at.query_params["head"] in (["0"], "0"), at.query_params


def test_what_a_link_carries_and_nothing_uses_is_removed_and_said() -> None:
    big = "x" * 300_000
    at = _app(text="dog bites man", lang="xx", layer="²", junk=big, other="1")
    params = {k: at.query_params[k] for k in at.query_params}
    assert "junk" not in params and "other" not in params
    assert params.get("lang") in (None, "en", ["en"])  # the language the page shows, written by the app
    assert "layer" not in params or params["layer"] in ("0", ["0"])
    shown = _page_text(at)
    why = [
        i18n.t("links.why_choice", "en", name="lang", choices="en, zh"),
        i18n.t("links.why_int", "en", name="layer", digits=3),
        i18n.t("links.others", "en", n=2),
    ]
    names = i18n.t("links.list_sep", "en").join(why)
    assert i18n.t("links.removed", "en", names=names) in shown, shown[:500]
    assert big not in shown
    assert at.text_area(key="sentence_input").value == "dog bites man"


def test_an_oversized_parameter_reaches_streamlit_as_its_name_and_length() -> None:
    from attnviz.app.server.client_guard import QUERY_PARAM_MAX, bounded_query

    small = "text=dog+bites+man&lang=zh&layer=3"
    assert bounded_query(small) == small
    big = "x" * (2 << 20)
    cut = "=%00cut%3A" + str(2 << 20)  # urls.CUT and the length typed (tests/test_link_limits.py)
    assert bounded_query(f"text={big}&lang=zh&junk{big}={big}") == "text" + cut + "&lang=zh&junk" + "x" * 60 + cut
    kept = "text=" + "y" * (QUERY_PARAM_MAX - 5)
    assert bounded_query(kept + "&" + "z" * (QUERY_PARAM_MAX + 1)) == kept + "&" + "z" * 64 + "="

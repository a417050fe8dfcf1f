"""Next to every uploader, the limit in the visitor's own words (issue 26.4): the browser refuses
a file over it before sending, with Streamlit's English message; the sentence under the widget
says the same limit, the server's setting, in English and in Chinese."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n

APP = str(Path(__file__).resolve().parent / "app_entry.py")


def test_the_sentence_names_the_limit_in_both_languages() -> None:
    for lang in ("en", "zh"):
        text = i18n.t("upload.over_limit", lang, mb=7)
        assert "7 MB" in text


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_corpus_uploader_has_the_limit_beside_it(monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    monkeypatch.setenv("ATTNVIZ_CORPUS_UPLOAD_MB", "3")
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"lang": lang})
    at.run()
    at.switch_page("../pages/corpus.py").run()
    at.radio(key="corpus_source").set_value("upload").run()
    assert not at.exception, [e.value for e in at.exception]
    captions = [str(c.value) for c in at.caption]
    assert i18n.t("upload.over_limit", lang, mb=3) in captions

"""`nav.PAGES` is the one list of pages: every file in pages/ is in it, and each entry's title key
is the one its page shows (the tests that visit every page wait for that title)."""

from __future__ import annotations

from attnviz import i18n
from attnviz.app import nav


def test_every_page_file_is_listed_once_with_the_title_it_shows() -> None:
    names = [p.name for p in nav.PAGES]
    assert len(set(names)) == len(names)
    assert {p.stem for p in nav.PAGES_DIR.glob("*.py")} == set(names)
    for spec in nav.PAGES:
        source = (nav.PAGES_DIR / f"{spec.name}.py").read_text(encoding="utf-8")
        assert f'page_header("{spec.heading_key}"' in source, spec.name
        for lang in i18n.LANGUAGES:
            for key in (spec.title_key, spec.heading_key):
                assert i18n.t(key, lang) != key, (spec.name, lang, key)

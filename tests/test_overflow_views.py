"""Figures laid out for a 390 px phone as well as a desktop, without a browser: the sparse
patterns stand two to a row with titles wrapped to half a phone's plot width (four side by side
ran their titles together), and `margins.wrapped` breaks a title into lines that fit, keeping
every character. What chromium draws: tests/test_browser_overflow.py."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnviz.i18n import t
from attnviz.sparse import KINDS, sparse_mask
from attnviz.views import margins
from attnviz.views.sparse import FIGURE_TITLE_PX, PANEL_TITLE_PX, pattern_maps

TEXTS = [
    "a window of the nearest tokens",
    "BigBird: window + global + random",
    "每个查询可以看哪些键，每个查询可以看哪些键（15 个词元）",
    "x &lt;script&gt; antidisestablishmentarianism y",
]


@pytest.mark.parametrize("text", TEXTS)
def test_wrapped_lines_fit_and_keep_every_character(text: str) -> None:
    lines = margins.wrapped(text, 140, 11).split("<br>")
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    for line in lines:
        assert line == line.strip()
        assert margins.label_px(line, 11) <= 140 or " " not in line  # only a lone long word runs over


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sparse_maps_stand_two_to_a_row_with_titles_that_fit_half_a_phone(lang: str) -> None:
    n = 15
    masks = {kind: sparse_mask(n, kind, window=2, global_tokens=2, dilation=2, random_keys=2, seed=0) for kind in KINDS}
    layout = pattern_maps(masks, [f"w{i}" for i in range(n)], lang=lang).to_plotly_json()["layout"]
    xs = [layout[k]["domain"] for k in layout if re.fullmatch(r"xaxis\d*", k)]
    ys = [layout[k]["domain"] for k in layout if re.fullmatch(r"yaxis\d*", k)]
    assert len({tuple(d) for d in xs}) == min(2, len(KINDS))  # two columns
    assert len({tuple(d) for d in ys}) == -(-len(KINDS) // 2)  # as many rows as it takes
    for i, a in enumerate(xs):
        for b in xs[i + 1 :]:
            assert a == b or a[1] <= b[0] or b[1] <= a[0]  # columns apart
    for note in layout["annotations"]:
        kind_lines = note["text"].split("<br>")[:-1]  # the pattern's name, wrapped; then the count
        assert all(margins.label_px(line, 11) <= PANEL_TITLE_PX for line in kind_lines), note["text"]
    title = layout["title"]["text"].split("<br><sup>")[0]
    assert all(margins.label_px(line, 17) <= FIGURE_TITLE_PX for line in title.split("<br>")), title
    assert t("sparse_fig.maps_title", lang, n=n).replace(" ", "") == title.replace("<br>", "").replace(" ", "")
    np.testing.assert_array_equal(np.asarray(pattern_maps(masks).data[0].z, dtype=bool), masks[KINDS[0]])

"""The lesson's handout (attnviz/lesson/handout.py): one self-contained page with no script and no
network, the visitor's figures inline, and every visitor string (sentence, tokens, answers, model)
escaped: parsed back, a hostile sentence leaves no element, attribute or script of its own."""

from __future__ import annotations

from html.parser import HTMLParser

import numpy as np
import pytest

import attnviz
from attnviz import i18n
from attnviz.lesson import STEPS, Facts, check, check_referent, find_head
from attnviz.lesson.handout import CSP, Answer, bars_svg, distance, handout_html, percent

HOSTILE = [
    "[CLS]",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "</svg><iframe src=//evil>",
    "it",
    "&amp;<!--",
    "[SEP]",
]


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _facts(tokens: list[str]) -> Facts:
    n = len(tokens)
    w = np.random.default_rng(1).random((2, 3, n, n))
    w = (w / w.sum(-1, keepdims=True)).astype(np.float32)
    special = np.array([i in (0, n - 1) for i in range(n)])
    att = attnviz.Attention(tokens=tokens, weights=w, model="toy", special=special)
    return Facts.of(att, find_head(att, 4, 1), distances=np.linspace(0, 0.3, n), sentence_distance=0.02,
                    norm_row=np.full(n, 1 / n))  # fmt: skip


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_hostile_strings_stay_text_and_nothing_can_run_or_load(lang: str) -> None:
    facts = _facts(HOSTILE)
    sentence = "<script>alert('s')</script> it <b onmouseover=x>"
    answers = {
        "tokens": Answer("<img src=x onerror=alert(3)>", check("tokens", 7, facts, lang)),
        "one_head": Answer("1: " + HOSTILE[1], check("one_head", 1, facts, lang)),
    }
    page = handout_html(facts, lang=lang, text=sentence, model="<i>model</i>", answers=answers, linked=facts)
    parsed = _parse(page)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "iframe" not in parsed.tags
    assert not [name for name, _ in parsed.attrs if name.startswith("on")]
    assert not [v for name, v in parsed.attrs if name in ("src", "href")]
    text = "".join(parsed.text)
    assert "<script>alert('s')</script>" in text and "<img src=x onerror=alert(3)>" in text  # shown, as text
    assert HOSTILE[2] in text and "</svg><iframe src=//evil>" in text
    assert f'content="{CSP}"' in page and "default-src 'none'" in CSP and "script-src" not in CSP
    assert "http://" not in page and "https://" not in page  # nothing to fetch


def test_the_handout_carries_every_step_the_figures_and_the_answers() -> None:
    tokens = ["[CLS]", "the", "animal", "was", "it", "tired", "[SEP]"]
    facts = _facts(tokens)
    answers = {
        "referent": Answer("2: animal", check_referent(2, tokens, 4, 2)),
        "pronoun": Answer("layer 1, head 2", check("pronoun", facts.pick.layer * 3 + facts.pick.head, facts)),
    }
    page = handout_html(facts, lang="en", text="The animal was it tired", model="MiniLM", answers=answers, linked=facts)
    parsed = _parse(page)
    assert parsed.tags.count("section") == len(STEPS)
    assert parsed.tags.count("svg") >= 4  # the head's map, the pronoun's row, the switch, weight vs norm
    n = len(tokens)
    assert parsed.tags.count("rect") >= n * n  # every cell of the one-head map
    text = "".join(parsed.text)
    assert "Right." in text and "Not answered yet." in text
    assert "refers to “animal”" in text  # the referent the student gave, with its check
    assert f"uniform 1/{n}" in text
    assert "{" not in page.split("</style>", 1)[1]  # every step title and text got its fields
    zh = handout_html(facts, lang="zh", text="动物没有过马路，因为它太累了。", model="e5-small", answers={})
    assert "动物没有过马路，因为它太累了。" in zh and "还没有回答。" in zh and 'lang="zh"' in zh
    assert i18n.t("lesson.after_referent", "zh", q="it") in zh  # no referent said: steps 4-6 wait for it


def test_the_numbers_beside_the_bars_are_the_ones_the_page_states() -> None:
    # Weights of a few percent read "0.00"/"0.01" with two decimals; distances below 0.01 too.
    svg = bars_svg(["a", "b", "c"], [("w", np.array([0.004, 0.0312, 0.9649]), "#000")])
    assert [percent(v) for v in (0.004, 0.0312, 0.9649)] == ["0.4%", "3.1%", "96%"]
    assert ">0.4%<" in svg and ">3.1%<" in svg and ">96%<" in svg and "0.00" not in svg
    dist = bars_svg(["a", "b"], [("d", np.array([0.0087, 0.0021]), "#000")], fmt=distance)
    assert ">0.009<" in dist and ">0.002<" in dist
    facts = _facts(["[CLS]", "the", "animal", "was", "it", "tired", "[SEP]"])
    page = handout_html(facts, lang="en", text="x", model="m", answers={}, linked=facts)
    assert f">{percent(facts.row[0])}<" in page  # the pronoun's row, as the page's percentages
    assert facts.distances is not None and f">{distance(facts.distances[1])}<" in page

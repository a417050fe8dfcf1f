"""Whatever a visitor types reaches the engine as text and comes back as a correct result or a
readable ValueError: never a crash, a hang or a traceback (issue: hardened for a public demo)."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz

ANALYSED = {
    "single character": ("a", ["[CLS]", "a", "[SEP]"]),
    "only punctuation": ("?!...", ["[CLS]", "?", "!", ".", ".", ".", "[SEP]"]),
    "control characters and NUL": ("a\x00b\x07c", ["[CLS]", "a", "b", "c", "[SEP]"]),
    "zero-width inside a word": ("it\u200bwas", ["[CLS]", "it", "was", "[SEP]"]),
    "right-to-left override": ("\u202eevil\u202c text", ["[CLS]", "evil", "text", "[SEP]"]),
    "emoji": ("robot 🤖", ["[CLS]", "robot", "[UNK]:🤖", "[SEP]"]),
    "html": ("<b>hi</b>", ["[CLS]", "<", "b", ">", "hi", "<", "/", "b", ">", "[SEP]"]),
    "markdown javascript link": ("[x](javascript:alert(1))", None),
    "latex": ("$x^2$ and $$y$$", None),
    "streamlit shortcodes": (":red[danger] :smile:", None),
    "chinese": ("我爱北京", None),
    "japanese": ("猫が好きです", None),
    "arabic": ("أنا أحب القطط", None),
    "mixed scripts": ("I like 猫 and القطط 🤖", None),
}


@pytest.mark.parametrize("case", list(ANALYSED), ids=list(ANALYSED))
def test_odd_text_is_analysed_as_text(minilm: attnviz.PretrainedModel, case: str) -> None:
    text, expected = ANALYSED[case]
    att = minilm.attend(text)
    if expected is not None:
        assert att.tokens == expected
    assert att.tokens[0] == "[CLS]" and att.tokens[-1] == "[SEP]" and att.n >= 3
    assert all(isinstance(t, str) and t for t in att.tokens)
    np.testing.assert_allclose(att.weights.sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("  \t\n", "empty"), ("\x00\x00", "empty"), ("\u200b\u200c\u200d", "no tokens")],
    ids=["empty", "whitespace", "only NUL", "only zero-width"],
)
def test_text_without_tokens_is_a_readable_error(minilm: attnviz.PretrainedModel, text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        minilm.attend(text)

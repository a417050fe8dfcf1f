"""The canvas map's message (attnviz/views/token_canvas.py): what the explorer's heatmap draws
from is the heatmap figure's own map, bit for bit, with its titles, words and colour range, and
any visitor token travels as plain text whatever it holds."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import attnviz
from attnviz import i18n, views
from attnviz.result import Attention
from attnviz.views import decoder as decoder_views
from attnviz.views import token_canvas

from .test_decoder_app_views import causal

PALETTE = {m: {"heading": "#000000", "label": "#808495", "background": "#ffffff"} for m in ("light", "dark")}


def _read(att: Attention, layer: int, head: int | None, **kw: object) -> tuple[dict[str, object], np.ndarray]:
    fig = views.heatmap(att, layer, head, **kw)  # type: ignore[arg-type]
    return token_canvas.read(token_canvas.payload(fig, att.tokens, att.keys, PALETTE, "hint"))


def test_the_map_is_the_heatmaps_own_float32_bit_for_bit(tired: Attention) -> None:
    for layer, head in ((0, 0), (3, 7), (5, None)):
        head_, z = _read(tired, layer, head)
        want = np.asarray(tired.head(layer, head), dtype=np.float32)
        assert z.dtype == np.float32 and z.shape == want.shape
        assert np.array_equal(z, want)  # the very numbers hover shows, not a rounding of them
        assert head_["shape"] == list(want.shape)
        assert head_["rows"] == head_["cols"] == list(tired.tokens)


def test_titles_hover_and_colour_range_follow_the_figure(tired: Attention) -> None:
    head_, _ = _read(tired, 2, 5, zmax=1.0)
    which = i18n.t("fig.head_n", "en", h=5)
    assert head_["title"] == i18n.t("fig.layer_which", "en", layer=2, which=which) and head_["note"] is None
    assert head_["xtitle"] == i18n.t("axis.key", "en") and head_["ytitle"] == i18n.t("axis.query", "en")
    assert head_["bar"] == i18n.t("fig.weight", "en")
    assert head_["hover"] == i18n.t("fig.hover_heatmap", "en", q="{q}", k="{k}", w="{w}").split("<br>")
    assert (head_["zmin"], head_["zmax"]) == (0.0, 1.0)
    assert head_["scale"][0][0] == 0.0 and head_["scale"][-1][0] == 1.0
    auto, _ = _read(tired, 2, 5)  # the range follows the data: the canvas takes min and max itself
    assert auto["zmin"] is None and auto["zmax"] is None
    zh = token_canvas.read(
        token_canvas.payload(views.heatmap(tired, 0, 0, lang="zh"), tired.tokens, tired.tokens, PALETTE)
    )[0]
    assert zh["title"] == i18n.t("fig.layer_which", "zh", layer=0, which=i18n.t("fig.head_n", "zh", h=0))
    assert zh["hover"][0].startswith("查询")


def test_a_title_note_is_its_own_line_without_markup(tired: Attention) -> None:
    fig = views.heatmap(tired, 0, 0)
    fig.update_layout(title={"text": "layer 0 &amp; more<br><sup>reads key/value head 1</sup>"})
    head_ = token_canvas.read(token_canvas.payload(fig, tired.tokens, tired.tokens, PALETTE))[0]
    assert (head_["title"], head_["note"]) == ("layer 0 & more", "reads key/value head 1")


HOSTILE = ["<img src=x onerror=alert(1)>", '"}]', "\u2028", "\\u0000", "=cmd|' /C calc'!A0", "注意力", "\0"]


@pytest.mark.parametrize("pad", range(4))
def test_hostile_tokens_travel_verbatim_and_the_map_stays_aligned(pad: int) -> None:
    tokens = [*HOSTILE, "x" * pad]
    n = len(tokens)
    weights = np.random.default_rng(pad).random((1, 1, n, n), dtype=np.float32)
    att = Attention(tokens=tokens, weights=weights / weights.sum(-1, keepdims=True), model="m", text="t")
    data = token_canvas.payload(views.heatmap(att, 0, 0), tokens, tokens, PALETTE)
    (length,) = struct.unpack("<I", data[4:8])
    start = 8 + length + (-(8 + length) % 4)
    assert start % 4 == 0 and len(data) == start + 4 * n * n  # the float32 block starts aligned
    head_, z = token_canvas.read(data)
    assert head_["rows"] == tokens  # as typed: the canvas writes text, never markup
    assert json.loads(data[8 : 8 + length]) == head_
    assert np.array_equal(z, att.head(0, 0))


def test_a_map_that_does_not_match_its_tokens_is_refused(tired: Attention) -> None:
    with pytest.raises(ValueError, match="tokens give"):
        token_canvas.payload(views.heatmap(tired, 0, 0), tired.tokens[:-1], tired.tokens, PALETTE)
    with pytest.raises(ValueError, match="not a token map"):
        token_canvas.read(b"PNG!" + bytes(12))


def test_grouped_heads_note_reaches_the_canvas() -> None:
    att = causal(2, 9, 12, kv=3)  # a decoder's grouped heads (tests/test_decoder_app_views.py)
    fig = decoder_views.note_group(views.heatmap(att, 1, 4), att, 4)
    head_ = token_canvas.read(token_canvas.payload(fig, att.tokens, att.keys, PALETTE))[0]
    assert head_["note"] and "<" not in head_["note"] and "<sup>" in fig.layout.title.text


def test_the_embedded_model_map_is_exact_at_512_tokens(minilm: attnviz.PretrainedModel) -> None:
    text = " ".join(["word"] * 600)
    att = minilm.attend(text)
    _, z = _read(att, 5, 11, zmax=1.0)
    assert z.shape == (att.n, att.n) and np.array_equal(z, np.asarray(att.head(5, 11), dtype=np.float32))

"""Slides and exports that keep their context (issue 23, item 6), pure parts: the camera's config
saves at least 1600 px; a figure's caption names the model and the sentence, escaped and cut;
the HTML export carries the sentence (title, caption, shown settings) and escapes it; the
offline all-heads grid does what its note says (its click script is in the page and allowed by
the policy); the JSON export records the text and every switch. In a browser:
tests/test_browser_share.py."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re

import plotly.graph_objects as go

from attnviz import views
from attnviz.app import charts, downloads
from attnviz.export import attention_json, figure_html, settings_from_html
from attnviz.export.formats import _GRID_CLICK_JS
from attnviz.result import Attention
from attnviz.views.charts import CAPTION_CHARS, captioned, slide_caption

HOSTILE = 'it </script><script>alert(1)</script> <b onmouseover="x">&amp; <!-- \u2028'


def _csp_hashes(page: str) -> set[str]:
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', page)
    assert policy is not None
    return set(re.findall(r"'sha256-([^']+)'", policy.group(1)))


def _script_hash(body: str) -> str:
    return base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii")


def test_the_camera_saves_a_slide_sized_png() -> None:
    config = charts.image_config("attnviz-heatmap")
    opts = config["toImageButtonOptions"]
    assert opts["format"] == "png" and opts["width"] * opts["scale"] >= 1600 and opts["height"] == charts.SLIDE_HEIGHT
    assert opts["filename"] == "attnviz-heatmap" and config["displaylogo"] is False
    assert 16 * opts["height"] == 9 * opts["width"]  # a slide, whatever the figure's own height


def test_the_caption_names_model_and_sentence_escaped_and_cut() -> None:
    caption = slide_caption(HOSTILE, "minilm")
    assert caption.startswith("minilm · “") and "<script>" not in caption and "&lt;script&gt;" in caption
    assert "<b" not in caption and "&amp;amp;" in caption
    long = slide_caption("word " * 100, "m")
    assert long.endswith("…”") and len(long) <= len("m · “”") + CAPTION_CHARS
    assert slide_caption(None, "minilm") == "minilm" and slide_caption("a  b\nc", None) == "“a b c”"
    fig = captioned(go.Figure(layout={"margin": {"b": 40}}), caption)
    notes = [a for a in fig.layout.annotations if a.name == "attnviz-caption"]
    assert len(notes) == 1 and notes[0].text == caption and fig.layout.margin.b > 40


def test_the_html_export_carries_the_sentence_and_its_settings_escaped(tired: Attention) -> None:
    settings = downloads.with_switches({"text": HOSTILE, "model": "minilm", "layer": 2, "heads_off": [[1, 3]]})
    page = figure_html(views.heatmap(tired, 2, 3), settings)
    assert settings_from_html(page) == settings
    title = re.search(r"<title>(.*)</title>", page)
    assert title is not None and title.group(1).startswith("attnviz · minilm · it &lt;/script&gt;")
    shown = re.search(r"<details class=\"attnviz-settings\"><summary>[^<]*</summary><pre>(.*?)</pre>", page, re.S)
    assert shown is not None and "&lt;/script&gt;&lt;script&gt;alert(1)" in shown.group(1)
    assert json.loads(html.unescape(shown.group(1))) == settings  # shown as it is, every switch named
    assert page.count("<script>alert(1)") == 0 and 'onmouseover="x"' not in page
    assert (
        "attnviz-caption" in page and "it &lt;\\u002fscript&gt;&lt;script&gt;alert(1)" in page
    )  # the caption, as text


def test_the_offline_grid_does_what_its_note_says(tired: Attention) -> None:
    grid = figure_html(views.model_view(tired), {"text": tired.text, "model": tired.model})
    inline = re.findall(r"<script[^>]*>(.*?)</script>", grid, re.S)
    tail = _GRID_CLICK_JS.split("{plot_id}")[1]
    plot_call = [s for s in inline if tail in s]
    assert len(plot_call) == 1 and ".then(function(){" in plot_call[0]  # run once the grid is drawn
    assert _script_hash(plot_call[0]) in _csp_hashes(grid)  # the policy lets it run
    heatmap = figure_html(views.heatmap(tired, 0, 0), {"text": tired.text})
    assert tail not in heatmap  # only the grid's clicks need a script


def test_the_json_export_records_the_text_and_every_switch(tired: Attention) -> None:
    plain = json.loads(attention_json(tired, downloads.with_switches({"text": tired.text}), layer=0, head=0))
    assert plain["settings"]["text"] == tired.text
    assert {k: plain["settings"][k] for k in downloads.SWITCHES} == downloads.SWITCHES
    switched = downloads.with_switches({"heads_off": [[1, 3]], "ablation_mode": "mean", "hide_sinks": True})
    doc = json.loads(attention_json(tired, switched))
    assert doc["settings"]["heads_off"] == [[1, 3]] and doc["settings"]["hide_sinks"] is True
    assert doc["settings"]["ablation_mode"] == "mean" and doc["settings"]["text"] == tired.text

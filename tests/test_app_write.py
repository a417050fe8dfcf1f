"""The Write panel through AppTest (no browser): on SmolLM2 in the explorer, in English and in
Chinese, what the panel shows at each step (the token written, its probability, the likeliest
tokens as buttons, the text so far, the cache and the first-token share) is what
`attnviz.generate` run here writes; a click on an alternative shows the branch
`Generation.branch` writes, beside the first writing; a Training lab model writes in the same
panel on the lab's page; an encoder gets no panel. The browser test is test_browser_write.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import attnviz
from attnviz import i18n
from attnviz.app import literal
from attnviz.app.sections.write import FIRST_STEPS, Written, _spans, probe_start
from attnviz.app.server import training_jobs
from attnviz.app.widgets import escape_md
from attnviz.views import generation as gv

from .app_runs import forget_training_runs
from .smollm2_model import smollm2

APP = str(Path(__file__).resolve().parent / "app_entry.py")
TIMEOUT = 240  # the first run loads SmolLM2 (10-25 s on 2 shared cores)
TEXTS = {"en": "The capital of France is", "zh": "我爱北京。"}
STEPS = 4
LAYER, HEAD = 2, 4

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("local_deployment")]


@pytest.fixture
def forget_runs() -> Iterator[None]:
    """AppTest gives every session one id: this test's runs and models are forgotten after it,
    as tests/test_app_training.py forgets its own."""
    yield
    forget_training_runs()


def _ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def _run(at: AppTest) -> AppTest:
    return _ok(at.run())


def _open(**query: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.session_state["write_open"] = True  # the expander opened, as a click leaves it
    at.session_state["write_steps"] = STEPS
    at.session_state["write_layer"] = LAYER
    at.session_state["write_head"] = HEAD
    return _run(at)


def _literals(at: AppTest) -> list[str]:
    return [s for s in (literal.text_of(e.proto.body) for e in at.get("html")) if s is not None]


def _buttons(at: AppTest, key: str = "write") -> dict[str, str]:
    return {b.key: b.label for b in at.button if b.key and b.key.startswith(f"{key}_choice_")}


def _metrics(at: AppTest) -> list[str]:
    return [str(m.value) for m in at.metric]


def _panels(at: AppTest, lang: str = "en") -> int:
    return len([e for e in at.expander if e.label == i18n.t("write.title", lang)])


def _check_step(at: AppTest, written: Written, k: int, lang: str, key: str = "write") -> None:
    gen = written.gen
    step = gen.steps[k]
    label = escape_md(gv.step_label(gen, k, lang=lang))
    wrote = i18n.t("write.wrote", lang, k=k + 1, n=len(gen.steps), token=label, p=f"{step.probability:.1%}")
    assert wrote in [e.value for e in at.markdown]
    assert written.until(k) in _literals(at)  # the prompt and what is written so far, as one text
    want = [f"{escape_md(c.label)} · {c.probability:.1%}" for c in gv.choices(gen, k, lang=lang)]
    assert [_buttons(at, key)[f"{key}_choice_{j}"] for j in range(len(want))] == want
    metrics = _metrics(at)
    assert gv.size_text(step.cache_bytes, lang=lang) in metrics
    assert gv.size_text(step.cache_bytes_ungrouped, lang=lang) in metrics


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_panel_plays_back_what_generate_writes_and_a_click_branches(lang: str) -> None:
    model, text = smollm2(), TEXTS[lang]
    written = _spans(model, attnviz.generate(model, text, STEPS))
    at = _open(model="smollm2", text=text, lang=lang)
    assert _panels(at, lang) == 1
    for k in range(STEPS):
        if k:
            _ok(at.button(key="write_next").click().run())
        _check_step(at, written, k, lang)
        assert f"{float(written.gen.steps[k].rows[LAYER, HEAD, 0]):.0%}" in _metrics(at)  # the sink
    assert "\ufffd" not in "".join(_literals(at))  # whole characters only
    alt = gv.choices(written.gen, 1, lang=lang)[1]  # the second likeliest token at step 2
    _ok(at.slider(key="write_step").set_value(2).run())
    _ok(at.button(key="write_choice_1").click().run())
    branch = written.gen.branch(1, alt.token_id)
    assert branch.ids[written.gen.n_prompt + 1] == alt.token_id
    shown = _literals(at)
    assert written.until(STEPS - 1) in shown and _spans(model, branch).until(STEPS - 1) in shown  # side by side
    assert at.radio(key="write_which").value == "branch"
    a, b = (escape_md(gv.step_label(g, 1, lang=lang)) for g in (written.gen, branch))
    assert i18n.t("write.parted", lang, k=2, a=a, b=b) in [c.value for c in at.caption]
    _check_step(at, _spans(model, branch), 1, lang)  # the step view plays the branch now
    np.testing.assert_array_equal(branch.steps[0].rows, written.gen.steps[0].rows)


def test_an_encoder_gets_no_write_panel() -> None:
    at = _open(model="minilm", text=TEXTS["en"])
    assert _panels(at) == 0 and not _buttons(at)


@pytest.mark.usefixtures("forget_runs")
def test_a_training_lab_model_writes_in_the_same_panel() -> None:
    at = _run(AppTest.from_file(APP, default_timeout=TIMEOUT))
    _ok(at.switch_page("../pages/training.py").run())
    _ok(at.selectbox(key="train_task").set_value("copy").run())
    _ok(at.number_input(key="train_steps").set_value(30).run())
    _ok(at.button(key="train_start").click().run())
    deadline = time.monotonic() + 120
    while not at.get("success"):
        assert time.monotonic() < deadline, "training did not finish"
        time.sleep(0.3)
        _run(at)
    assert _panels(at) == 1
    at.session_state["train_write_open"] = True
    _run(at)
    (job,) = training_jobs._JOBS.values()
    assert job.run is not None and job.model_name is not None
    model = job.run.model
    prompt = probe_start(model, job.run.probe.text)
    assert at.text_input(key="train_write_prompt").value == prompt
    room = model.max_tokens - model.encode(prompt).n_input_tokens
    assert room > 0 and job.run.probe.text.startswith(prompt) and prompt != job.run.probe.text
    written = _spans(model, attnviz.generate(model, prompt, min(FIRST_STEPS, room)))
    _check_step(at, written, 0, "en", key="train_write")
    _ok(at.slider(key="train_write_step").set_value(len(written.gen.steps)).run())
    _check_step(at, written, len(written.gen.steps) - 1, "en", key="train_write")

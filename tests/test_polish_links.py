"""The Corpus and Training pages' choices in the share link (issue 23.5's last part): read
strictly like every other part of the view (a refused value is removed and named, a number past
its bound clamped), written only when changed, and the pages clamp a link's numbers to this
server's limits and write them back. Pure parts, then the pages through AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import corpus
from attnviz.app import urls
from attnviz.app.sections import corpus as corpus_section
from attnviz.app.sections import training as training_section
from attnviz.training import TASKS

APP = str(Path(__file__).resolve().parent / "app_entry.py")
BY_KEY = {p.key: p for p in urls.VIEW_PARAMS}
PAGE_KEYS = (
    "csrc",
    "climit",
    "ctok",
    "cstat",
    "clayer",
    "chead",
    "task",
    "tlayers",
    "theads",
    "twidth",
    "tsteps",
    "tseed",
    "tplateau",
    "tsparse",
    "twindow",
)


def test_the_table_agrees_with_the_pages() -> None:
    assert BY_KEY["csrc"].choices == tuple(s for s in corpus_section.SOURCES if s != "upload")
    assert BY_KEY["cstat"].choices == corpus.STATS and BY_KEY["task"].choices == TASKS
    assert BY_KEY["ctok"].default == corpus.DEFAULT_CORPUS_TOKENS
    assert BY_KEY["tsteps"].default == training_section.DEFAULT_STEPS["induction"]
    defaults = training_section.CONTROL_DEFAULTS
    for key, home in (("task", "train_task"), ("tlayers", "train_layers"), ("theads", "train_heads"),
                      ("twidth", "train_d_model"), ("tseed", "train_seed")):  # fmt: skip
        assert BY_KEY[key].home == home and BY_KEY[key].default == defaults[home]
    assert BY_KEY["tsparse"].choices == training_section.SPARSE_CHOICES
    for key, home, default in (("tplateau", "train_plateau", True), ("tsparse", "train_sparse", ""),
                               ("twindow", "train_window", 2)):  # fmt: skip
        assert BY_KEY[key].home == home and BY_KEY[key].default == default
    assert len(set(urls.LINK_KEYS)) == len(urls.LINK_KEYS)  # no key twice


def test_defaults_are_not_written_and_changes_come_back() -> None:
    defaults = {BY_KEY[k].home: BY_KEY[k].default for k in PAGE_KEYS}
    assert all(urls.view_params(defaults)[k] is None for k in PAGE_KEYS)
    changed = {**defaults, "corpus_source": "both", "train_task": "text", "train_steps": 600, "corpus_head": 11,
               "train_plateau": False, "train_sparse": "bigbird", "train_window": 5}  # fmt: skip
    written = {k: v for k, v in urls.view_params(changed).items() if v is not None}
    assert written == {"csrc": "both", "task": "text", "tsteps": "600", "chead": "11", "tplateau": "0",
                       "tsparse": "bigbird", "twindow": "5"}  # fmt: skip
    view, used = urls.parse_view(written)
    assert sorted(used) == sorted(written)
    assert view == {"corpus_source": "both", "train_task": "text", "train_steps": 600, "corpus_head": 11,
                    "train_plateau": False, "train_sparse": "bigbird", "train_window": 5}  # fmt: skip


def test_hostile_values_are_refused_and_named() -> None:
    params = {"csrc": "upload", "cstat": "__class__", "task": "induction ", "tlayers": "²", "climit": "-1",
              "ctok": "1e3", "theads": "0x4", "tseed": "", "clayer": "١", "twidth": "<script>", "text": "ok",
              "tplateau": "yes", "tsparse": "__init__", "twindow": "-2"}  # fmt: skip
    link = urls.parse_link(params, max_chars=100)
    assert link.view == {}
    assert urls.unused_params(params, link) == [k for k in params if k != "text"]
    assert urls.view_params({"corpus_source": "upload", "train_task": "<b>"})["csrc"] is None  # never written


def test_numbers_past_their_bound_are_clamped() -> None:
    view, _ = urls.parse_view({"tsteps": "99999999", "tseed": "9999999999999", "tlayers": "0099", "ctok": "99999"})
    assert view == {"train_steps": 10**6, "train_seed": 2**31 - 1, "train_layers": 64, "corpus_tokens": 4096}


def _query(at: AppTest) -> dict[str, str]:
    return {
        k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
        for k in at.query_params
    }


@pytest.mark.slow
def test_the_training_page_takes_a_link_clamps_it_and_writes_it_back() -> None:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update(
        {
            "task": "copy",
            "tlayers": "99",
            "theads": "3",
            "twidth": "100",
            "tsteps": "5",
            "tseed": "7",
            "tplateau": "0",
            "tsparse": "dilated",
            "twindow": "99",
        }
    )
    at.run()
    at.switch_page("../pages/training.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="train_task").value == "copy"
    assert at.number_input(key="train_layers").value == 4  # this server's most
    assert at.selectbox(key="train_heads").value in (2, 4) and at.selectbox(key="train_d_model").value == 128
    assert at.number_input(key="train_steps").value == 10 and at.number_input(key="train_seed").value == 7
    q = _query(at)
    assert (q["task"], q["tlayers"], q["tsteps"], q["tseed"], q["twidth"]) == ("copy", "4", "10", "7", "128")
    assert at.checkbox(key="train_plateau").value is False and at.selectbox(key="train_sparse").value == "dilated"
    assert at.number_input(key="train_window").value == 64  # the link's 99, clamped to the widget's most
    assert (q["tplateau"], q["tsparse"], q["twindow"]) == ("0", "dilated", "64")


@pytest.mark.slow
def test_the_corpus_page_takes_a_link_and_names_what_it_refused() -> None:
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update({"csrc": "zh", "climit": "999999", "ctok": "100", "cstat": "sep", "task": "upload"})
    at.run()
    said = " ".join(str(e.value) for e in [*at.error, *at.warning, *at.info])
    assert "task" in said  # the refused value is named on the page the link opens
    at.switch_page("../pages/corpus.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="corpus_source").value == "zh"
    assert at.number_input(key="corpus_limit").value == 20_000  # this server's cap
    assert at.selectbox(key="corpus_tokens").value == 128  # the nearest size offered
    q = _query(at)
    assert (q["csrc"], q["climit"]) == ("zh", "20000") and "ctok" not in q and "task" not in q

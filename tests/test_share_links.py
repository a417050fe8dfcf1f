"""One link keeps the whole view (issue 23, item 5), pure parts: every kept field written and read
back the same, hostile values refused or clamped (never raised), old links (only text, model,
lang, layer, head) read as before, and the table of kept fields agrees with the pages' own
widgets. The app's use of it (a link restores heads off and hidden sinks, writes clamped values
back, shows the copy box): tests/test_share_app.py; in a real browser: test_browser_share.py."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from attnviz.app import heads_off, state, urls
from attnviz.app.sections import explain, lab

# One non-default value of every kept field, as the session holds it.
SAMPLE: dict[str, Any] = {
    "heads_off": [[0, 2], [1, 3], [11, 11]],
    "ablation_mode": "mean",
    "ablation_click": True,
    "hide_sinks_on": True,
    "hide_special": True,
    "merge_words": True,
    "color_range": "auto",
    "views_open": True,  # the head and graph views' expander: thr and hl are written while it is open
    "threshold": 0.35,
    "highlight": 4,
    "focus_query": 9,
    "focus_key": 2,
    "x_layer": 3,
    "x_stat": "prev",
    "lab_scale": False,
    "lab_positions": False,
    "lab_causal": True,
    "lab_random": True,
    "lab_seed": 2**31 - 1,
    "lab_layer": 1,
    "lab_head": 2,
    **{"corpus_source": "zh", "corpus_limit": 250, "corpus_tokens": 64, "corpus_stat": "sep", "corpus_layer": 3},
    **{"corpus_head": 7, "train_task": "copy", "train_layers": 3, "train_heads": 4, "train_d_model": 32},
    **{
        "train_steps": 300,
        "train_seed": 9,
        "train_plateau": False,
        "train_sparse": "window",
        "train_window": 3,
    },  # the Corpus and Training pages (tests/test_polish_links.py)
}


def _round_trip(session: dict[str, Any]) -> dict[str, object]:
    written = {k: v for k, v in urls.view_params(session).items() if v is not None}
    view, used = urls.parse_view(written)
    assert sorted(used) == sorted(written)
    return view


def test_every_kept_field_is_in_the_sample_and_comes_back_the_same() -> None:
    assert set(SAMPLE) == {p.home for p in urls.VIEW_PARAMS}
    view = _round_trip({**SAMPLE, urls.FOCUS_OPEN: True})
    expected = {**SAMPLE, "heads_off": tuple(tuple(h) for h in SAMPLE["heads_off"]), urls.FOCUS_OPEN: True}
    assert view == expected


def test_defaults_are_not_written_and_an_old_link_carries_no_view() -> None:
    defaults = {p.home: p.default for p in urls.VIEW_PARAMS if p.default is not None}
    assert all(v is None for v in urls.view_params(defaults).values())
    old = {"text": "dog bites man", "model": "scratch", "lang": "zh", "layer": "2", "head": "mean"}
    link = urls.parse_link(old, max_chars=100)
    assert (link.text, link.model, link.lang, link.layer, link.head) == ("dog bites man", "scratch", "zh", 2, urls.MEAN)
    assert link.view == {} and link.problems == () and urls.unused_params(old, link) == []


def test_the_token_pair_is_written_while_its_section_is_open_and_read_only_whole() -> None:
    closed = urls.view_params({"focus_query": 3, "focus_key": 1})
    assert closed["q"] is None and closed["k"] is None
    view, used = urls.parse_view({"q": "3"})  # half a pair: nothing
    assert view == {} and used == []
    assert urls.unused_params({"q": "3"}, urls.parse_link({"q": "3"}, 10)) == ["q"]
    view, used = urls.parse_view({"q": "3", "k": "1"})
    assert view == {"focus_query": 3, "focus_key": 1, urls.FOCUS_OPEN: True} and sorted(used) == ["k", "q"]


def test_hostile_values_are_refused_and_named() -> None:
    params = {
        "off": "1.3_<script>",
        "mode": "MEAN",
        "click": "true",
        "sinks": "yes",
        "special": "١",
        "range": "auto ",
        "thr": "0.5e1",
        "hl": "-1",
        "xstat": "__class__",
        "seed": "²",
        "q": "3",
        "k": "Ⅻ",
        "text": "ok",
    }
    link = urls.parse_link(params, max_chars=100)
    assert link.view == {}
    assert urls.unused_params(params, link) == [k for k in params if k != "text"]


def test_numbers_past_their_bound_are_clamped_and_heads_are_bounded() -> None:
    view, _ = urls.parse_view({"thr": "7", "seed": "9999999999999", "hl": "000012", "llayer": "999999"})
    assert view == {"threshold": 1.0, "lab_seed": 2**31 - 1, "highlight": 12, "lab_layer": 999}
    assert urls.parse_view({"seed": "1" * 14})[0] == {}  # too long to be a number of ours
    many = "_".join(f"{i // 100}.{i % 100}" for i in range(urls.OFF_MAX + 1))
    assert urls.parse_view({"off": many})[0] == {}
    assert urls.parse_view({"off": "2.1_0.0_2.1"})[0] == {"heads_off": ((0, 0), (2, 1))}
    assert urls.parse_view({"off": "1..3"})[0] == {} and urls.parse_view({"off": "1.3_"})[0] == {}
    assert urls.view_params({"heads_off": [[1, "x"]]})["off"] is None  # never written from a bad session


@settings(deadline=None)  # a shared 2-core machine: one example can take half a second
@given(
    st.dictionaries(
        st.sampled_from([p.key for p in urls.VIEW_PARAMS] + ["text", "layer", "other"]),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=60),
    )
)
def test_no_link_makes_the_view_reader_raise_and_every_value_fits_its_widget(params: dict[str, str]) -> None:
    link = urls.parse_link(params, max_chars=50)
    by_home = {p.home: p for p in urls.VIEW_PARAMS}
    for home, value in link.view.items():
        if home == urls.FOCUS_OPEN:
            assert value is True
            continue
        param = by_home[home]
        if param.kind == "bool":
            assert isinstance(value, bool)
        elif param.kind == "choice":
            assert value in param.choices
        elif param.kind == "int":
            assert isinstance(value, int) and 0 <= value <= param.hi
        elif param.kind == "float":
            assert isinstance(value, float) and 0.0 <= value <= 1.0
        else:
            assert isinstance(value, tuple) and len(value) <= urls.OFF_MAX
    assert set(urls.unused_params(params, link)) | set(link.view_keys) | {"text", "layer"} >= set(params) - {"embed"}


@settings(deadline=None)
@given(st.fixed_dictionaries({p.home: st.none() for p in urls.VIEW_PARAMS}), st.data())
def test_whatever_the_session_holds_the_link_reads_back_what_was_written(
    base: dict[str, Any], data: st.DataObject
) -> None:
    session = dict(base)
    for param in urls.VIEW_PARAMS:
        session[param.home] = data.draw(
            st.one_of(st.none(), st.booleans(), st.integers(-5, 2**32), st.floats(-1, 2), st.text(max_size=5))
        )
    session[urls.FOCUS_OPEN] = True
    written = {k: v for k, v in urls.view_params(session).items() if v is not None}
    view, _ = urls.parse_view(written)
    for param in urls.VIEW_PARAMS:
        if param.key in written and param.key not in ("q", "k"):
            assert view[param.home] == session[param.home] or param.kind == "float"


def test_apply_view_sets_the_session_the_pages_read() -> None:
    link = urls.parse_link({"off": "1.3", "sinks": "1", "q": "4", "k": "2", "hl": "5", "range": "auto"}, 10)
    session: dict[str, Any] = {}
    urls.apply_view(session, link)
    assert session[heads_off.OFF] == [[1, 3]] and session[heads_off.OFF_MODEL] == urls.LINK_OWNER
    assert session[state.HIDE_SINKS] is True and session["color_range"] == "auto"
    assert session[urls.LINK_TOKENS] == {"focus_query": 4, "focus_key": 2, "highlight": 5}
    assert session["focus_query"] == 4 and session[urls.FOCUS_OPEN] is True


def test_the_table_agrees_with_the_pages() -> None:
    kept = {k.home for k in state.KEPT} | {heads_off.OFF}
    assert {p.home for p in urls.VIEW_PARAMS} <= kept
    assert urls.FOCUS_OPEN in kept  # the pair stays in the link on other pages
    by_key = {p.key: p for p in urls.VIEW_PARAMS}
    assert by_key["xstat"].choices == explain.STATS
    assert by_key["mode"].choices == heads_off.MODES
    assert {(by_key[k].home, by_key[k].default) for k in ("scale", "pos", "causal", "random", "seed")} == set(
        lab.DEFAULTS
    )
    assert tuple(by_key[k].home for k in ("mode", "click", "sinks")) == (
        state.ABLATION_MODE,
        state.ABLATION_CLICK,
        state.HIDE_SINKS,
    )
    assert len(set(urls.LINK_KEYS)) == len(urls.LINK_KEYS)

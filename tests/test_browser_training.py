"""The Training lab in a real browser: press Train and watch the loss curve grow and the
snapshot slider move while the run trains (the page polls a background thread), press Stop and
keep the model, play the snapshots back, and open the model in the explorer."""

from __future__ import annotations

from typing import Any

import pytest

from attnviz import i18n

from .test_browser import FIRST_LOAD_MS, SEPARATOR, WAIT_MS, Session

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Points of the training-loss trace as drawn (_fullData: typed arrays decoded), and the slider's
# step count and current label.
LIVE_JS = """() => {
  const curves = document.querySelector('.st-key-train_curves .js-plotly-plot');
  const grid = document.querySelector('.st-key-train_grid .js-plotly-plot');
  if (!curves || !curves._fullData || !grid || !grid.layout || !grid.layout.meta) return null;
  const meta = [].concat(grid.layout.meta)[0], slider = grid.layout.sliders ? grid.layout.sliders[0] : null;
  const active = slider ? (slider.active || 0) : -1;
  const label = slider ? (slider.steps[active] || {}).label : String(meta.steps[meta.steps.length - 1]);
  if (label === undefined) return null;
  return {points: curves._fullData[0].x.length, steps: slider ? slider.steps.length : 0, label: label,
          active: active, live: !slider};
}"""

# Each head's map as drawn: the size of its drag rectangle (Plotly's plot area of one subplot).
MAPS_JS = """() => [...document.querySelectorAll('.st-key-train_grid .js-plotly-plot .nsewdrag')]
  .map(r => [Number(r.getAttribute('width')), Number(r.getAttribute('height'))])"""


def _live(s: Session) -> dict[str, Any] | None:
    value = s.page.evaluate(LIVE_JS)
    return None if value is None else dict(value)


def _wait_live(s: Session, condition: str = "true", arg: Any = None) -> dict[str, Any]:
    """The drawn state once `condition` (JS over v, the state, and f, the argument) holds, read
    in the same evaluation: the polled page redraws its charts, so a second read a moment later
    can fall between two drawings and find no chart at all."""
    handle = s.page.wait_for_function(
        f"(f) => {{ const v = ({LIVE_JS})(); return !!v && ({condition}) ? v : null; }}", arg=arg, timeout=WAIT_MS
    )
    return dict(handle.json_value())


def _label(value: dict[str, Any]) -> int:
    return int(str(value["label"]).replace(",", ""))


def test_train_watch_the_curve_grow_and_the_slider_move_then_stop_and_open(session: Session) -> None:
    s = session
    s.page.goto(f"{s.url}/training")
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want",
        arg=i18n.t("train.title", "en"),
        timeout=FIRST_LOAD_MS,
    )
    s.wait_idle(FIRST_LOAD_MS)
    s.page.locator(".st-key-train_plateau label").click()  # no plateau stop: 800 steps, long enough to watch
    s.wait_idle()
    s.page.locator(".st-key-train_start button").click()

    first = _wait_live(s, "v.points > 0")
    # while it trains, the polled page redraws: more points on the curve, the maps of a later step
    # (the latest snapshot alone: the slider over every snapshot comes when the run ends)
    later = _wait_live(
        s,
        "v.live && v.points > f.points"
        " && Number(String(v.label).replace(/,/g, '')) > Number(String(f.label).replace(/,/g, ''))",
        first,
    )
    s.shot("training-live", key="train_grid")

    s.page.locator(".st-key-train_stop button").first.click()  # with help= Streamlit draws two
    stopped = i18n.t("train.stopped", "en", step="X", total="800", accuracy="Y").split("X")[0]
    s.page.get_by_text(stopped.strip()).first.wait_for(timeout=WAIT_MS)
    s.wait_idle()
    final = _wait_live(s, "!v.live && v.steps >= 2")
    assert _label(final) >= _label(later) and final["active"] == final["steps"] - 1  # the newest snapshot shown
    maps = s.page.evaluate(MAPS_JS)
    assert len(maps) == 4  # 2 layers x 2 heads, each drawn square and large enough to read its tokens
    assert all(abs(w - h) <= 2 and w >= 150 for w, h in maps), maps

    # play the snapshots back: the browser animates the frames, the slider walks through the steps
    seen = set()
    s.page.locator(".st-key-train_grid .updatemenu-button").first.click()
    for _ in range(40):
        value = _live(s)
        if value is not None:
            seen.add(value["active"])
        s.page.wait_for_timeout(100)
    assert len(seen) >= 3, seen
    s.shot("training-stopped", key="train_grid")

    s.page.locator(".st-key-train_open button").first.click()  # with help= Streamlit draws two
    s.page.wait_for_function(
        "(want) => document.querySelector('h1')?.innerText === want",
        arg=i18n.t("explorer.title", "en"),
        timeout=WAIT_MS,
    )
    s.page.wait_for_function(
        "() => { const c = document.querySelector('.st-key-tokens code'); return !!c && c.innerText.startsWith('<s>'); }",
        timeout=WAIT_MS,
    )
    tokens = s.tokens_text().split(SEPARATOR)
    assert tokens[0] == "<s>" and all(t.startswith("t") for t in tokens[1:])
    assert s.page.locator('[data-testid="stException"]').count() == 0
    assert not s.crashed and not s.dialogs

"""Where one Ctrl+Enter's time goes, seen from the browser (bench_browser.py's breakdown rows).

An init script (`PROBES_JS`) records, in the page's own clock (performance.now()):

- every websocket message from the server: arrival, size, and which chart it carries (a chart's
  element id holds its key, e.g. "chart_heatmap"), so "the heatmap's message arrived at 0.61 s"
  is the server's time to compute, serialise and send it, plus the wire;
- every draw of the canvas map (its "attnviz:drawn" event: from its data to its pixels);
- every Plotly.newPlot / Plotly.react call (window.Plotly is wrapped as Streamlit's chunk sets
  it): which view, when it started, how long its synchronous part took and when its promise
  settled: the browser's drawing, chart by chart.

`breakdown(watched, views)` turns one run's records into seconds from Ctrl+Enter.
"""

from __future__ import annotations

import statistics
from typing import Any

CHART_KEYS = {  # the view's container key -> its chart's widget key (app/sections/explorer.py)
    "view_heatmap": "chart_heatmap",
    "view_grid": "chart_grid",
    "view_head": "chart_head_view",
    "view_graph": "chart_graph",
}

PROBES_JS = """
(() => {
  const msgs = window.__msgs = [];
  const plots = window.__plots = [];
  const needles = NEEDLES;
  const Native = window.WebSocket;
  const latin1 = new TextDecoder('latin1');
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (ev) => {
        const t = performance.now(), d = ev.data;
        const size = d.byteLength !== undefined ? d.byteLength : (d.size !== undefined ? d.size : d.length);
        let found = [];
        if (d.byteLength !== undefined && d.byteLength > 200) {
          const text = latin1.decode(d);
          found = needles.filter(k => text.includes(k));
        }
        msgs.push([t, size, found]);
      });
    }
  };
  const keyOf = (gd) => {
    const box = gd && gd.closest && gd.closest('[class*="st-key-view_"]');
    if (!box) return null;
    const cls = [...box.classList].find(c => c.startsWith('st-key-view_'));
    return cls ? cls.slice('st-key-'.length) : null;
  };
  let depth = 0;
  const wrap = (P) => {
    if (!P || P.__attnvizWrapped) return;
    P.__attnvizWrapped = true;
    for (const name of ['newPlot', 'react']) {
      const f = P[name];
      if (typeof f !== 'function') continue;
      P[name] = function (gd, ...rest) {
        if (depth > 0) return f.call(this, gd, ...rest);
        // full: the call drew the chart anew (plotly's _doPlot, which fires plotly_beforeplot);
        // a first call on a new chart always does, a later one only when the figure changed.
        const rec = {key: keyOf(gd), name, start: performance.now(), sync: null, done: null, full: !(gd && gd.on)};
        if (gd) gd.__attnvizCall = rec;
        depth += 1;
        let out;
        try { out = f.call(this, gd, ...rest); } finally { depth -= 1; rec.sync = performance.now() - rec.start; }
        if (gd && gd.on && !gd.__attnvizFull) {
          gd.__attnvizFull = true;
          gd.on('plotly_beforeplot', () => { if (gd.__attnvizCall) gd.__attnvizCall.full = true; });
        }
        plots.push(rec);
        Promise.resolve(out).then(() => { rec.done = performance.now(); }, () => { rec.done = performance.now(); });
        return out;
      };
    }
  };
  // The canvas map (app/canvas/token_canvas.js) says when it drew: from its data's arrival, in ms.
  document.addEventListener('attnviz:drawn', (ev) => {
    const d = ev.detail;
    plots.push({key: keyOf(ev.target), name: 'canvas', start: d.start, sync: d.duration, done: d.start + d.duration, full: true});
  }, true);
  let current;
  Object.defineProperty(window, 'Plotly', {configurable: true, enumerable: true,
    get() { return current; }, set(v) { current = v; wrap(v); }});
})();
"""


def probes_js() -> str:
    import json

    return PROBES_JS.replace("NEEDLES", json.dumps(sorted(CHART_KEYS.values())))


# What WATCH_JS adds to a run's record: the messages and Plotly calls since Ctrl+Enter (ms).
RECORDS_JS = """(w) => ({
  msgs: (window.__msgs || []).filter(m => m[0] >= w.t0).map(([t, s, f]) => [t - w.t0, s, f]),
  plots: (window.__plots || []).filter(p => p.start >= w.t0)
    .map(p => ({key: p.key, name: p.name, start: p.start - w.t0, sync: p.sync, done: p.done === null ? null : p.done - w.t0,
                full: p.full})),
})"""


def breakdown(watched: dict[str, Any], views: tuple[str, ...]) -> dict[str, Any]:
    """One run: for each view, when its message arrived, when Plotly started and settled drawing
    it and how long the main thread spent in Plotly for it (s from Ctrl+Enter); and the totals."""
    msgs = watched.get("msgs", [])
    plots = watched.get("plots", [])
    out: dict[str, Any] = {"views": {}}
    for view in views:
        key = CHART_KEYS[view]
        arrived = [t for t, _size, found in msgs if key in found]
        size = sum(s for _t, s, found in msgs if key in found)
        calls = [p for p in plots if p["key"] == view]
        out["views"][view] = {
            "msg": arrived[-1] / 1000 if arrived else None,
            "mb": size / 1e6,
            "plot_start": calls[0]["start"] / 1000 if calls else None,
            "plot_done": max((p["done"] or p["start"] + p["sync"]) for p in calls) / 1000 if calls else None,
            "plot_sync": sum(p["sync"] for p in calls) / 1000,
            "calls": len(calls),
            "draws": sum(1 for p in calls if p.get("full")),
        }
    out["msgs"] = len(msgs)
    out["ws_mb"] = sum(s for _t, s, _f in msgs) / 1e6
    out["plot_sync"] = sum(p["sync"] for p in plots) / 1000
    return out


def rows(runs: list[dict[str, Any]], views: tuple[str, ...], n: int) -> list[tuple[str, str, str, str]]:
    """Median over the runs of each view's message arrival, Plotly drawing and its calls."""
    if not runs:
        return []

    def med(values: list[float | None]) -> str:
        got = [v for v in values if v is not None]
        return f"{statistics.median(got):.2f}" if got else "—"

    cells = []
    for view in views:
        per = [r["views"][view] for r in runs]
        cells.append(
            f"{view.removeprefix('view_')}: message {med([p['msg'] for p in per])} s "
            f"({med([p['mb'] for p in per])} MB), Plotly {med([p['plot_start'] for p in per])}"
            f"–{med([p['plot_done'] for p in per])} s, {med([p['plot_sync'] for p in per])} s busy in "
            f"{med([p['calls'] for p in per])} call(s), {med([p.get('draws') for p in per])} full draw(s)"
        )
    return [
        (f"{n} tokens: each view's websocket message and Plotly drawing (median, s from Ctrl+Enter)",
         "; ".join(cells), "", ""),
        (f"{n} tokens: main thread inside Plotly, all charts (median)", f"{med([r['plot_sync'] for r in runs])} s",
         "", ""),
    ]  # fmt: skip

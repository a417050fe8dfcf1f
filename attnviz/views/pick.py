"""Clicks: the markers that make the all-heads views clickable, and reading back the selected
points `st.plotly_chart(fig, on_select="rerun")` reports. A clickable point carries customdata
[layer, head] (a cell of `model_view` or `layer_head_grid`, a bar of `token_focus`) or [i] (a
token of `head_view` or `graph_view`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..i18n import t
from ._base import Json

PICK_TRACE = "pick"  # English name of the clickable-marker trace (catalogue key "fig.pick")

# hoverdistance=-1 makes the nearest cell centre win everywhere, so a click anywhere inside a
# cell picks that cell.
PICK_LAYOUT: Json = {"hovermode": "closest", "hoverdistance": -1, "clickmode": "event+select"}


def pick_markers(n_layers: int, n_heads: int, hovertext: Sequence[str], lang: str) -> Json:
    """One near-invisible marker at each cell centre carrying customdata [layer, head] (heatmaps
    are not selectable in plotly.js); merge PICK_LAYOUT into the figure's layout. customdata is
    a list: a typed array is mangled by selection events (plotly/plotly.py#5119, plotly.js#7375).
    """
    cells = [[layer, head] for layer in range(n_layers) for head in range(n_heads)]
    return {
        "type": "scatter",
        "x": [c[1] for c in cells],
        "y": [c[0] for c in cells],
        "customdata": cells,
        "mode": "markers",
        "marker": {"size": 14, "symbol": "square", "opacity": 0.01, "color": "gray"},
        "hovertext": list(hovertext),
        "hoverinfo": "text",
        "name": t("fig.pick", lang),
        "showlegend": False,
    }


def model_view_pick(selection_points: Any) -> tuple[int, int] | None:
    """(layer, head) of the first selected cell of `model_view` or `layer_head_grid`, else None.
    Pass `event.selection["points"]` (or the event, or `event.selection`); each point is a dict
    such as {"point_index": 17, "x": 5, "y": 1, "customdata": [1, 5]}; others are skipped.
    """
    cell = _first(selection_points, 2)
    return None if cell is None else (cell[0], cell[1])


def token_pick(selection_points: Any) -> int | None:
    """Token index of the first selected token marker of `head_view` or `graph_view`, else None
    (any point whose customdata is one int: the corpus atlas's [row] too, as `atlas_pick`)."""
    token = _first(selection_points, 1)
    return None if token is None else token[0]


def _first(selection: Any, size: int) -> tuple[int, ...] | None:
    """The customdata of the first selected point that carries `size` ints."""
    found = (_ints(point.get("customdata"), size) for point in _points(selection))
    return next((ints for ints in found if ints is not None), None)


def _points(selection: Any) -> list[Mapping[str, Any]]:
    """Accept the event Streamlit returns, its .selection, or the list of points itself."""
    if selection is None:
        return []
    if isinstance(selection, Mapping):
        if "selection" in selection:
            return _points(selection["selection"])
        return list(selection.get("points", []))
    return [p for p in selection if isinstance(p, Mapping)]


def _ints(customdata: Any, size: int) -> tuple[int, ...] | None:
    """customdata as `size` ints, whether it arrives as a JSON list or, had it been sent as a typed
    array, as an object {"0": a, "1": b} (JSON.stringify of a typed array)."""
    if isinstance(customdata, Mapping):
        customdata = [customdata.get(str(k)) for k in range(len(customdata))]
    if not isinstance(customdata, (list, tuple)) or len(customdata) != size:
        return None
    whole = (not isinstance(v, bool) and isinstance(v, (int, float)) and float(v).is_integer() for v in customdata)
    return tuple(int(v) for v in customdata) if all(whole) else None

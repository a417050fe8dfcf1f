"""One head's token map as every renderer draws it: the Plotly figure (`heatmaps.heatmap_figure`),
the app's canvas (`token_canvas.map_payload`) and the lesson handout's SVG. The words, labels and
colour range are decided here once; a renderer only lays them out, so the three cannot drift."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..i18n import DEFAULT_LANGUAGE, t
from ..result import Attention
from ._base import SEQUENTIAL, map_height, which_head
from .decoder import group_note

_MARK = re.compile(r"\{([qkw])\}")


@dataclass(frozen=True, eq=False)
class HeatmapSpec:
    """A one-head map: tokens as they are (each renderer escapes them or writes them as text),
    the float32 weights, and every word in `lang`. `hover` is the catalogue's sentence with {q},
    {k} and {w} for the query token, the key token and the weight, lines apart by <br>."""

    rows: tuple[str, ...]  # query tokens, down the side
    cols: tuple[str, ...]  # key tokens, across (the rows again unless cross-attention)
    z: np.ndarray  # (n_q, n_k) float32, row i = where query i looks
    layer: int
    head: int | None  # None: the mean of the layer's heads
    title: str
    note: str | None  # small print under the title: the key/value head a grouped head reads
    zmin: float | None  # the colour range; both None: the data's own
    zmax: float | None
    lang: str
    xtitle: str
    ytitle: str
    bar: str  # the colour bar's title
    hover: str
    scale: tuple[tuple[float, str], ...] = tuple((float(p), str(c)) for p, c in SEQUENTIAL)

    @property
    def height(self) -> int:
        return map_height(max(self.z.shape))

    def bounds(self) -> tuple[float, float]:
        """The range the colours span: the fixed one, else the finite data's (as Plotly's zauto
        and the canvas's `range` take it)."""
        if self.zmin is not None and self.zmax is not None:
            return self.zmin, self.zmax
        finite = self.z[np.isfinite(self.z)]
        return (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)

    def colours(self, values: np.ndarray) -> list[str]:
        """Each value's "#rrggbb" on the scale within `bounds`, flattened, mixed in RGB between the
        stops as plotly.js and the canvas's `lut` mix them (the handout's SVG)."""
        lo, hi = self.bounds()
        at = np.clip((np.asarray(values, dtype=np.float64).ravel() - lo) / ((hi - lo) or 1.0), 0.0, 1.0)
        stops = [p for p, _ in self.scale]
        rgb = [[int(c[k : k + 2], 16) for k in (1, 3, 5)] for _, c in self.scale]
        mixed = np.stack([np.interp(at, stops, [c[ch] for c in rgb]) for ch in range(3)], axis=-1)  # (m, 3)
        return ["#{:02x}{:02x}{:02x}".format(*c) for c in np.rint(mixed).astype(int).tolist()]

    def hover_text(self, i: int, j: int, fmt: str = ".6f") -> str:
        """Cell (i, j)'s hover, lines apart by newlines; one pass, so a token reading "{w}" stays itself."""
        values = {"q": f"{self.rows[i]} ({i})", "k": f"{self.cols[j]} ({j})", "w": format(float(self.z[i, j]), fmt)}
        return _MARK.sub(lambda m: values[m[1]], self.hover).replace("<br>", "\n")


def heatmap_spec(
    att: Attention,
    layer: int = 0,
    head: int | None = 0,
    *,
    zmax: float | None = None,
    title: str | None = None,
    lang: str = DEFAULT_LANGUAGE,
) -> HeatmapSpec:
    """One head's map (head=None: the mean of the layer's heads). zmax=None lets the colours
    follow the data; a float fixes them to [0, zmax]. `title` replaces "layer 2, head 5"."""
    return HeatmapSpec(
        rows=tuple(att.tokens),
        cols=tuple(att.keys),
        z=np.array(att.head(layer, head), dtype=np.float32),  # (n_q, n_k), a copy, not a view
        layer=layer,
        head=head,
        title=t("fig.layer_which", lang, layer=layer, which=which_head(head, att.n_heads, lang))
        if title is None
        else title,
        note=group_note(att, head, lang=lang),
        zmin=None if zmax is None else 0.0,
        zmax=None if zmax is None else float(zmax),
        lang=lang,
        xtitle=t("axis.key", lang),
        ytitle=t("axis.query", lang),
        bar=t("fig.weight", lang),
        hover=t("fig.hover_heatmap", lang, q="{q}", k="{k}", w="{w}"),
    )

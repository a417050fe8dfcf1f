"""The lesson's printable handout: one self-contained HTML page (no script, no network) with the
visitor's sentence, each step's text, their own figures as inline SVG and their checked answers.
Every visitor string is escaped with `html.escape` where it lands; a Content-Security-Policy forbids
scripts and every request. The numbers beside the bars are the ones the page states.

    html = handout_html(look, lang="zh", text=sentence, model="e5-small", answers={...}, linked=facts)
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import i18n
from ..views._base import one_line
from ..views.spec import HeatmapSpec, heatmap_spec
from .checks import Verdict, step_fields
from .core import STEPS, Facts

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
MAX_MAP_TOKENS = 64  # the one-head map is drawn up to this many tokens (beyond: its row only)
BLUE, GREY, RED = "#3b6fd8", "#9aa0a6", "#d9482b"
_STYLE = """
body { font-family: system-ui, "Noto Sans CJK SC", "PingFang SC", sans-serif; max-width: 52em; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.5; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
.meta, .look { color: #444; } .tokens { font-family: monospace; background: #f4f4f4; padding: 0.4em; }
.right { color: #1a7f37; } .wrong { color: #b42318; } .open { color: #666; }
section { break-inside: avoid; page-break-inside: avoid; border-top: 1px solid #ddd; }
table.tops { border-collapse: collapse; font-size: 11px; } .tops td, .tops th { border: 1px solid #ddd;
       padding: 1px 3px; text-align: center; }
svg { max-width: 100%; height: auto; } svg text { font-size: 12px; fill: #222; }
"""


@dataclass(frozen=True)
class Answer:
    """What the visitor chose, as they saw it on the page, and its check."""

    label: str
    verdict: Verdict


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _label(token: str, limit: int = 16) -> str:
    return one_line(token, limit) or "␣"


def heatmap_svg(spec: HeatmapSpec, mark: tuple[int, int] | None = None) -> str:
    """A map as the page's figure draws it (`views.heatmap_spec`): its title and note, the tokens
    down the side and across, the cells in its colours and range with their hover, and a colour
    bar with the range's ends; `mark` outlines one cell."""
    (n_q, n_k), (lo, hi) = spec.z.shape, spec.bounds()
    cell, pad = max(10, min(28, 560 // max(n_q, n_k, 1))), 110
    top = pad + (40 if spec.note else 24)  # the heading's lines over the column labels
    width, height = pad + n_k * cell + 4, top + n_q * cell + 48
    parts = [f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    parts.append(f'<text x="0" y="16" font-weight="bold">{_e(spec.title)}</text>')
    if spec.note:
        parts.append(f'<text x="0" y="34">{_e(spec.note)}</text>')
    for i, tok in enumerate(spec.rows):
        parts.append(
            f'<text x="{pad - 4}" y="{top + i * cell + cell * 0.7:.1f}" text-anchor="end">{_e(_label(tok))}</text>'
        )
    for j, tok in enumerate(spec.cols):
        x = pad + j * cell + cell * 0.7
        parts.append(f'<text transform="translate({x:.1f},{top - 4}) rotate(-60)">{_e(_label(tok))}</text>')
    fills = spec.colours(spec.z)
    for i in range(n_q):
        for j in range(n_k):
            parts.append(
                f'<rect x="{pad + j * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
                f'fill="{fills[i * n_k + j]}"><title>{_e(spec.hover_text(i, j, ".3f"))}</title></rect>'
            )
    if mark is not None:
        i, j = mark
        parts.append(
            f'<rect x="{pad + j * cell}" y="{top + i * cell}" width="{cell}" height="{cell}" '
            f'fill="none" stroke="{RED}" stroke-width="3"/>'
        )
    y = top + n_q * cell + 12
    for k, fill in enumerate(spec.colours(np.linspace(lo, hi, 10))):
        parts.append(f'<rect x="{pad + 12 * k}" y="{y}" width="12" height="10" fill="{fill}"/>')
    parts.append(f'<text x="{pad - 4}" y="{y + 9}" text-anchor="end">{lo:.3g}</text>')
    parts.append(f'<text x="{pad + 124}" y="{y + 9}">{hi:.3g}</text>')
    parts.append(f'<text x="{pad}" y="{y + 28}">{_e(spec.bar)}</text></svg>')
    return "".join(parts)


def percent(value: float) -> str:
    """A weight as a percentage that never reads 0 % or 100 % for a value that is not: 0.4 %, 12 %."""
    v = 100.0 * float(value)
    return f"{v:.1f}%" if 0 < abs(v) < 10 or 99 < abs(v) < 100 else f"{v:.0f}%"


def distance(value: float) -> str:
    """A cosine distance as the step's why prints it."""
    return f"{float(value):.3f}"


def bars_svg(
    tokens: Sequence[str],
    series: Sequence[tuple[str, np.ndarray, str]],
    *,
    line: tuple[float, str] | None = None,
    highlight: int | None = None,
    fmt: Callable[[float], str] = percent,
) -> str:
    """Horizontal bars, one row per token and one bar per series (name, values, colour); `line`
    draws a dashed vertical line at a value with its label; `highlight` marks a token in bold;
    the first series' values are written beside their bars with `fmt`."""
    n, k = len(tokens), max(len(series), 1)
    row, pad, width = 8 + 8 * k, 130, 360
    top = max((float(np.max(v)) for _, v, _ in series), default=1.0)
    top = max(top, line[0] if line else 0.0, 1e-9)
    height = 30 + n * row + 20 * k
    parts = [f'<svg width="{pad + width + 70}" height="{height}">']
    for i, tok in enumerate(tokens):
        y = 20 + i * row
        weight = ' font-weight="bold"' if i == highlight else ""
        parts.append(f'<text x="{pad - 6}" y="{y + row * 0.6:.1f}" text-anchor="end"{weight}>{_e(_label(tok))}</text>')
        for s, (_, values, colour) in enumerate(series):
            v = float(values[i])
            w = width * max(v, 0.0) / top
            parts.append(f'<rect x="{pad}" y="{y + 2 + s * 8}" width="{w:.1f}" height="7" fill="{colour}"/>')
            if s == 0:
                parts.append(f'<text x="{pad + w + 4:.1f}" y="{y + 9}">{_e(fmt(v))}</text>')
    if line is not None:
        x = pad + width * line[0] / top
        parts.append(
            f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{20 + n * row}" stroke="{GREY}" stroke-dasharray="4 3"/>'
        )
        parts.append(f'<text x="{x + 3:.1f}" y="12">{_e(line[1])}</text>')
    for s, (name, _, colour) in enumerate(series):
        y = 36 + n * row + 16 * s
        parts.append(f'<rect x="{pad}" y="{y - 9}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{pad + 14}" y="{y}">{_e(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _tops_table(facts: Facts, lang: str) -> str:
    """Layers x heads: the token each head's row for the query weighs most, shaded by that weight
    (white 0 to deep blue 1)."""
    L, H = facts.tops.shape
    head = "".join(f"<th>{h}</th>" for h in range(H))
    rows = []
    for layer in range(L):
        cells = []
        for h in range(H):
            w = float(facts.top_weights[layer, h])
            ink = "#fff" if w > 0.55 else "#222"
            shade = "".join(f"{round(255 + (c - 255) * float(np.clip(w, 0.0, 1.0))):02x}" for c in (24, 64, 160))
            tok = _e(_label(facts.tokens[int(facts.tops[layer, h])], 6))
            cells.append(f'<td style="background:#{shade};color:{ink}" title="{w:.2f}">{tok}</td>')
        rows.append(f"<tr><th>{layer}</th>{''.join(cells)}</tr>")
    caption = _e(i18n.t("lesson.handout.tops", lang, q=facts.query_token))
    return f'<table class="tops"><caption>{caption}</caption><tr><th></th>{head}</tr>{"".join(rows)}</table>'


def _figure(step: str, facts: Facts, lang: str) -> str:
    p, tokens = facts.pick, list(facts.tokens)
    weight = (i18n.t("lesson.handout.weight", lang), facts.row, BLUE)
    if step == "tokens":
        return f'<p class="tokens">{" · ".join(_e(tok) for tok in tokens)}</p>'
    if step == "one_head":
        if facts.n > MAX_MAP_TOKENS:
            return bars_svg(tokens, [weight], highlight=p.key)
        return heatmap_svg(heatmap_spec(facts.att, p.layer, p.head, zmax=1.0, lang=lang), mark=(p.query, p.key))
    if step == "all_heads":
        return _tops_table(facts, lang)
    if step == "pronoun":
        uniform = (p.uniform, i18n.t("lesson.handout.uniform", lang, n=p.n))
        return bars_svg(tokens, [weight], line=uniform, highlight=p.key)
    if step == "switch_off":
        if facts.distances is None:
            return ""
        return bars_svg(tokens, [(i18n.t("lesson.handout.distance", lang), facts.distances, RED)], fmt=distance)
    if facts.norm_row is None:
        return ""
    return bars_svg(tokens, [weight, (i18n.t("lesson.handout.norm", lang), facts.norm_row, GREY)], highlight=p.key)


def _answer(answer: Answer | None, lang: str) -> str:
    if answer is None:
        return f'<p class="open">{_e(i18n.t("lesson.handout.unanswered", lang))}</p>'
    mark, cls = ("lesson.right", "right") if answer.verdict.right else ("lesson.wrong", "wrong")
    said = _e(i18n.t("lesson.handout.answer", lang))
    return (
        f"<p>{said} <b>{_e(answer.label)}</b></p>"
        f'<p class="{cls}"><b>{_e(i18n.t(mark, lang))}</b> {answer.verdict.why(lang, _e)}</p>'
    )


def _fields(facts: Facts, lang: str) -> dict[str, str]:
    """`step_fields` escaped for the page; the catalogue's templates are trusted."""
    return {name: _e(value) for name, value in step_fields(facts, lang).items()}


def _step_body(step: str, facts: Facts, lang: str, answers: Mapping[str, Answer], look: str | None = None) -> str:
    fields = _fields(facts, lang)
    return (
        f'<p class="look">{i18n.t(look or f"lesson.{step}.look", lang, **fields)}</p>'
        f"{_figure(step, facts, lang)}"
        f"<p><b>{i18n.t(f'lesson.{step}.question', lang, **fields)}</b></p>"
        f"{_answer(answers.get(step), lang)}"
    )


def handout_html(
    look: Facts, *, lang: str, text: str, model: str, answers: Mapping[str, Answer], linked: Facts | None = None
) -> str:
    """The handout page: the sentence, then each step's text, figure, question and answer; step 4
    opens with what the student said the pronoun refers to. `look`: the facts of steps 1-3,
    `linked`: those of steps 4-6 (the heads linking the pronoun to it; None until it is said)."""
    lookf = _fields(look, lang)
    sections = []
    for i, step in enumerate(STEPS, start=1):
        body = ""
        if step == "pronoun":
            body = f"<p><b>{i18n.t('lesson.referent.question', lang, **lookf)}</b></p>{_answer(answers.get('referent'), lang)}"
        if step in ("tokens", "one_head", "all_heads"):
            body = _step_body(step, look, lang, answers)
        elif linked is None:
            body += f'<p class="open">{i18n.t("lesson.after_referent", lang, **lookf)}</p>'
        else:
            below = step == "pronoun" and not linked.pick.above_uniform
            body += _step_body(step, linked, lang, answers, "lesson.pronoun.look_below" if below else None)
        name = i18n.t(f"lesson.{step}.title", lang, **lookf)
        title = i18n.t("lesson.step_title", lang, i=i, total=len(STEPS), title=name)
        sections.append(f"<section><h2>{title}</h2>{body}</section>")
    meta = i18n.t("lesson.handout.meta", lang, model=_e(model), n=look.n)
    return (
        f'<!DOCTYPE html>\n<html lang="{_e(lang)}">\n<head>\n<meta charset="utf-8" />\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}" />\n'
        f"<title>{_e(i18n.t('lesson.handout.title', lang))}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"<h1>{_e(i18n.t('lesson.handout.title', lang))}</h1>\n"
        f'<p class="meta">{_e(i18n.t("lesson.handout.sentence", lang))} <b>{_e(text)}</b><br />{meta}</p>\n'
        + "\n".join(sections)
        + "\n</body>\n</html>\n"
    )

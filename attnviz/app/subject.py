"""The sentence under analysis on a page: one way for every section to load the model, check the
text, analyse it and show what every page shows about it (`analysis`: the notices and the token
list); what the explorer looks at (`Focus`) and what the explanations read (`Subject`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import streamlit as st

from ..models import Runner
from ..models.names import SMOLLM2_MODEL
from ..nextword import piece_bytes
from ..result import Attention
from . import runners, widgets
from .again import Again, first, step
from .readers import model_label, unknown_notice
from .runners import Loaded
from .state import Ctx, t


@dataclass(frozen=True)
class Analysis:
    """A checked sentence through one model: `att` as the model read it (with the view's
    switches), `shown` the same with each character's byte pieces merged (`att` when none);
    `unknown` the share of its tokens the model cannot read (0 unless the notices were shown)."""

    loaded: Loaded
    text: str
    att: Attention
    shown: Attention
    again: Again  # how a download gets `shown` again without holding it (app/again.py)
    unknown: float = 0.0


@dataclass(frozen=True)
class Focus:
    """What the visitor is looking at: the analysis, the head in focus and the view options."""

    loaded: Loaded
    text: str
    att: Attention
    layer: int
    head: int | None  # None: the mean over heads
    color_range: str
    settings: dict[str, Any]
    again: Again  # what a download keeps to get `att` again on a click, not `att` itself (app/again.py)
    off: tuple[tuple[int, int], ...] = ()  # heads switched off (sections/ablation.py): att is then the switched model's
    base: Attention | None = None  # with heads off, the whole model's attention


@dataclass
class Subject:
    """The sentence as the explanation methods see it (`text` as checked, `fitted`: cut to the
    same tokens).

    `att` holds the model's own tokens: every method runs on them and returns one score a
    position. `shown` is the one token list the page shows: `att` with a character's byte pieces
    merged into the character (`att` itself when no character was cut); `groups[j]` are the
    model's positions of shown token j."""

    loaded: Loaded
    text: str
    fitted: str
    att: Attention
    shown: Attention
    series: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    groups: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self.groups = self.att.character_groups() if self.shown is not self.att else [[i] for i in range(self.att.n)]

    def position(self, j: int) -> int:
        """The model's position read for shown token j: its character's last piece, the one that
        has read all of the character (in a decoder the earlier pieces have not), as the
        explorer's pickers read it."""
        return self.groups[j][-1]

    def index(self, position: int) -> int:
        """The shown token that holds the model's `position`."""
        return next(j for j, g in enumerate(self.groups) if position in g)

    def per_token(self, values: np.ndarray) -> np.ndarray:
        """One score a position (n,) -> one a shown token (m,), summed over a character's pieces:
        each is what a token receives or adds for one query, and what pieces receive sums (Clark
        et al. 2019); the query itself is read at its last piece (`position`)."""
        if self.shown is self.att:
            return values
        return np.array([values[g].sum() for g in self.groups])


def analysis(
    context: Ctx,
    text: str | None,
    model: str | Loaded | None = None,
    *,
    fallback: bool = True,
    opts: Mapping[str, object] | None = None,
    view: tuple[bool, bool] = (False, False),
    notices: bool = True,
    tokens: bool = True,
    offer_reader: bool = True,
) -> Analysis | None:
    """`text` through `model` (a name, default the sidebar's, or a model already loaded; `opts`:
    the scratch encoder's switches) from the result cache, with special tokens hidden and word
    pieces merged as `view` says. With `notices`: what was cut, what the model cannot read,
    SmolLM2's English, and (with `tokens`) the token list. None after a readable error."""
    loaded = (
        model if isinstance(model, Loaded) else runners.load_runner(context, model, fallback=fallback, **(opts or {}))
    )
    clean = runners.checked_text(context, text)
    if loaded is None or clean is None:
        return None
    hide, merge = view
    att = runners.analyse(context, loaded, clean, hide_special=hide, merge_words=merge)
    if att is None:
        return None
    shown, again = att, first(context, loaded, clean, att, view)
    if has_byte_pieces(att):  # each character's byte pieces merged into the character
        key = runners.result_key(context, loaded, "characters", clean, *view)
        shown, again = step(context, again, key, Attention.merge_characters, att)
    unknown = 0.0
    if notices:
        if loaded.runner.name == SMOLLM2_MODEL:  # trained mostly on English
            st.info(t("decoder.english_only"), icon=":material/translate:")
        if shown is not att:
            st.caption(t("decoder.byte_pieces"))
        truncation_notice(att, context, loaded.runner)
        unknown = unknown_notice(context, loaded.runner, clean, offer_reader=offer_reader)
        if tokens:
            widgets.show_tokens(shown.tokens, titles=piece_titles(context, loaded, clean, shown))  # pieces on hover
    return Analysis(loaded, clean, att, shown, again, unknown)


def truncation_notice(att: Attention, context: Ctx, runner: Runner) -> None:
    """A cut text: raise Max tokens where the sidebar can give more, else the most this model
    reads here (the smallest of the model's own limit, the deployment's and the deployment's for
    this model: Settings.token_limit, the sidebar's ceiling)."""
    if not att.truncated:
        return
    most = min(runner.max_tokens, context.settings.token_limit(context.model))
    words = {"kept": f"{att.n:,}", "total": f"{att.n_input_tokens:,}"}
    if context.max_tokens < most:
        st.warning(t("notice.truncated", **words), icon=":material/content_cut:")
    else:
        label = model_label(runner.name)
        st.warning(t("notice.truncated_most", model=label, limit=f"{most:,}", **words), icon=":material/content_cut:")


def has_byte_pieces(att: Attention) -> bool:
    """Some tokens are byte pieces of one character (a byte-level tokenizer on 我 or 😀)."""
    return len(att.character_groups()) < att.n


def piece_titles(context: Ctx, loaded: Loaded, text: str, att: Attention) -> dict[int, str]:
    """Hover titles for the shown tokens `att` that merge byte pieces: index -> the character's
    pieces as the model reads them ("灯: 2 tokens of the model, byte pieces E7 81 | AF"). Empty
    when nothing was cut into pieces, or the model's own tokens are no longer in the cache (the
    page just read them: a hover is not worth another forward pass)."""
    runner = loaded.runner
    raw = runners.peek(context, loaded, "attend", text)
    if not isinstance(raw, Attention):
        return {}
    groups = [g for g in raw.character_groups() if len(g) > 1]
    if not groups:
        return {}
    ids = runner.encode(text, context.max_tokens).inputs["input_ids"][0].tolist()
    titles = {}
    for g in groups:
        span = (raw.spans[g[0]][0], max(raw.spans[i][1] for i in g))
        names = runner.vocab_strings([int(ids[i]) for i in g])
        pieces = " | ".join(" ".join(f"{b:02X}" for b in (piece_bytes(n) or n.encode())) for n in names)
        token = raw.text[span[0] : span[1]].strip() or "\u2423"
        titles[span] = t("decoder.pieces_hover", token=token, n=len(g), pieces=pieces)
    return {j: titles[sp] for j, sp in enumerate(att.spans) if sp in titles}

"""Widgets every page shares: the sentence box with its examples, layer/head and token
pickers, the tokens as literal text, errors and notices, and the short caveat under a view.

Every visitor string shown here is escaped for the exact place it lands (Markdown, a label).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import streamlit as st

from .. import i18n
from . import literal, nav, urls
from .state import MEAN, SENTENCE, SENTENCE_INPUT, Ctx, ctx, keep, lang, set_sentence, t

TOKEN_SEPARATOR = " · "  # between tokens shown as text (brackets would blur with "[" tokens)
# Option labels of selectboxes are the same in every language: Streamlit keeps a selectbox's
# value as its label, and a label that changed with the language would reset the choice.
MEAN_LABEL = "mean · 平均"
LOG = logging.getLogger("attnviz")
T = TypeVar("T")
_MD_PUNCT = re.compile(r"([!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])")


def escape_md(text: str, limit: int = 400) -> str:
    """User text made inert for st.markdown / st.error / labels: every ASCII punctuation mark
    backslash-escaped (links, HTML, `$...$` LaTeX and `:red[...]` directives stay literal), a
    word joiner after each colon so `:emoji:` shortcodes do not match, one line, bounded length."""
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return _MD_PUNCT.sub(r"\\\1", text).replace(":", ":\u2060")


def show_error(message: str, detail: str | None = None) -> None:
    """A readable error in the page: our message (trusted) and the detail (escaped)."""
    st.error(message if not detail else f"{message}\n\n{escape_md(detail)}", icon=":material/error:")


def failed(what: str, exc: Exception, message: str | None = None) -> None:
    """An unexpected failure in the page, never a traceback: logged as `what` failed, named by its
    type under `message` (default: err.unexpected)."""
    LOG.warning("attnviz: %s failed: %s: %.300s", what, type(exc).__name__, exc)
    show_error(message or t("err.unexpected"), type(exc).__name__)


def attempt(
    compute: Callable[[], T | None], what: str, *, length: int | None = None, message: str | None = None
) -> T | None:
    """The app's one error wrapper: `compute`'s failure as a message in the page, never a
    traceback. A ValueError or IndexError (what this model or text cannot do) shows its reason
    under `message`; anything else is logged as `what` failed and named by its type. With
    `length`, a result whose last axis is not that many tokens is refused too."""
    try:
        result = compute()
    except (ValueError, IndexError) as exc:
        show_error(message or t("explain.unsupported"), str(exc))
        return None
    except Exception as exc:
        failed(what, exc)
        return None
    arrays = result if isinstance(result, tuple) else (result,)
    if length is not None and any(isinstance(a, np.ndarray) and a.shape[-1] != length for a in arrays):
        show_error(t("explain.unsupported"), t("explain.length_mismatch"))
        return None
    return result


def page_header(title_key: str, intro_key: str, *, markdown: bool = False) -> Ctx:
    """The page's context, title and intro, and the notices from reading a shared link (a refused
    model id, an unusable text), shown once."""
    context = ctx()
    st.title(t(title_key))
    (st.markdown if markdown else st.caption)(t(intro_key))
    for message, detail in st.session_state.pop("_notices", []):
        show_error(message, detail or None)
    return context


def option_labels(pattern: str) -> Callable[[Any], str]:
    """A format_func for translated option labels, bound to this run's language (Streamlit
    may call format_func outside the script run, where the session is out of reach)."""
    language = lang()
    return lambda value: i18n.t(pattern.format(value), language)


def token_label(tokens: list[str], i: int) -> str:
    """Selectbox option text (plain text, not Markdown): position and token."""
    return f"{i}: {tokens[i]}"


def token_format(tokens: list[str], none: str | None = None) -> Callable[[int], str]:
    """A format_func for token pickers (`none` labels index -1). It holds the tokens only:
    Streamlit keeps a widget's format_func for the rest of the session, and a lambda written in
    a page would keep that run's globals (the attention, the figures) alive with it."""
    tokens = list(tokens)
    return lambda i: none if none is not None and i < 0 else token_label(tokens, i)


def show_tokens(tokens: list[str], key: str = "tokens", titles: dict[int, str] | None = None) -> None:
    """The tokens as literal text, every character escaped (app/literal.py: no highlighter);
    token i shows titles[i] on hover (a character's byte pieces)."""
    with st.container(key=key):
        st.caption(t("tokens.label", n=len(tokens)))
        st.html(literal.parts_body(tokens, TOKEN_SEPARATOR, titles or {}))


def sentence_box(context: Ctx) -> str:
    """The shared sentence and the one-click examples (keys "ex_<id>"). Returns the sentence."""
    with st.container(key="sentence_box"):
        st.text_area(
            t("sentence.label"),
            key=SENTENCE_INPUT,
            height=80,
            on_change=keep,
            args=(SENTENCE_INPUT,),
            help=t("sentence.help", limit=f"{context.settings.max_chars:,}", tokens=context.max_tokens),
        )
        families = i18n.examples(context.lang)["families"]
        for col, fam in zip(st.columns(len(families)), families, strict=True):
            with col:
                st.caption(t(f"examples.{fam['id']}"))
                inner = st.columns(len(fam["sentences"]))
                for box, ex in zip(inner, fam["sentences"], strict=True):
                    box.button(
                        ex["label"],
                        key=f"ex_{ex['id']}",
                        on_click=set_sentence,
                        args=(ex["text"],),
                        help=t("examples.use"),
                        width="stretch",
                    )
    return str(st.session_state.get(SENTENCE, ""))


def fmt_head(head: int) -> str:
    return MEAN_LABEL if head == MEAN else str(head)


def pick(label: str, options: Sequence[Any], key: str, *, default: Any = None, box: Any = st, **kwargs: Any) -> Any:
    """A selectbox (in `box`, a column say) whose value under `key`, kept across runs and set by
    shared links, goes back to `default` (the first option when None) once it is not among
    `options`: a new model or text may offer fewer."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if default is None else default
    return box.selectbox(label, options, key=key, **kwargs)


def clamp_kept(key: str, lo: int, hi: int, default: int | None = None) -> None:
    """The number kept under `key` (across runs, set by shared links) brought within [lo, hi]
    before its widget is drawn; anything else becomes `default`, clamped too (None: left as is)."""
    value = urls.as_int(st.session_state.get(key))
    if value is None:
        value = default
    if value is not None:
        st.session_state[key] = min(max(value, lo), hi)


def nearest(options: Sequence[int], value: Any, default: int) -> int:
    """The option nearest `value` (a link's number), or nearest `default` when it is no number."""
    number = urls.as_int(value)
    target = default if number is None else number
    return min(options, key=lambda option: abs(option - target))


def layer_head(
    n_layers: int, n_heads: int, layer_key: str = "layer", head_key: str = "head", *, allow_mean: bool = True
) -> tuple[int, int | None]:
    """Layer and head selectboxes: a layer past a new model's last is clamped, a head reset to 0."""
    clamped = min(max(int(st.session_state.get(layer_key, 0) or 0), 0), n_layers - 1)
    heads = ([MEAN] if allow_mean else []) + list(range(n_heads))
    a, b = st.columns(2)
    layer = pick(t("ctl.layer"), range(n_layers), layer_key, default=clamped, box=a, help=t("ctl.layer_help"))
    head = pick(t("ctl.head"), heads, head_key, default=0, box=b, format_func=fmt_head, help=t("ctl.head_help"))
    if layer_key == "layer" and (back := urls.index_write_back(st.query_params.to_dict(), int(layer), head)):
        st.query_params.update(back)  # the explorer's: a clamped value is written into the link at once
    return int(layer), (None if head == MEAN else int(head))


def lazily(key: str, title_key: str, show: Callable[..., None], *args: Any) -> None:
    """`show(*args)` in an expander titled `title_key`, closed by default and run only while
    open, so what a visitor has not opened costs nothing; it stays open for the session."""
    box = st.expander(t(title_key), key=key, on_change="rerun")
    if box.open:
        with box:
            show(*args)


def snapshot_slider(
    label: str, snapshots: list[Any], key: str, step_format: Callable[[int], str] = str, help: str | None = None
) -> int:
    """A slider over a training run's snapshots, each named by its step; the last one when the
    key's value is past the end. 0 without a slider when there is one snapshot."""
    n = len(snapshots)
    clamp_kept(key, 0, n - 1)
    steps = {k: step_format(snap.step) for k, snap in enumerate(snapshots)}
    return int(st.select_slider(label, list(steps), key=key, format_func=steps.__getitem__, help=help)) if n > 1 else 0


def caveat(key: str) -> None:
    """A short caveat beside a view, linking to the caveats page."""
    st.caption(t(key))
    st.page_link(nav.page("caveats", lang()), label=t("caveat.more"), icon=":material/info:")

"""Shared links: what the URL carries (?text=&model=&lang=&layer=&head=) and the strict parsing
of every value a link can bring. A link is written by anyone: nothing here may raise.

Pure functions (no streamlit), so they are tested directly, property-based.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import i18n
from ..models import check_model_name

__all__ = [
    "LINK_KEYS",
    "MAX_INDEX_DIGITS",
    "URL_TEXT_MAX",
    "Link",
    "index_write_back",
    "parse_index",
    "parse_link",
    "unused_params",
    "url_params",
]

MAX_INDEX_DIGITS = 3  # layers and heads are counted in tens; "0001" is still four characters
URL_TEXT_MAX = 500  # longer sentences stay out of the URL (browsers and proxies cap its length)
MEAN = -1  # the head value that means "the mean over heads"
_ASCII_DIGITS = frozenset("0123456789")
LINK_KEYS = ("text", "model", "lang", "layer", "head")  # what a link may carry; any other key is dropped
# Keys Streamlit itself reads from a link (embedding options): left alone.
_STREAMLIT_KEYS = frozenset({"embed", "embed_options"})


def parse_index(raw: object, max_digits: int = MAX_INDEX_DIGITS) -> int | None:
    """A non-negative index written in ASCII decimal digits only, at most `max_digits` long;
    None for anything else. `str.isdigit` is not enough: it accepts superscripts ("²"),
    circled numbers ("①") and other characters that `int()` then rejects (a crash link)."""
    if not isinstance(raw, str) or not 0 < len(raw) <= max_digits:
        return None
    if not set(raw) <= _ASCII_DIGITS:
        return None
    return int(raw)


@dataclass(frozen=True)
class Link:
    """What a shared link asked for, each part checked; `problems` names what was refused."""

    lang: str | None = None
    text: str | None = None
    model: str | None = None
    layer: int | None = None
    head: int | None = None  # MEAN for "mean"
    problems: tuple[str, ...] = field(default=())


def parse_link(params: Mapping[str, str], max_chars: int) -> Link:
    """Read ?lang=&text=&model=&layer=&head= strictly; a bad value is left out and named in
    `problems` ("text", "model"), never raised."""
    problems: list[str] = []
    lang = params.get("lang")
    text = params.get("text")
    if text is not None and not (isinstance(text, str) and text.strip() and len(text) <= max_chars):
        problems.append("text")
        text = None
    model = params.get("model")
    if model is not None:
        try:
            model = check_model_name(model)
        except ValueError:
            problems.append("model")
            model = None
    head_raw = params.get("head")
    head = MEAN if head_raw == "mean" else parse_index(head_raw)
    return Link(
        lang=lang if lang in i18n.LANGUAGES else None,
        text=text,
        model=model,
        layer=parse_index(params.get("layer")),
        head=head,
        problems=tuple(problems),
    )


def url_params(
    text: str, model: str, default_model: str, lang: str, layer: object = None, head: object = None
) -> dict[str, str | None]:
    """The query parameters that describe a view; None removes a parameter. layer and head are
    written only when they are ints (the explorer passes them, other pages do not)."""
    return {
        "text": text if text.strip() and len(text) <= URL_TEXT_MAX else None,
        "model": model if model != default_model else None,
        "lang": lang,
        "layer": str(layer) if isinstance(layer, int) and not isinstance(layer, bool) else None,
        "head": ("mean" if head == MEAN else str(head))
        if isinstance(head, int) and not isinstance(head, bool)
        else None,
    }


def unused_params(params: Mapping[str, str], link: Link) -> list[str]:
    """The keys of a link's query that nothing uses, so the page removes them from the URL (and
    from what Streamlit keeps of it for the session): keys other than LINK_KEYS, and a value
    `parse_link` refused or could not read (a text too long, a model refused, an unknown
    language, a layer or head that is not a small number)."""
    used = {
        "text": link.text is not None,
        "model": link.model is not None,
        "lang": link.lang is not None,
        "layer": link.layer is not None,
        "head": link.head is not None,
    }
    return [k for k in params if k not in _STREAMLIT_KEYS and not used.get(k, False)]


def index_write_back(params: Mapping[str, str], layer: int, head: int | None) -> dict[str, str]:
    """The layer and head the page shows, for a link that names others (`layer=12` on a 6-layer
    model is clamped to 5): the query values to write back so the URL says what is shown. Only
    keys the link carries are written; `head` None is the mean."""
    shown = {"layer": str(layer), "head": "mean" if head is None or head == MEAN else str(head)}
    return {k: v for k, v in shown.items() if k in params and params[k] != v}

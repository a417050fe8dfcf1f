"""Why a link's value was not used, as the page says it: each refused or removed key with its
reason, a refused text as empty or its length against the limit. The visitor's value is never
echoed."""

from __future__ import annotations

from collections.abc import Mapping

from .. import i18n
from .urls import _PAIR_KEYS, LINK_KEYS, MAX_INDEX_DIGITS, VIEW_PARAMS, Link, _length, _read, cut_length, value_max

_PARAMS = {p.key: p for p in VIEW_PARAMS}


def refusal(key: str, raw: object, max_chars: int) -> tuple[str, dict[str, object]]:
    """Why a link's value of `key` (one of LINK_KEYS) was not used: a catalogue key (links.why_*)
    and its fields. The value itself is never echoed (a visitor wrote it)."""
    length, most = _length(raw), value_max(key, max_chars)
    if length > most or cut_length(raw) is not None:
        return "links.why_long", {"n": f"{length:,}", "limit": f"{most:,}"}
    if key == "lang":
        return "links.why_choice", {"choices": ", ".join(i18n.LANGUAGES)}
    if key in ("layer", "head"):
        return ("links.why_head" if key == "head" else "links.why_int"), {"digits": MAX_INDEX_DIGITS}
    param = _PARAMS.get(key)
    if param is None:  # the text and the model: their own notices say more
        return "links.why_value", {}
    if key in _PAIR_KEYS and _read(param, raw) is not None:
        return "links.why_pair", {}
    if param.kind == "bool":
        return "links.why_bool", {}
    if param.kind == "choice":
        return "links.why_choice", {"choices": ", ".join(c for c in param.choices if c)}
    if param.kind == "int":
        return "links.why_int", {"digits": len(str(param.hi)) + 3}
    if param.kind == "float":
        return "links.why_share", {}
    heads = str(raw).count("_") + 1
    if heads > param.hi:
        return "links.why_heads", {"n": f"{heads:,}", "limit": f"{param.hi:,}"}
    return "links.why_pairs", {}


def text_refusal(link: Link, max_chars: int, language: str) -> str:
    """What the page says of a link's text it did not take: empty, or longer than the limit
    (with its length in characters)."""
    if link.text_chars > max_chars:
        return i18n.t("links.text_long", language, n=f"{link.text_chars:,}", limit=f"{max_chars:,}")
    return i18n.t("links.text_empty", language)


def removed_names(params: Mapping[str, str], unused: list[str], language: str) -> str:
    """The keys of a link the page removed, each with why ("off (83,000 characters; at most
    4,096)"), then the count of keys the app does not read; "" when there are none. The text
    and the model are left out: their own notices say why."""
    names = []
    for key in unused:
        if key in LINK_KEYS and key not in ("text", "model"):
            why, fields = refusal(key, params.get(key), 0)
            names.append(i18n.t(why, language, name=key, **fields))
    others = sum(k not in LINK_KEYS for k in unused)
    if others:
        names.append(i18n.t("links.others", language, n=others))
    return i18n.t("links.list_sep", language).join(names)

"""Shared links: what the URL carries (?text=&model=&lang=&layer=&head= and `VIEW_PARAMS`) and the
strict parsing of every value a link can bring. Anyone writes a link, so nothing here raises: a
value that cannot be read is refused (named on the page, removed from the link), a number past its
bound clamped. Lengths are characters after percent-decoding. Pure functions, tested property-based.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from .. import i18n
from ..lab.sparse import KINDS as SPARSE_KINDS
from ..models import check_model_name

MAX_INDEX_DIGITS = 3  # layers and heads are counted in tens; "0001" is still four characters
URL_TEXT_MAX = 500  # longer sentences stay out of the URL (browsers and proxies cap its length)
MEAN = -1  # the head value that means "the mean over heads"
_ASCII_DIGITS = frozenset("0123456789")
BASE_KEYS = ("text", "model", "lang", "layer", "head")  # the first links' keys: the view's own come after
OFF_MAX = 512  # switched-off heads a link may name (SmolLM2 has 270 heads)
VALUE_MAX = OFF_MAX * 8  # the longest value but the text a link writes: 512 heads as "999.999_"
# What client_guard.bounded_query leaves of a value too long for the server to keep: this, then
# the value's length in characters after decoding. No value a link writes starts with NUL; one a
# visitor forges only changes the length the page reports for that value.
CUT = "\x00cut:"
# Keys Streamlit itself reads from a link (embedding options): left alone.
_STREAMLIT_KEYS = frozenset({"embed", "embed_options"})
# A class's keys (app/sections/classroom.py reads and checks them): a join link's code, a student's
# place (code and token), the teacher's (code and secret). Never in a share link: they are a person's.
CLASS_KEYS = frozenset({"join", "class", "student", "teacher"})


def as_int(value: object) -> int | None:
    """`value` when it is an int (a client may send anything; a bool is no number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


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
class Param:
    """One part of the view a link carries: `key` in the URL, `home` in the session (a
    `state.KEPT` home, or a plain session key), the kind of value and its bounds. A value equal
    to `default` is not written (links stay short, and an old link means the defaults)."""

    key: str
    home: str
    kind: str  # "bool" ("1"/"0"), "int" (0..hi), "float" (0..1, two decimals), "choice", "pairs"
    default: object = None
    hi: int = 999
    choices: tuple[str, ...] = ()


# Everything of the view a link keeps beyond BASE_KEYS. The homes are the session keys the pages
# read (state.KEPT, heads_off.OFF); the choices are those of the widgets (tests/test_share_links.py
# holds them equal to the pages' own lists).
VIEW_PARAMS: tuple[Param, ...] = (
    Param("off", "heads_off", "pairs", (), hi=OFF_MAX),  # switched-off heads: layer.head_layer.head
    Param("mode", "ablation_mode", "choice", "zero", choices=("zero", "mean")),
    Param("click", "ablation_click", "bool", False),
    Param("sinks", "hide_sinks_on", "bool", False),
    Param("special", "hide_special", "bool", False),
    Param("merge", "merge_words", "bool", False),
    Param("range", "color_range", "choice", "fixed", choices=("fixed", "auto")),
    Param("views", "views_open", "bool", False),  # the head and graph views' expander
    Param("thr", "threshold", "float", 0.1),  # the graph view's and the head view's: written while it is open
    Param("hl", "highlight", "int", -1),
    Param("q", "focus_query", "int"),  # the token-focus pair: written while its section is open
    Param("k", "focus_key", "int"),
    Param("xlayer", "x_layer", "int"),
    Param(
        "xstat",
        "x_stat",
        "choice",
        "entropy_rel",
        choices=("entropy_rel", "prev", "next", "self", "cls", "sep", "punct"),
    ),
    Param("scale", "lab_scale", "bool", True),
    Param("pos", "lab_positions", "bool", True),
    Param("causal", "lab_causal", "bool", False),
    Param("random", "lab_random", "bool", False),
    Param("seed", "lab_seed", "int", 0, hi=2**31 - 1),
    Param("llayer", "lab_layer", "int", 0),
    Param("lhead", "lab_head", "int", 0),
    # The Corpus page (a link cannot carry an upload: "upload" is refused; the page clamps the
    # numbers to this server's limits and the run's model, and the link writes them back)
    Param("csrc", "corpus_source", "choice", "en", choices=("en", "zh", "both")),
    Param("climit", "corpus_limit", "int", 1000, hi=10**6),
    Param("ctok", "corpus_tokens", "int", 128, hi=4096),
    Param(
        "cstat",
        "corpus_stat",
        "choice",
        "entropy_rel",
        choices=("entropy", "entropy_rel", "self", "prev", "next", "cls", "sep", "punct"),
    ),
    Param("clayer", "corpus_layer", "int", 0),
    Param("chead", "corpus_head", "int", 0),
    # The Training lab (its pasted text stays out: up to 20,000 characters, too long for a link)
    Param("task", "train_task", "choice", "induction", choices=("copy", "reverse", "induction", "text")),
    Param("tlayers", "train_layers", "int", 2, hi=64),
    Param("theads", "train_heads", "int", 2, hi=64),
    Param("twidth", "train_d_model", "int", 64, hi=4096),
    Param("tsteps", "train_steps", "int", 800, hi=10**6),
    Param("tseed", "train_seed", "int", 0, hi=2**31 - 1),
    Param("tplateau", "train_plateau", "bool", True),
    Param("tsparse", "train_sparse", "choice", "", choices=("", *SPARSE_KINDS)),  # "": full causal
    Param("twindow", "train_window", "int", 2, hi=64),
)
FOCUS_OPEN = "focus_open"  # the token-focus section's switch: q and k are written while it is on
_PAIR_KEYS = frozenset({"q", "k"})
VIEWS_OPEN = "views_open"  # the expander of the head and graph views: thr and hl are written while it is open
_VIEWS_KEYS = frozenset({"thr", "hl"})
LINK_KEYS = BASE_KEYS + tuple(p.key for p in VIEW_PARAMS)  # what a link may carry; any other key is dropped
# heads_off.OFF_MODEL of heads a link switched off: they belong to the first model the page opens
LINK_OWNER = "__link__"
# Token choices a link made: the explorer sets its token defaults when a sentence is first analysed,
# and takes these instead (sections/explorer.py `analysis`)
LINK_TOKENS = "_link_tokens"
_TOKEN_HOMES = frozenset({"focus_query", "focus_key", "highlight"})


@dataclass(frozen=True)
class Link:
    """What a shared link asked for, each part checked; `problems` names what was refused."""

    lang: str | None = None
    text: str | None = None
    model: str | None = None
    layer: int | None = None
    head: int | None = None  # MEAN for "mean"
    problems: tuple[str, ...] = field(default=())
    view: Mapping[str, object] = field(default_factory=dict)  # session home -> value, each checked
    view_keys: frozenset[str] = frozenset()  # the URL keys of VIEW_PARAMS that gave a value
    text_chars: int = 0  # the length of a refused text, in characters; 0 when it was empty


def value_max(key: str, max_chars: int) -> int:
    """The most characters (after decoding) a link's value of `key` may hold: the text this
    server takes (ATTNVIZ_MAX_CHARS), any other value VALUE_MAX."""
    return max_chars if key == "text" else VALUE_MAX


def cut_length(raw: object) -> int | None:
    """The length in characters of a value the client guard cut (`CUT` and digits); None for
    any other value."""
    if not isinstance(raw, str) or not raw.startswith(CUT):
        return None
    return parse_index(raw[len(CUT) :], 12)


def _length(raw: object) -> int:
    """A value's length in characters as the visitor typed it (a cut value's is in its marker)."""
    cut = cut_length(raw)
    return cut if cut is not None else len(raw) if isinstance(raw, str) else 0


def parse_link(params: Mapping[str, str], max_chars: int) -> Link:
    """Read ?lang=&text=&model=&layer=&head= strictly; a bad value is left out and named in
    `problems` ("text", "model"), never raised. A text is refused when it is empty (or blank)
    or longer than `max_chars` (`text_chars` then says how long)."""
    problems: list[str] = []
    lang = params.get("lang")
    text = params.get("text")
    text_chars = 0
    if text is not None and not (
        isinstance(text, str) and cut_length(text) is None and text.strip() and len(text) <= max_chars
    ):
        problems.append("text")
        text_chars = _length(text) if isinstance(text, str) and text.strip() else 0
        text = None
    model = params.get("model")
    if model is not None:
        try:
            model = check_model_name(model)
        except ValueError:
            problems.append("model")
            model = None
    head = params.get("head")
    view, view_keys = parse_view(params)
    return Link(
        lang=lang if lang in i18n.LANGUAGES else None,
        text=text,
        model=model,
        layer=parse_index(params.get("layer")),
        head=MEAN if head == "mean" else parse_index(head),
        problems=tuple(problems),
        view=view,
        view_keys=frozenset(view_keys),
        text_chars=text_chars,
    )


def parse_view(params: Mapping[str, str]) -> tuple[dict[str, object], list[str]]:
    """The view's parts a link carries (`VIEW_PARAMS`), each read strictly: (session home ->
    value, the URL keys used). A value that cannot be read is left out; a number past its
    bound is clamped. The token-focus pair counts only whole (q and k both readable)."""
    read = [(param, value) for param in VIEW_PARAMS if (value := _read(param, params.get(param.key))) is not None]
    whole = {param.key for param, _ in read} >= _PAIR_KEYS
    kept = [(param, value) for param, value in read if whole or param.key not in _PAIR_KEYS]
    view: dict[str, object] = {param.home: value for param, value in kept}
    if whole:
        view[FOCUS_OPEN] = True  # a link with a pair opens the section that shows it
    return view, [param.key for param, _ in kept]


def apply_view(session: MutableMapping[Any, Any], link: Link) -> None:
    """Set what a link's view carries into the session, on a session's first run (state.py)."""
    for home, value in link.view.items():
        session[home] = [list(h) for h in value] if home == "heads_off" else value  # type: ignore[attr-defined]
    if "heads_off" in link.view:
        session["heads_off_model"] = LINK_OWNER
    if tokens := {home: value for home, value in link.view.items() if home in _TOKEN_HOMES}:
        session[LINK_TOKENS] = tokens
    if link.view_keys & _VIEWS_KEYS:
        session[VIEWS_OPEN] = True  # a link with the views' threshold or highlight opens them


def _read(param: Param, raw: object) -> object:
    """One value of a link, or None when it cannot be read."""
    if not isinstance(raw, str):
        return None
    if param.kind == "bool":
        return {"1": True, "0": False}.get(raw)
    if param.kind == "choice":
        return raw if raw in param.choices else None
    if param.kind == "int":
        value = parse_index(raw, len(str(param.hi)) + 3)  # "0001" and a few digits past the bound
        return None if value is None else min(value, param.hi)
    if param.kind == "float":  # 0..1 as ASCII digits with at most one point ("0.25", ".5", "1")
        whole, _dot, frac = raw.partition(".")
        if not 0 < len(raw) <= 6 or (not whole and not frac) or not set(whole + frac) <= _ASCII_DIGITS:
            return None
        return round(min(float(raw), 1.0), 2)  # past 1 clamped, two decimals: the slider's step
    return _read_pairs(raw, param.hi)


def _read_pairs(raw: str, most: int) -> tuple[tuple[int, int], ...] | None:
    """Heads as "layer.head" joined by "_" ("1.3_2.0"), sorted and without repeats; None for
    anything else, or for more than `most` heads (a link is not a list of every head twice)."""
    parts = raw.split("_") if raw else []
    if len(parts) > most or len(raw) > most * 8:
        return None
    heads = set()
    for part in parts:
        layer, dot, head = part.partition(".")
        a, b = parse_index(layer), parse_index(head)
        if not dot or a is None or b is None:
            return None
        heads.add((a, b))
    return tuple(sorted(heads))


def view_params(session: Mapping[Any, Any]) -> dict[str, str | None]:
    """The view's parts as query values (None removes a key): what differs from its default,
    each written as `parse_view` reads it; the token-focus pair while its section is open, the
    head and graph views' threshold and highlight while their expander is open."""
    out: dict[str, str | None] = {}
    for param in VIEW_PARAMS:
        value = session.get(param.home)
        text = _write(param, value) if value is not None and value != param.default else None
        if param.key in _PAIR_KEYS and not session.get(FOCUS_OPEN):
            text = None
        if param.key in _VIEWS_KEYS and session.get(VIEWS_OPEN) is not True:
            text = None
        out[param.key] = text
    return out


def _write(param: Param, value: object) -> str | None:
    """One value as the link writes it, or None when it is not one this parameter may carry."""
    if param.kind == "bool":
        return ("1" if value else "0") if isinstance(value, bool) else None
    if param.kind == "choice":
        return value if isinstance(value, str) and value in param.choices else None
    if param.kind == "int":
        number = as_int(value)
        return str(number) if number is not None and 0 <= number <= param.hi else None
    if param.kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            return None
        return f"{float(value):.2f}".rstrip("0").rstrip(".") or "0"
    return _write_pairs(value, param.hi)


def _write_pairs(value: object, most: int) -> str | None:
    if not isinstance(value, list | tuple):
        return None
    try:
        heads = sorted({(int(a), int(b)) for a, b in value})
    except (TypeError, ValueError):
        return None
    limit = 10**MAX_INDEX_DIGITS
    if not 0 < len(heads) <= most or not all(0 <= a < limit and 0 <= b < limit for a, b in heads):
        return None
    return "_".join(f"{a}.{b}" for a, b in heads)


def url_params(
    text: str, model: str, default_model: str, lang: str, layer: object = None, head: object = None
) -> dict[str, str | None]:
    """The query parameters that describe a view; None removes a parameter. layer and head are
    written only when they are ints (the explorer passes them, other pages do not)."""
    layer, head = as_int(layer), as_int(head)
    return {
        "text": text if text.strip() and len(text) <= URL_TEXT_MAX else None,
        "model": model if model != default_model else None,
        "lang": lang,
        "layer": None if layer is None else str(layer),
        "head": None if head is None else "mean" if head == MEAN else str(head),
    }


def unused_params(params: Mapping[str, str], link: Link) -> list[str]:
    """The keys of a link's query that nothing uses, for the page to remove: keys other than
    LINK_KEYS, and values `parse_link` refused or could not read."""
    base = {"text": link.text, "model": link.model, "lang": link.lang, "layer": link.layer, "head": link.head}
    used = {k for k, v in base.items() if v is not None} | link.view_keys | _STREAMLIT_KEYS | CLASS_KEYS
    return [k for k in params if k not in used]


def index_write_back(params: Mapping[str, str], layer: int, head: int | None) -> dict[str, str]:
    """The layer and head the page shows, for a link that names others (`layer=12` on a 6-layer
    model is clamped to 5): the query values to write back so the URL says what is shown. Only
    keys the link carries are written; `head` None is the mean."""
    shown = {"layer": str(layer), "head": "mean" if head is None or head == MEAN else str(head)}
    return {k: v for k, v in shown.items() if k in params and params[k] != v}

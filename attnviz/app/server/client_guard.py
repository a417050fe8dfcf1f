"""What any client may send, made harmless before Streamlit or a page reads it.

A browser sends each widget's value in the field its widget was registered with; a raw websocket
client can send anything: a radio's value as text, a chart selection that is not JSON, an index
past the end of a list. Streamlit takes the field it is given (`WStates.__getitem__` even
rewrites the widget's registered field to the one received), hands it to the widget's
deserializer, and a TypeError, IndexError or JSONDecodeError ends the run with a traceback in the
server log, on every later run of that session too, as the state is kept. `install` makes a
value that does not fit its widget count as never sent: the widget shows its default or its last
good value, and the run goes on. A frame that is not a BackMsg is logged in one line (Streamlit
closes that socket, as before) instead of with a traceback. And it derives Streamlit's upload
limit (`server.maxUploadSize`, read at each upload request) from the app's one setting,
`ATTNVIZ_CORPUS_UPLOAD_MB` (`Settings.corpus_upload_mb`): the uploader's words, its check in the
browser (`max_upload_size`) and the app's check use that number; the server's cap is one MB
above it, room for the multipart framing, so no file the uploader takes meets a raw 413.

A link's parameter longer than QUERY_PARAM_MAX is measured on what the visitor typed
(`bounded_query`): percent-decoded, a text of at most ATTNVIZ_MAX_CHARS characters (any other
value, urls.VALUE_MAX) reaches Streamlit re-encoded with only `%`, `&` and `+` escaped, so a
49,000-character text is kept however the browser encoded it (`%20` for a space, nine
characters for a Chinese one, twelve for an emoji). A longer one reaches it as its name and
urls.CUT with its length, so neither the session nor a closed tab's session keeps it, and the
page says how long it was and removes it from the link (urls.refusal, urls.unused_params). The
HTTP server reads a request whose head holds such a link (`head_max`; uvicorn's h11 stops at 16 KiB).

`install` is called by app.py on every run; it patches once per process, through the hooks of
app/streamlit_adapter.py. A fresh server's very first run starts before app.py has been
imported: that one run is unguarded (the pages' widgets have no registered metadata in a new
session yet, so it can only break that session's first run).
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import quote, unquote_plus

from ...config import DEFAULT_MAX_CHARS, Settings
from ..streamlit_adapter import (
    FIELDS_MAX,
    FRAME_LOGGER,
    QUERY_MAX,
    TRIGGER_PREFIX,
    filter_query_strings,
    filter_widget_states,
    is_element_id,
    option_names,
    set_upload_limit_mb,
    widget_metadata,
)
from ..urls import CUT, LINK_KEYS, cut_length, value_max

__all__ = [
    "FIELDS_MAX",
    "FRAME_LOGGER",
    "MAX_ID_CHARS",
    "QUERY_MAX",
    "QUERY_PARAM_MAX",
    "UPLOAD_FRAMING_MB",
    "bounded_query",
    "fits",
    "head_max",
    "install",
]

# Streamlit refuses an upload whose Content-Length (the file plus its multipart framing) exceeds
# server.maxUploadSize: at exactly the limit, a file the uploader accepts would get a raw 413.
UPLOAD_FRAMING_MB = 1
MAX_ID_CHARS = 400
# A link's query as Streamlit keeps it for the session (its ScriptRunContext holds the string the
# sanitiser returns, and a closed tab's session lives 120 s more). A parameter up to this long
# passes as it is (the page measures it after decoding); a longer one is decoded and kept only if
# what the visitor typed fits its limit (urls.value_max), re-encoded compactly: at most 3 x
# ATTNVIZ_MAX_CHARS characters (every character a `%`), where raw it could be 12 x (an emoji is
# four UTF-8 bytes, `%F0%9F%98%80`). Our own links write at most 500 characters (urls.URL_TEXT_MAX).
QUERY_PARAM_MAX = 64 * 1024
# Streamlit ignores a whole query longer than QUERY_MAX (every parameter, the text too): the
# longest parts are cut to their length first, so what fits is kept and the rest is named. Past
# FIELDS_MAX parameters, each key's last value is kept (the one the page reads), the link's own
# keys first, so the text survives and the rest are counted on the page.
# uvicorn's HTTP parser (h11, where httptools is not installed) answers "400 Invalid HTTP request"
# to a request whose head (request line and headers) is over 16 KiB, so a link with a text over
# about 16,000 characters never reached the page. The head may hold the longest text this server
# takes at its worst encoding (12 characters a character) and the rest of the link and headers
# (QUERY_PARAM_MAX); h11 holds at most this much of a request that never completes.
HEAD_PER_CHAR = 12


def head_max(max_chars: int) -> int:
    """The longest request head the server reads: room for a link with a text of `max_chars`."""
    return HEAD_PER_CHAR * max_chars + QUERY_PARAM_MAX


QUERY_KEY_MAX = 64  # "$$ID-" + a 32-digit hash + "-" + the widget's key (ours are short)
_LOCK = threading.Lock()
# Streamlit registers every number_input as "double_value", while its browser sends an integer
# input's value as "int_value" (frontend NumberInput: setIntValue for DataType.INT); its serde
# takes either. Without this every integer number input was dropped as a misfit.
_SAME_FIELD = frozenset({("int_value", "double_value")})
_DONE: list[bool] = []
_MAX_CHARS = [DEFAULT_MAX_CHARS]  # the text a link may carry: Settings.max_chars, set by install


def fits(proto: Any, metadata: Any) -> bool:
    """Whether a widget state from a client is in the field its widget was registered with
    (a cleared value, no field at all, always fits) and, for a widget of options (selectbox,
    radio, multiselect, ...), names only its options. Streamlit hands an unknown option name
    through as a plain string (for `accept_new_options`, which attnviz never uses), and a page
    reading the key before its widget is drawn would get "zz" for a layer number."""
    field = proto.WhichOneof("value")
    if field is None:
        return True
    if field != metadata.value_type and (field, metadata.value_type) not in _SAME_FIELD:
        return False
    names = option_names(metadata)
    if names is None:
        return True
    if field == "string_value":
        return proto.string_value in names
    if field == "string_array_value":
        return all(v in names for v in proto.string_array_value.data)
    return True


def _well_formed(session: Any, proto: Any) -> bool:
    """Whether a widget state may be kept at all: an element id (Streamlit reads any other key
    as a session-state entry the app set, and fails on it), or the trigger id of a v2 component
    registered in this session, not too long, in the field its widget was registered with when
    that is known."""
    wid = proto.id
    if not (isinstance(wid, str) and len(wid) <= MAX_ID_CHARS):
        return False
    metadata = widget_metadata(session, wid)
    if wid.startswith(TRIGGER_PREFIX):  # a v2 component's events (the explorer's grid): only one registered
        return metadata is not None and fits(proto, metadata)
    return is_element_id(wid) and (metadata is None or fits(proto, metadata))


def bounded_query(query_string: str, max_chars: int | None = None) -> str:
    """The query with every parameter longer than QUERY_PARAM_MAX measured after decoding: kept,
    re-encoded compactly, when it fits urls.value_max (`max_chars` for the text: the server's
    setting when None), else cut to its name (at most QUERY_KEY_MAX characters) and urls.CUT with
    its length; then, while the whole is longer than Streamlit keeps (QUERY_MAX), the longest
    parts cut the same way. Past FIELDS_MAX parameters, each key's last one, the link's own keys
    first. A query of few short parameters comes back as it is."""
    if len(query_string) <= QUERY_PARAM_MAX and query_string.count("&") < FIELDS_MAX:
        return query_string
    limit = _MAX_CHARS[-1] if max_chars is None else max_chars
    parts = query_string.split("&")
    if len(parts) > FIELDS_MAX:
        last = {unquote_plus(p.partition("=")[0]): p for p in parts}
        parts = sorted(last.values(), key=lambda p: unquote_plus(p.partition("=")[0]) not in LINK_KEYS)[:FIELDS_MAX]
    parts = [p if len(p) <= QUERY_PARAM_MAX else _bounded_part(p, limit) for p in parts]
    total = len(parts) - 1 + sum(map(len, parts))
    # the text the visitor typed goes last: other values are cut first, longest first
    order = sorted(
        range(len(parts)), key=lambda i: (unquote_plus(parts[i].partition("=")[0]) == "text", -len(parts[i]))
    )
    for i in order:
        if total <= QUERY_MAX:
            break
        cut = _cut_part(parts[i])
        total -= len(parts[i]) - len(cut)
        parts[i] = cut
    return "&".join(parts)


def _bounded_part(part: str, max_chars: int) -> str:
    key, _eq, value = part.partition("=")
    typed = unquote_plus(value)  # what the visitor typed, as parse_qs will read it
    if len(typed) > value_max(unquote_plus(key), max_chars):
        return _cut_part(part)
    # Only what would change how parse_qs splits or decodes it is escaped; any other character,
    # a Chinese one too, stays one character
    compact = typed.replace("%", "%25").replace("&", "%26").replace("+", "%2B")
    return key[:QUERY_KEY_MAX] + "=" + compact


def _cut_part(part: str) -> str:
    """A parameter as its name and urls.CUT with its value's length in characters (decoded)."""
    key, _eq, value = part.partition("=")
    typed = unquote_plus(value)
    length = cut_length(typed)
    return key[:QUERY_KEY_MAX] + "=" + quote(CUT + str(len(typed) if length is None else length))


def _one_line(record: logging.LogRecord) -> bool:
    """A frame that is not a BackMsg: one warning line, no traceback."""
    if record.exc_info and record.exc_info[1] is not None:
        record.msg = f"{record.getMessage()} ({type(record.exc_info[1]).__name__}; socket closed)"
        record.args = None
        record.exc_info = None
        record.exc_text = None
    return True


def install(settings: Settings) -> None:
    """Guard widget states and quiet malformed frames (once per process); set the upload limit
    and the longest text a link may carry (in the query and in the HTTP request)."""
    with _LOCK:
        _MAX_CHARS[-1] = settings.max_chars
        if not _DONE:
            filter_widget_states(_well_formed, fits)
            logging.getLogger(FRAME_LOGGER).addFilter(_one_line)
            filter_query_strings(bounded_query)
            _DONE.append(True)
        _allow_long_links(settings.max_chars)
        set_upload_limit_mb(settings.corpus_upload_mb + UPLOAD_FRAMING_MB)


def _allow_long_links(max_chars: int) -> None:
    """Raise uvicorn's limit on a request's head to `head_max` (read for each new connection).
    A fresh server's first request comes before app.py has run: it still meets h11's 16 KiB."""
    try:
        from uvicorn.protocols.http import h11_impl
    except ImportError:  # another server, or httptools only
        return
    if isinstance(getattr(h11_impl, "DEFAULT_MAX_INCOMPLETE_EVENT_SIZE", None), int):
        h11_impl.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE = max(16 * 1024, head_max(max_chars))

"""What any client may send, made harmless before Streamlit or a page reads it. `install`, called
by app.py on every run, patches once per process through app/streamlit_adapter.py.

A raw websocket client can send a widget any value in any field; Streamlit hands it to the
widget's deserializer, and an error there ends that run, and every later run of the session (the
state is kept), in a traceback. Here a value that does not fit its widget counts as never sent:
the widget shows its default or last good value. A frame that is not a BackMsg is logged in one
line. A link's parameter is bounded by what the visitor typed (`bounded_query`), and the HTTP
server reads a request head that holds the longest link (`head_max`). A fresh server's very first
run, before app.py is imported, is unguarded (no widget has registered metadata yet).
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

# Streamlit refuses an upload whose Content-Length (the file plus its multipart framing) exceeds
# server.maxUploadSize: its cap is this far above ATTNVIZ_CORPUS_UPLOAD_MB, so no file the uploader
# takes meets a raw 413.
UPLOAD_FRAMING_MB = 1
MAX_ID_CHARS = 400
# Streamlit keeps a session's query (and a closed tab's for 120 s more): a parameter up to this
# long passes as it is; a longer one is kept, re-encoded compactly, only if what the visitor typed
# fits urls.value_max: at most 3 x ATTNVIZ_MAX_CHARS characters, where raw it could be 12 x (an
# emoji is `%F0%9F%98%80`). Our own links write at most 500 characters (urls.URL_TEXT_MAX).
QUERY_PARAM_MAX = 64 * 1024
# uvicorn's h11 answers 400 to a request head over 16 KiB: the head may hold the longest text this
# server takes at its worst encoding (12 characters a character) and QUERY_PARAM_MAX of the rest.
HEAD_PER_CHAR = 12


def head_max(max_chars: int) -> int:
    """The longest request head the server reads: room for a link with a text of `max_chars`."""
    return HEAD_PER_CHAR * max_chars + QUERY_PARAM_MAX


QUERY_KEY_MAX = 64  # "$$ID-" + a 32-digit hash + "-" + the widget's key (ours are short)
_LOCK = threading.Lock()
# Streamlit registers every number_input as "double_value", while its browser sends an integer
# input's value as "int_value" (frontend NumberInput: setIntValue); its serde takes either.
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

"""Streamlit's internals: the one module of attnviz that reaches past the public `streamlit` API.
Each is listed in `INTERNALS` with what needs it, and tests/test_streamlit_adapter.py fails
naming the one a release moved (the app runs on Streamlit 1.66.1 and 1.67.0). Also here: the query
limits, the frontend build's entry module and chunks, the "streamlit" Plotly template and each
frontend's page colours, and the types in annotations.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import streamlit
from streamlit import config as st_config
from streamlit.delta_generator import DeltaGenerator as DeltaGenerator
from streamlit.elements.plotly_chart import PlotlyState as PlotlyState
from streamlit.navigation.page import StreamlitPage as StreamlitPage
from streamlit.runtime import scriptrunner


class Internal(NamedTuple):
    path: str  # module, then attributes: "streamlit.runtime.state.session_state.WStates.__getitem__"
    need: str  # what of attnviz stops working without it


_GUARD = "client_guard's widget-state check needs a new hook"
_LINKS = "client_guard's link bounds need a new hook"
_RUN = "the script run's context moved"
INTERNALS: tuple[Internal, ...] = (
    Internal("streamlit.runtime.state.session_state.WStates.__getitem__", _GUARD),
    Internal("streamlit.runtime.state.session_state.WStates.states", _GUARD),
    Internal("streamlit.runtime.state.session_state.WStates.widget_metadata", _GUARD),
    Internal("streamlit.runtime.state.session_state.SessionState.set_widgets_from_proto", _GUARD),
    Internal("streamlit.runtime.state.session_state.SessionState._new_widget_state", _GUARD),
    Internal("streamlit.runtime.state.session_state.Serialized.value", _GUARD),
    Internal("streamlit.runtime.state.session_state.STREAMLIT_INTERNAL_KEY_PREFIX", _GUARD),
    Internal("streamlit.runtime.state.common.is_element_id", _GUARD),
    Internal("streamlit.runtime.state.common.GENERATED_ELEMENT_ID_PREFIX", _GUARD),
    Internal("streamlit.runtime.state.common.WidgetMetadata.value_type", _GUARD),
    Internal("streamlit.runtime.state.common.WidgetMetadata.deserializer", _GUARD),
    Internal("streamlit.proto.WidgetStates_pb2.WidgetStates", _GUARD),
    Internal("streamlit.runtime.app_session.sanitize_query_string", _LINKS),
    Internal("streamlit.runtime.state.query_params.sanitize_query_string", _LINKS),
    Internal("streamlit.web.server.starlette.starlette_websocket", "client_guard's frame logger has a new name"),
    Internal("streamlit.config.get_config_options", "plot_theme cannot tell a deployment's own theme"),
    Internal("streamlit.config.set_option", "the corpus upload limit cannot be set"),
    Internal("streamlit.runtime.Runtime.exists", "sessions.py cannot tell a closed tab"),
    Internal("streamlit.runtime.Runtime.is_active_session", "sessions.py cannot tell a closed tab"),
    Internal("streamlit.runtime.scriptrunner.get_script_run_ctx", _RUN),
    Internal("streamlit.runtime.scriptrunner.ScriptRunContext.session_id", _RUN),
    Internal("streamlit.runtime.scriptrunner.ScriptRunContext.cursors", "the first map's slot cannot be matched"),
    Internal("streamlit.runtime.scriptrunner.ScriptRunContext.yield_check", "a waiting run cannot be stopped"),
    Internal("streamlit.runtime.scriptrunner.ScriptRunContext._enqueue", "the turn's checkpoint needs a new hook"),
    Internal("streamlit.runtime.pages_manager.PagesManager.uses_pages_directory", "a first visit may run a page alone"),
    Internal("streamlit.elements.lib.streamlit_plotly_theme.configure_streamlit_plotly_theme", "plot_theme's copy"),
)

FRAME_LOGGER = "streamlit.web.server.starlette.starlette_websocket"
# The frontend build: the entry module as the page's <script type="module"> names it, and the
# chunks it imports on first use (Vite names them <component>.<8-character hash>.js).
STATIC_JS = Path(streamlit.__file__).parent / "static" / "static" / "js"
ENTRY_MODULE = 'script[type="module"][src*="/static/js/index."]'
_CHUNKS = {"chart": "PlotlyChart", "component": "BidiComponent", "code": "StreamlitSyntaxHighlighter"}


class StreamlitMoved(AttributeError):
    """An internal of `INTERNALS` is not where this Streamlit keeps it."""


def internal(path: str) -> Any:
    """The object at `path` (a module, then attributes; a dataclass field counts for its
    instances'); StreamlitMoved naming it and what needs it when this Streamlit lacks it."""
    need = next((i.need for i in INTERNALS if i.path == path), "attnviz uses it")
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            fields = getattr(found, "__dataclass_fields__", {})
            if not hasattr(found, name) and name not in fields:
                break
            found = getattr(found, name) if hasattr(found, name) else fields[name]
        else:
            return found
        break
    raise StreamlitMoved(f"{path} is gone (Streamlit {streamlit.__version__}): {need}")


def _either(module: str, *names: str) -> Any:
    for name in names:
        with contextlib.suppress(StreamlitMoved):
            return internal(f"{module}.{name}")
    raise StreamlitMoved(f"{module}.{names[0]} is gone (Streamlit {streamlit.__version__}): {_LINKS}")


_QUERY = "streamlit.runtime.state.query_params"
# Streamlit ignores a whole query longer than this, or of more parameters (said nowhere).
QUERY_MAX: int = _either(_QUERY, "CLIENT_STATE_QUERY_STRING_MAX_LENGTH", "_CLIENT_STATE_QUERY_STRING_MAX_LENGTH")
FIELDS_MAX: int = _either(_QUERY, "CLIENT_STATE_QUERY_STRING_MAX_FIELDS", "_CLIENT_STATE_QUERY_STRING_MAX_FIELDS")
# The id of a v2 component's trigger values ("$$STREAMLIT_INTERNAL_KEY_" + its element id + "__events").
TRIGGER_PREFIX = (
    f"{internal('streamlit.runtime.state.session_state.STREAMLIT_INTERNAL_KEY_PREFIX')}_"
    f"{internal('streamlit.runtime.state.common.GENERATED_ELEMENT_ID_PREFIX')}"
)


def is_element_id(key: str) -> bool:
    """Whether `key` is an element's id (Streamlit reads any other key as the app's own entry)."""
    return bool(internal("streamlit.runtime.state.common.is_element_id")(key))


def widget_metadata(session: Any, widget_id: str) -> Any:
    """The registered metadata (`value_type`, `deserializer`) of a widget of `session` (a
    SessionState), or None."""
    return session._new_widget_state.widget_metadata.get(widget_id)


def option_names(metadata: Any) -> set[str] | None:
    """The option names (as the browser sends them) of an options widget; None for others."""
    serde = getattr(metadata.deserializer, "__self__", None)
    for attr in ("formatted_option_to_option_index", "formatted_option_to_index", "formatted_options"):
        names = getattr(serde, attr, None)
        if isinstance(names, dict | list | tuple) and names:
            return {str(n) for n in names}
    return None


def filter_widget_states(keep: Callable[[Any, Any], bool], fits: Callable[[Any, Any], bool]) -> None:
    """Patch Streamlit (once per process) so that a widget state a client sends is dropped unless
    `keep(session, proto)`, and a kept one whose value does not `fits(proto, metadata)`, or its
    widget's deserializer refuses, reads as never sent (a KeyError, as a missing one does)."""
    wstates = internal("streamlit.runtime.state.session_state.WStates")
    session_state = internal("streamlit.runtime.state.session_state.SessionState")
    serialized = internal("streamlit.runtime.state.session_state.Serialized")
    widget_states = internal("streamlit.proto.WidgetStates_pb2.WidgetStates")
    take, read = session_state.set_widgets_from_proto, wstates.__getitem__

    def set_widgets_from_proto(self: Any, states: Any) -> None:
        kept = widget_states()
        kept.widgets.extend(s for s in states.widgets if keep(self, s))
        take(self, kept)

    def __getitem__(self: Any, key: str) -> Any:
        wstate = self.states.get(key)
        if not isinstance(wstate, serialized):
            return read(self, key)
        metadata = self.widget_metadata.get(key)
        # not deleted here: callers iterate over the states, and the widget overwrites a misfit
        # with its default or last value when it registers
        if metadata is not None and not fits(wstate.value, metadata):
            raise KeyError(key)
        try:
            return read(self, key)
        except Exception as exc:  # the widget's deserializer refused the value (or read's own KeyError)
            raise KeyError(key) from exc

    set_widgets_from_proto.__wrapped__ = take  # type: ignore[attr-defined]
    __getitem__.__wrapped__ = read  # type: ignore[attr-defined]
    session_state.set_widgets_from_proto = set_widgets_from_proto
    wstates.__getitem__ = __getitem__


def filter_query_strings(bound: Callable[[str], str]) -> None:
    """Patch Streamlit (once per process) so that every query string a run reads (a session's
    first and each rerun's) passes `bound` before Streamlit's own sanitiser."""
    for module in ("streamlit.runtime.app_session", _QUERY):
        owner = importlib.import_module(module)
        original = internal(f"{module}.sanitize_query_string")

        def sanitize_query_string(query_string: str, original: Any = original) -> str:
            return original(bound(query_string) if isinstance(query_string, str) else query_string)

        sanitize_query_string.__wrapped__ = original  # type: ignore[attr-defined]
        owner.sanitize_query_string = sanitize_query_string  # type: ignore[attr-defined]


def set_upload_limit_mb(mb: int) -> None:
    """Streamlit's upload cap (`server.maxUploadSize`, read at each upload request)."""
    if st_config.get_option("server.maxUploadSize") != mb:
        st_config.set_option("server.maxUploadSize", mb)


def theme_options_set() -> bool:
    """Whether .streamlit/config.toml (or the command line) sets any [theme] option."""
    options = st_config.get_config_options()
    return any(option.value is not None for name, option in options.items() if name.startswith("theme."))


def session_alive(session: str) -> bool:
    """Whether Streamlit's runtime still holds `session` (a closed tab leaves it at once, a
    reconnecting one comes back with the same id); True with no runtime (tests, scripts)."""
    from streamlit.runtime import Runtime

    return not Runtime.exists() or bool(Runtime.instance().is_active_session(session))


def script_run(quiet: bool = False) -> Any:
    """This thread's ScriptRunContext, or None (no page run: a test, a worker thread).
    `quiet`: no warning about a missing one."""
    return scriptrunner.get_script_run_ctx(suppress_warning=quiet)


def session_id() -> str:
    """The session of this thread's page run; "bare" outside one."""
    run = script_run()
    return run.session_id if run is not None else "bare"


def run_cursors() -> Any:
    """Where this page run writes its elements (a new object each run), or None outside one."""
    run = script_run()
    return None if run is None else run.cursors


def stop_check() -> Callable[[], None] | None:
    """What raises when the session asks this thread's page run to rerun or stop."""
    return getattr(script_run(quiet=True), "yield_check", None)


@contextlib.contextmanager
def before_each_message(hook: Callable[[], None]) -> Iterator[None]:
    """`hook()` before each message this page run sends to the browser (Streamlit's own yield
    points), while inside; nothing outside a page run."""
    run = script_run()
    send = getattr(run, "_enqueue", None)
    if run is None or send is None:
        yield
        return

    def enqueue(msg: object) -> None:
        hook()
        send(msg)

    run._enqueue = enqueue
    try:
        yield
    finally:
        run._enqueue = send


def leave_legacy_pages_mode() -> None:
    """Streamlit decides once per process, when the first session starts, whether the app is an
    old-style multipage app: `PagesManager.uses_pages_directory` becomes True when a `pages/`
    folder sits beside the main script, and stays so until some run calls st.navigation. Until
    then a visitor whose first URL is /lab gets pages/lab.py run on its own, without app.py.
    app.py is never an old-style app: it says so at the top of every run, and a page that finds
    itself run alone reruns."""
    internal("streamlit.runtime.pages_manager.PagesManager").uses_pages_directory = False


def chunk_pattern(kind: str) -> re.Pattern[str]:
    """The file name of one of the build's lazily loaded chunks: `kind` "chart" (Plotly),
    "component" (v2 components) or "code" (st.code's highlighter)."""
    return re.compile(_CHUNKS[kind] + r"\.[A-Za-z0-9_-]{4,16}\.js")


def build_file(kind: str, static: Path | None = None) -> str | None:
    """The file name of the chunk `kind` (`chunk_pattern`) in the build, if exactly one."""
    pattern = chunk_pattern(kind)
    names = [p.name for p in (static or STATIC_JS).glob(f"{_CHUNKS[kind]}.*.js") if pattern.fullmatch(p.name)]
    return names[0] if len(names) == 1 else None


# The page's surface colours as each frontend resolves them in a chart drawn with theme="streamlit"
# (read in chromium from the chart's layout.template): 1.67 brought a warm palette, the releases
# before it have the classic one. Every other colour of the chart look is the same in both.
_SURFACES: dict[tuple[int, int], dict[str, dict[str, str]]] = {
    (1, 67): {
        "light": {"bg": "#FFFFFF", "heading": "#2F2D2B", "border": "#DCD8D4",
                  "faded05": "rgba(47, 45, 43, 0.1)", "bg_mix": "rgba(252, 252, 251, 1)"},
        "dark": {"bg": "#171614", "heading": "#EDEBE8", "border": "#4A4742",
                 "faded05": "rgba(237, 235, 232, 0.1)", "bg_mix": "rgba(34, 33, 30, 1)"},
    },
    (0, 0): {
        "light": {"bg": "#ffffff", "heading": "#31333F", "border": "rgba(49, 51, 63, 0.2)",
                  "faded05": "rgba(49, 51, 63, 0.1)", "bg_mix": "rgba(248, 249, 251, 1)"},
        "dark": {"bg": "#0e1117", "heading": "#fafafa", "border": "rgba(250, 250, 250, 0.2)",
                 "faded05": "rgba(250, 250, 250, 0.1)", "bg_mix": "rgba(26, 28, 36, 1)"},
    },
}  # fmt: skip


def release() -> tuple[int, int]:
    """The installed Streamlit's (major, minor)."""
    major, minor = (int(part) for part in re.findall(r"\d+", streamlit.__version__)[:2])
    return major, minor


def theme_surfaces() -> dict[str, dict[str, str]]:
    """The background, heading, border, faded line and header fill colours, light and dark, of
    the installed release's frontend (the newest table entry at or below it)."""
    return _SURFACES[max(r for r in _SURFACES if r <= release())]


def chart_template() -> tuple[dict[str, Any], dict[str, str]]:
    """Streamlit's "streamlit" Plotly template as plain JSON, and its placeholder colours by
    name ("CATEGORY_0": "#000001", ...), which the browser swaps for the theme's."""
    import json

    import plotly.io as pio

    theme = importlib.import_module("streamlit.elements.lib.streamlit_plotly_theme")
    default = pio.templates.default  # configuring also makes it plotly's default: put back
    internal("streamlit.elements.lib.streamlit_plotly_theme.configure_streamlit_plotly_theme")()
    pio.templates.default = default
    names = {k: v for k, v in vars(theme).items() if k.isupper() and isinstance(v, str) and v.startswith("#0000")}
    return json.loads(pio.json.to_json_plotly(pio.templates["streamlit"].to_plotly_json())), names

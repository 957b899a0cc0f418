"""Wire APIs: one module per API, and the registry every other layer asks.

A wire API owns **every** fact of one provider format, behind the typed
:class:`WireAPI` protocol: its name, the endpoint for a model, request building
(auth header included), the response framing (SSE, NDJSON, binary event
stream), the per-response decoder, how the mock server renders a scripted reply
in its bytes, how a request body carries tool results, and which tool-call ids it
accepts (handoff). Nothing outside this package names a wire API: the catalog's
validation, the CLI's ``--api`` choices, the mock server, the demo, handoff and
the pipeline all ask this registry.

Discovery needs no central list: the module of API ``ollama-chat`` is
``modelwire._apis.ollama_chat`` (``-`` becomes ``_``), and its ``API`` attribute is
the :class:`WireAPI`. Names are listed from the package's modules without
importing them, and a module is imported on first use, so ``import modelwire``
stays cheap. Modules whose name starts with ``_`` are shared helpers, not APIs.
User APIs are added at run time with :func:`register_wire_api`.

A *provider* may reuse an API with its own URL and auth rules (Azure OpenAI on
``openai-chat``, Vertex AI on ``google-generative-ai``): those are
:mod:`modelwire._providers`, applied by the client to the request an API built.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias, runtime_checkable

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from .._deltas import Delta
    from .._framing import Framing
    from .._options import HTTPRequest, RequestOptions
    from .._sse import ServerSentEvent
    from ..events import Event
    from ..types import Context, Model
    from ._mock import Frame, ScriptedReply

__all__ = [
    "DEFAULT_API",
    "IdRule",
    "StreamFunction",
    "WireAPI",
    "WireDecoder",
    "api_module",
    "api_names",
    "builtin_api_names",
    "custom_stream",
    "custom_stream_sync",
    "find_api",
    "get_api",
    "register_stream_function",
    "register_wire_api",
]

#: The API a bare ``--base-url`` or a ``MockServer.model()`` speaks when none is named:
#: the most widely implemented one (vLLM, llama.cpp, LM Studio, Ollama's ``/v1``…).
DEFAULT_API = "openai-chat"


class IdRule(NamedTuple):
    """What a target API accepts as a tool-call id (used by :mod:`modelwire._handoffs`)."""

    valid: re.Pattern[str]
    """Ids that match (``fullmatch``) are kept."""
    bad: re.Pattern[str] | None
    """Characters replaced by ``_`` when an id is rewritten (``None``: any)."""
    max_len: int
    """Longest id."""
    exact: int | None = None
    """Required length of a rewritten id (Mistral: 9), made of letters and digits."""


class WireDecoder(Protocol):
    """A fresh per-response decoder: one frame in, normalized deltas out.

    ``decode`` validates one payload and returns deltas (:mod:`modelwire._deltas`),
    raising a ``StreamError`` subclass for bad input (a ``MalformedChunkError``
    naming the field path); ``end`` is called when the body is complete and
    returns ``[EndOfStream()]`` or raises ``TruncatedStreamError`` when the API's
    terminal signal is missing.
    """

    def decode(self, event: ServerSentEvent) -> list[Delta]: ...

    def end(self) -> list[Delta]: ...


@runtime_checkable
class WireAPI(Protocol):
    """Every fact of one wire API. Implementations are stateless singletons."""

    @property
    def name(self) -> str:
        """The ``Model.api`` value, e.g. ``"ollama-chat"``."""
        ...

    @property
    def content_type(self) -> str:
        """The media type of a streamed response (``text/event-stream``,
        ``application/x-ndjson``…), sent by the mock server."""
        ...

    @property
    def version_segment(self) -> str:
        """The version segment of a ``base_url`` for this API (``/v1``, ``/v1beta``,
        ``""`` for a server root): what ``MockServer.model(api)`` appends."""
        ...

    def path(self, model_id: str) -> str:
        """The endpoint appended to ``Model.base_url`` (``/chat/completions``)."""
        ...

    def matches_path(self, path: str) -> bool:
        """Whether a request target (query string included) is this API's endpoint."""
        ...

    def request_model(self, path: str, body: object) -> str | None:
        """The model id a request asked for (the body's ``model``, or a path segment)."""
        ...

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        """Pure: the URL, headers and JSON body; ``ConfigurationError`` for
        impossible options, before any I/O."""
        ...

    def framing(self, max_event_bytes: int) -> Framing:
        """A fresh decoder of the response body into frames (:mod:`modelwire._framing`)."""
        ...

    def new_decoder(self, model: Model | None) -> WireDecoder:
        """A fresh per-response decoder."""
        ...

    def render(
        self, reply: ScriptedReply, model: str, response_id: str, piece_chars: int
    ) -> list[Frame]:
        """A scripted reply as this API's events, unframed (for the mock server)."""
        ...

    def encode_frames(self, frames: Sequence[Frame]) -> list[bytes]:
        """Each frame as the bytes this API's framing puts on the wire."""
        ...

    def tool_results(self, body: object) -> list[str]:
        """The texts of the tool results in a request body, in order."""
        ...

    def tool_id_rule(self, model: Model) -> IdRule | None:
        """Which tool-call ids ``model`` accepts (``None``: any), for handoff."""
        ...


#: A custom API that produces events itself: ``(model, context, options) -> events``,
#: an async generator function or a sync one (see ``modelwire._custom`` for which path
#: serves which).
StreamFunction: TypeAlias = Callable[..., "AsyncIterator[Event] | Iterator[Event]"]


_MEMBERS = ("name", "content_type", "version_segment", "path", "matches_path", "request_model",
            "build_request", "framing", "new_decoder", "render", "encode_frames",
            "tool_results", "tool_id_rule")  # fmt: skip
_NAME = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
# One registry, two kinds of entry: a name is either a WireAPI or a stream function.
_registry: dict[str, WireAPI] = {}
_streams: dict[str, StreamFunction] = {}
_sync_streams: dict[str, StreamFunction] = {}  # the function the sync path runs, if any


def __getattr__(name: str) -> tuple[str, ...]:
    # ``BUILTIN_APIS`` (older spelling, still read by the agent): the shipped API names.
    if name == "BUILTIN_APIS":
        return builtin_api_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def api_module(name: str) -> str:
    """The module that owns built-in API ``name``: ``ollama-chat`` →
    ``modelwire._apis.ollama_chat``."""
    return f"{__name__}.{name.replace('-', '_')}"


def builtin_api_names() -> tuple[str, ...]:
    """Every API shipped in this package, sorted (modules listed, not imported)."""
    return tuple(
        sorted(
            m.name.replace("_", "-")
            for m in pkgutil.iter_modules(__path__)
            if not m.name.startswith("_")
        )
    )


def api_names() -> tuple[str, ...]:
    """Every known API: built-in ones, then those registered at run time."""
    builtin = builtin_api_names()
    return builtin + tuple(sorted(n for n in {*_registry, *_streams} if n not in builtin))


def _unknown(name: str) -> ConfigurationError:
    return ConfigurationError(f"unknown api {name!r}; known: {', '.join(api_names())}")


def find_api(name: str) -> WireAPI | None:
    """The wire API named ``name``, or ``None`` (unknown, or a stream function)."""
    found = _registry.get(name)
    if found is not None:
        return found
    if name in _streams or not isinstance(name, str) or not _NAME.fullmatch(name) or "." in name:
        return None
    module = api_module(name)
    if importlib.util.find_spec(module) is None:
        return None
    api = importlib.import_module(module).API
    if not isinstance(api, WireAPI) or api.name != name:
        raise ConfigurationError(f"{module}.API is not the WireAPI {name!r}")
    _registry[name] = api
    return api


def get_api(name: str) -> WireAPI:
    """The wire API registered as ``name``; ``ConfigurationError`` if unknown."""
    api = find_api(name)
    if api is None:
        raise _unknown(name)
    return api


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(
            f"an api name is lower-case letters and digits joined by '-' or '.', got {name!r}"
        )
    return name


def register_wire_api(api: WireAPI, name: str | None = None) -> None:
    """Register ``api`` (a :class:`WireAPI`) under ``name`` (default ``api.name``).
    The object is not changed; a later registration of the same name wins."""
    if not isinstance(api, WireAPI):
        missing = [m for m in _MEMBERS if not hasattr(api, m)]
        raise ConfigurationError(
            f"{type(api).__name__} is not a WireAPI: it lacks {', '.join(sorted(missing))}"
        )
    key = _check_name(api.name if name is None else name)
    _streams.pop(key, None)
    _sync_streams.pop(key, None)
    _registry[key] = api


def register_stream_function(
    name: str, fn: StreamFunction, *, sync: StreamFunction | None = None
) -> None:
    """Register a custom API that produces events itself (``mw.register_api``).

    ``sync`` is a sync generator function the sync path runs instead of ``fn`` (for
    an API written twice, such as ``ScriptedModel``'s); without it, ``fn`` serves the
    sync path unless it is an async generator function."""
    if not callable(fn) or (sync is not None and not callable(sync)):
        raise ConfigurationError("a stream function must be callable")
    key = _check_name(name)
    _registry.pop(key, None)
    _streams[key] = fn
    if sync is None and not (
        inspect.isasyncgenfunction(fn) or inspect.isasyncgenfunction(getattr(fn, "__call__", None))  # noqa: B004
    ):
        sync = fn
    if sync is None:
        _sync_streams.pop(key, None)
    else:
        _sync_streams[key] = sync


def custom_stream(name: str) -> StreamFunction | None:
    """The stream function registered as ``name``, or ``None``."""
    return _streams.get(name)


def custom_stream_sync(name: str) -> StreamFunction | None:
    """The stream function the sync path runs for ``name``, or ``None`` (only an async
    one is registered, or none)."""
    return _sync_streams.get(name)

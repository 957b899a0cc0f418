"""Wire APIs: one module per API, and the registry every other layer asks.

A wire API owns **every** fact of one provider format. Its required part is a small
codec (:class:`WireCodec`, :mod:`modelwire._apis._codec`): the name, the endpoint
for a model, request building (auth header included), the response framing (SSE,
NDJSON, binary event stream), the per-response decoder and ``recognizes``, which
wrong-API detection asks of every registered API. Optional client facets, typed
separately: ``handoff`` (:class:`HandoffFacet`: which tool-call ids it accepts) and
``counting`` (:class:`CountFacet`: its token-counting endpoint). What a model of the
API supports is typed data, ``codec.capabilities(model)``, the bottom layer of the
model's profile (:mod:`modelwire._apis._profile`).

A server speaks an API through its :class:`~modelwire._apis._server.wire.WireServer`
(:func:`find_server`): events rendered as the API's bytes and its routing facts, one
renderer shared by the gateway and the mock server. Nothing outside this package
names a wire API: the catalog's validation, the CLI's ``--api`` choices, the mock
server (routing by :func:`server_routes`), the demo, handoff and the pipeline all ask
this registry, each for the part it needs.

Discovery needs no central list: the package of API ``ollama-chat`` is
``modelwire._apis.ollama_chat`` (``-`` becomes ``_``); its ``API`` attribute is the
:class:`WireCodec` and its ``SERVER`` attribute the API's server side. Names are listed from the package's modules without
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
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

from ..errors import ConfigurationError
from ._codec import (
    BackgroundFacet,
    CountFacet,
    Counting,
    EmbedFacet,
    HandoffFacet,
    IdRule,
    WireCodec,
    WireDecoder,
    check_codec,
)

if TYPE_CHECKING:
    from ..events import Event
    from ._batch import BatchFacet
    from ._server.wire import WireServer

__all__ = [
    "DEFAULT_API",
    "MODEL_SLOT",
    "BackgroundFacet",
    "CountFacet",
    "Counting",
    "EmbedFacet",
    "HandoffFacet",
    "IdRule",
    "StreamFunction",
    "WireAPI",
    "WireCodec",
    "WireDecoder",
    "api_for_path",
    "api_module",
    "api_names",
    "background_facet",
    "batch_facet",
    "builtin_api_names",
    "custom_stream",
    "custom_stream_sync",
    "embedding_apis",
    "embedding_facet",
    "find_api",
    "find_server",
    "get_api",
    "get_server",
    "recognizing",
    "register_stream_function",
    "register_wire_api",
    "server_routes",
]

#: The API a bare ``--base-url`` or a ``MockServer.model()`` speaks when none is named:
#: the most widely implemented one (vLLM, llama.cpp, LM Studio, Ollama's ``/v1``…).
DEFAULT_API = "openai-chat"


#: The protocol every registered wire API satisfies (the codec; facets are optional).
WireAPI = WireCodec


#: A custom API that produces events itself: ``(model, context, options) -> events``,
#: an async generator function or a sync one (see ``modelwire._client._custom`` for which path
#: serves which).
StreamFunction: TypeAlias = Callable[..., "AsyncIterator[Event] | Iterator[Event]"]


_NAME = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
# One registry, two kinds of entry: a name is either a WireAPI or a stream function.
_registry: dict[str, WireAPI] = {}
_servers: dict[str, WireServer | None] = {}  # a registered API's server side, if any
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
    api = check_codec(importlib.import_module(module).API)
    if api.name != name:
        raise ConfigurationError(f"{module}.API is named {api.name!r}, not {name!r}")
    _registry[name] = api
    return api


def batch_facet(name: str) -> BatchFacet | None:
    """The batch facet of wire API ``name`` (``None``: its provider has no batch API here)."""
    from ._batch import BatchFacet

    api = find_api(name)
    facet = getattr(api, "batching", None) if api is not None else None
    return facet if isinstance(facet, BatchFacet) else None


def background_facet(name: str) -> BackgroundFacet | None:
    """The background facet of wire API ``name`` (``None``: it has none)."""
    api = find_api(name)
    return getattr(api, "background", None) if api is not None else None


def embedding_facet(name: str) -> EmbedFacet | None:
    """The embedding facet of wire API ``name`` (``None``: it embeds nothing)."""
    api = find_api(name)
    return getattr(api, "embedding", None) if api is not None else None


def embedding_apis() -> list[str]:
    """The registered APIs that embed, sorted."""
    return sorted(n for n in api_names() if embedding_facet(n) is not None)


def get_api(name: str) -> WireAPI:
    """The wire API registered as ``name``; ``ConfigurationError`` if unknown."""
    api = find_api(name)
    if api is None:
        raise _unknown(name)
    return api


def find_server(name: str) -> WireServer | None:
    """The server side of wire API ``name`` (``None``: unknown, or it has none). A
    built-in API package's is ``SERVER`` in its ``render`` module, imported on first
    use so a client never loads it; a one-module API defines ``SERVER`` beside ``API``."""
    if find_api(name) is None:
        return None
    if name not in _servers:  # a built-in API: registered ones are filled at registration
        owner: ModuleType | None = importlib.import_module(api_module(name))
        if hasattr(owner, "__path__"):
            render = f"{api_module(name)}.render"
            owner = importlib.import_module(render) if importlib.util.find_spec(render) else None
        _servers[name] = _check_server(getattr(owner, "SERVER", None), name)
    return _servers[name]


def get_server(name: str) -> WireServer:
    """The server side of wire API ``name``; ``ConfigurationError`` if the API is
    unknown or has none."""
    get_api(name)  # an unknown name is told as such
    server = find_server(name)
    if server is None:
        raise ConfigurationError(
            f"wire API {name!r} has no server side: register it with "
            "register_wire_api(codec, server=WireServer(...)) to serve or mock it"
        )
    return server


def _check_server(server: object, name: str) -> WireServer | None:
    from ._server.wire import WireServer  # a client never loads the server side

    if server is None or isinstance(server, WireServer):
        return server
    raise ConfigurationError(
        f"the server of wire API {name!r} must be a modelwire.ext.WireServer, "
        f"got {type(server).__name__}"
    )


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigurationError(
            f"an api name is lower-case letters and digits joined by '-' or '.', got {name!r}"
        )
    return name


def register_wire_api(
    api: WireCodec | StreamFunction,
    name: str | None = None,
    *,
    server: WireServer | None = None,
    sync: StreamFunction | None = None,
) -> None:
    """Register a wire API, or a custom API that produces events itself.

    ``api`` is a :class:`WireCodec` (registered under ``name``, default ``api.name``),
    with ``server`` its server side when the mock server or the gateway should speak it;
    or a stream function ``(model, context, options)`` producing events — ``async def``
    or ``def`` — registered under ``name`` (required), ``sync`` being a sync twin the
    sync path runs instead.

    The codec and each facet it claims are checked (a ``ConfigurationError`` names
    every missing member), and so is its path: an API whose exact path (version
    segment included) is another API's cannot be told apart by a server, so that is a
    ``ConfigurationError`` naming both. The object is not changed; a later
    registration of the same name wins.

    Args:
        api: A :class:`WireCodec`, or a stream function
            ``(model, context, options) -> events``.
        name: The ``Model.api`` name: lower-case letters and digits joined by ``-``
            or ``.`` (a codec's default: ``api.name``; required for a function).
        server: A codec's server side (:class:`~modelwire.ext.WireServer`).
        sync: A sync generator twin of an async stream function.

    Raises:
        ConfigurationError: A codec or facet member is missing, the name is invalid
            or missing, the path is another API's, or ``server``/``sync`` is given for
            the wrong kind of ``api``.

    Example:
        ```python
        import modelwire as mw
        from modelwire.ext import register_wire_api
        from modelwire.testing import events_from_deltas, deltas_for


        def canned(model, context, options):
            # A sync stream function: the events of one fixed answer.
            yield from events_from_deltas(deltas_for("Canned."), model, context, options)


        register_wire_api(canned, "canned")
        model = mw.Model(id="c", api="canned", provider="local", base_url="http://unused.invalid")
        print(mw.complete_sync(model, "Hi").text)  # Canned.
        ```
    """
    if not isinstance(api, WireCodec) and callable(api):  # a stream function
        if server is not None:
            raise ConfigurationError("server= is for a wire codec, not a stream function")
        if name is None:
            raise ConfigurationError("a stream function is registered under a name: "
                                     "register_wire_api(fn, 'my-api')")  # fmt: skip
        register_stream_function(name, api, sync=sync)
        return
    if sync is not None:
        raise ConfigurationError("sync= is for a stream function, not a wire codec")
    if not hasattr(api, "build_request"):
        raise ConfigurationError(
            f"register_wire_api needs a wire API object or a stream function, got {api!r}"
        )
    codec = check_codec(api)
    key = _check_name(codec.name if name is None else name)
    checked = _check_server(server, key)
    try:
        route = _route(codec, checked)
    except Exception as exc:
        raise ConfigurationError(f"wire API {key!r}: path() failed ({exc!r})") from exc
    for other, template in server_routes().items():
        if template == route and other != key:
            raise ConfigurationError(
                f"wire API {key!r} has the path {route!r}, which is already wire API "
                f"{other!r}'s: give {key!r} its own endpoint or version segment"
            )
    _streams.pop(key, None)
    _sync_streams.pop(key, None)
    _registry[key] = codec
    _servers[key] = checked


MODEL_SLOT = "{model}"
"""What stands for the model id in a route (:func:`server_routes`), e.g.
``/v1beta/models/{model}:streamGenerateContent``. Write it in a
``WireServer.complete_paths`` entry where the API puts the model in the URL; a
route with it matches any one path segment there."""
# Asked of ``path()`` in its place: unreserved characters only, so no quoting changes it.
_SLOT_ID = "modelwire-model-slot"


def _route(codec: WireCodec, server: WireServer | None) -> str:
    segment = server.version_segment if server is not None else ""
    return (segment + _endpoint(codec)).rstrip("/")


def _endpoint(codec: WireCodec) -> str:
    return codec.path(_SLOT_ID).split("?", 1)[0].replace(_SLOT_ID, MODEL_SLOT)


def server_routes() -> dict[str, str]:
    """Every wire API's exact path, by API name: its version segment, then its
    endpoint for model :data:`MODEL_SLOT` (query string dropped), e.g.
    ``/v1beta/models/{model}:streamGenerateContent`` (every built-in module is
    imported)."""
    # Built on each call (a few APIs, no I/O): nothing to go stale when tests swap
    # the registry.
    codecs = [(n, find_api(n)) for n in api_names()]
    return {n: _route(c, find_server(n)) for n, c in codecs if c is not None}


def _slot_match(template: str, path: str) -> bool:
    head, slot, tail = template.partition(MODEL_SLOT)
    if not slot:
        return template == path
    if len(path) <= len(head) + len(tail) or not path.startswith(head) or not path.endswith(tail):
        return False
    return "/" not in path[len(head) : len(path) - len(tail)]  # one path segment


def api_for_path(path: str) -> str | None:
    """The wire API a request target belongs to (query string ignored), or ``None``.

    The exact path (version segment included) decides; the model id fills one path
    segment. A path no API owns exactly (a provider's own URL layout: Azure
    deployments, Vertex AI publishers) goes to the API whose endpoint, without its
    version segment, ends it at a segment boundary — the longest such endpoint, so
    ``/api/chat`` is never taken for a shorter ``/chat``.

    How ``MockServer`` decides which API's format to answer in.

    Args:
        path: A request target (``/v1/messages``,
            ``/v1beta/models/gemini-x:streamGenerateContent?alt=sse``).

    Returns:
        The wire API name (``"anthropic-messages"``…), or ``None``.
    """
    target = path.split("?", 1)[0].rstrip("/")
    routes = server_routes()
    for api, template in routes.items():
        if _slot_match(template, target):
            return api
    best: tuple[int, str] | None = None
    for api in routes:
        codec = find_api(api)
        if codec is None:
            continue
        server = find_server(api)
        endpoints = [_endpoint(codec), *(server.extra_paths if server else ())]
        for endpoint in endpoints:
            endpoint = endpoint.split("?", 1)[0].rstrip("/")
            if _ends_with(target, endpoint) and (best is None or len(endpoint) > best[0]):
                best = (len(endpoint), api)
    return best[1] if best is not None else None


def _ends_with(target: str, endpoint: str) -> bool:
    # Endpoints start with "/" or ":", so a suffix match is at a segment boundary.
    head, slot, _ = endpoint.partition(MODEL_SLOT)
    if not slot:
        return target.endswith(endpoint)
    i = target.rfind(head) if head else target.rfind("/") + 1
    return i >= 0 and _slot_match(endpoint, target[i:])


def recognizing(payload: bytes, *, besides: str | None = None) -> list[str]:
    """Every registered API (``besides`` excepted) whose codec recognizes
    ``payload``, the first bytes of a response body (wrong-API detection)."""
    found = []
    for n in api_names():
        if n == besides:
            continue
        codec = find_api(n)
        try:
            if codec is not None and codec.recognizes(payload):
                found.append(n)
        except Exception:  # a codec's guess never breaks the stream
            continue
    return found


def register_stream_function(
    name: str, fn: StreamFunction, *, sync: StreamFunction | None = None
) -> None:
    """Register a custom API that produces events itself (:func:`register_wire_api`
    with a function).

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

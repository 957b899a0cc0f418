"""Which wire API, and which of its endpoints, a request to the mock server is for.

The answer comes from each API's server side (:class:`modelwire.ext.WireServer`): its
streaming endpoint (:func:`modelwire._apis.server_routes`), its non-streaming endpoints
(``complete_paths``), its model listing (``models_path``) and the body's ``stream``
flag (``streams``). A path no API serves is ``None`` — the server answers it 404
without consuming a scripted reply, so a client's probe or a wrong base URL never
eats the reply meant for the real call.

A provider's own URL layout (Azure deployments, Vertex AI publishers) reaches the API
whose endpoint ends the path, but only after a prefix that is not empty and is not
itself a served path: ``/chat/completions`` (no version segment) and
``/v1/chat/completions/chat/completions`` (a base URL that already held the
endpoint) are configuration mistakes, answered 404 so they show.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NamedTuple

from .._apis import MODEL_SLOT, api_names, find_server, server_routes
from .._apis._server.wire import WireServer

__all__ = ["Route", "route", "served_paths"]


class Route(NamedTuple):
    """The API a request is for and how it is answered."""

    api: str
    kind: Literal["stream", "complete", "models", "embed"]
    """``stream``: the scripted reply as a stream; ``complete``: as one JSON object;
    ``models``: the model listing (no reply consumed); ``embed``: an embedding request
    (:mod:`modelwire.testing._embed`)."""


def _facets() -> list[tuple[str, WireServer]]:
    out = []
    for name in api_names():
        server = find_server(name)
        if server is not None:
            out.append((name, server))
    return out


def _match(template: str, path: str) -> bool:
    head, slot, tail = template.partition(MODEL_SLOT)
    if not slot:
        return template == path
    if len(path) <= len(head) + len(tail) or not path.startswith(head) or not path.endswith(tail):
        return False
    return "/" not in path[len(head) : len(path) - len(tail)]  # one path segment


def _clean(template: str) -> str:
    return template.split("?", 1)[0].rstrip("/")


Kind = Literal["stream", "complete", "embed"]


def _endpoints(api: str, mock: WireServer) -> list[tuple[str, Kind]]:
    """``(endpoint after the version segment, how it is answered)``."""
    route = server_routes().get(api, "")
    segment = mock.version_segment
    stream = route[len(segment) :] if route.startswith(segment) else route
    out: list[tuple[str, Kind]] = [(stream, "stream")]
    out += [(_clean(p), "stream") for p in mock.extra_paths]
    out += [(_clean(p), "complete") for p in mock.complete_paths]
    if mock.render_embeddings is not None:
        out += [(_clean(p), "embed") for p in mock.embed_paths]
    return [(e, c) for e, c in out if e]


def _answer(api: str, mock: WireServer, kind: Kind, path: str, body: object) -> Route:
    if kind != "stream":
        return Route(api, kind)
    streams = mock.streams
    return Route(api, "stream" if streams(path, body) else "complete")


def _routed(target: str) -> bool:
    """Whether ``target`` is, or ends with, a served endpoint."""
    for api, mock in _facets():
        for endpoint, _ in _endpoints(api, mock):
            if _match(mock.version_segment + endpoint, target) or _suffix(endpoint, target):
                return True
    return False


def _suffix(endpoint: str, target: str) -> int | None:
    """Where ``endpoint`` starts when it ends ``target`` at a segment boundary."""
    for i, ch in enumerate(target):
        if ch in "/:" and _match(endpoint, target[i:]):
            return i
    return None


def route(method: str, path: str, headers: Mapping[str, str], body: object) -> Route | None:
    """The API and answer for a request (``headers`` with lower-cased names), or
    ``None`` when no API serves ``method path``."""
    target = path.split("?", 1)[0].rstrip("/")
    facets = _facets()
    if method == "GET":
        listing = [(api, m) for api, m in facets
                   if m.models_path is not None
                   and m.render_models is not None
                   and m.version_segment + m.models_path == target]  # fmt: skip
        # A client of an API whose listing lives under another version segment (the
        # google-genai SDK asks /v1/models) is known by its header.
        listing += [(api, m) for api, m in facets
                    if m.models_header in headers
                    and m.render_models is not None
                    and (api, m) not in listing
                    and m.models_path is not None
                    and _suffix(m.models_path, target)]  # fmt: skip
        if not listing:
            return None
        # Several APIs list at one path (OpenAI's and Anthropic's /v1/models): the
        # header a client of one of them always sends tells them apart.
        for api, m in listing:
            marker = m.models_header
            if marker is not None and marker in headers:
                return Route(api, "models")
        plain = [api for api, m in listing if m.models_header is None]
        return Route(plain[0] if plain else listing[0][0], "models")
    if method != "POST":
        return None
    for api, mock in facets:
        for endpoint, complete in _endpoints(api, mock):
            if _match(mock.version_segment + endpoint, target):
                return _answer(api, mock, complete, path, body)
    best: tuple[int, str, WireServer, Kind] | None = None
    for api, mock in facets:
        for endpoint, complete in _endpoints(api, mock):
            start = _suffix(endpoint, target)
            if start is None or start == 0 or _routed(target[:start]):
                continue
            size = len(target) - start
            if best is None or size > best[0]:
                best = (size, api, mock, complete)
    if best is None:
        return None
    return _answer(best[1], best[2], best[3], path, body)


def served_paths() -> list[str]:
    """Every path the mock server answers, ``METHOD path`` (for a 404's message)."""
    out = []
    for api, mock in _facets():
        for endpoint, _ in _endpoints(api, mock):
            out.append(f"POST {mock.version_segment}{endpoint}")
        models = mock.models_path
        if models is not None and mock.render_models is not None:
            line = f"GET {mock.version_segment}{models}"
            if line not in out:
                out.append(line)
    return out

"""What a wire API is: a small required codec and optional, separately typed facets.

Three audiences use a wire API and each asks only for what it needs:

* the client and the pipeline need the **codec** (:class:`WireCodec`): the name, the
  endpoint path, the request encoding, the response framing, the per-response decoder,
  and :meth:`WireCodec.recognizes`, which wrong-API detection asks of every registered
  API;
* the mock server, :func:`modelwire.testing.render` and the demo need the **mock
  facet** (:class:`MockFacet`, ``codec.mock``): how a scripted reply is rendered and
  framed, the media type, the version segment of a base URL, the model a request asked
  for, and the tool results a request carries;
* handoff needs the **handoff facet** (:class:`HandoffFacet`, ``codec.handoff``): which
  tool-call ids the API accepts;
* ``count_tokens`` needs the **counting facet** (:class:`CountFacet`, ``codec.counting``):
  the API's token-counting request and how to read its answer.

What a model of the API supports is typed data, not probing: ``codec.capabilities(model)``
is the API's default :class:`~modelwire.types.Capabilities` for that model, the bottom
layer of its profile (:func:`modelwire._apis.profile`).

A codec states its facets as attributes (``None``: not offered), so a codec without a
mock facet is still a complete API for the client. :func:`check_codec` is what
registration runs: it names every missing member of the codec and of each facet the
codec claims. :class:`MockRendering` and :class:`IdRules` are ready-made facets built
from plain functions, so an API module writes each behaviour once and forwards nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import msgspec

from .._wire.pipeline import WireDecoder
from .._wire.sse import SSEDecoder, SSEFraming
from ..errors import ConfigurationError
from ._mock import (
    MockError,
    MockFrame,
    ScriptedReply,
    as_rendered,
    encode_sse,
    function_tools,
    model_in_body,
    openai_error,
    stream_flag,
)

if TYPE_CHECKING:
    from .._wire.framing import Framing
    from .._wire.request import HTTPRequest, RequestOptions
    from ..types import Capabilities, Context, Model

__all__ = [
    "CODEC_MEMBERS",
    "COUNT_MEMBERS",
    "HANDOFF_MEMBERS",
    "MOCK_MEMBERS",
    "CountFacet",
    "Counting",
    "HandoffFacet",
    "IdRule",
    "IdRules",
    "MockFacet",
    "MockRendering",
    "WireCodec",
    "WireDecoder",
    "check_codec",
    "first_line_json",
    "first_sse_json",
    "sse_framing",
]


class IdRule(NamedTuple):
    """What a target API accepts as a tool-call id (used by :mod:`modelwire._client._handoffs`)."""

    valid: re.Pattern[str]
    """Ids that match (``fullmatch``) are kept."""
    bad: re.Pattern[str] | None
    """Characters replaced by ``_`` when an id is rewritten (``None``: any)."""
    max_len: int
    """Longest id."""
    exact: int | None = None
    """Required length of a rewritten id (Mistral: 9), made of letters and digits."""


@runtime_checkable
class MockFacet(Protocol):
    """How the mock server speaks an API (optional: ``WireCodec.mock``)."""

    @property
    def content_type(self) -> str:
        """The media type of a streamed response (``text/event-stream``…)."""
        ...

    @property
    def version_segment(self) -> str:
        """The version segment of a ``base_url`` for this API (``/v1``, ``/v1beta``,
        ``""`` for a server root): what ``MockServer.model(api)`` appends, and the
        start of the exact path the mock server routes to this API."""
        ...

    @property
    def extra_paths(self) -> tuple[str, ...]:
        """Other endpoints a provider serves this API at, with :data:`MODEL_SLOT`
        for the model id (Claude on Vertex AI: ``/models/{model}:streamRawPredict``):
        the mock server answers them too when no API owns the exact path."""
        ...

    def render(
        self, reply: ScriptedReply, model: str, response_id: str, piece_chars: int
    ) -> list[MockFrame]:
        """A scripted reply as this API's events, unframed (``response_id`` ``""``:
        the API's own mock id)."""
        ...

    def encode_frames(self, frames: Sequence[MockFrame]) -> list[bytes]:
        """Each rendered event as the bytes this API's framing puts on the wire."""
        ...

    def request_model(self, path: str, body: object) -> str | None:
        """The model id a request asked for (the body's ``model``, or a path segment)."""
        ...

    def tool_results(self, body: object) -> list[str]:
        """The texts of the tool results in a request body, in order."""
        ...

    @property
    def in_band_error(self) -> Callable[[str], list[MockFrame]] | None:
        """``(message) -> frames``: the error event this API sends mid-stream, after
        its ``200``, when the server is overloaded, as its documentation shows it
        (``None``: the API has no in-band error). The mock server's faults and the
        fault matrix use it."""
        ...

    @property
    def in_band_kind(self) -> str:
        """The error kind :attr:`in_band_error`'s event decodes to: ``overloaded``
        where the provider's shape can say so (a type or code), else what it can."""
        ...

    # The members below serve non-streaming clients, listings and the automatic
    # reply; :class:`MockRendering` documents each and gives the defaults.
    @property
    def render_complete(self) -> Callable[[ScriptedReply, str, str], dict[str, Any]] | None: ...
    @property
    def streams(self) -> Callable[[str, object], bool]: ...
    @property
    def complete_paths(self) -> tuple[str, ...]: ...
    @property
    def error_body(self) -> Callable[[int, str, str | None], MockError]: ...
    @property
    def models_path(self) -> str | None: ...
    @property
    def render_models(self) -> Callable[[Sequence[str]], dict[str, Any]] | None: ...
    @property
    def models_header(self) -> str | None: ...
    @property
    def adapt(self) -> Callable[[list[MockFrame], object], list[MockFrame]]: ...
    @property
    def request_tools(self) -> Callable[[object], list[tuple[str, dict[str, Any]]]]: ...
    @property
    def tool_id_prefix(self) -> str: ...
    @property
    def sse_query(self) -> str | None: ...


@runtime_checkable
class HandoffFacet(Protocol):
    """Which tool-call ids an API accepts (optional: ``WireCodec.handoff``)."""

    def tool_id_rule(self, model: Model) -> IdRule | None:
        """The rule for ``model`` (``None``: any id is accepted)."""
        ...


@runtime_checkable
class CountFacet(Protocol):
    """An API's token-counting endpoint (optional: ``WireCodec.counting``)."""

    def count_request(self, request: HTTPRequest) -> HTTPRequest | None:
        """The counting request for a built stream request (``None``: this request's
        URL has no counting endpoint, e.g. a provider's own layout)."""
        ...

    def parse_count(self, body: bytes) -> int:
        """The input-token count in the endpoint's answer."""
        ...


@runtime_checkable
class WireCodec(Protocol):
    """The required part of a wire API. Implementations are stateless singletons."""

    @property
    def name(self) -> str:
        """The ``Model.api`` value, e.g. ``"ollama-chat"``."""
        ...

    @property
    def mock(self) -> MockFacet | None:
        """The mock-server facet, or ``None`` when the API offers none."""
        ...

    @property
    def handoff(self) -> HandoffFacet | None:
        """The handoff facet, or ``None``: any tool-call id is accepted."""
        ...

    @property
    def counting(self) -> CountFacet | None:
        """The token-counting facet, or ``None``: counts are estimated locally."""
        ...

    def capabilities(self, model: Model) -> Capabilities:
        """What ``model`` supports as far as this API knows (fields it cannot say:
        ``None``); the catalog and ``Model.capabilities`` are laid over it."""
        ...

    def path(self, model_id: str) -> str:
        """The endpoint appended to ``Model.base_url`` (``/chat/completions``)."""
        ...

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        """Pure: the URL, headers and JSON body; ``ConfigurationError`` for
        impossible options, before any I/O."""
        ...

    def framing(self, max_event_bytes: int) -> Framing:
        """A fresh decoder of the response body into frames (:mod:`modelwire._wire.framing`)."""
        ...

    def new_decoder(self, model: Model | None) -> WireDecoder:
        """A fresh per-response decoder."""
        ...

    def recognizes(self, payload: bytes) -> bool:
        """Whether ``payload`` — the first bytes of a response body — is plainly this
        API's output. Asked of every registered API when a body decoded with another
        ``api`` yields nothing or fails (wrong-API detection); never raises."""
        ...


CODEC_MEMBERS = ("name", "mock", "handoff", "counting", "capabilities", "path",
                 "build_request", "framing", "new_decoder", "recognizes")  # fmt: skip
MOCK_MEMBERS = ("content_type", "version_segment", "extra_paths", "render", "encode_frames",
                "request_model", "tool_results", "in_band_error", "in_band_kind",
                "render_complete", "streams", "complete_paths", "error_body", "models_path",
                "render_models", "models_header", "adapt", "request_tools", "tool_id_prefix",
                "sse_query")  # fmt: skip
HANDOFF_MEMBERS = ("tool_id_rule",)
COUNT_MEMBERS = ("count_request", "parse_count")
_CALLABLE = frozenset({"path", "build_request", "framing", "new_decoder", "recognizes",
                       "capabilities", "render", "encode_frames", "request_model",
                       "tool_results", "tool_id_rule", "count_request",
                       "parse_count"})  # fmt: skip


def _lacking(obj: object, members: Sequence[str]) -> list[str]:
    missing = []
    for m in members:
        try:
            value = getattr(obj, m)
        except AttributeError:
            missing.append(m)
            continue
        if m in _CALLABLE and not callable(value):
            missing.append(f"{m} (not callable)")
    return missing


def check_codec(api: object) -> WireCodec:
    """``api`` if it is a complete :class:`WireCodec` and each facet it claims
    (a ``mock``, ``handoff`` or ``counting`` that is not ``None``) is complete; else a
    ``ConfigurationError`` naming every missing member."""
    what = type(api).__name__
    missing = _lacking(api, CODEC_MEMBERS)
    if missing:
        raise ConfigurationError(
            f"{what} is not a WireAPI: it lacks {', '.join(missing)} (a wire codec needs "
            f"{', '.join(CODEC_MEMBERS)}; mock, handoff and counting may be None)"
        )
    facets = (("mock", MOCK_MEMBERS), ("handoff", HANDOFF_MEMBERS), ("counting", COUNT_MEMBERS))
    for facet, members in facets:
        value = getattr(api, facet)
        if value is None:
            continue
        missing = _lacking(value, members)
        if missing:
            raise ConfigurationError(
                f"{what}.{facet} is not a {facet} facet: it lacks {', '.join(missing)} "
                f"(set {facet} = None to offer none)"
            )
    name = getattr(api, "name")  # noqa: B009 - checked above, typed below
    if not isinstance(name, str):
        raise ConfigurationError(f"{what}.name must be a str, got {type(name).__name__}")
    assert isinstance(api, WireCodec)
    return api


def sse_framing(max_event_bytes: int) -> Framing:
    """A fresh Server-Sent-Events framing (:class:`~modelwire._wire.sse.SSEFraming`)."""
    return SSEFraming(max_event_bytes=max_event_bytes)


def first_sse_json(payload: bytes) -> object:
    """The JSON value of the first Server-Sent Event with data in ``payload`` (the
    start of a body), or ``None`` (not SSE, incomplete, not JSON): what a codec's
    :meth:`~WireCodec.recognizes` looks at."""
    quick = _first_plain_data(payload)
    if quick is not None and quick.strip() and quick != b"[DONE]":
        try:
            return msgspec.json.decode(quick)
        except msgspec.DecodeError:
            pass  # the parser's answer, whatever the bytes are
    return _first_sse_json(payload)


_PLAIN_FIELDS = (b"data: ", b"event: ", b"id: ")


def _first_plain_data(payload: bytes) -> bytes | None:
    """The first event's data when that event is written the plain way every provider
    writes it — ``event:``/``id:`` lines and one ``data: `` line, LF-ended, no CR, no
    comment — else ``None`` (the full parser decides). Asked on every call's first
    payload: the parser costs several times this."""
    end = payload.find(b"\n\n")
    if end < 0:
        return None
    block = payload[:end]
    if b"\r" in block:
        return None
    data = None
    for line in block.split(b"\n"):
        if not line.startswith(_PLAIN_FIELDS):
            return None
        if line.startswith(b"data: "):
            if data is not None:
                return None  # several data lines: joined by the parser
            data = line[6:]
    return data


def _first_sse_json(payload: bytes) -> object:
    decoder = SSEDecoder()
    start = 0
    for _ in range(8):  # a few comment or keep-alive blocks may come first
        # Only up to the next blank line: the first event, not the whole prefix.
        cut = min((i for i in (payload.find(s, start) for s in _BLANK) if i >= 0), default=-1)
        end = len(payload) if cut < 0 else cut + 4
        try:
            events = decoder.feed(payload[start:end])
        except Exception:
            return None
        for ev in events:
            if ev.data.strip() and ev.data != "[DONE]":
                try:
                    return msgspec.json.decode(ev.data)
                except msgspec.DecodeError:
                    return None
        if cut < 0 or end >= len(payload):
            return None
        start = end
    return None


_BLANK = (b"\n\n", b"\r\n\r\n", b"\r\r")


def first_line_json(payload: bytes) -> object:
    """The JSON value on the first non-blank, complete line of ``payload`` (NDJSON),
    or ``None``."""
    for line in payload.split(b"\n")[:-1]:
        if line.strip():
            try:
                return msgspec.json.decode(line)
            except msgspec.DecodeError:
                return None
    return None


def _sse(frames: Sequence[MockFrame]) -> list[bytes]:
    return encode_sse(frames)


@dataclass(frozen=True, slots=True)
class MockRendering:
    """A :class:`MockFacet` made of functions: an API module writes ``render`` and
    ``tool_results`` once and states the rest as data (SSE ``data:`` events under
    ``/v1``, the model read from the body's ``model`` field, by default).

    The members from ``render_complete`` on (the non-streaming answer, errors, model
    listing, declared tools…) are optional extras of the facet: the mock server reads
    them with these defaults, so a facet written without them still streams."""

    render: Callable[[ScriptedReply, str, str, int], list[MockFrame]]
    """``(reply, model, response_id, piece_chars) -> frames``."""
    tool_results: Callable[[object], list[str]]
    """``(request body) -> tool-result texts``."""
    encode_frames: Callable[[Sequence[MockFrame]], list[bytes]] = field(default=_sse)
    """``(frames) -> bytes per frame``: SSE ``data:`` events by default
    (:func:`~modelwire._apis._mock.encode_sse` with ``named=True`` for named events)."""
    request_model: Callable[[str, object], str | None] = field(default=model_in_body)
    """``(path, body) -> model id``: the body's ``model`` field by default."""
    content_type: str = "text/event-stream"
    version_segment: str = "/v1"
    extra_paths: tuple[str, ...] = ()
    in_band_error: Callable[[str], list[MockFrame]] | None = None
    """``(message) -> frames``: the API's mid-stream overload error (``None``: none)."""
    in_band_kind: str = "overloaded"
    """The error kind that event decodes to."""
    render_complete: Callable[[ScriptedReply, str, str], dict[str, Any]] | None = None
    """``(reply, model, response_id) -> body``: the one JSON object the API answers a
    request that did not ask for a stream with (``None``: the API always streams)."""
    streams: Callable[[str, object], bool] = field(default=stream_flag)
    """``(path, body) -> bool``: whether a request to the streaming path asked for a
    stream (the body's ``"stream": true`` by default, as OpenAI and Anthropic read it)."""
    complete_paths: tuple[str, ...] = ()
    """Endpoints (after the version segment, :data:`MODEL_SLOT` for the model id) that
    answer with :attr:`render_complete` whatever the body says (Gemini
    ``/models/{model}:generateContent``, Bedrock ``/model/{model}/converse``)."""
    error_body: Callable[[int, str, str | None], MockError] = field(default=openai_error)
    """``(status, message, error type or None) -> MockError``: an HTTP error in the
    provider's own shape and headers (``None``: the type the provider uses for that
    status)."""
    models_path: str | None = None
    """The model listing endpoint after the version segment (``None``: none)."""
    render_models: Callable[[Sequence[str]], dict[str, Any]] | None = None
    """``(model ids) -> body`` of the listing."""
    models_header: str | None = None
    """A request header that marks a listing as this API's, when several APIs share
    :attr:`models_path` (Anthropic's ``anthropic-version`` on ``/v1/models``)."""
    adapt: Callable[[list[MockFrame], object], list[MockFrame]] = field(default=as_rendered)
    """``(frames, request body) -> frames``: the stream as the request asked for it
    (OpenAI Chat's usage chunk only with ``stream_options.include_usage``)."""
    request_tools: Callable[[object], list[tuple[str, dict[str, Any]]]] = field(
        default=function_tools
    )
    """``(request body) -> [(tool name, parameters schema)]``: the tools a request
    declares (``tools[].function`` by default), for the automatic reply."""
    tool_id_prefix: str = "call_"
    """How the provider's tool-call ids start (Anthropic ``toolu_``, Bedrock
    ``tooluse_``): the ids the automatic reply makes up."""
    sse_query: str | None = None
    """The query item that asks the streaming path for SSE; without it the path answers
    with a JSON array of the events (Gemini's ``alt=sse``; ``None``: always a stream)."""


@dataclass(frozen=True, slots=True)
class Counting:
    """A :class:`CountFacet` made of two functions."""

    count_request: Callable[[HTTPRequest], HTTPRequest | None]
    parse_count: Callable[[bytes], int]


@dataclass(frozen=True, slots=True)
class IdRules:
    """A :class:`HandoffFacet` made of one function ``(model) -> IdRule | None``."""

    tool_id_rule: Callable[[Model], IdRule | None]


if TYPE_CHECKING:
    # mypy --strict proves the ready-made facets satisfy their protocols.
    def _conforms(
        m: MockRendering, h: IdRules, c: Counting
    ) -> tuple[MockFacet, HandoffFacet, CountFacet]:
        return m, h, c

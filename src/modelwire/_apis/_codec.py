"""What a wire API is to a client: a small required codec and optional, separately
typed facets.

Each client audience asks only for what it needs:

* the client and the pipeline need the **codec** (:class:`WireCodec`): the name, the
  endpoint path, the request encoding, the response framing, the per-response decoder,
  and :meth:`WireCodec.recognizes`, which wrong-API detection asks of every registered
  API;
* handoff needs the **handoff facet** (:class:`HandoffFacet`, ``codec.handoff``): which
  tool-call ids the API accepts;
* ``count_tokens`` needs the **counting facet** (:class:`CountFacet`, ``codec.counting``):
  the API's token-counting request and how to read its answer;
* ``mw.embed`` needs the **embedding facet** (:class:`EmbedFacet`, ``codec.embedding``,
  optional like the background facet): the API's embedding request for a batch of
  inputs, how to read its answer, and how many inputs one request may carry;
* ``background=True``, ``resume_stream`` and ``cancel_response`` need the **background
  facet** (:class:`BackgroundFacet`, ``codec.background``, optional beyond the codec's
  members: an API without the attribute has none): how a response the provider runs in
  the background is streamed again from a sequence number, and cancelled.

What a model of the API supports is typed data, not probing: ``codec.capabilities(model)``
is the API's default :class:`~modelwire.types.Capabilities` for that model, the bottom
layer of its profile (:func:`modelwire._apis.profile`).

A codec states its facets as attributes (``None``: not offered). :func:`check_codec` is
what registration runs: it names every missing member of the codec and of each facet
the codec claims. :class:`IdRules` and :class:`Counting` are ready-made facets built
from plain functions, so an API module writes each behaviour once and forwards nothing.

A server's side of an API (rendering events as its bytes, its routes) is not the
client's: it is :class:`~modelwire._apis._server.wire.WireServer`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

import msgspec

from .._wire.pipeline import WireDecoder
from .._wire.sse import SSEDecoder, SSEFraming
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from .._wire.framing import Framing
    from .._wire.request import HTTPRequest, RequestOptions
    from ..types import Capabilities, Context, Model
    from ._embed import EmbedAnswer

__all__ = [
    "CODEC_MEMBERS",
    "COUNT_MEMBERS",
    "HANDOFF_MEMBERS",
    "CountFacet",
    "Counting",
    "EmbedFacet",
    "Embedding",
    "HandoffFacet",
    "IdRule",
    "IdRules",
    "WireCodec",
    "WireDecoder",
    "check_codec",
    "first_line_json",
    "first_sse_json",
    "sse_framing",
]


class IdRule(NamedTuple):
    """What a target API accepts as a tool-call id (used by :mod:`modelwire._client._handoffs`).

    Return one from a :class:`HandoffFacet` when the API restricts ids (a pattern, a
    length): a conversation from another API then has its ids rewritten to fit,
    consistently in the calls and their results.
    """

    valid: re.Pattern[str]
    """Ids that match (``fullmatch``) are kept."""
    bad: re.Pattern[str] | None
    """Characters replaced by ``_`` when an id is rewritten (``None``: any)."""
    max_len: int
    """Longest id."""
    exact: int | None = None
    """Required length of a rewritten id (Mistral: 9), made of letters and digits."""


@runtime_checkable
class HandoffFacet(Protocol):
    """Which tool-call ids an API accepts (optional: ``WireCodec.handoff``).

    Offer it when the API refuses some ids another API produces; without it every id
    is sent as it is. :class:`IdRules` builds one from a function.
    """

    def tool_id_rule(self, model: Model) -> IdRule | None:
        """The rule for ``model`` (``None``: any id is accepted).

        Args:
            model: The model the conversation is sent to.
        """
        ...


@runtime_checkable
class CountFacet(Protocol):
    """An API's token-counting endpoint (optional: ``WireCodec.counting``).

    Offer it when the API can count a prompt's tokens; ``mw.count_tokens`` then asks
    it (with the call's retries and redaction) instead of estimating.
    :class:`Counting` builds one from two functions.
    """

    def count_request(self, request: HTTPRequest) -> HTTPRequest | None:
        """The counting request for a built stream request (``None``: this request's
        URL has no counting endpoint, e.g. a provider's own layout).

        Args:
            request: The stream request the API built (URL, headers, body).
        """
        ...

    def parse_count(self, body: bytes) -> int:
        """The input-token count in the endpoint's answer.

        Args:
            body: The answer's JSON body.
        """
        ...


@runtime_checkable
class EmbedFacet(Protocol):
    """An API's embedding endpoint (optional: ``WireCodec.embedding``; an API without
    the attribute embeds nothing and ``mw.embed`` says which APIs do).

    The request is made from the stream request the API built for the model, so a
    provider's URL layout and credentials (Azure deployments, Vertex AI, SigV4) carry
    over. :class:`Embedding` builds one from three functions.
    """

    def max_inputs(self, model: Model) -> int:
        """The most inputs one request may carry (more are split into several
        requests, rejoined in order).

        Args:
            model: The embedding model.
        """
        ...

    def embed_request(
        self,
        request: HTTPRequest,
        model: Model,
        inputs: Sequence[str],
        dimensions: int | None,
        input_type: str | None,
    ) -> HTTPRequest:
        """The embedding request for ``inputs``; ``ConfigurationError`` for what the
        API cannot send (an unknown ``input_type``, a URL it has no endpoint for).

        Args:
            request: The stream request the API built for ``model`` (URL, credentials).
            model: The embedding model.
            inputs: At most :meth:`max_inputs` texts.
            dimensions: The vector size asked for (``None``: the model's own).
            input_type: What the texts are for (``search_document``…; ``None``: unsaid).
        """
        ...

    def parse_embeddings(self, body: bytes, count: int) -> EmbedAnswer:
        """The vectors, in input order, and the reported input tokens.

        Args:
            body: The answer's JSON body.
            count: How many inputs the request carried.
        """
        ...


@runtime_checkable
class BackgroundFacet(Protocol):
    """An API's background responses (optional: ``WireCodec.background``).

    Offer it when the provider keeps a response it runs in the background and can
    stream it again after a sequence number; a broken ``background=True`` stream is
    then picked up instead of failing, and nothing is sent twice.
    """

    def decoding(self, wire: Any, after: int = -1, response_id: str | None = None) -> Any:
        """``wire``'s framing with a decoder that drops events at or below ``after``.

        Args:
            wire: The codec (its framing and decoder).
            after: The last sequence number delivered (``-1``: none).
            response_id: The response picked up by id (``None``: a new one).
        """
        ...

    def resume_request(self, sent: HTTPRequest, response_id: str, after: int | None) -> HTTPRequest:
        """The request streaming response ``response_id``'s events after ``after``.

        Args:
            sent: The request that created the response (its URL and credentials).
            response_id: The response's id.
            after: The last sequence number received (``None``: from the start).
        """
        ...

    def cancel_request(self, sent: HTTPRequest, response_id: str) -> HTTPRequest:
        """The request cancelling response ``response_id``.

        Args:
            sent: A request of the API (its URL and credentials).
            response_id: The response's id.
        """
        ...


@runtime_checkable
class WireCodec(Protocol):
    """The required part of a wire API. Implementations are stateless singletons.

    Implement every member below and register the object with
    :func:`~modelwire.ext.register_wire_api`; then ``Model(api=name, ...)`` works with
    ``mw.stream`` and everything on top of it. Registration names any member
    missing. docs/adding-a-wire-api.md builds a complete one.
    """

    @property
    def name(self) -> str:
        """The ``Model.api`` value, e.g. ``"ollama-chat"``."""
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
        ``None``); the catalog and ``Model.capabilities`` are laid over it.

        Args:
            model: The model asked about.
        """
        ...

    def path(self, model_id: str) -> str:
        """The endpoint appended to ``Model.base_url`` (``/chat/completions``).

        Args:
            model_id: The model id, for APIs that put it in the path.
        """
        ...

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        """Pure: the URL, headers and JSON body; ``ConfigurationError`` for
        impossible options, before any I/O.

        Args:
            model: The model called.
            context: The conversation, already rewritten for the model (handoff).
            options: The call's checked options.
        """
        ...

    def framing(self, max_event_bytes: int) -> Framing:
        """A fresh decoder of the response body into frames (:mod:`modelwire._wire.framing`).

        Args:
            max_event_bytes: The largest frame accepted.
        """
        ...

    def new_decoder(self, model: Model | None) -> WireDecoder:
        """A fresh per-response decoder.

        Args:
            model: The model called (``None`` in a replay without one).
        """
        ...

    def recognizes(self, payload: bytes) -> bool:
        """Whether ``payload`` — the first bytes of a response body — is plainly this
        API's output. Asked of every registered API when a body decoded with another
        ``api`` yields nothing or fails (wrong-API detection); never raises.

        Args:
            payload: The first bytes of a response body.
        """
        ...


CODEC_MEMBERS = ("name", "handoff", "counting", "capabilities", "path", "build_request",
                 "framing", "new_decoder", "recognizes")  # fmt: skip
HANDOFF_MEMBERS = ("tool_id_rule",)
COUNT_MEMBERS = ("count_request", "parse_count")
_CALLABLE = frozenset({"path", "build_request", "framing", "new_decoder", "recognizes",
                       "capabilities", "tool_id_rule", "count_request",
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
    (a ``handoff`` or ``counting`` that is not ``None``) is complete; else a
    ``ConfigurationError`` naming every missing member."""
    what = type(api).__name__
    missing = _lacking(api, CODEC_MEMBERS)
    if missing:
        raise ConfigurationError(
            f"{what} is not a WireAPI: it lacks {', '.join(missing)} (a wire codec needs "
            f"{', '.join(CODEC_MEMBERS)}; handoff and counting may be None)"
        )
    facets = (("handoff", HANDOFF_MEMBERS), ("counting", COUNT_MEMBERS))
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
    """A fresh Server-Sent-Events framing (:class:`~modelwire._wire.sse.SSEFraming`).

    What ``WireCodec.framing`` returns for an API that streams ``text/event-stream``.

    Args:
        max_event_bytes: The largest event accepted; a larger one ends the stream
            with ``event_too_large``.

    Returns:
        The framing, one per response.
    """
    return SSEFraming(max_event_bytes=max_event_bytes)


def first_sse_json(payload: bytes) -> object:
    """The JSON value of the first Server-Sent Event with data in ``payload`` (the
    start of a body), or ``None`` (not SSE, incomplete, not JSON): what a codec's
    :meth:`~WireCodec.recognizes` looks at.

    Args:
        payload: The first bytes of a response body.

    Returns:
        The parsed JSON value, or ``None``.
    """
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
    or ``None``: the ``recognizes`` helper of an NDJSON API.

    Args:
        payload: The first bytes of a response body.

    Returns:
        The parsed JSON value, or ``None``.
    """
    for line in payload.split(b"\n")[:-1]:
        if line.strip():
            try:
                return msgspec.json.decode(line)
            except msgspec.DecodeError:
                return None
    return None


@dataclass(frozen=True, slots=True)
class Counting:
    """A :class:`CountFacet` made of two functions.

    Attributes:
        count_request: The counting request for a built stream request (``None``: no
            counting endpoint for it).
        parse_count: The input-token count in the endpoint's answer body.
    """

    count_request: Callable[[HTTPRequest], HTTPRequest | None]
    parse_count: Callable[[bytes], int]


@dataclass(frozen=True, slots=True)
class Embedding:
    """An :class:`EmbedFacet` made of three functions.

    Attributes:
        max_inputs: The most inputs one request may carry, for a model.
        embed_request: The embedding request for a batch of inputs.
        parse_embeddings: The vectors and input tokens in an answer body.
    """

    max_inputs: Callable[[Model], int]
    embed_request: Callable[
        [HTTPRequest, Model, Sequence[str], int | None, str | None], HTTPRequest
    ]
    parse_embeddings: Callable[[bytes, int], EmbedAnswer]


@dataclass(frozen=True, slots=True)
class IdRules:
    """A :class:`HandoffFacet` made of one function ``(model) -> IdRule | None``.

    Attributes:
        tool_id_rule: The id rule for a model of the API (``None``: any id).
    """

    tool_id_rule: Callable[[Model], IdRule | None]


if TYPE_CHECKING:
    # mypy --strict proves the ready-made facets satisfy their protocols.
    def _conforms(
        h: IdRules, c: Counting, e: Embedding
    ) -> tuple[HandoffFacet, CountFacet, EmbedFacet]:
        return h, c, e

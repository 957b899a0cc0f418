"""A request as every wire API builds it and every transport sends it: sans-IO values.

:class:`RequestOptions` holds the validated options of one call (validated by
:mod:`modelwire._client._options`); :class:`HTTPRequest` is the request ready to send;
:class:`OutputRequest` is what an encoder is told about structured output (built by
:mod:`modelwire._client._output` from ``output=``; an API's encoder adds its native field
when ``mode`` is ``"native"``; the tool and prompted modes change the context instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeAlias

import msgspec

from .._redact import is_credential_header, redact, redact_url
from ..errors import ConfigurationError
from ..types import ServerTool, check_json

__all__ = [
    "DEFAULT_TIMEOUT",
    "OUTPUT_MODES",
    "OUTPUT_TOOL",
    "REASONING_LEVELS",
    "RESERVED_BODY_KEYS",
    "TRANSPORTS",
    "HTTPRequest",
    "OutputMode",
    "OutputRequest",
    "ReasoningLevel",
    "RequestAuthorizer",
    "RequestOptions",
    "Timeout",
    "Transport",
    "check_credential",
    "check_extra_body",
    "encode_body",
]

OutputMode: TypeAlias = Literal["native", "tool", "prompted"]
OUTPUT_MODES: tuple[str, ...] = ("native", "tool", "prompted")


#: The synthetic tool of the ``tool`` output mode (the name pydantic-ai uses too): the
#: answer arrives as its arguments, and a server renders it back as text.
OUTPUT_TOOL = "final_result"


class OutputRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The schema the response must follow, for the API's native field."""

    mode: OutputMode
    """How the output is asked for (the encoders act on ``"native"`` only)."""
    name: str
    """The schema's name (``^[A-Za-z0-9_-]{1,64}$``)."""
    schema: dict[str, Any]
    """The JSON Schema; its root is an object."""
    strict: dict[str, Any] | None = None
    """The schema in OpenAI's strict form, when it has one (every object closed,
    every property required); ``None``: sent without ``strict``."""


ReasoningLevel: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh"]
REASONING_LEVELS: tuple[str, ...] = ("minimal", "low", "medium", "high", "xhigh")
#: The HTTP clients modelwire can open itself (``modelwire._http``).
Transport: TypeAlias = Literal["auto", "httpx", "aiohttp", "httptools"]
TRANSPORTS: tuple[str, ...] = ("auto", "httpx", "aiohttp", "httptools")


class Timeout(msgspec.Struct, frozen=True, kw_only=True):
    """Timeouts in seconds; ``None`` disables one.

    ``idle`` is the longest wait for the next byte of the response (SSE
    comments count as bytes); ``total`` bounds the whole call.
    """

    connect: float | None = 10.0
    idle: float | None = 300.0
    total: float | None = None

    def __post_init__(self) -> None:
        for name in ("connect", "idle", "total"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)  # NaN compares false: it would never expire
                or value <= 0
            ):
                raise ConfigurationError(
                    f"Timeout.{name} must be a positive finite number of seconds, or None "
                    f"for no limit (got {value!r})"
                )


#: ``Timeout()``, shared (frozen): the timeout of every call that sets none.
DEFAULT_TIMEOUT = Timeout()


class RequestAuthorizer(Protocol):
    """Credentials obtained when the request is sent, not when it is built: a cloud
    provider's signature (SigV4 covers the exact body bytes) or an OAuth token that
    is fetched and refreshed (Vertex AI, Entra ID). Returns the headers to add and the
    secrets they carry; :class:`modelwire.cloud.CloudAuth` is one. It runs once per
    call, inside the stream (it may do I/O), before the first attempt."""

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[dict[str, str], tuple[str, ...]]: ...

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[dict[str, str], tuple[str, ...]]: ...


class HTTPRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A request ready to send: built by a wire API, sent by ``modelwire._http``.

    ``secrets`` lists values (API keys) that must never appear in an error
    message, a repr or a log line; the HTTP layer redacts them. ``authorizer``,
    set by a provider's rules (:class:`modelwire._providers.ProviderRules`), adds
    credentials when the request is sent (:func:`modelwire._http.authorize_async`).
    """

    url: str
    headers: dict[str, str]
    body: bytes
    secrets: tuple[str, ...] = ()
    authorizer: RequestAuthorizer | None = None
    method: str = "POST"
    """``POST`` (every model call); ``GET`` to read a stored response again (an
    OpenAI Responses background response picked up: ``GET /responses/{id}?stream=true``)."""

    def __repr__(self) -> str:
        headers = {k: "[redacted]" if is_credential_header(k) else redact(v, self.secrets)
                   for k, v in self.headers.items()}  # fmt: skip
        url = redact_url(redact(self.url, self.secrets))
        return f"HTTPRequest(url={url!r}, headers={headers!r}, body=<{len(self.body)} bytes>)"


_body_encoder = msgspec.json.Encoder()


def encode_body(body: Mapping[str, Any]) -> bytes:
    """A request's JSON body; a value JSON cannot carry raises ``ConfigurationError``
    naming its path (``tools[0].parameters.properties.x.default``)."""
    try:
        data = _body_encoder.encode(body)
    except (TypeError, ValueError, OverflowError):
        check_json(body, "")
        raise  # pragma: no cover - check_json raised already
    # msgspec writes NaN and infinities as ``null`` (silently changing the value):
    # only a body with a ``null`` in it can hold one, so only then is it walked.
    if b"null" in data:
        check_json(body, "")
    return data


class RequestOptions(msgspec.Struct, frozen=True, kw_only=True):
    """Validated options of one call (see ``mw.stream`` for each).

    What ``WireCodec.build_request`` receives: the call's keyword options after
    checking (the key resolved, the timeout a ``Timeout``, the reasoning level
    clamped to the model's), so an encoder reads them without checking again.
    """

    api_key: str | None = None
    headers: dict[str, str] | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: ReasoningLevel | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    extra_body: dict[str, Any] | None = None
    timeout: Timeout = msgspec.field(default_factory=Timeout)
    max_retries: int = 2
    session_id: str | None = None
    background: bool = False
    """OpenAI Responses ``background`` (the client refuses it on other APIs)."""
    cache: bool = True
    http_client: Any = None
    transport: Transport = "auto"
    server_tools: tuple[ServerTool, ...] = ()
    """Provider-run tools, checked against the model's profile by the client; the
    encoders of the APIs that have them render each in the API's own form."""
    output: OutputRequest | None = None
    """Set by ``modelwire._client._output`` for ``output_mode="native"``: the encoder adds
    the API's structured-output field from it."""

    def __repr__(self) -> str:
        key = "[redacted]" if self.api_key else None
        return f"RequestOptions(api_key={key!r}, max_tokens={self.max_tokens!r}, ...)"


def check_credential(key: str, source: str) -> None:
    """Refuse a credential (API key, token, AWS key or session token) that cannot be
    a header value, naming ``source`` (the option or variable), never the value.

    A key read from a file often ends in a newline: the HTTP client would refuse
    the header only once the request starts, as a retryable ``connect`` failure
    quoting the key; a CR/LF inside one would split the header (RFC 9110 §5.5).
    Refused here, before any request (DESIGN §3 rule 6)."""
    if not isinstance(key, str):
        raise ConfigurationError(f"{source} must be a string, not {type(key).__name__}")
    if key != key.strip() or any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in key):
        raise ConfigurationError(
            f"{source} contains whitespace at an end or a control character (a trailing "
            "newline from a file?); strip it before passing it"
        )
    if not key.isascii():
        # HTTP header values are ASCII (RFC 9110 §5.5); httpx would fail mid-request.
        raise ConfigurationError(
            f"{source} contains a non-ASCII character (a typographic quote or dash from "
            "a copy-paste?); API keys are ASCII: copy the key again"
        )


RESERVED_BODY_KEYS = frozenset(
    {
        "model",
        "messages",
        "input",
        "contents",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "tools",
        "tool_choice",
    }
)


def check_extra_body(extra_body: Mapping[str, Any] | None, reserved: frozenset[str]) -> None:
    """Reject ``extra_body`` keys that would override what modelwire controls.

    Call it in ``build_request`` with the body fields the encoder sets from options
    and the context, so a caller cannot change them behind modelwire's back.

    Args:
        extra_body: The ``extra_body`` option.
        reserved: The body keys the encoder owns (``model``, ``messages``,
            ``max_tokens``…).

    Raises:
        ConfigurationError: ``extra_body`` names a reserved key; the message says
            which option to use instead.
    """
    if not extra_body:
        return
    clash = sorted(set(extra_body) & reserved)
    if clash:
        raise ConfigurationError(
            f"extra_body may not override {', '.join(clash)}: use the matching option "
            "(max_tokens=, tool_choice=, a Context with tools) instead"
        )

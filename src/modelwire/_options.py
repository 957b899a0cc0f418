"""Request options and the sans-IO request value shared by every wire API.

``resolve_options`` validates the keyword options of ``mw.stream``/``complete``
and friends before any I/O (caller mistakes raise ``ConfigurationError`` at
once, DESIGN §2).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypedDict, Unpack

import msgspec

from ._output._request import OutputRequest
from ._redact import is_credential_header, redact, redact_url
from .errors import ConfigurationError, MissingAPIKeyError
from .types import check_json

if TYPE_CHECKING:
    from ._assemble import CompletionPolicy

__all__ = [
    "ENV_KEYS",
    "REASONING_LEVELS",
    "TRANSPORTS",
    "AgentOptions",
    "HTTPRequest",
    "ReasoningLevel",
    "RequestAuthorizer",
    "RequestOptions",
    "StreamOptions",
    "Timeout",
    "Transport",
    "check_credential",
    "check_extra_body",
    "check_option_names",
    "encode_body",
    "resolve_api_key",
    "resolve_checked",
    "resolve_options",
]

ReasoningLevel: TypeAlias = Literal["minimal", "low", "medium", "high", "xhigh"]
REASONING_LEVELS: tuple[str, ...] = ("minimal", "low", "medium", "high", "xhigh")
#: The HTTP clients modelwire can open itself (``modelwire._http``).
Transport: TypeAlias = Literal["auto", "httpx", "aiohttp", "httptools"]
TRANSPORTS: tuple[str, ...] = ("auto", "httpx", "aiohttp", "httptools")


_env_keys: Callable[[], Mapping[str, tuple[str, ...]]] | None = None


class _EnvKeys(Mapping[str, tuple[str, ...]]):
    """Provider → API-key variables, read from the provider records of the catalog
    data on first use (:func:`modelwire._providers._records.env_keys`). Read-only."""

    __slots__ = ()

    def _table(self) -> Mapping[str, tuple[str, ...]]:
        global _env_keys
        if _env_keys is None:  # imported on first use: the records import this module
            from ._providers._records import env_keys

            _env_keys = env_keys
        return _env_keys()

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return self._table()[name]

    def get(self, name: str, default: Any = None) -> Any:  # once per call: no detour via []
        return self._table().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return f"ENV_KEYS({dict(self._table())!r})"


#: API-key environment variables per provider, first set wins (DESIGN §2a: a provider
#: with no known variable and no key sends no auth header, for local servers).
ENV_KEYS: Mapping[str, tuple[str, ...]] = _EnvKeys()


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
_DEFAULT_TIMEOUT = Timeout()


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
    set by a provider's rules (:class:`modelwire._apis.ProviderRules`), adds
    credentials when the request is sent (:func:`modelwire._http.authorize_async`).
    """

    url: str
    headers: dict[str, str]
    body: bytes
    secrets: tuple[str, ...] = ()
    authorizer: RequestAuthorizer | None = None

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
    """Validated options of one call (see ``mw.stream`` for each)."""

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
    cache: bool = True
    http_client: Any = None
    transport: Transport = "auto"
    output: OutputRequest | None = None
    """Set by ``modelwire._output`` for ``output_mode="native"``: the encoder adds
    the API's structured-output field from it."""

    def __repr__(self) -> str:
        key = "[redacted]" if self.api_key else None
        return f"RequestOptions(api_key={key!r}, max_tokens={self.max_tokens!r}, ...)"


class AgentOptions(TypedDict, total=False):
    """The keyword options of one model call, declared once (typed with ``Unpack``)
    for :func:`modelwire.stream`, :func:`~modelwire.stream_sync`, ``complete*``,
    :func:`resolve_options` and :class:`modelwire.Agent` (which passes them on every
    turn). All but ``api_key``, which the agent takes as its own argument; see
    :class:`StreamOptions` for the full set. Every key is optional."""

    headers: Mapping[str, str] | None
    """Extra HTTP headers (credential headers are redacted like the key)."""
    temperature: float | None
    """Sampling temperature, a finite number >= 0."""
    max_tokens: int | Literal["auto"] | None
    """Output token limit (default: the model's ``max_tokens``); ``"auto"``: what the
    model's context window leaves after the prompt (a local estimate,
    :func:`modelwire.count_tokens`), and a prompt that cannot fit ends the call with
    ``context_overflow`` before any I/O."""
    reasoning: str | None
    """``"minimal"`` | ``"low"`` | ``"medium"`` | ``"high"`` | ``"xhigh"`` | None;
    clamped to the levels the model has."""
    tool_choice: str | Mapping[str, Any] | None
    """``"auto"`` | ``"required"`` | ``"none"`` | ``{"name": ...}`` | None."""
    parallel_tool_calls: bool | None
    """Whether the model may call several tools in one response."""
    extra_body: Mapping[str, Any] | None
    """Vendor fields merged into the body; may not override what modelwire controls."""
    timeout: float | Timeout | None
    """Seconds (connect and idle) or ``mw.Timeout(connect, idle, total)``."""
    max_retries: int
    """Retries before the first byte only (default 2)."""
    http_client: Any
    """An ``httpx.AsyncClient`` or ``aiohttp.ClientSession`` (``stream``/``complete``),
    or an ``httpx.Client`` (sync twins)."""
    transport: Transport
    """The HTTP client modelwire opens when no ``http_client`` is given: ``"auto"``
    (default: aiohttp for ``stream``/``complete`` when installed, else httpx; httpx
    for the sync twins), ``"httpx"``, ``"aiohttp"`` (async only) or ``"httptools"``
    (async only: modelwire's own HTTP/1.1 client on httptools, the least latency and
    CPU per request; no proxies — one set for the URL fails the call)."""
    session_id: str | None
    """Provider session / cache key, where the API has one."""
    cache: bool
    """Prompt caching where the API needs it marked (default True)."""
    trace: Callable[[Any], object] | None
    """A :class:`~modelwire.trace.TraceObserver`: a callable receiving one
    :mod:`trace record <modelwire.trace>` per item of every layer (typed by shape
    here: ``trace`` imports this module)."""
    log: str | os.PathLike[str] | None
    """A SQLite file (:mod:`modelwire._log`) to record this call in: context, answer,
    model, usage, cost, duration, error kind — never a key or header. The conversation
    id is ``session_id`` when given. Nothing is recorded without it."""
    circuit_breaker: Any
    """``True`` (the process-wide breaker), a ``modelwire.CircuitBreaker``, or
    ``None``/``False`` (default for a plain model; a ``Fallback`` uses its own setting):
    repeated failures of a (provider, model) fail later calls fast (``modelwire._breaker``)."""
    requests_per_minute: float | None
    """Client-side pacing of this provider's requests, shared by every call in the
    process that gives the same limits (``modelwire._limits``)."""
    tokens_per_minute: float | None
    """Client-side pacing of this provider's prompt tokens (estimated, settled with usage)."""
    completion_policy: CompletionPolicy | None
    """Decides whether a finished response is acceptable
    (:data:`modelwire._assemble.CompletionPolicy`); by default derived from
    ``tool_choice`` and the context's tools."""
    output: Any
    """Structured output: a pydantic model, msgspec Struct, dataclass, TypedDict or
    JSON Schema dict; the final message's ``parsed`` is the validated value
    (:mod:`modelwire._output`)."""
    output_mode: Literal["native", "tool", "prompted"] | None
    """How ``output`` is asked for; default from the catalog (native where the
    model has it, else a forced tool)."""
    base_url: str | None
    """Replaces the model's ``base_url`` (an ``http(s)://`` URL with the API's
    version segment)."""


class StreamOptions(AgentOptions, total=False):
    """:class:`AgentOptions` plus ``api_key``: the keyword options of ``mw.stream``,
    ``mw.stream_sync``, ``mw.complete``, ``mw.complete_sync`` and ``resolve_options``."""

    api_key: str | Callable[[], str] | None
    """A str, or a zero-argument callable read at each call; default: the
    provider's environment variable."""


def check_option_names(options: Mapping[str, object], where: str) -> None:
    """Refuse a keyword that is not a stream option, as Python refuses an unknown
    keyword (``TypeError``), naming the known ones."""
    unknown = sorted(set(options) - StreamOptions.__optional_keys__)
    if unknown:
        known = ", ".join(sorted(StreamOptions.__optional_keys__))
        raise TypeError(
            f"{where}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"the options are: {known}"
        )


_TOOL_CHOICES = ("auto", "required", "none")


def resolve_api_key(provider: str, api_key: str | Callable[[], str] | None) -> str | None:
    """The key to use: the option (a str or a zero-argument callable, read now), else
    the provider's env var; ``None`` for providers without one (local servers)."""
    if callable(api_key):
        api_key = api_key()
        if not isinstance(api_key, str):
            raise ConfigurationError("api_key callable must return a string")
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key:
            raise ConfigurationError("api_key must be a non-empty string or a callable")
        check_credential(api_key, "api_key")
        return api_key
    names = ENV_KEYS.get(provider)
    if not names:
        return None
    for name in names:
        value = os.environ.get(name)
        if value:
            check_credential(value, name)
            return value
    from ._providers._records import key_optional

    if key_optional(provider):
        # Its provider rules supply credentials when the request is sent (SigV4,
        # Application Default Credentials, Entra ID).
        return None
    raise MissingAPIKeyError(
        f"no API key for provider {provider!r}: set {' or '.join(names)} or pass api_key=...",
        env_var=names[0],
    )


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
    """Reject ``extra_body`` keys that would override what modelwire controls."""
    if not extra_body:
        return
    clash = sorted(set(extra_body) & reserved)
    if clash:
        raise ConfigurationError(
            f"extra_body may not override {', '.join(clash)}: use the matching option "
            "(max_tokens=, tool_choice=, a Context with tools) instead"
        )


def resolve_options(provider: str, **options: Unpack[StreamOptions]) -> RequestOptions:
    """Validate every option; raises ``ConfigurationError`` naming the bad one
    (``TypeError`` for a keyword that is not an option). ``trace`` and
    ``completion_policy`` are the client's: checked there, not here."""
    check_option_names(options, "resolve_options")
    return resolve_checked(provider, options)


def resolve_checked(provider: str, options: StreamOptions) -> RequestOptions:
    """:func:`resolve_options` for options whose names were checked already (the
    client checks them once per call, before it resolves them model by model)."""
    api_key = options.get("api_key")
    headers = options.get("headers")
    temperature = options.get("temperature")
    max_tokens = options.get("max_tokens")
    reasoning = options.get("reasoning")
    tool_choice = options.get("tool_choice")
    parallel_tool_calls = options.get("parallel_tool_calls")
    extra_body = options.get("extra_body")
    timeout = options.get("timeout")
    max_retries = options.get("max_retries", 2)
    session_id = options.get("session_id")
    cache = options.get("cache", True)
    http_client = options.get("http_client")
    transport = options.get("transport", "auto")
    if transport not in TRANSPORTS:
        raise ConfigurationError(
            f'transport must be "auto", "httpx", "aiohttp" or "httptools", got {transport!r}'
        )
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float)
    ):
        raise ConfigurationError("temperature must be a number")
    if temperature is not None and (not math.isfinite(temperature) or temperature < 0):
        # JSON has no NaN or infinity (RFC 8259 §6): msgspec would send null.
        raise ConfigurationError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if max_tokens == "auto":
        # Fitted to the context window by the client, once the conversation is
        # rewritten for the model (``modelwire._count.fit_max_tokens``).
        max_tokens = None
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0
    ):
        raise ConfigurationError('max_tokens must be a positive integer or "auto"')
    if reasoning is not None and reasoning not in REASONING_LEVELS:
        raise ConfigurationError(
            f"reasoning must be one of {', '.join(REASONING_LEVELS)} or None, got {reasoning!r}"
        )
    tc: str | dict[str, Any] | None
    if tool_choice is None or isinstance(tool_choice, str):
        if tool_choice is not None and tool_choice not in _TOOL_CHOICES:
            raise ConfigurationError(
                f'tool_choice must be "auto", "required", "none", {{"name": ...}} or None, '
                f"got {tool_choice!r}"
            )
        tc = tool_choice
    elif isinstance(tool_choice, Mapping):
        name = tool_choice.get("name")
        if set(tool_choice) != {"name"} or not isinstance(name, str) or not name:
            raise ConfigurationError('tool_choice as a dict must be {"name": "<tool name>"}')
        tc = {"name": name}
    else:
        raise ConfigurationError(f"tool_choice has an unsupported type {type(tool_choice)!r}")
    if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
        raise ConfigurationError("parallel_tool_calls must be a bool")
    if extra_body is not None and not isinstance(extra_body, Mapping):
        raise ConfigurationError("extra_body must be a dict")
    if headers is not None:
        if not isinstance(headers, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
        ):
            raise ConfigurationError("headers must be a dict of str to str")
    if extra_body is not None:
        from .types import check_json

        # Named by its option path (``extra_body.x``) before it is merged into the body.
        check_json(dict(extra_body), "extra_body")
    if timeout is None:
        to = _DEFAULT_TIMEOUT
    elif isinstance(timeout, Timeout):
        to = timeout
    elif isinstance(timeout, int | float) and not isinstance(timeout, bool):
        if not math.isfinite(timeout) or timeout <= 0:
            raise ConfigurationError(
                f"timeout must be a positive finite number of seconds, got {timeout!r} "
                "(mw.Timeout(connect=None, idle=None) for no limit)"
            )
        # A float sets connect and idle; total stays unlimited (DESIGN §2a).
        to = Timeout(connect=float(timeout), idle=float(timeout), total=None)
    else:
        raise ConfigurationError("timeout must be a number of seconds or mw.Timeout(...)")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigurationError("max_retries must be a non-negative integer")
    if session_id is not None and not isinstance(session_id, str):
        raise ConfigurationError("session_id must be a string")
    key = resolve_api_key(provider, api_key)
    return RequestOptions(
        api_key=key,
        headers=dict(headers) if headers else None,
        temperature=float(temperature) if temperature is not None else None,
        max_tokens=max_tokens,
        reasoning=reasoning,  # type: ignore[arg-type]
        tool_choice=tc,
        parallel_tool_calls=parallel_tool_calls,
        extra_body=dict(extra_body) if extra_body else None,
        timeout=to,
        max_retries=max_retries,
        session_id=session_id,
        cache=cache,
        http_client=http_client,
        transport=transport,
    )

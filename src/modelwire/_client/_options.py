"""The keyword options of a call, validated into a
:class:`~modelwire._wire.request.RequestOptions`.

``resolve_options`` validates the keyword options of ``mw.stream``/``complete``
and friends before any I/O (caller mistakes raise ``ConfigurationError`` at
once, DESIGN §2).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from .._catalog._records import ENV_KEYS
from .._wire.request import (
    DEFAULT_TIMEOUT,
    REASONING_LEVELS,
    TRANSPORTS,
    RequestOptions,
    Timeout,
    Transport,
    check_credential,
)
from ..errors import ConfigurationError, MissingAPIKeyError

if TYPE_CHECKING:
    from .._wire.assemble import CompletionPolicy
    from ..types import ServerTool

__all__ = [
    "AgentOptions",
    "StreamOptions",
    "UnknownOptionError",
    "check_option_names",
    "did_you_mean",
    "resolve_api_key",
    "resolve_checked",
    "resolve_options",
]


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
    """Output token limit (default: the model's ``max_tokens``: the catalog's output
    limit, 4096 for an id the catalog does not know, ``mw.Model``'s 16384 unless set;
    ``None`` sends none); ``"auto"``: what the
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
    background: bool
    """OpenAI Responses only (an API without background responses refuses it with
    ``ConfigurationError``): run the response in the background (``"background": true``
    with ``"store": true``, which OpenAI requires for it). A stream that breaks before its
    terminal event is then picked up again with ``GET /responses/{id}?stream=true&
    starting_after=N`` instead of failing; see :func:`modelwire.resume_stream`."""
    cache: bool
    """Prompt caching where the API needs it marked (default True)."""
    trace: Callable[[Any], object] | None
    """A :class:`~modelwire.trace.TraceObserver`: a callable receiving one
    :mod:`trace record <modelwire.trace>` per item of every layer (typed by shape
    here: ``trace`` imports this module)."""
    log: str | os.PathLike[str] | None
    """A SQLite file (:mod:`modelwire._client._log`) to record this call in: context, answer,
    model, usage, cost, duration, error kind — never a key or header. The conversation
    id is ``session_id`` when given. Nothing is recorded without it."""
    circuit_breaker: Any
    """``True`` (the process-wide breaker), a ``modelwire.CircuitBreaker``, or
    ``None``/``False`` (default for a plain model; a ``Fallback`` uses its own setting):
    repeated failures of a (provider, model) fail later calls fast (``modelwire._call._breaker``)."""
    requests_per_minute: float | None
    """Client-side pacing of this provider's requests, shared by every call in the
    process that gives the same limits (``modelwire._call._limits``)."""
    tokens_per_minute: float | None
    """Client-side pacing of this provider's prompt tokens (estimated, settled with usage)."""
    completion_policy: CompletionPolicy | None
    """Decides whether a finished response is acceptable
    (:data:`modelwire._wire.assemble.CompletionPolicy`); by default derived from
    ``tool_choice`` and the context's tools."""
    output: Any
    """Structured output: a pydantic model, msgspec Struct, dataclass, TypedDict or
    JSON Schema dict; the final message's ``parsed`` is the validated value
    (:mod:`modelwire._client._output`)."""
    output_mode: Literal["native", "tool", "prompted"] | None
    """How ``output`` is asked for; default from the catalog (native where the
    model has it, else a forced tool)."""
    server_tools: Sequence[ServerTool] | None
    """Tools the provider runs itself (:class:`modelwire.ServerTool`: web search, web
    fetch, code execution), where the model's profile lists them
    (``Capabilities.server_tools``); refused with ``ConfigurationError`` elsewhere."""
    base_url: str | None
    """Replaces the model's ``base_url`` (an ``http(s)://`` URL with the API's
    version segment)."""


class StreamOptions(AgentOptions, total=False):
    """:class:`AgentOptions` plus ``api_key``: the keyword options of ``mw.stream``,
    ``mw.stream_sync``, ``mw.complete``, ``mw.complete_sync`` and ``resolve_options``."""

    api_key: str | Callable[[], str] | None
    """A str, or a zero-argument callable read at each call; default: the
    provider's environment variable."""


class UnknownOptionError(ConfigurationError, TypeError):
    """A keyword that is no option: a caller mistake (``ConfigurationError``), and a
    ``TypeError`` as Python's own unknown keyword argument is."""


def did_you_mean(unknown: Iterable[str], known: Iterable[str]) -> str:
    """`` (did you mean 'max_tokens'?)`` for the closest known name to each unknown
    one that has one (difflib, as the CLI suggests a flag), else ``""``."""
    names, wrong = sorted(known), list(unknown)
    close = []
    for name in wrong:
        match = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        if match:
            close.append(repr(match[0]) if len(wrong) == 1 else f"{match[0]!r} for {name!r}")
    return f" (did you mean {', '.join(close)}?)" if close else ""


def check_option_names(
    options: Mapping[str, object], where: str, known: Iterable[str] = ()
) -> None:
    """Refuse a keyword that is not a stream option (:class:`UnknownOptionError`),
    naming the closest option and the known ones; ``known`` adds the names the
    entry point takes besides the options."""
    names = StreamOptions.__optional_keys__ | set(known)
    unknown = sorted(set(options) - names)
    if unknown:
        raise UnknownOptionError(
            f"{where}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}"
            f"{did_you_mean(unknown, names)}; the options are: "
            f"{', '.join(sorted(StreamOptions.__optional_keys__))}"
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
    from .._catalog._records import key_optional

    if key_optional(provider):
        # Its provider rules supply credentials when the request is sent (SigV4,
        # Application Default Credentials, Entra ID).
        return None
    raise MissingAPIKeyError(
        f"no API key for provider {provider!r}: set {' or '.join(names)} or pass api_key=...",
        env_var=names[0],
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
    background = options.get("background", False)
    if not isinstance(background, bool):
        raise ConfigurationError("background must be a bool")
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
        # rewritten for the model (``modelwire._client._count.fit_max_tokens``).
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
        from ..types import check_json

        # Named by its option path (``extra_body.x``) before it is merged into the body.
        check_json(dict(extra_body), "extra_body")
    if timeout is None:
        to = DEFAULT_TIMEOUT
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
    server_tools = _server_tools(options.get("server_tools"))
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
        background=background,
        cache=cache,
        http_client=http_client,
        transport=transport,
        server_tools=server_tools,
    )


def _server_tools(value: object) -> tuple[ServerTool, ...]:
    from ..types import ServerTool

    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise ConfigurationError("server_tools must be a list of mw.ServerTool")
    tools = tuple(value)
    for i, tool in enumerate(tools):
        if not isinstance(tool, ServerTool):
            raise ConfigurationError(
                f"server_tools[{i}] must be a mw.ServerTool, got {type(tool).__name__}"
            )
    names = [t.name for t in tools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigurationError(f"server_tools names {', '.join(twice)} more than once")
    return tools

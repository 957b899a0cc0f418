"""The one exception module of modelwire.

Every error has a stable ``kind`` string (DESIGN §2). Caller mistakes raise at
once; everything that goes wrong after a request starts ends the stream with an
``error`` event whose ``message.error`` is an :class:`ErrorInfo`
carrying the same ``kind``; ``message.raise_for_error()`` turns it back into the
class below. Third-party exceptions are mapped in one place per library: httpx's in
``modelwire._http``, aiohttp's in ``modelwire._http._aiohttp``.

::

    ModelwireError
    ├── ConfigurationError (also ValueError)     kind "configuration"
    │   └── MissingAPIKeyError                   kind "missing_api_key"
    ├── OutputWriteError (also OSError)          kind "output_write"  (a batch's results)
    ├── ToolServerError                          kind "tool_server"   (an MCP server)
    └── StreamError                              (ends a stream; carried as ErrorInfo)
        ├── ProviderError                        (the provider said no)
        │   ├── AuthenticationError              "authentication"    401
        │   ├── PermissionDeniedError            "permission"        403
        │   ├── NotFoundError                    "not_found"         404
        │   ├── RateLimitError                   "rate_limit"        429
        │   ├── OverloadedError                  "overloaded"        529/503
        │   ├── ContextOverflowError             "context_overflow"
        │   ├── InvalidRequestError              "invalid_request"   400/413/422
        │   ├── ServerError                      "server"            5xx
        │   ├── ProviderStreamError              "provider_stream"   in-band error
        │   └── ContentFilterError               "content_filter"
        ├── TransportError                       (the network failed)
        │   ├── ConnectError                     "connect"
        │   ├── RequestTimeoutError              "timeout"
        │   └── StreamInterruptedError           "stream_interrupted"
        ├── ProtocolError                        (the bytes were wrong)
        │   ├── MalformedChunkError              "malformed_chunk"
        │   ├── TruncatedStreamError             "truncated_stream"
        │   ├── ToolCallProtocolError            "tool_call_protocol"
        │   └── EventTooLargeError               "event_too_large"
        ├── OutputInvalidError                   "output_invalid"
        └── AbortedError                         "aborted"

Every :class:`StreamError` carries the provider's own error ``code`` (or type) and
``request_id`` when it sent them, and ``retryable``: whether sending the same
request again may succeed, decided once by ``modelwire._providers._classify``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, NamedTuple, Self

import msgspec

__all__ = [
    "AbortedError",
    "AuthenticationError",
    "ConfigurationError",
    "ConnectError",
    "ContentFilterError",
    "ContextOverflowError",
    "ErrorInfo",
    "EventTooLargeError",
    "InvalidRequestError",
    "MalformedChunkError",
    "MissingAPIKeyError",
    "ModelwireError",
    "NotFoundError",
    "OutputInvalidError",
    "OutputWriteError",
    "OverloadedError",
    "PermissionDeniedError",
    "ProtocolError",
    "ProviderError",
    "ProviderStreamError",
    "RateLimitError",
    "RequestTimeoutError",
    "ServerError",
    "StreamError",
    "StreamInterruptedError",
    "ToolCallProtocolError",
    "ToolServerError",
    "TransportError",
    "TruncatedStreamError",
    "error_class_for_kind",
]


class ErrorInfo(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Why a message failed; ``kind`` is one of the stable kinds of DESIGN §2.

    A protocol type (re-exported by :mod:`modelwire.types` and as ``mw.ErrorInfo``)
    defined here because :meth:`StreamError.to_info` builds it: the error module
    imports no other modelwire module at load time, so no import cycle.
    """

    kind: str
    """e.g. ``rate_limit``, ``malformed_chunk``, ``aborted``."""
    message: str
    """Human-readable cause, API keys redacted."""
    status: int | None = None
    """HTTP status, when the failure was a status."""
    retry_after: float | None = None
    """Seconds the provider asked to wait, when it said."""
    code: str | None = None
    """The provider's own error code or type (``insufficient_quota``,
    ``RESOURCE_EXHAUSTED``, ``ThrottlingException``), when it sent one."""
    request_id: str | None = None
    """The provider's id of the failed request (``x-request-id``, ``request-id``,
    ``x-amzn-requestid``… or the error body), to quote to its support."""
    retryable: bool = False
    """Whether sending the same request again may succeed (a rate limit, an
    overloaded or failing server, a dropped connection), but not an exhausted
    quota, a bad request or a refused key."""


class Excerpt(NamedTuple):
    """A message that quotes the head of a payload: ``prefix``, then the first
    ``limit`` characters of ``payload`` (``repr``-quoted when ``quote``), then
    ``suffix``. Kept on the error so the payload is redacted whole before it is
    cut (``modelwire._redact``: a cut edge never shows a piece of a key)."""

    prefix: str
    payload: str
    suffix: str = ""
    limit: int = 120
    quote: bool = True

    def render(self, secrets: Iterable[str] = ()) -> str:
        from ._redact import head, redact

        keys = tuple(secrets)
        shown = head(self.payload, self.limit, keys)
        quoted = repr(shown) if self.quote else shown
        return redact(self.prefix, keys) + quoted + redact(self.suffix, keys)


class ModelwireError(Exception):
    """Root of every error modelwire raises.

    ``except modelwire.errors.ModelwireError`` catches them all; ``kind`` (a class
    attribute) is the stable string that names each class, the same as
    ``ErrorInfo.kind`` on a failed message. ``message`` is the text, keys redacted.

    Args:
        message: What went wrong and, for a caller mistake, what to do.
    """

    kind: ClassVar[str] = "modelwire"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigurationError(ModelwireError, ValueError):
    """The caller asked for something impossible; raised before any request.

    ``kind`` ``"configuration"``, also a ``ValueError``: an unknown or invalid option
    (the closest name suggested), a value of the wrong type, input a model does not
    accept. The message says what to change; nothing was sent: fix, do not retry.
    """

    kind = "configuration"


class OutputWriteError(ModelwireError, OSError):
    """A batch run could not write its results file, or an agent its store (a full
    disk, a file size limit…); what was written before stays, so running again resumes."""

    kind = "output_write"


class ToolServerError(ModelwireError):
    """An MCP server did not start, answer or list its tools when it was opened (by
    ``async with`` or a run); one failing during a call answers it with an error result."""

    kind = "tool_server"


class MissingAPIKeyError(ConfigurationError):
    """No API key was given and the provider's environment variable is unset.

    ``kind`` ``"missing_api_key"``; raised before any request. ``env_var`` names the
    variable to set (``None`` when the provider has none); or pass ``api_key=``.

    Args:
        message: What to set or pass.
        env_var: The provider's key variable.
    """

    kind = "missing_api_key"

    def __init__(self, message: str, *, env_var: str | None = None) -> None:
        super().__init__(message)
        self.env_var = env_var


class StreamError(ModelwireError):
    """Something went wrong after the request started; it ends the stream.

    A stream never raises it: it arrives as ``message.error`` (an :class:`ErrorInfo`)
    and ``message.raise_for_error()`` raises the subclass for its ``kind``; a failed
    ``count_tokens`` raises it directly. Catch the subclasses (or
    :class:`TransportError`, :class:`ProviderError`…) to tell failures apart.

    Args:
        message: What happened, keys redacted.
        status: The HTTP status, when there was one.
        retry_after: The wait in seconds the provider asked for.
        code: The provider's error code or type.
        request_id: The provider's request id.
        retryable: Whether sending the same request again may succeed; ``None``: decided
            from the kind, status and code (``modelwire._providers._classify``).
    """

    kind = "stream"
    #: Whether an error of this kind may go away when the same request is sent again
    #: (the default of ``retryable``; ``modelwire._providers._classify`` refines it by status
    #: and provider code: a rate limit out of quota is not transient).
    transient: ClassVar[bool] = False
    #: Set when the message quotes the head of a payload (see :class:`Excerpt`).
    excerpt: Excerpt | None = None

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        code: str | None = None,
        request_id: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.code = code
        self.request_id = request_id
        self._retryable = retryable

    @property
    def retryable(self) -> bool:
        """Whether sending the same request again may succeed: the classifier's
        decision when it made one (``modelwire._providers._classify``), else the kind's."""
        return type(self).transient if self._retryable is None else self._retryable

    @retryable.setter
    def retryable(self, value: bool) -> None:
        self._retryable = value

    @classmethod
    def quoting(cls, excerpt: Excerpt, *, status: int | None = None) -> Self:
        """An error whose message is ``excerpt`` rendered (no secrets known yet)."""
        err = cls(excerpt.render(), status=status)
        err.excerpt = excerpt
        return err

    def redacted(self, secrets: Iterable[str]) -> Self:
        """A copy with ``secrets`` hidden in the message (``str``, ``args`` and
        :meth:`to_info` follow); ``self`` is left as it is. A quoted payload is
        redacted whole, then cut."""
        import copy

        from ._redact import redact

        keys = tuple(s for s in secrets if s)
        out = copy.copy(self)
        if not keys:
            return out
        ex = self.excerpt
        if ex is not None and self.message.startswith(ex.render()):
            # Rebuilt from the whole payload; text appended since (context) is kept.
            rest = self.message[len(ex.render()) :]
            text = ex.render(keys) + redact(rest, keys)
        else:
            text = redact(self.message, keys)
        out.message = text
        out.args = (text,)
        return out

    def to_info(self) -> ErrorInfo:
        """The :class:`ErrorInfo` stored on a failed message."""
        return ErrorInfo(
            kind=self.kind,
            message=self.message,
            status=self.status,
            retry_after=self.retry_after,
            code=self.code,
            request_id=self.request_id,
            retryable=self.retryable,
        )


class ProviderError(StreamError):
    """The provider answered with an error (an HTTP status or an in-band error).

    The base of the provider's refusals, each subclass one kind; ``status``,
    ``code`` and ``request_id`` are the provider's. ``kind`` ``"provider"`` only for
    a subclass-less error, which the classifier does not produce.
    """

    kind = "provider"


class AuthenticationError(ProviderError):
    """The provider refused the credentials: HTTP 401 or an in-band authentication
    error.

    ``kind`` ``"authentication"``, not retryable. Check the API key (and that it
    belongs to this provider and ``base_url``).
    """

    kind = "authentication"


class PermissionDeniedError(ProviderError):
    """The key is valid but may not do this: HTTP 403 or an in-band permission error.

    ``kind`` ``"permission"``, not retryable: the account lacks access to the model
    or the feature.
    """

    kind = "permission"


class NotFoundError(ProviderError):
    """The provider does not know the model or the endpoint: HTTP 404.

    ``kind`` ``"not_found"``, not retryable. Usually a misspelt model id or a
    ``base_url`` without the API's version segment; the message adds a hint when
    modelwire can tell which.
    """

    kind = "not_found"


class RateLimitError(ProviderError):
    """Too many requests or tokens: HTTP 429 or an in-band rate-limit error.

    ``kind`` ``"rate_limit"``; retried before any content (``Retry-After``
    honoured), and it moves a ``Fallback`` on. ``retryable`` is false when the
    provider says the quota is exhausted (``insufficient_quota``): waiting will
    not help, paying will.
    """

    transient = True
    kind = "rate_limit"


class OverloadedError(ProviderError):
    """The provider is overloaded: HTTP 529 or 503, or an ``overloaded`` error code.

    ``kind`` ``"overloaded"``, retryable: retried before any content, and it moves
    a ``Fallback`` on. Try again later or another model.
    """

    transient = True
    kind = "overloaded"


class ContextOverflowError(ProviderError):
    """The prompt does not fit the model's context window.

    ``kind`` ``"context_overflow"``, not retryable as it is. From a provider's 400
    (or in-band error) that says so, or before any request for
    ``max_tokens="auto"`` when the prompt leaves no room. It moves a ``Fallback``
    on (to a model with a larger window); otherwise shorten the conversation.
    """

    kind = "context_overflow"


class InvalidRequestError(ProviderError):
    """The provider rejected the request as invalid: HTTP 400, 413 or 422 (or another
    4xx without a class of its own).

    ``kind`` ``"invalid_request"``, not retryable: the same request fails again.
    The provider's message (and ``code``) says which field; often an option or
    content the model does not support.
    """

    kind = "invalid_request"


class ServerError(ProviderError):
    """The provider failed: an HTTP 5xx (but 503 and 529, which are
    :class:`OverloadedError`) or an in-band server error.

    ``kind`` ``"server"``, retryable: retried before any content, and it moves a
    ``Fallback`` on.
    """

    transient = True
    kind = "server"


class ProviderStreamError(ProviderError):
    """An error the provider sent inside a 200 stream.

    ``kind`` ``"provider_stream"``, retryable by default: an in-band error event
    that names no more specific class (those become :class:`RateLimitError`,
    :class:`OverloadedError`… as their status would).
    """

    transient = True

    kind = "provider_stream"


class ContentFilterError(ProviderError):
    """The provider refused or stopped the output for safety reasons.

    ``kind`` ``"content_filter"``, not retryable as it is: rephrase the request.
    The message names the filtered categories when the provider says them.
    """

    kind = "content_filter"


class TransportError(StreamError):
    """The network failed: the base of :class:`ConnectError`,
    :class:`RequestTimeoutError` and :class:`StreamInterruptedError`.

    Catch it for "the provider could not be reached or the connection broke".
    """

    kind = "transport"


class ConnectError(TransportError):
    """The connection was refused or the host could not be resolved.

    ``kind`` ``"connect"``, retryable: retried, and it moves a ``Fallback`` on.
    Check ``base_url`` and that the server runs.
    """

    transient = True

    kind = "connect"


class RequestTimeoutError(TransportError):
    """The connect, idle (silence between bytes) or total timeout expired.

    ``kind`` ``"timeout"``. Not retried within the call (its time budget is
    spent), but it moves a ``Fallback`` on and is worth another call. Raise the
    limits with ``timeout=mw.Timeout(connect, idle, total)``.
    """

    transient = True

    kind = "timeout"


class StreamInterruptedError(TransportError):
    """The connection closed before the HTTP body was complete.

    ``kind`` ``"stream_interrupted"``, retryable: sending the request again may
    succeed.
    """

    transient = True

    kind = "stream_interrupted"


class ProtocolError(StreamError):
    """The bytes were wrong: the response broke the wire API's format.

    The base of :class:`MalformedChunkError`, :class:`TruncatedStreamError`,
    :class:`ToolCallProtocolError` and :class:`EventTooLargeError`. Usually a
    server that is not what the model's ``api`` says, or a proxy that mangles the
    stream; ``mw.replay`` and ``trace=`` show the bytes.
    """

    kind = "protocol"


class MalformedChunkError(ProtocolError):
    """A payload was not valid: bad UTF-8, bad JSON, or a field of the wrong type.

    The message names the field path, e.g. ``choices[0].delta.content must be a string``.
    ``kind`` ``"malformed_chunk"``, not retryable.
    """

    kind = "malformed_chunk"


class TruncatedStreamError(ProtocolError):
    """The body ended mid-event or without the API's terminal signal.

    ``kind`` ``"truncated_stream"``, retryable: the answer is incomplete (a
    dropped connection or a proxy that cut it), so send again.
    """

    transient = True

    kind = "truncated_stream"


class ToolCallProtocolError(ProtocolError):
    """Tool-call fragments broke the protocol (DESIGN §2a, tool-call protocol).

    ``kind`` ``"tool_call_protocol"``: e.g. a fragment before its call started, a
    call whose name changes, a tool call although no tools were declared, or a
    response that does not honour ``tool_choice`` (``"required"``, a forced tool)
    or the ``completion_policy``.
    """

    kind = "tool_call_protocol"


class EventTooLargeError(ProtocolError):
    """One SSE event exceeded ``max_event_bytes``.

    ``kind`` ``"event_too_large"``: the limit keeps a broken or hostile server from
    filling memory with one event.
    """

    kind = "event_too_large"


class OutputInvalidError(StreamError):
    """The response ended well but its output did not validate against the
    structured output the caller asked for (``output=``).

    ``kind`` ``"output_invalid"``; the message names the failing field. An
    ``Agent`` feeds it back to the model (``output_retries``).
    """

    kind = "output_invalid"


class AbortedError(StreamError):
    """The caller cancelled the stream.

    ``kind`` ``"aborted"``: ``abort()``, ``aclose()`` or leaving an ``async with``
    early; the message's ``stop_reason`` is ``"aborted"``. Nothing went wrong.
    """

    kind = "aborted"


_BY_KIND: dict[str, type[StreamError]] = {
    cls.kind: cls
    for cls in (
        AuthenticationError,
        PermissionDeniedError,
        NotFoundError,
        RateLimitError,
        OverloadedError,
        ContextOverflowError,
        InvalidRequestError,
        ServerError,
        ProviderStreamError,
        ContentFilterError,
        ConnectError,
        RequestTimeoutError,
        StreamInterruptedError,
        MalformedChunkError,
        TruncatedStreamError,
        ToolCallProtocolError,
        EventTooLargeError,
        OutputInvalidError,
        AbortedError,
    )
}

#: Every ``kind`` a failed message may carry (DESIGN §2, §2a).
STREAM_ERROR_KINDS: frozenset[str] = frozenset(_BY_KIND)


def error_class_for_kind(kind: str) -> type[StreamError]:
    """The exception class for an :class:`ErrorInfo` kind (``StreamError`` if unknown).

    Args:
        kind: A ``kind`` string, e.g. ``"rate_limit"``.

    Returns:
        The :class:`StreamError` subclass, e.g. :class:`RateLimitError`.
    """
    return _BY_KIND.get(kind, StreamError)


def from_info(info: ErrorInfo) -> StreamError:
    """Rebuild the exception an :class:`ErrorInfo` describes."""
    return error_class_for_kind(info.kind)(
        info.message,
        status=info.status,
        retry_after=info.retry_after,
        code=info.code,
        request_id=info.request_id,
        retryable=info.retryable,
    )

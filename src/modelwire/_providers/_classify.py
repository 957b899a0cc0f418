"""The one classifier of provider errors: which error a failure is, and whether
sending the same request again may succeed.

Both ways a provider reports an error end here: an HTTP error status
(:func:`modelwire._providers._status.status_error` reads the body and calls
:func:`status_class`) and an error object inside a stream (every decoder calls
:func:`in_band_error`). :func:`is_retryable` is the one retry decision the
:class:`~modelwire.errors.StreamError` ``retryable`` flag, the send loop
(:class:`modelwire._call._retry.RetryPolicy`) and the batch runner read.

Provider-specific knowledge (their overflow wordings, their status quirks) comes
from the provider records of the catalog data (:mod:`modelwire._catalog._records`);
only wordings several providers share are written here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import (
    STREAM_ERROR_KINDS,
    AuthenticationError,
    ContentFilterError,
    ContextOverflowError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
    StreamError,
    error_class_for_kind,
)

if TYPE_CHECKING:
    from ..types import AssistantMessage, Model

__all__ = [
    "RETRYABLE_KINDS",
    "RETRYABLE_STATUSES",
    "RETRY_STATUSES",
    "content_filter_error",
    "filtered_categories",
    "in_band_error",
    "is_context_overflow",
    "is_overflow",
    "is_retryable",
    "is_silent_overflow",
    "status_class",
]

#: Statuses worth another attempt: timeouts, conflicts, rate limits, server trouble
#: (529 is Anthropic's "overloaded").
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

#: Kinds where the same request may succeed when sent again: the provider or the
#: network may do better next time (the error classes marked ``transient``: rate
#: limits, overloaded or failing servers, dropped or timed-out connections, cut or
#: failed streams). Everything else (authentication, invalid_request,
#: context_overflow, content_filter, malformed_chunk, …) will not.
RETRYABLE_KINDS = frozenset(
    kind for kind in STREAM_ERROR_KINDS if error_class_for_kind(kind).transient
)
#: Statuses worth another attempt whatever their kind: request timeout and conflict
#: (RFC 9110 §15.5.9, §15.5.10), rate limits and server trouble (529: Anthropic's
#: "overloaded"); the send loop's own set, one definition.
RETRYABLE_STATUSES = RETRY_STATUSES
# A provider's own code saying the account is out of money or quota (OpenAI
# ``insufficient_quota``: "You exceeded your current quota"): waiting does not help.
_NO_RETRY_CODE = re.compile(r"quota|billing", re.I)


def is_retryable(kind: str, status: int | None = None, code: str | None = None) -> bool:
    """Whether sending the same request again may succeed: a transient kind or status,
    unless the provider's ``code`` says the account is out of quota."""
    if code is not None and _NO_RETRY_CODE.search(code):
        return False
    return kind in RETRYABLE_KINDS or (status is not None and status in RETRYABLE_STATUSES)


# Wordings several providers share for a prompt that does not fit; each provider's
# own wording is in its record (``overflow``), real texts in tests/test_catalog.py.
_GENERIC_OVERFLOW = (
    r"maximum context length",  # OpenAI Chat, DeepSeek, vLLM, OpenRouter ("endpoint's")
    r"context[_ ]length[_ ]exceeded",  # OpenAI's error code, used by many servers
    r"context window exceeds limit",  # MiniMax and servers reusing its wording
    r"exceeds the available context size",  # llama.cpp server, under any provider name
    r"try increasing context size",  # llama.cpp: the KV cache is full mid-generation
    r"too many tokens",
    r"token limit exceeded",
)
# Rate limits and throttling also talk about "tokens" and "too large" (Groq's
# "Request too large for model … on tokens per minute (TPM)", Bedrock's "Too many
# tokens, please wait"): waiting, not a shorter prompt, is their remedy.
_NOT_OVERFLOW = re.compile(
    r"rate[_ ]limit|tokens per min|\b[TR]PM\b|throttl|please wait|quota|try again in",
    re.I,
)
_overflow: re.Pattern[str] | None = None


def _overflow_pattern() -> re.Pattern[str]:
    global _overflow
    if _overflow is None:
        from .._catalog._records import overflow_texts

        texts = dict.fromkeys((*_GENERIC_OVERFLOW, *overflow_texts()))
        _overflow = re.compile("|".join(texts), re.I)
    return _overflow


def is_context_overflow(message: str) -> bool:
    """Whether a provider error text says the prompt did not fit the context window
    (and is not a rate limit or throttle worded with tokens)."""
    return bool(_overflow_pattern().search(message)) and not _NOT_OVERFLOW.search(message)


def filtered_categories(results: object) -> list[str]:
    """The categories a content-filter result says were filtered, in order: Azure
    OpenAI's ``content_filter_results`` / ``innererror.content_filter_result``
    (``{"hate": {"filtered": true, "severity": "high"}, "jailbreak": {"filtered":
    true, "detected": true}, "custom_blocklists": {"filtered": true, "details":
    [...]}}``, learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter).
    ``hate (high)`` names the severity when there is one."""
    if not isinstance(results, Mapping):
        return []
    out = []
    for name, result in results.items():
        if isinstance(result, Mapping) and result.get("filtered") is True:
            severity = result.get("severity")
            out.append(f"{name} ({severity})" if isinstance(severity, str) else str(name))
    return out


def content_filter_error(error: object) -> str | None:
    """For an error object that reports a content filter (``code:
    "content_filter"``, or Azure's ``innererror.code: "ResponsibleAIPolicyViolation"``),
    what was filtered (``"filtered: hate (high), jailbreak"``); else ``None``."""
    if not isinstance(error, Mapping):
        return None
    inner = error.get("innererror")
    inner = inner if isinstance(inner, Mapping) else {}
    if error.get("code") != "content_filter" and (
        inner.get("code") != "ResponsibleAIPolicyViolation"
    ):
        return None
    cats = filtered_categories(inner.get("content_filter_result"))
    return f"filtered: {', '.join(cats)}" if cats else "filtered by the content filter"


def status_class(
    status: int, message: str, code: str | None, body: str, *, filtered: bool = False
) -> type[ProviderError]:
    """The error class for an HTTP error ``status`` whose body (redacted) is ``body``,
    the provider's message ``message`` and its code or type ``code``; ``filtered``:
    the body reports a content filter (:func:`content_filter_error`)."""
    from .._catalog._records import status_quirk_kind

    quirk = status_quirk_kind(status, body)
    if quirk is not None:
        cls = error_class_for_kind(quirk)
        if issubclass(cls, ProviderError):
            return cls
    if status == 401:
        return AuthenticationError
    if status == 403:
        return PermissionDeniedError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if status in (400, 413, 422):
        if filtered:
            # Azure OpenAI's filtered prompt: 400, code content_filter — a refusal,
            # not a malformed request.
            return ContentFilterError
        return ContextOverflowError if is_context_overflow(message) else InvalidRequestError
    if status in (503, 529) or (code and "overloaded" in code.lower()):
        return OverloadedError
    if status >= 500:
        return ServerError
    return InvalidRequestError


def _code_text(code: Any) -> str | None:
    return None if code is None or code == "" else str(code)


def in_band_error(
    message: str,
    *,
    type_: str | None = None,
    code: Any = None,
    status: int | None = None,
    request_id: str | None = None,
) -> StreamError:
    """Map an error object sent inside a stream to the most specific error class,
    carrying the provider's ``code`` (else its ``type_``), ``status`` and
    ``request_id``, and the retry decision of :func:`is_retryable`.

    A wire API's decoder raises what it returns when the stream carries an error
    event, so every API's in-band errors get the same kinds as HTTP errors.

    Args:
        message: The provider's error message.
        type_: The provider's error type (``overloaded_error``…).
        code: The provider's error code.
        status: The HTTP-like status the error names, if any.
        request_id: The provider's request id, if sent.

    Returns:
        The :class:`~modelwire.errors.StreamError` subclass instance (e.g.
        ``RateLimitError``; ``ProviderStreamError`` when nothing is more specific).
    """
    hint = f"{type_ or ''} {code or ''}".lower()
    text = message or "the provider reported an error"
    if type_ or code:
        text = f"{text} ({', '.join(str(x) for x in (type_, code) if x)})"
    cls: type[StreamError]
    if code == "content_filter":
        # Azure OpenAI's content filter (an error event of the Responses API, a
        # filtered prompt): a refusal, not a malformed request.
        cls = ContentFilterError
    elif "overloaded" in hint or status in (529, 503):
        cls = OverloadedError
    elif "rate_limit" in hint or "rate limit" in hint or status == 429:
        cls = RateLimitError
    elif is_context_overflow(message) or "context_length" in hint:
        cls = ContextOverflowError
    elif "authentication" in hint or status == 401:
        cls = AuthenticationError
    elif "permission" in hint or status == 403:
        cls = PermissionDeniedError
    elif "not_found" in hint or status == 404:
        cls = NotFoundError
    elif "invalid_request" in hint or "request_too_large" in hint or status in (400, 413, 422):
        cls = InvalidRequestError
    elif (
        "api_error" in hint
        or "server_error" in hint
        or "timeout_error" in hint
        or (status is not None and status >= 500)
    ):
        cls = ServerError
    else:
        cls = ProviderStreamError
    own = _code_text(code) or _code_text(type_)
    return cls(
        text,
        status=status,
        code=own,
        request_id=request_id,
        retryable=is_retryable(cls.kind, status, own),
    )


_SUCCESS = frozenset({"stop", "length", "tool_use"})


_NOT_OVERFLOW_KINDS = frozenset(
    {"rate_limit", "overloaded", "authentication", "permission", "aborted", "timeout", "connect"}
)


def is_silent_overflow(message: AssistantMessage, model: Model) -> bool:
    """Whether a *successful* response shows a prompt larger than the context window.

    Some servers accept an oversized prompt without an error (Z.ai was seen doing
    it; Ollama and vLLM setups may truncate): the usage then reports more prompt
    tokens than ``model.context_window`` holds. The prompt is ``input +
    cache_read + cache_write`` (``Usage.input`` excludes both cache classes). Any
    successful finish counts (stop, length or tool_use): a truncated prompt is
    untrustworthy whatever the model did next. Failed messages are judged by
    their error (:func:`is_overflow`).
    """
    if message.stop_reason not in _SUCCESS or model.context_window <= 0:
        return False
    u = message.usage
    return u.input + u.cache_read + u.cache_write > model.context_window


def is_overflow(message: AssistantMessage, model: Model | None = None) -> bool:
    """Whether ``message`` failed because the prompt did not fit (``error.kind``
    ``context_overflow``, or an error text a provider uses for it), or — given
    ``model`` — overflowed silently (:func:`is_silent_overflow`)."""
    err = message.error
    if err is not None:
        if err.kind == "context_overflow":
            return True
        # Kinds whose cause is known to be something else are never read as overflow.
        return err.kind not in _NOT_OVERFLOW_KINDS and is_context_overflow(err.message)
    return model is not None and is_silent_overflow(message, model)

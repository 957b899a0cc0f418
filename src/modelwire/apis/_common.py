"""Helpers shared by the wire APIs: typed payload decoding with field paths,
JSON encoding, and the replay test "is this the same model?"."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import msgspec

from ..errors import (
    AuthenticationError,
    ContextOverflowError,
    InvalidRequestError,
    MalformedChunkError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
    StreamError,
)
from ..types import AssistantMessage, Model

__all__ = [
    "decode_json",
    "decoder_for",
    "dumps",
    "in_band_error",
    "is_context_overflow",
    "join_url",
    "raw_or_json_arguments",
    "same_model",
]

T = TypeVar("T")
_encoder = msgspec.json.Encoder()
_PATH = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_EXPECTED = re.compile(r"^Expected `(.+?)`, got `(.+?)`$")
_NAMES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
          "object": "an object", "array": "an array", "null": "null"}  # fmt: skip


def dumps(value: Any) -> bytes:
    """Compact deterministic JSON (insertion order kept)."""
    return _encoder.encode(value)


def decoder_for(tp: type[T]) -> msgspec.json.Decoder[T]:
    return msgspec.json.Decoder(tp)


def _path_message(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    m = _PATH.match(text)
    if not m:
        return text
    what, path = m.group(1), m.group(2).lstrip(".")
    e = _EXPECTED.match(what)
    if e:
        want = " or ".join(_NAMES.get(p.strip(), p.strip()) for p in e.group(1).split("|"))
        return f"{path or 'payload'} must be {want} (got {e.group(2)})"
    return f"{path or 'payload'}: {what}"


def decode_json(
    data: str | bytes, decoder: msgspec.json.Decoder[T], what: str = "chunk", prefix: str = ""
) -> T:
    """Decode and validate one payload; failures become ``MalformedChunkError``
    naming the field path, e.g. ``choices[0].delta.content must be a string``.
    ``prefix`` is prepended to the path when ``data`` is a nested item."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise MalformedChunkError(f"malformed {what}: {prefix}{_path_message(exc)}") from None
    except msgspec.DecodeError as exc:
        snippet = data[:120] if isinstance(data, str) else data[:120].decode("utf-8", "replace")
        raise MalformedChunkError(f"malformed {what}: invalid JSON ({exc}): {snippet!r}") from None


def join_url(model: Model, endpoint: str) -> str:
    """``base_url`` (trailing slash ignored) + ``endpoint``."""
    return model.url_root + endpoint


def same_model(model: Model, message: AssistantMessage) -> bool:
    """Signatures, redacted thinking and encrypted reasoning are replayed only to
    the provider, API and model that produced them (DESIGN handoff rules)."""
    return (
        message.provider == model.provider
        and message.model == model.id
        and message.api == model.api
    )


def raw_or_json_arguments(raw: str | None, arguments: dict[str, Any]) -> str:
    """The arguments text to replay: the exact provider text when known."""
    if raw is not None and raw.strip():
        return raw
    return dumps(arguments).decode()


# What providers say when the prompt does not fit (real texts in tests/test_catalog.py).
_OVERFLOW = re.compile(
    "|".join(
        (
            r"maximum context length",  # OpenAI Chat, DeepSeek, vLLM, OpenRouter ("endpoint's")
            r"context[_ ]length[_ ]exceeded",  # OpenAI error code; generic
            r"exceeds the context window",  # OpenAI Responses
            r"context window exceeds limit",  # MiniMax
            r"prompt is too long",  # Anthropic
            r"exceed context limit",  # Anthropic: input length and max_tokens exceed context limit
            r"input is too long",  # Amazon Bedrock
            r"input token count.*exceeds the maximum",  # Gemini
            r"exceeds the maximum number of tokens",  # Gemini (older wording)
            r"reduce the length of the messages",  # Groq, Cerebras
            r"maximum prompt length is \d+",  # xAI
            r"input_too_large",  # xAI error code
            r"too large for model with \d+ maximum context",  # Mistral
            r"prompt too long; exceeded (?:max )?context length",  # Ollama
            r"exceeds the available context size",  # llama.cpp server
            r"greater than the context length",  # LM Studio
            r"longer than the model'?s context length",  # Together AI
            r"exceeded model token limit",  # Moonshot / Kimi
            r"range of input length should be",  # DashScope (Qwen)
            r"prompt exceeds max length",  # Z.ai
            r"model_context_window_exceeded",  # Z.ai
            r"too many tokens",  # generic
            r"token limit exceeded",  # generic
        )
    ),
    re.I,
)
# Rate limits and throttling also talk about "tokens" and "too large" (Groq's
# "Request too large for model … on tokens per minute (TPM)", Bedrock's "Too many
# tokens, please wait"): waiting, not a shorter prompt, is their remedy.
_NOT_OVERFLOW = re.compile(
    r"rate[_ ]limit|tokens per min|\b[TR]PM\b|throttl|please wait|quota|try again in",
    re.I,
)


def is_context_overflow(message: str) -> bool:
    """Whether a provider error text says the prompt did not fit the context window
    (and is not a rate limit or throttle worded with tokens)."""
    return bool(_OVERFLOW.search(message)) and not _NOT_OVERFLOW.search(message)


def in_band_error(
    message: str, *, type_: str | None = None, code: Any = None, status: int | None = None
) -> StreamError:
    """Map an error object sent inside a stream to the most specific error class."""
    hint = f"{type_ or ''} {code or ''}".lower()
    text = message or "the provider reported an error"
    if type_ or code:
        text = f"{text} ({', '.join(str(x) for x in (type_, code) if x)})"
    if "overloaded" in hint or status in (529, 503):
        return OverloadedError(text, status=status)
    if "rate_limit" in hint or "rate limit" in hint or status == 429:
        return RateLimitError(text, status=status)
    if is_context_overflow(message) or "context_length" in hint:
        return ContextOverflowError(text, status=status)
    if "authentication" in hint or status == 401:
        return AuthenticationError(text, status=status)
    if "permission" in hint or status == 403:
        return PermissionDeniedError(text, status=status)
    if "not_found" in hint or status == 404:
        return NotFoundError(text, status=status)
    if "invalid_request" in hint or "request_too_large" in hint or status in (400, 413, 422):
        return InvalidRequestError(text, status=status)
    if (
        "api_error" in hint
        or "server_error" in hint
        or "timeout_error" in hint
        or (status is not None and status >= 500)
    ):
        return ServerError(text, status=status)
    return ProviderStreamError(text, status=status)

"""Helpers shared by the wire APIs: the one request builder (headers, secrets,
checked JSON body), typed payload decoding with field paths, JSON encoding, and
the replay test "is this the same model?"."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, TypeVar

import msgspec

from .._options import HTTPRequest, RequestOptions
from .._redact import credential_secrets
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    ContentFilterError,
    ContextOverflowError,
    Excerpt,
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
from ..types import AssistantMessage, Context, Model, ToolCall, check_json
from . import provider_rules
from ._codec import IdRule

__all__ = [
    "EXCERPT_CHARS",
    "SAFE_ID_RULE",
    "Count",
    "bearer_auth",
    "check_context_values",
    "check_json",
    "check_reasoning",
    "check_tool_choice",
    "content_filter_error",
    "decode_json",
    "decoder_for",
    "dumps",
    "filtered_categories",
    "http_request",
    "in_band_error",
    "is_context_overflow",
    "join_url",
    "merge_compat",
    "raw_or_json_arguments",
    "same_model",
]

T = TypeVar("T")
C = TypeVar("C", bound=msgspec.Struct)
#: A count or index in a chunk: a non-negative integer. msgspec checks the bound
#: while decoding, so a negative tool-call index or token count is a
#: ``malformed_chunk`` naming its path (``usage.input_tokens must be an integer >= 0``).
Count = Annotated[int, msgspec.Meta(ge=0)]
_encoder = msgspec.json.Encoder()
_PATH = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_EXPECTED = re.compile(r"^Expected `(.+?)`, got `(.+?)`$")
# msgspec's text for a failed ``Meta`` constraint: "Expected `int` >= 0".
_CONSTRAINT = re.compile(r"^Expected `(\w+)` ([<>]=? ?\S+)$")
_MISSING = re.compile(r"^Object missing required field `(.+)`$")
#: Characters of a payload a malformed-chunk message quotes (after redaction).
EXCERPT_CHARS = 120
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
        missing = _MISSING.match(text)
        return f"{missing.group(1)} is missing" if missing else text
    what, path = m.group(1), m.group(2).lstrip(".")
    missing = _MISSING.match(what)
    if missing:
        return f"{path + '.' if path else ''}{missing.group(1)} is missing"
    c = _CONSTRAINT.match(what)
    if c:
        want = _NAMES.get(c.group(1), c.group(1))
        return f"{path or 'payload'} must be {want} {c.group(2)}"
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
        text = data if isinstance(data, str) else data.decode("utf-8", "replace")
        # The whole payload goes with the error: only the live path knows the keys,
        # and it must redact them before the excerpt is cut (modelwire._redact).
        excerpt = Excerpt(f"malformed {what}: invalid JSON ({exc}): ", text, "", EXCERPT_CHARS)
        raise MalformedChunkError.quoting(excerpt) from None


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


def in_band_error(
    message: str, *, type_: str | None = None, code: Any = None, status: int | None = None
) -> StreamError:
    """Map an error object sent inside a stream to the most specific error class."""
    hint = f"{type_ or ''} {code or ''}".lower()
    text = message or "the provider reported an error"
    if type_ or code:
        text = f"{text} ({', '.join(str(x) for x in (type_, code) if x)})"
    if code == "content_filter":
        # Azure OpenAI's content filter (an error event of the Responses API, a
        # filtered prompt): a refusal, not a malformed request.
        return ContentFilterError(text, status=status)
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


# --------------------------------------------------------------------------- requests
# RFC 9110 §5.1: a field name is a token; §5.5: a field value may not contain CR,
# LF or NUL. h11 refuses the rest only once the request starts, quoting the value
# (which may be a key) in its error; refusing here names the header instead.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _check_headers(headers: object, where: str) -> Mapping[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise ConfigurationError(f"{where} must be a dict of header name to value")
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigurationError(f"{where} must map str header names to str values")
        if not name:
            raise ConfigurationError(f"{where} has an empty header name")
        if not _TOKEN.fullmatch(name):
            raise ConfigurationError(
                f"{where}: header name {name!r} is not a valid HTTP header name "
                "(letters, digits and !#$%&'*+.^_`|~- only; no spaces, colons or line breaks)"
            )
        # The value is never quoted: it may be a key.
        if "\r" in value or "\n" in value:
            raise ConfigurationError(
                f"{where}[{name!r}] value contains a line break (CR or LF); HTTP cannot "
                "carry it: remove it (a key read from a file often ends in a newline)"
            )
        if not value.isascii():
            raise ConfigurationError(
                f"{where}[{name!r}] value contains a non-ASCII character; HTTP header "
                "values must be ASCII: percent-encode it or send it in the body"
            )
        if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
            raise ConfigurationError(
                f"{where}[{name!r}] value contains a control character; remove it"
            )
        if value != value.strip(" \t"):
            raise ConfigurationError(f"{where}[{name!r}] value has whitespace at an end; strip it")
    return headers


def bearer_auth(key: str) -> dict[str, str]:
    """``Authorization: Bearer <key>`` (RFC 6750 §2.1): OpenAI and compatible servers."""
    return {"Authorization": f"Bearer {key}"}


def _fixed(headers: dict[str, str]) -> Callable[[str], Mapping[str, str]]:
    """An ``auth`` that sends ``headers`` (a provider rule's) whatever the key."""
    return lambda _key: headers


def http_request(
    model: Model,
    options: RequestOptions,
    *,
    url: str,
    body: Mapping[str, Any],
    defaults: Mapping[str, str],
    auth: Callable[[str], Mapping[str, str]] | None,
    replaces: Iterable[str] = (),
    lower: bool = False,
    combine: Iterable[str] = (),
) -> HTTPRequest:
    """The one builder of every wire API's request: headers, secrets and body.

    Headers merge case-insensitively, later wins: ``defaults``, then
    ``Model.headers``, then the ``headers=`` option, then ``auth(api_key)`` when
    there is a key (after dropping the ``replaces`` headers). ``lower`` lower-cases
    every name; a ``combine`` header's values are joined with commas instead of
    replaced (``anthropic-beta``). Bad names or values raise
    ``ConfigurationError`` naming the header, before any I/O.

    The secrets are the API key and the value of every credential header,
    wherever it came from (:func:`modelwire._redact.credential_secrets`).
    The body is JSON-checked (:func:`check_json`): a value JSON cannot encode
    raises ``ConfigurationError`` naming its path.
    """
    joined = {k.lower() for k in combine}
    out: dict[str, str] = {}
    spelled: dict[str, str] = {}  # lower-case name -> the key used in ``out``
    layers = (
        defaults,
        _check_headers(model.headers, "Model.headers"),
        _check_headers(options.headers, "headers"),
    )
    for layer in layers:
        for name, value in layer.items():
            low = name.lower()
            old = spelled.pop(low, None)
            previous = out.pop(old) if old is not None else None
            if low in joined and previous:
                parts = [p.strip() for p in f"{previous},{value}".split(",") if p.strip()]
                value = ",".join(dict.fromkeys(parts))
            key = low if lower else name
            spelled[low] = key
            out[key] = value
    rules = provider_rules(model.provider)
    if rules is not None:
        # A provider's own URL and auth on top of this API (Azure, Vertex…): the seam
        # of modelwire._apis.ProviderRules, so no adapter is edited per provider.
        url = rules.url(model, model.api, url)
        # Optional hook, looked up like ``authorizer``: the provider reshapes the body
        # (Vertex AI's Anthropic models take ``anthropic_version`` and no ``model``).
        reshape = getattr(rules, "body", None)
        if reshape is not None:
            body = reshape(model, model.api, body)
        if options.api_key:
            own = rules.auth(model, options.api_key)
            if own is not None:
                auth = _fixed(dict(own))
    secrets: list[str] = []
    if options.api_key and auth is not None:
        for name in replaces:
            old = spelled.pop(name.lower(), None)
            if old is not None:
                del out[old]
        for name, value in auth(options.api_key).items():
            old = spelled.pop(name.lower(), None)
            if old is not None:
                del out[old]
            key = name.lower() if lower else name
            spelled[name.lower()] = key
            out[key] = value
        secrets.append(options.api_key)
    secrets.extend(credential_secrets(out))
    # Credentials that need I/O or the final bytes (SigV4, OAuth tokens) are added
    # when the request is sent: the rules hand over an authorizer (optional hook).
    make_authorizer = getattr(rules, "authorizer", None) if rules is not None else None
    return HTTPRequest(
        url=url,
        headers=out,
        body=encode_body(body),
        secrets=tuple(dict.fromkeys(secrets)),
        authorizer=make_authorizer(model, options) if make_authorizer is not None else None,
    )


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The JSON body; a value JSON cannot carry raises ``ConfigurationError``
    naming its path (``tools[0].parameters.properties.x.default``)."""
    try:
        data = _encoder.encode(body)
    except (TypeError, ValueError, OverflowError):
        check_json(body, "")
        raise  # pragma: no cover - check_json raised already
    # msgspec writes NaN and infinities as ``null`` (silently changing the value):
    # only a body with a ``null`` in it can hold one, so only then is it walked.
    if b"null" in data:
        check_json(body, "")
    return data


def check_context_values(context: Context) -> None:
    """Tool-call arguments are encoded to text before the body is built (OpenAI
    Chat sends them as a string), so they are checked here, by their path in the
    context: ``messages[1].content[0].arguments.x``."""
    for i, message in enumerate(context.messages):
        if message.role != "assistant":
            continue
        for j, block in enumerate(message.content):
            if isinstance(block, ToolCall) and not (block.raw_arguments or "").strip():
                check_json(block.arguments, f"messages[{i}].content[{j}].arguments")


# --------------------------------------------------------------------------- shared checks


def merge_compat(
    api: str,
    cls: type[C],
    overrides: Mapping[str, Any] | None,
    base: Mapping[str, Any] | None = None,
) -> C:
    """An API's compat flags: the ``base`` detected for the provider, then
    ``overrides`` (``Model.compat``). An unknown flag or a mistyped value is a
    ``ConfigurationError`` naming the API, before any request."""
    known = cls.__struct_fields__
    merged = dict(base or {})
    if overrides:
        unknown = set(overrides) - set(known)
        if unknown:
            raise ConfigurationError(
                f"unknown {api} compat flag(s): {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(known))}"
            )
        merged.update(overrides)
    try:
        return msgspec.convert(merged, cls)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid {api} compat: {exc}") from None


def check_tool_choice(tc: str | dict[str, Any] | None, context: Context) -> None:
    """Refuse, before any request, a tool choice no response could satisfy: one that
    requires a call with no tool declared, or forces a tool that is not declared.
    (``auto`` and ``none`` without tools mean nothing to choose from: not sent.)"""
    if tc is None or tc in ("auto", "none"):
        return
    names = [t.name for t in context.tools or ()]
    if not names:
        raise ConfigurationError(
            f"tool_choice={tc!r} needs tools, but the context declares no tools: "
            "add tools to the Context or drop tool_choice"
        )
    if isinstance(tc, dict) and tc["name"] not in names:
        raise ConfigurationError(
            f"tool_choice names {tc['name']!r}, which is not a declared tool (not among the "
            f"context's tools: {', '.join(map(repr, names))})"
        )


def check_reasoning(model: Model, level: str | None) -> None:
    """A reasoning level for a model without reasoning is a caller mistake."""
    if level is not None and not model.reasoning:
        raise ConfigurationError(
            f"model {model.id!r} does not support a reasoning level "
            "(Model.reasoning is False); pass reasoning=None"
        )


#: Letters, digits, ``_`` and ``-``, up to 64: Anthropic ``tool_use.id`` (Messages API
#: reference) and OpenAI Responses ``call_id`` values as OpenAI issues them.
SAFE_ID_RULE = IdRule(re.compile(r"[A-Za-z0-9_-]{1,64}"), re.compile(r"[^A-Za-z0-9_-]"), 64)

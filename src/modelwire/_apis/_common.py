"""Helpers shared by the wire APIs: the one request builder (headers, secrets,
checked JSON body), typed payload decoding with field paths, JSON encoding, and
the replay test "is this the same model?". The error classifier's helpers
(:func:`in_band_error`, :func:`is_context_overflow`…) live in
:mod:`modelwire._providers._classify` and are re-exported here for the decoders."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, TypeVar

import msgspec

from .._providers._classify import (
    content_filter_error,
    filtered_categories,
    in_band_error,
    is_context_overflow,
)
from .._redact import credential_secrets
from .._wire.request import HTTPRequest, RequestOptions, encode_body
from ..errors import ConfigurationError, Excerpt, MalformedChunkError
from ..types import (
    AssistantMessage,
    Citation,
    DocumentContent,
    ImageContent,
    Model,
    ServerToolCall,
    ServerToolResult,
    check_json,
)
from ._checks import (
    as_image,
    as_tool_call,
    check_context_values,
    check_input,
    check_reasoning,
    check_tool_choice,
    refuse_assistant_images,
    server_tool_objects,
)
from ._codec import IdRule

__all__ = [
    "EXCERPT_CHARS",
    "RESULT_CHARS",
    "SAFE_ID_RULE",
    "Count",
    "as_image",
    "as_tool_call",
    "bearer_auth",
    "block_as_text",
    "check_context_values",
    "check_input",
    "check_json",
    "check_reasoning",
    "check_tool_choice",
    "citations_as_text",
    "content_filter_error",
    "decode_json",
    "decoder_for",
    "dumps",
    "encode_body",
    "filtered_categories",
    "http_request",
    "in_band_error",
    "is_context_overflow",
    "join_url",
    "json_request",
    "merge_compat",
    "raw_object",
    "raw_or_json_arguments",
    "read_count",
    "refuse_assistant_images",
    "remove_lone_surrogates",
    "same_model",
    "server_call_as_text",
    "server_result_as_text",
    "server_tool_objects",
    "with_sources",
]

T = TypeVar("T")
C = TypeVar("C", bound=msgspec.Struct)
Count = Annotated[int, msgspec.Meta(ge=0)]
"""A count or index in a chunk: a non-negative integer. msgspec checks the bound
while decoding, so a negative tool-call index or token count is a
``malformed_chunk`` naming its path (``usage.input_tokens must be an integer >= 0``)."""
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
    """A reusable JSON decoder that validates into ``tp``, for :func:`decode_json`;
    build one per chunk type at import time (docs/adding-a-wire-api.md shows both).

    Args:
        tp: The type payloads decode into, usually a ``msgspec.Struct``.

    Returns:
        The ``msgspec.json.Decoder``.
    """
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
    # A provider's own URL, auth, body and credentials (Azure, Vertex, Bedrock) are
    # applied by the client to the request built here, for every API alike
    # (modelwire._providers.apply_provider_rules).
    return HTTPRequest(
        url=url, headers=out, body=encode_body(body), secrets=tuple(dict.fromkeys(secrets))
    )


# --------------------------------------------------------------------------- compat flags, ids, citations


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


#: Letters, digits, ``_`` and ``-``, up to 64: Anthropic ``tool_use.id`` (Messages API
#: reference) and OpenAI Responses ``call_id`` values as OpenAI issues them.
SAFE_ID_RULE = IdRule(re.compile(r"[A-Za-z0-9_-]{1,64}"), re.compile(r"[^A-Za-z0-9_-]"), 64)


def citations_as_text(citations: tuple[Citation, ...]) -> str:
    """Citations as numbered sources, appended to the text they support: how
    ``mw.handoff`` shows them to another API, and how an encoder sends a citation it
    has no provider object for."""
    lines: list[str] = []
    seen: set[tuple[str | None, str | None, str | None, str | None]] = set()
    for c in citations:
        key = (c.url, c.document, c.title, c.cited_text)
        if key in seen:  # the same source cited twice is listed once
            continue
        seen.add(key)
        parts = [f"[{len(lines) + 1}]"]
        if c.title:
            parts.append(c.title)
        ref = "file" if c.kind == "file" else "document"
        where = c.url or (f"{ref} {c.document}" if c.document is not None else None)
        if where:
            parts.append(f"<{where}>")
        line = " ".join(parts)
        if c.cited_text:
            line += f': "{c.cited_text}"'
        lines.append(line)
    return "\n\nSources:\n" + "\n".join(lines)


# --------------------------------------------------------------------------- provider blocks


def raw_object(text: str | None, where: str) -> msgspec.Raw:
    """A provider's block kept as JSON text (``ServerToolCall.raw``, ``Citation.raw``,
    ``ProviderItem.data``), checked to be one JSON object and embedded in the body
    byte for byte: a hand-edited value that is not is refused naming ``where``."""
    if text is None:
        raise ConfigurationError(f"{where} has no raw provider JSON to replay")
    try:
        value = _raw_head.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ConfigurationError(f"{where} is not a JSON object ({exc})") from None
    del value
    return msgspec.Raw(text.encode())


_raw_head = msgspec.json.Decoder(dict[str, Any])


#: A provider-run tool's result longer than this (search hits, a generated image's
#: base64) is cut for another model, with a note of how much was left out: the next
#: model needs the gist, not megabytes.
RESULT_CHARS = 4000
_SURROGATES = re.compile("[\ud800-\udfff]")


def remove_lone_surrogates(text: str) -> str:
    """``text`` without code points U+D800–U+DFFF (a Python ``str`` holds a paired
    surrogate as one astral character, so any left are lone and not UTF-8).
    Returns ``text`` itself when there is nothing to remove."""
    if text.isascii() or not _SURROGATES.search(text):
        return text
    return _SURROGATES.sub("", text)


def _readable(value: Any) -> Any:
    # The provider's encrypted_* fields (web search hits, citations) are opaque to
    # any other model: left out of the text it reads.
    if isinstance(value, dict):
        return {k: _readable(v) for k, v in value.items()
                if not (isinstance(k, str) and k.startswith("encrypted"))}  # fmt: skip
    if isinstance(value, list):
        return [_readable(v) for v in value]
    return value


def _json_text(value: Any) -> str:
    try:
        return remove_lone_surrogates(msgspec.json.encode(_readable(value)).decode())
    except (TypeError, msgspec.EncodeError, UnicodeEncodeError):
        return remove_lone_surrogates(repr(value))


def server_call_as_text(call: ServerToolCall) -> str:
    """How a provider-run tool call reads for a model on another API."""
    return f"[{call.name} was run by the provider with {_json_text(call.input)}]"


def server_result_as_text(result: ServerToolResult) -> str:
    """How a provider-run tool's result reads for a model on another API (cut at
    :data:`RESULT_CHARS`)."""
    name = result.name or result.provider_type
    what = "failed" if result.is_error else "result"
    text = _json_text(result.result)
    if len(text) > RESULT_CHARS:
        text = f"{text[:RESULT_CHARS]}… [{len(text) - RESULT_CHARS} more characters]"
    return f"[{name} {what}: {text}]"


def block_as_text(block: object) -> str | None:
    """How a provider-run tool call or result from another API, or an image a model
    generated, is shown to a model that cannot take it back (the handoff degradation,
    one wording for every API): a line of text the next model can read. An opaque
    :class:`~modelwire.types.ProviderItem` has no portable meaning and is dropped
    (``None``)."""
    if isinstance(block, ServerToolCall):
        return server_call_as_text(block)
    if isinstance(block, ServerToolResult):
        return server_result_as_text(block)
    if isinstance(block, ImageContent):
        return image_as_text(block)
    return None


def image_as_text(block: ImageContent) -> str:
    """A generated image for a model whose API has no assistant image: a note of it."""
    return f"[an image ({block.mime_type}) was generated]"


def with_sources(text: str, citations: tuple[Citation, ...]) -> str:
    """``text`` followed by its citations as numbered sources (``text`` without any)."""
    return text + citations_as_text(citations) if citations else text


def json_request(request: HTTPRequest, url: str, body: dict[str, Any]) -> HTTPRequest:
    """The stream request ``request`` turned into a JSON request to ``url``: the same
    auth, headers and secrets, a JSON ``Accept`` and ``body`` (for the counting
    endpoints, ``_apis/<api>/_count.py``)."""
    headers = {k: v for k, v in request.headers.items() if k.lower() != "accept"}
    headers["Accept"] = "application/json"
    return msgspec.structs.replace(request, url=url, headers=headers, body=encode_body(body))


def read_count(body: bytes, field: str, endpoint: str) -> int:
    """The non-negative integer ``field`` of a counting endpoint's JSON answer; a
    missing or mistyped one is a ``malformed_chunk`` naming the field."""
    try:
        obj = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise MalformedChunkError(f"{endpoint} did not answer with JSON") from None
    value = obj.get(field) if isinstance(obj, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise MalformedChunkError(f"{endpoint}: {field} must be a non-negative integer")
    return value


#: Media types whose bytes are text, besides ``text/*``.
TEXT_TYPES = frozenset({"application/json", "application/xml", "application/x-yaml",
                        "application/yaml", "application/csv"})  # fmt: skip


def document_text(block: DocumentContent, where: str, api: str, why: str) -> str:
    """A text document's bytes as text, for an API that takes documents only as text
    (``why``: what that API takes, said in the error for any other document)."""
    mime = block.mime_type.lower().split(";", 1)[0].strip()
    if block.data is None or not (mime.startswith("text/") or mime in TEXT_TYPES):
        raise ConfigurationError(
            f"{where} is a {block.mime_type} document"
            f"{'' if block.data is not None else ' given by url/file_id'}, which {api} "
            f"cannot take ({why}): send a text document's bytes (data=, a text/* type) "
            "or its text as TextContent"
        )
    try:
        return base64.b64decode(block.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ConfigurationError(
            f"{where}.data must be base64 of UTF-8 text to be sent to {api}"
        ) from None

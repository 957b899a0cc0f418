"""What a server reads from a request body and writes besides the stream: the model and
tool results a request carries, the tools it declares, the HTTP error bodies.

Shared by the APIs' :class:`~modelwire._apis._server.wire.WireServer` facts; sans-IO.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ...types import ToolCall

__all__ = [
    "THINKING_SIGNATURE",
    "ErrorReply",
    "arguments_object",
    "arguments_text",
    "compact_json",
    "declared_tools",
    "function_tools",
    "model_in_body",
    "openai_error",
    "prefixed",
    "role_tool_results",
    "stream_flag",
    "text_of",
]


#: The signature a server sends for a thinking block that has none: providers always
#: sign thinking (an empty signature is refused when replayed), so a fixed, opaque,
#: non-empty value stands in (the mock server's scripts rarely give one).
THINKING_SIGNATURE = "bW9kZWx3aXJlLW1vY2stc2lnbmF0dXJl"


def compact_json(value: Any) -> str:
    """Compact and unescaped, as providers send JSON.

    For a renderer's output, so a mock or gateway body looks byte for byte like a
    provider's (no spaces, non-ASCII kept).

    Args:
        value: A JSON value.

    Returns:
        The JSON text.
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def arguments_text(call: ToolCall) -> str:
    """The arguments text a provider would stream: ``raw_arguments`` when set.

    For a renderer of an API that streams arguments as text (OpenAI, Anthropic), so
    a replayed call keeps its exact text; else the arguments, compact.

    Args:
        call: The tool call.

    Returns:
        The arguments' JSON text.
    """
    return call.raw_arguments if call.raw_arguments else compact_json(call.arguments)


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """The arguments as an object, for APIs that send them whole (Gemini, Ollama).

    ``raw_arguments`` parsed when it is a JSON object, else ``arguments``.

    Args:
        call: The tool call.

    Returns:
        The arguments, a new dict.
    """
    if call.raw_arguments:
        try:
            value = json.loads(call.raw_arguments)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return dict(call.arguments)


def text_of(value: Any) -> str:
    """The text inside a tool-result value of a request body (strings, lists of
    parts, ``{"text"|"output"|"content"|"result": …}`` objects).

    Args:
        value: The tool result's value, as the request body holds it.

    Returns:
        Its text (``""`` when it has none).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "output", "content", "result"):
            if key in value:
                return text_of(value[key])
    return ""


def model_in_body(path: str, body: object) -> str | None:
    """The model a request asked for in its body's ``model`` field (most APIs).

    The default ``WireServer.request_model``; an API that names the model in the
    path (Gemini, Bedrock) gives its own.

    Args:
        path: The request path (unused here).
        body: The parsed JSON body.

    Returns:
        The model id, or ``None`` when the body names none.
    """
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def role_tool_results(body: object) -> list[str]:
    """The ``content`` of every ``role: tool`` message of a body's ``messages``
    (OpenAI Chat Completions and Ollama carry tool results the same way).

    For a ``WireServer.tool_results``: what the automatic reply names.

    Args:
        body: The parsed request body.

    Returns:
        The texts, in order.
    """
    if not isinstance(body, dict):
        return []
    return [text_of(m.get("content")) for m in body.get("messages", [])
            if isinstance(m, dict) and m.get("role") == "tool"]  # fmt: skip


class ErrorReply(msgspec.Struct, frozen=True, kw_only=True):
    """An HTTP error as a provider sends it: its JSON body and the headers that go
    with it (a request id, an error-type header)."""

    body: dict[str, Any]
    """The JSON error body."""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    """Headers sent with it."""


def openai_error(status: int, message: str, kind: str | None = None) -> ErrorReply:
    """OpenAI's ``{"error": {"message", "type", "param", "code"}}``
    (https://platform.openai.com/docs/guides/error-codes).

    The ``WireServer.error_body`` of OpenAI-style APIs, and the fallback of
    ``MockServer`` for a path no API serves.

    Args:
        status: The HTTP status.
        message: The error message.
        kind: The error ``type`` (default: OpenAI's for ``status``).

    Returns:
        The body, with an ``x-request-id`` header.
    """
    kind = kind or {400: "invalid_request_error", 401: "authentication_error",
            403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error")  # fmt: skip
    return ErrorReply(
        body={"error": {"message": message, "type": kind, "param": None, "code": None}},
        headers={"x-request-id": "req_mock"},
    )


def stream_flag(path: str, body: object) -> bool:
    """Whether a body asked for a stream with ``"stream": true`` (absent: no)."""
    return isinstance(body, dict) and body.get("stream") is True


def prefixed(prefix: str, rid: str) -> str:
    """``rid`` with the provider's id prefix (``chatcmpl-``, ``resp_``, ``msg_``…)."""
    return rid if rid.startswith(prefix) else prefix + rid


def declared_tools(
    items: object, *, spec: str | None, name: str, schema: str
) -> list[tuple[str, dict[str, Any]]]:
    """``(name, parameters schema)`` of each tool in a body's list of tool objects:
    ``spec`` is the key holding the declaration (``None``: the item itself), ``schema``
    a dotted path to its JSON Schema (``inputSchema.json``).

    For a ``WireServer.request_tools``: the tools the automatic reply calls.

    Args:
        items: The body's list of tool objects.
        spec: The key holding each declaration, or ``None``.
        name: The declaration's key of the tool name.
        schema: The dotted path of the parameters schema in the declaration.

    Returns:
        ``(name, schema)`` pairs; a missing schema is ``{"type": "object"}``.
    """
    found: list[tuple[str, dict[str, Any]]] = []
    for item in items if isinstance(items, list) else []:
        decl = item.get(spec) if spec is not None and isinstance(item, dict) else item
        if not isinstance(decl, dict) or not isinstance(decl.get(name), str):
            continue
        value: Any = decl
        for key in schema.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        found.append((decl[name], value if isinstance(value, dict) else {"type": "object"}))
    return found


def function_tools(body: object) -> list[tuple[str, dict[str, Any]]]:
    """The tools of ``tools[].function`` (OpenAI Chat Completions, Ollama)."""
    items = body.get("tools") if isinstance(body, dict) else None
    return declared_tools(items, spec="function", name="name", schema="parameters")

"""What every wire API's mock rendering shares (sans-IO, no sockets).

A scripted reply in normal form (:class:`ScriptedReply`) is rendered by its wire API
into *frames* — ``(event name or None, payload)`` — and the API then encodes those
frames in its own framing (SSE ``data:`` lines, NDJSON lines, …). The
:class:`~modelwire.testing.MockServer` and :func:`modelwire.testing.render` only call
the registry; the per-API bytes live with the API (:mod:`modelwire._apis`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from ..errors import ConfigurationError
from ..types import AssistantContent, ToolCall, Usage

__all__ = [
    "THINKING_SIGNATURE",
    "MockError",
    "MockFrame",
    "ScriptedReply",
    "arguments_object",
    "arguments_text",
    "as_rendered",
    "compact_json",
    "declared_tools",
    "encode_sse",
    "function_tools",
    "model_in_body",
    "openai_error",
    "prefixed",
    "role_tool_results",
    "split_text",
    "stream_flag",
    "text_of",
]

#: ``(event name or None, payload)``: one rendered event before framing. The payload is a
#: JSON-able dict or, for the OpenAI Chat terminator, the string ``[DONE]``.
MockFrame: TypeAlias = tuple[str | None, "dict[str, Any] | str"]


class ScriptedReply(msgspec.Struct, frozen=True, kw_only=True):
    """A script in normal form: blocks in order, how it ends, token counts."""

    content: tuple[AssistantContent, ...]
    """The blocks in the order they are streamed: text (with its citations), thinking,
    tool calls, and the provider-run tool blocks and opaque items an API can carry."""
    stop_reason: Literal["stop", "length", "tool_use"]
    """``tool_use`` when there is a tool call (unless ``length``), else ``stop``."""
    usage: Usage
    """Token counts to report (all zero unless the script gave them)."""
    response_id: str | None = None
    """The response id to send, when the script fixed one."""
    provider_stop_reason: str | None = None
    """The provider's own stop reason to send (e.g. Anthropic ``pause_turn``), when
    the script gave one; each API's renderer decides whether it can say it."""


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters (never splits a code point;
    an empty text gives no pieces)."""
    if size <= 0:
        raise ConfigurationError("piece_chars must be a positive integer")
    return [text[i : i + size] for i in range(0, len(text), size)]


def compact_json(value: Any) -> str:
    """Compact and unescaped, as providers send JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def arguments_text(call: ToolCall) -> str:
    """The arguments text a provider would stream: ``raw_arguments`` when set."""
    return call.raw_arguments if call.raw_arguments else compact_json(call.arguments)


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """The arguments as an object, for APIs that send them whole (Gemini, Ollama)."""
    if call.raw_arguments:
        try:
            value = json.loads(call.raw_arguments)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return dict(call.arguments)


def encode_sse(
    frames: Sequence[MockFrame], *, named: bool = False, sep: str = "\n\n"
) -> list[bytes]:
    """Each frame as one SSE event: ``event:`` lines when ``named``; ``sep`` ends it."""
    out: list[bytes] = []
    for name, payload in frames:
        data = payload if isinstance(payload, str) else compact_json(payload)
        head = f"event: {name}\n" if named and name else ""
        out.append(f"{head}data: {data}{sep}".encode())
    return out


def text_of(value: Any) -> str:
    """The text inside a tool-result value of a request body (strings, lists of
    parts, ``{"text"|"output"|"content"|"result": …}`` objects)."""
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
    """The model a request asked for in its body's ``model`` field (most APIs)."""
    model = body.get("model") if isinstance(body, dict) else None
    return model if isinstance(model, str) else None


def role_tool_results(body: object) -> list[str]:
    """The ``content`` of every ``role: tool`` message of a body's ``messages``
    (OpenAI Chat Completions and Ollama carry tool results the same way)."""
    if not isinstance(body, dict):
        return []
    return [text_of(m.get("content")) for m in body.get("messages", [])
            if isinstance(m, dict) and m.get("role") == "tool"]  # fmt: skip


#: The signature a thinking block gets when the script gives none: providers always
#: sign thinking (an empty one is refused when replayed), so the mock sends a fixed,
#: opaque, non-empty value.
THINKING_SIGNATURE = "bW9kZWx3aXJlLW1vY2stc2lnbmF0dXJl"


class MockError(msgspec.Struct, frozen=True, kw_only=True):
    """An HTTP error as a provider sends it: its JSON body and the headers that go
    with it (a request id, an error-type header)."""

    body: dict[str, Any]
    headers: dict[str, str] = msgspec.field(default_factory=dict)


def openai_error(status: int, message: str, kind: str | None = None) -> MockError:
    """OpenAI's ``{"error": {"message", "type", "param", "code"}}``
    (https://platform.openai.com/docs/guides/error-codes)."""
    kind = kind or {400: "invalid_request_error", 401: "authentication_error",
            403: "permission_error", 404: "not_found_error", 429: "rate_limit_error"}.get(
        status, "server_error" if status >= 500 else "invalid_request_error")  # fmt: skip
    return MockError(
        body={"error": {"message": message, "type": kind, "param": None, "code": None}},
        headers={"x-request-id": "req_mock"},
    )


def stream_flag(path: str, body: object) -> bool:
    """Whether a body asked for a stream with ``"stream": true`` (absent: no)."""
    return isinstance(body, dict) and body.get("stream") is True


def prefixed(prefix: str, rid: str) -> str:
    """``rid`` with the provider's id prefix (``chatcmpl-``, ``resp_``, ``msg_``…)."""
    return rid if rid.startswith(prefix) else prefix + rid


def as_rendered(frames: list[MockFrame], body: object) -> list[MockFrame]:
    """The frames unchanged, whatever the request body asked (most APIs)."""
    return frames


def declared_tools(
    items: object, *, spec: str | None, name: str, schema: str
) -> list[tuple[str, dict[str, Any]]]:
    """``(name, parameters schema)`` of each tool in a body's list of tool objects:
    ``spec`` is the key holding the declaration (``None``: the item itself), ``schema``
    a dotted path to its JSON Schema (``inputSchema.json``)."""
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

"""MockServer replies from JSON: the script format of ``modelwire mock-server --script``.

A script is a JSON list; each item is one reply, played in order::

    [
      "Plain text: rendered as a streamed text reply.",
      {"text": "Let me look.",
       "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]},
      {"thinking": "The file starts with a title.", "text": "It is a README.",
       "usage": {"input": 812, "output": 64}},
      {"content": [{"type": "thinking", "thinking": "…"},
                   {"type": "text", "text": "…"},
                   {"type": "tool_call", "id": "call_7", "name": "read", "arguments": {}}],
       "stop_reason": "length"},
      {"status": 429, "error": "slow down", "headers": {"retry-after": "1"}},
      {"body": "data: {\\"choices\\": []}\\n\\n"},
      {"text": "slowly, byte by byte", "chunk_size": 1, "delay": 0.01}
    ]

Content keys (a scripted reply, rendered for the API of the request path):
``text``, ``thinking``, ``tool_calls`` (streamed in the order thinking, text,
calls; a call is ``{"name", "arguments", "id"?}``) or ``content`` (blocks in
any order, ``type`` text/thinking/tool_call, and for the APIs that carry them
server_tool_call/server_tool_result/provider_item with the fields of
``mw.ServerToolCall``, ``mw.ServerToolResult`` and ``mw.ProviderItem``; a text block
may list ``citations``, each with the fields of ``mw.Citation``); ``stop_reason``
(stop/length/tool_use; default tool_use with calls, else stop);
``provider_stop_reason`` (e.g. ``pause_turn``); ``usage``
(``input``, ``output``, ``cache_read``, ``cache_write``); ``piece_chars``
(characters per delta, default 8).

Raw replies: ``body`` (a string sent verbatim, UTF-8) with ``content_type``;
``status`` with ``error`` (and ``error_type``) sends the JSON error body of the API
the request reaches (OpenAI's ``{"error": {"message", "type"}}``, Anthropic's,
Google's…: :func:`~modelwire.testing.error_reply`).

Delivery and faults (any reply): ``status``, ``headers``, ``chunk_size``,
``split_points``, ``seed``, ``delay``, ``cut_after``, ``stall_after``,
``stall_seconds`` — the fields of :class:`~modelwire.testing.Reply`.

Unknown keys are refused, and every mistake names its place, e.g.
``script[1].tool_calls[0].name must be a string``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import msgspec

from ..errors import ConfigurationError
from ..types import (
    AssistantContent,
    AssistantMessage,
    Citation,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    Usage,
)
from ._normal import tool_call
from ._server import Reply

__all__ = ["load_script", "parse_script"]


class _Strict(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class _Call(_Strict):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None


class _TextBlock(_Strict, tag_field="type", tag="text"):
    text: str
    citations: list[Citation] = msgspec.field(default_factory=list)


class _ThinkingBlock(_Strict, tag_field="type", tag="thinking"):
    thinking: str
    signature: str | None = None


class _ToolBlock(_Strict, tag_field="type", tag="tool_call"):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None


class _Usage(_Strict):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0


class _Item(_Strict):
    # content
    text: str | None = None
    thinking: str | None = None
    tool_calls: list[_Call] | None = None
    content: (
        list[_TextBlock | _ThinkingBlock | _ToolBlock | ServerToolCall | ServerToolResult
             | ProviderItem]
        | None
    ) = None  # fmt: skip
    stop_reason: Literal["stop", "length", "tool_use"] | None = None
    provider_stop_reason: str | None = None
    usage: _Usage | None = None
    piece_chars: int = 8
    # raw
    body: str | None = None
    content_type: str | None = None
    error: str | None = None
    error_type: str | None = None
    # delivery and faults
    status: int = 200
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    chunk_size: int | None = None
    split_points: list[int] | None = None
    seed: int | None = None
    delay: float = 0.0
    cut_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 30.0


_decoder = msgspec.json.Decoder(list[str | _Item])


def _where(exc: msgspec.ValidationError) -> str:
    # msgspec says "... - at `$[1].tool_calls[0].name`": name it script[1]...
    text = str(exc)
    what, sep, path = text.rpartition(" - at `$")
    if not sep:
        return text
    return f"script{path.rstrip('`')}: {what}"


def parse_script(data: bytes | str) -> list[Reply]:
    """Replies from a JSON script: the format of ``modelwire mock-server --script``.

    A script is a JSON list, one reply per item, played in order: a string (a
    streamed text reply); an object with content keys (``text``, ``thinking``,
    ``tool_calls`` of ``{"name", "arguments", "id"?}``, or ``content`` blocks;
    ``stop_reason``, ``usage``, ``piece_chars``); a raw ``body``; or ``status`` with
    ``error`` for the request's API's error body. Any item may add the delivery and
    fault fields of :class:`~modelwire.testing.Reply` (``chunk_size``, ``delay``,
    ``cut_after``…).

    Args:
        data: The script's JSON text.

    Returns:
        The replies, for :class:`~modelwire.testing.MockServer`.

    Raises:
        ConfigurationError: The text is not JSON, or an item is not a reply; the
            message names the item and field.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer, parse_script

        replies = parse_script('''[
          "Hello!",
          {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {}}]},
          {"status": 429, "error": "slow down"}
        ]''')
        with MockServer(replies) as server:
            print(mw.complete_sync(server.model(), "Hi").text)  # Hello!
        ```
    """
    try:
        items = _decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid script: {_where(exc)}") from None
    except msgspec.DecodeError as exc:
        raise ConfigurationError(f"invalid script: not JSON ({exc})") from None
    return [_reply(i, item) for i, item in enumerate(items)]


def load_script(path: str | Path) -> list[Reply]:
    """Replies from a JSON script file (the format of :func:`parse_script`).

    Keep a conversation's replies in a file next to the test, or share one with
    ``modelwire mock-server --script``.

    Args:
        path: The script file.

    Returns:
        The replies, for :class:`~modelwire.testing.MockServer`.

    Raises:
        ConfigurationError: The file cannot be read, or is not a valid script.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read script {str(path)!r}: {exc.strerror}") from None
    return parse_script(data)


def _reply(i: int, item: str | _Item) -> Reply:
    if isinstance(item, str):
        return Reply(message=item)
    where = f"script[{i}]"
    scripted = any(
        v is not None
        for v in (
            item.text,
            item.thinking,
            item.tool_calls,
            item.content,
            item.stop_reason,
            item.provider_stop_reason,
            item.usage,
        )
    )
    raw = item.body is not None or item.error is not None
    if item.content is not None and any(
        v is not None for v in (item.text, item.thinking, item.tool_calls)
    ):
        raise ConfigurationError(f"{where}: give either content or text/thinking/tool_calls")
    if scripted and raw:
        raise ConfigurationError(f"{where}: a scripted reply cannot also have body or error")
    if item.body is not None and item.error is not None:
        raise ConfigurationError(f"{where}: give either body or error")
    if item.piece_chars <= 0:
        raise ConfigurationError(f"{where}.piece_chars must be a positive integer")
    delivery: dict[str, Any] = {
        "status": item.status,
        "headers": dict(item.headers),
        "chunk_size": item.chunk_size,
        "split_points": tuple(item.split_points) if item.split_points is not None else None,
        "seed": item.seed,
        "delay": item.delay,
        "cut_after": item.cut_after,
        "stall_after": item.stall_after,
        "stall_seconds": item.stall_seconds,
    }
    if item.chunk_size is not None and item.chunk_size <= 0:
        raise ConfigurationError(f"{where}.chunk_size must be a positive integer")
    if item.error is not None:
        # Rendered in the error shape of the API the request reaches (error_reply).
        return Reply(error=item.error, error_type=item.error_type,
                     content_type=item.content_type or "application/json", **delivery)  # fmt: skip
    if item.body is not None:
        return Reply(body=item.body.encode(), content_type=item.content_type or
                     "text/event-stream", **delivery)  # fmt: skip
    if not scripted:
        raise ConfigurationError(
            f"{where}: say what to reply: text, thinking, tool_calls, content, body or error"
        )
    blocks: list[AssistantContent] = []
    if item.content is not None:
        for b in item.content:
            if isinstance(b, _TextBlock):
                blocks.append(TextContent(text=b.text, citations=tuple(b.citations)))
            elif isinstance(b, ServerToolCall | ServerToolResult | ProviderItem):
                blocks.append(b)
            elif isinstance(b, _ThinkingBlock):
                blocks.append(ThinkingContent(thinking=b.thinking, signature=b.signature))
            else:
                blocks.append(tool_call(b.name, b.arguments, id=b.id))
    else:
        if item.thinking is not None:
            blocks.append(ThinkingContent(thinking=item.thinking))
        if item.text is not None:
            blocks.append(TextContent(text=item.text))
        for c in item.tool_calls or ():
            blocks.append(tool_call(c.name, c.arguments, id=c.id))
    u = item.usage or _Usage()
    usage = Usage(
        input=u.input, output=u.output, cache_read=u.cache_read, cache_write=u.cache_write,
        total_tokens=u.input + u.output + u.cache_read + u.cache_write,
    )  # fmt: skip
    message = AssistantMessage(
        content=tuple(blocks), api="", provider="", model="", usage=usage,
        stop_reason=item.stop_reason or "stop", provider_stop_reason=item.provider_stop_reason,
    )  # fmt: skip
    return Reply(message=message, piece_chars=item.piece_chars, **delivery)

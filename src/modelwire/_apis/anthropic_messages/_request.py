"""The typed shape of an Anthropic Messages request body, as the gateway reads it.

Reference: https://docs.anthropic.com/en/api/messages (the request fields, the
content block types of ``messages[].content``, ``tools``, ``tool_choice``,
``thinking``, ``output_config``). Unknown fields inside these objects are ignored
(forward compatible); a top-level field that is not in :class:`Request` goes to the
gateway's ``passthrough``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from .._server.fields import Tokens

__all__ = [
    "Document",
    "Format",
    "Head",
    "Image",
    "Message",
    "OutputConfig",
    "Redacted",
    "Request",
    "ServerCall",
    "ServerResult",
    "Source",
    "SystemBlock",
    "Text",
    "Thinking",
    "ThinkingBlock",
    "Tool",
    "ToolChoice",
    "ToolResult",
    "ToolUse",
]


class SystemBlock(msgspec.Struct, gc=False):
    type: Literal["text"]
    text: str
    cache_control: Any = None


class ToolChoice(msgspec.Struct, gc=False):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(msgspec.Struct, gc=False):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: Annotated[int, msgspec.Meta(ge=0)] | None = None


class Format(msgspec.Struct, gc=False):
    type: Literal["json_schema"]
    schema: dict[str, Any]


class OutputConfig(msgspec.Struct, gc=False):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: Format | None = None


class Message(msgspec.Struct, gc=False):
    role: Literal["user", "assistant", "system"]
    content: str | list[msgspec.Raw]


class Request(msgspec.Struct, gc=False):
    model: str
    messages: list[Message]
    max_tokens: Tokens
    system: str | list[SystemBlock] | None = None
    stream: bool = False
    temperature: float | None = None
    tools: list[msgspec.Raw] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    output_config: OutputConfig | None = None
    output_format: Format | None = None  # the structured-outputs beta's spelling
    metadata: dict[str, Any] | None = None


class Head(msgspec.Struct, gc=False):
    type: str
    cache_control: Any = None


class ToolHead(msgspec.Struct, gc=False):
    """A tool's ``type`` alone: a server tool has no ``input_schema``."""

    type: str | None = None


class Tool(msgspec.Struct, gc=False):
    name: str
    input_schema: dict[str, Any]
    description: str = ""
    type: str | None = None
    cache_control: Any = None


class Text(msgspec.Struct, gc=False):
    text: str
    citations: list[msgspec.Raw] | None = None


class Source(msgspec.Struct, gc=False):
    type: str
    media_type: str | None = None
    data: str | None = None
    url: str | None = None
    file_id: str | None = None


class Image(msgspec.Struct, gc=False):
    source: Source


class Document(msgspec.Struct, gc=False):
    source: Source
    title: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None


class ToolResult(msgspec.Struct, gc=False):
    tool_use_id: str
    content: str | list[msgspec.Raw] = ""
    is_error: bool = False


class ThinkingBlock(msgspec.Struct, gc=False):
    thinking: str
    signature: str


class Redacted(msgspec.Struct, gc=False):
    data: str


class ToolUse(msgspec.Struct, gc=False):
    id: str
    name: str
    input: msgspec.Raw


class ServerCall(msgspec.Struct, gc=False):
    id: str
    name: str
    input: dict[str, Any] = {}


class ServerResult(msgspec.Struct, gc=False):
    tool_use_id: str
    content: Any = None
    is_error: bool | None = None

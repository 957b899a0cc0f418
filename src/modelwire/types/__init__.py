"""Protocol types: immutable, tagged values (DESIGN §2, §2a, §2c).

Every type is a frozen, keyword-only :class:`msgspec.Struct`. Content blocks are
tagged by ``type``, messages by ``role``; the tag is readable as an attribute
(``block.type``, ``message.role``). Constructors turn lists into tuples; frozen
is shallow (``ToolCall.arguments`` stays a dict). ``to_json``/``from_json``
round-trip every type; only ``from_json`` validates field types.

- content blocks (``_content``): text with its citations, thinking, images,
  documents, audio, tool calls, provider-run tool calls and results, opaque
  provider items;
- messages and the conversation (``_messages``): user, assistant, tool result,
  tool definitions, ``Context``;
- usage and cost (``_usage``), the model (``_model``), JSON (``_json``).
"""

from __future__ import annotations

# ErrorInfo lives in errors (the exception tree builds it); re-exported here as a
# protocol type, so errors never imports types (no import cycle).
from ..errors import ErrorInfo
from ._base import StopReason, now_ms
from ._capabilities import Capabilities, StructuredOutput
from ._content import (
    AssistantContent,
    AudioContent,
    Citation,
    DocumentContent,
    ImageContent,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserContent,
)
from ._json import check_json, from_json, to_json
from ._messages import (
    SERVER_TOOL_NAMES,
    AssistantMessage,
    Context,
    Message,
    ServerTool,
    SystemMessage,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from ._model import INPUT_KINDS, Model, ModelCost
from ._usage import Cost, Usage

__all__ = [
    "INPUT_KINDS",
    "SERVER_TOOL_NAMES",
    "AssistantContent",
    "AssistantMessage",
    "AudioContent",
    "Capabilities",
    "Citation",
    "Context",
    "Cost",
    "DocumentContent",
    "ErrorInfo",
    "ImageContent",
    "Message",
    "Model",
    "ModelCost",
    "ProviderItem",
    "ServerTool",
    "ServerToolCall",
    "ServerToolResult",
    "StopReason",
    "StructuredOutput",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "check_json",
    "from_json",
    "now_ms",
    "to_json",
]

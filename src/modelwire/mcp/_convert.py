"""MCP values → modelwire values: a listed tool's name and schema, a call's result.

The MCP specification (2025-11-25, "Tools"): a tool has a ``name``, a
``description``, an ``inputSchema`` (an object schema; later revisions allow any
JSON Schema) and ``annotations`` whose ``readOnlyHint`` defaults to false; a
``tools/call`` result has ``content`` (text, image, audio, resource links and
embedded resources), an optional ``structuredContent`` and ``isError`` — a tool's
own failure, which the model is meant to see.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..tools import ToolFailure, ToolOutput
from ..types import AudioContent, DocumentContent, ImageContent, TextContent, UserContent

__all__ = ["output_of", "tool_name", "tool_schema"]

# What providers accept as a function name (the same rule as ``Tool``); MCP also
# allows "." and "/", which are mapped to "_".
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(prefix: str, name: str) -> str:
    """The name the model calls an MCP tool by: ``prefix`` + ``name``, with every
    character a provider refuses replaced by ``_`` and cut to 64 characters."""
    return _BAD.sub("_", prefix + name)[:64]


def tool_schema(schema: Any) -> dict[str, Any]:
    """The arguments schema: the server's, with ``"type": "object"`` added when the
    server left ``type`` out (the MCP 2025 schema requires an object schema)."""
    if not isinstance(schema, dict):
        return {"type": "object"}
    if "type" not in schema:
        return {"type": "object", **schema}
    return dict(schema)


def _block(block: Any) -> UserContent:
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextContent(text=block.text)
    if kind == "image":
        return ImageContent(data=block.data, mime_type=block.mime_type)
    if kind == "audio":
        return AudioContent(data=block.data, mime_type=block.mime_type)
    if kind == "resource":
        res = block.resource
        mime = res.mime_type or ""
        if hasattr(res, "text"):
            return TextContent(text=f"[resource {res.uri}]\n{res.text}")
        if mime.startswith("image/"):
            return ImageContent(data=res.blob, mime_type=mime)
        return DocumentContent(
            mime_type=mime or "application/octet-stream", data=res.blob, title=str(res.uri)
        )
    if kind == "resource_link":
        parts = [f"[resource link {block.uri}]", block.name]
        if block.description:
            parts.append(block.description)
        return TextContent(text=" ".join(p for p in parts if p))
    # A content type a later revision adds: its JSON, rather than nothing.
    dump = block.model_dump(mode="json", by_alias=True, exclude_none=True)
    return TextContent(text=json.dumps(dump, ensure_ascii=False))


def output_of(result: Any, name: str) -> ToolOutput:
    """A ``CallToolResult`` as the tool's output; ``isError`` raises the
    :class:`ToolFailure` the model sees (kind ``execution_failed``, the server's
    text). ``structuredContent`` is kept in ``details["structured_content"]``, and
    sent as JSON text when the server gave no content beside it."""
    blocks = [_block(b) for b in result.content]
    structured = result.structured_content
    details: dict[str, Any] = {"mcp_tool": name}
    if structured is not None:
        details["structured_content"] = structured
        if not blocks:
            blocks = [TextContent(text=json.dumps(structured, ensure_ascii=False))]
    if result.is_error:
        text = "\n".join(b.text for b in blocks if isinstance(b, TextContent))
        raise ToolFailure(
            "execution_failed",
            f"the {name} tool reported an error: {text or '(no text)'}",
            details=details,
        )
    return ToolOutput(blocks or [TextContent(text="")], details)

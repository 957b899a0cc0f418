"""A stdio MCP server for the CLI tests, built with the official SDK: ``save_note``
changes things (no ``readOnlyHint``, so every call needs approval) and
``count_words`` only reads (``readOnlyHint: true``)."""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")


@server.tool()
def save_note(path: str, text: str) -> str:
    """Write a note to a file.

    Second line of the description, not shown by `mcp tools`.
    """
    Path(path).write_text(text, encoding="utf-8")
    return f"saved {len(text)} characters to {path}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


if __name__ == "__main__":
    server.run()

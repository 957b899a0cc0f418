"""A small MCP server built with the official SDK, for tests: one tool per kind of
result (text, image, resources, structured, error), a slow one, one that kills its
own process mid-call, and one that is not read-only. Every call it executes is
appended to the file named by ``MCP_TOOLBOX_LOG`` (when set), so a test can see what
reached the server. ``python tests/mcp/toolbox.py`` serves it over stdio;
``build()`` gives the server object for streamable HTTP or in-process use.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

READ_ONLY = ToolAnnotations(read_only_hint=True)
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-a-png").decode()
PDF = base64.b64encode(b"%PDF-1.4 test").decode()


def _record(line: str) -> None:
    path = os.environ.get("MCP_TOOLBOX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def build(name: str = "toolbox") -> MCPServer:
    server = MCPServer(name)

    @server.tool(annotations=READ_ONLY)
    def echo(text: str) -> str:
        """Say the text back."""
        _record(f"echo {text}")
        return text

    @server.tool(annotations=READ_ONLY)
    def picture() -> list[Any]:
        """A picture and its caption."""
        _record("picture")
        return [ImageContent(data=PNG, mime_type="image/png"), TextContent(text="a caption")]

    @server.tool(annotations=READ_ONLY)
    def documents() -> list[Any]:
        """A text resource and a PDF."""
        _record("documents")
        return [
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt",
                                                           mime_type="text/plain",
                                                           text="the notes")),
            EmbeddedResource(resource=BlobResourceContents(uri="file:///report.pdf",
                                                           mime_type="application/pdf",
                                                           blob=PDF)),
        ]  # fmt: skip

    @server.tool(annotations=READ_ONLY)
    def weather(city: str) -> dict[str, Any]:
        """The weather in a city, as structured content."""
        _record(f"weather {city}")
        return {"city": city, "celsius": 18}

    @server.tool(annotations=READ_ONLY)
    def fail(reason: str) -> str:
        """Always fails with the reason."""
        _record(f"fail {reason}")
        raise ToolError(reason)

    @server.tool(annotations=READ_ONLY)
    async def slow(seconds: float) -> str:
        """Sleeps, then answers; records a cancellation."""
        _record("slow started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            _record("slow cancelled")
            raise
        _record("slow finished")
        return "slept"

    @server.tool(annotations=READ_ONLY)
    def die() -> str:
        """Ends the server's process in the middle of the call."""
        _record("die")
        sys.stderr.write("toolbox: dying now\n")
        sys.stderr.flush()
        time.sleep(0.1)
        os._exit(3)

    @server.tool(annotations=READ_ONLY)
    def count(n: int) -> str:
        """Counts to n (n must be an integer)."""
        _record(f"count {n!r}")
        return " ".join(str(i) for i in range(1, n + 1))

    @server.tool()
    def write_note(text: str) -> str:
        """Writes a note (changes the world: not read-only)."""
        _record(f"write_note {text}")
        return "written"

    return server


if __name__ == "__main__":
    sys.stderr.write("toolbox: started\n")
    sys.stderr.flush()
    build(sys.argv[1] if len(sys.argv) > 1 else "toolbox").run()

"""MCP servers on the command line: ``--mcp SERVER`` on ``chat`` and ``run``, and
``modelwire mcp tools SERVER``.

SERVER is an ``http://`` or ``https://`` URL (streamable HTTP) or a command line,
split as a shell splits it (``'uvx mcp-server-time'``) and started as a subprocess
that speaks MCP on its stdin and stdout (:mod:`modelwire.mcp`). The CLI opens each
server once, before the first model call, and closes it when the command ends: a
server that does not start is one error line (exit 2) before anything is sent, ``-T``
can name its tools, and a chat keeps one server process for all its turns.

A server's tools are used like ``--functions``: one whose MCP annotations do not say
``readOnlyHint: true`` needs the user's approval for each call (:mod:`.functions`).
The server's stderr is never shown while it works (the SDK's tools log to it); when
it fails to start, its last stderr line goes into the error, which is usually the
reason (a missing module, a bad option).
"""

from __future__ import annotations

import logging
import shlex
import shutil
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .common import CLIError

if TYPE_CHECKING:
    import argparse

    from ..mcp import MCPServer
    from ..tools import Tool

__all__ = ["Servers", "add_parser", "open_servers", "run", "server_of"]

_SERVER_HELP = (
    "an MCP server: an http:// or https:// URL, or a command line started on stdio, "
    "quoted as one argument ('uvx mcp-server-time')"
)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "mcp", help="MCP servers: list a server's tools (chat and run take --mcp SERVER)",
        description="Model Context Protocol servers. SERVER is an http:// or https:// URL "
        "(streamable HTTP) or a command line started as a subprocess speaking on stdio. "
        "chat and run give the model a server's tools with --mcp SERVER; a tool the server "
        "does not mark read-only asks for approval before each call (--ta: never).",
        epilog="Examples: modelwire mcp tools 'uvx mcp-server-time' · "
        "modelwire mcp tools http://127.0.0.1:8000/mcp --json · "
        "modelwire run -m openai/gpt-4.1-mini --mcp 'uvx mcp-server-time' 'time in Tokyo?'",
    )  # fmt: skip
    acts = p.add_subparsers(dest="mcp_action", metavar="ACTION", required=True)
    t = acts.add_parser(
        "tools", help="list a server's tools: name, read-only or needs approval, description",
        description="Starts (or connects to) SERVER, lists its tools and stops it: one line "
        "per tool, or with --json one JSON object per tool with its full input schema.",
    )  # fmt: skip
    t.add_argument("server", nargs="+", metavar="SERVER",
                   help=_SERVER_HELP + "; or the command's words after --: "
                   "mcp tools -- python -m mcp_server_time")  # fmt: skip
    t.add_argument("--json", action="store_true",
                   help="one JSON object per tool: name, description, input_schema, read_only")  # fmt: skip
    t.add_argument("--plain", action="store_true", help="plain text even on a terminal")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--mcp`` of ``chat`` (and ``prompt``) and ``run``."""
    p.add_argument("--mcp", action="append", metavar="SERVER",
                   help=_SERVER_HELP + "; its tools are offered to the model, and one the "
                   "server does not mark read-only needs approval like a --functions tool; "
                   "repeatable")  # fmt: skip


# --------------------------------------------------------------------------- mcp tools


def run(args: argparse.Namespace) -> int:
    """``mcp tools SERVER``: the server's tools, one line each (or ``--json``)."""
    from .output import Screen, json_line

    words: list[str] = args.server
    # Several words are the command line itself (after --), already split by the shell.
    spec = words[0] if len(words) == 1 else shlex.join(words)
    servers = open_servers([spec])
    try:
        (server,) = servers.servers
        tools = server.tools
        if args.json:
            for tool in tools:
                json_line(_definition(tool))
        elif tools:
            screen = Screen(plain=True if args.plain else None)
            screen.table(["tool", "approval", "description"],
                         [[t.name, "read-only" if t.read_only else "needs approval",
                           _first_line(t.description)] for t in tools])  # fmt: skip
        if not tools:
            sys.stderr.write(f"modelwire: {server.label} lists no tools\n")
    finally:
        servers.close()
    return 0


def _definition(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description,
            "input_schema": tool.parameters, "read_only": tool.read_only}  # fmt: skip


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0].strip() if lines else ""


# --------------------------------------------------------------------------- opening


def server_of(spec: str) -> MCPServer:
    """The server a SERVER argument names (not started yet)."""
    _need_sdk()
    from .. import mcp

    if spec.startswith(("http://", "https://")):
        return mcp.http(spec)
    try:
        argv = shlex.split(spec)
    except ValueError as exc:  # an unclosed quote
        raise CLIError("usage", f"the MCP server {spec!r} is not a command line ({exc}); "
                       "quote the whole command once, e.g. 'uvx mcp-server-time'") from None  # fmt: skip
    if not argv:
        raise CLIError("usage", "an empty MCP server: give a command line "
                       "('uvx mcp-server-time') or an http:// or https:// URL")  # fmt: skip
    # Checked here, against the PATH the server is started with: "no such command"
    # says more than the SDK's failure to start it.
    if shutil.which(argv[0]) is None:
        raise CLIError("configuration", f"cannot start the MCP server {spec!r}: no command "
                       f"{argv[0]!r} on PATH; install it, or give its full path")  # fmt: skip
    return mcp.stdio(argv[0], argv[1:])


def _need_sdk() -> None:
    try:
        import mcp  # noqa: F401  (the SDK itself)
    except ImportError:
        raise CLIError("configuration", "MCP servers need the mcp SDK, which is not "
                       "installed: pip install 'modelwire[mcp]'") from None  # fmt: skip


class Servers:
    """Open MCP servers, and the log watch that goes with them; :meth:`close` ends both."""

    def __init__(self, servers: Sequence[MCPServer], watch: _Watch) -> None:
        self.servers = list(servers)
        self._watch = watch

    def close(self) -> None:
        for server in reversed(self.servers):
            server.close_sync()
        self.servers = []
        self._watch.remove()


def open_servers(specs: Iterable[str]) -> Servers:
    """Every server the SERVER arguments name, started and listed: a server that does
    not start is a ``CLIError`` (exit 2), and those already started are stopped."""
    from ..errors import ConfigurationError, ToolServerError

    specs = list(specs)
    made = [server_of(s) for s in specs]  # every argument checked before any starts
    watch = _Watch()
    opened: list[MCPServer] = []
    try:
        for spec, server in zip(specs, made, strict=True):
            try:
                server.open_sync()
            except ToolServerError as exc:
                raise CLIError("tool_server", _why(spec, server, exc.message, watch)) from None
            except ConfigurationError as exc:  # two tools with one name, a bad schema
                raise CLIError("configuration", exc.message) from None
            opened.append(server)
    except BaseException:
        Servers(opened, watch).close()
        raise
    return Servers(opened, watch)


def _why(spec: str, server: MCPServer, message: str, watch: _Watch) -> str:
    text = message.replace(" (connect_timeout=)", "")
    said = watch.last_stderr(server.label)
    if said:
        text += f"; its last stderr line: {said}"
    if spec.startswith(("http://", "https://")):
        return text + f"; check that an MCP server answers at {spec} (streamable HTTP)"
    return text + "; check that the command starts an MCP server on stdio (run it alone to see)"


class _Watch(logging.Handler):
    """The ``modelwire.mcp`` log while the CLI has servers: each server's stderr (INFO
    records, never shown) is kept for a start failure's message; a warning — a server
    that stopped in the middle of a run — is one ``modelwire: warning:`` line."""

    _LOGGER = "modelwire.mcp"

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._lines: deque[str] = deque(maxlen=200)
        logger = logging.getLogger(self._LOGGER)
        self._level = logger.level
        logger.addHandler(self)
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            from .output import end_lines
            from .store import warn

            end_lines()
            warn(text)
        else:
            self._lines.append(text)

    def last_stderr(self, label: str) -> str:
        """The last non-blank line ``label`` wrote on its stderr ("" when none)."""
        prefix = f"{label} stderr: "
        for text in reversed(self._lines):
            if text.startswith(prefix) and text[len(prefix) :].strip():
                return text[len(prefix) :].strip()
        return ""

    def remove(self) -> None:
        logger = logging.getLogger(self._LOGGER)
        if self in logger.handlers:
            logger.removeHandler(self)
            logger.setLevel(self._level)

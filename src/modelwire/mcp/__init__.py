"""Tools from Model Context Protocol servers, for the agent (the ``mcp`` extra).

``mcp.stdio(command, args)`` starts a server as a subprocess, ``mcp.http(url)``
connects to one over streamable HTTP, ``mcp.in_process(server)`` to an SDK server
object in this process (for tests). Each returns an :class:`MCPServer`, whose tools
are ordinary :class:`~modelwire.Tool`\\ s: give it to ``mw.Agent(model, tools=[...,
server])``. The protocol is the official ``mcp`` SDK's (``pip install
'modelwire[mcp]'``); nothing of it is written here.

What a server's tools may do is the application's call: a tool whose annotations do
not say ``readOnlyHint: true`` needs approval — the agent's ``before_tool_call``
hook, or with none the run pauses for ``agent.resume`` (``trust=True`` opts a
server in); the server's stderr goes to the
``modelwire.mcp`` logger, never to the model; a server that dies mid-call answers
that call with a ``tool_unavailable`` error result and the run goes on.

Example:
    ```python
    import sys

    import modelwire as mw
    from modelwire import mcp
    from modelwire.testing import MockServer, tool_call

    time_server = mcp.stdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])
    script = [tool_call("get_current_time", {"timezone": "Europe/Paris"}), "Done."]
    with MockServer(script) as server:
        run = mw.Agent(server.model(), [time_server]).run_sync("Time in Paris?")
    print(run.messages[2].details["structured_content"]["timezone"])  # Europe/Paris
    ```
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ._server import DEFAULT_CONNECT_TIMEOUT, MCPServer

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "MCPServer", "http", "in_process", "stdio"]

_MISSING = "modelwire.mcp needs the mcp SDK: pip install 'modelwire[mcp]'"


def _sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise ConfigurationError(_MISSING) from None


def stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    allow: Iterable[str] | str | None = None,
    deny: Iterable[str] | str | None = None,
    prefix: str = "",
    timeout: float | None = None,
    trust: bool = False,
    defer: bool = False,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> MCPServer:
    """A server started as a subprocess, spoken to over its stdin and stdout.

    Args:
        command: The program (``"uvx"``, ``sys.executable``…), found on ``PATH``.
        args: Its arguments.
        env: Variables set for it, over the SDK's small default environment (which
            does not pass on this process's keys).
        cwd: Its working directory.
        allow: Only the tools whose names match one of these (glob patterns).
        deny: Leave out the tools whose names match one of these.
        prefix: Put before every tool name (keeps two servers' tools apart).
        timeout: Seconds one call may take; past it the call is cancelled (the
            server is told) and answered ``timeout_unknown``.
        trust: Run its tools without ``before_tool_call`` approval.
        defer: Send its tools to the model only once it searched for them.
        connect_timeout: Seconds to start, finish the handshake and list the tools.

    Returns:
        The server, not started yet.

    Raises:
        ConfigurationError: A bad argument, or the ``mcp`` SDK is not installed.

    Example:
        ```python
        import sys

        from modelwire import mcp

        clock = mcp.stdio(sys.executable, ["-m", "mcp_server_time"], prefix="clock_")
        with clock:  # or let an agent open it for each run
            print([t.name for t in clock.tools])  # ['clock_get_current_time', 'clock_convert_time']
        ```
    """
    _sdk()
    if not isinstance(command, str) or not command:
        raise ConfigurationError("command must be a non-empty string")
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise ConfigurationError("args must be a list of strings")
    argv, extra = list(args), dict(env or {}) or None
    where = None if cwd is None else str(cwd)

    def connect(errlog: Any) -> Any:
        import sys

        from mcp.client.stdio import stdio_client

        from mcp import StdioServerParameters

        params = StdioServerParameters(command=command, args=argv, env=extra, cwd=where)
        return stdio_client(params, errlog=errlog or sys.stderr)

    label = " ".join([command, *args])
    return MCPServer(connect, f"the MCP server `{label}`", allow=allow, deny=deny, prefix=prefix,
                     timeout=timeout, trust=trust, defer=defer,
                     connect_timeout=connect_timeout, stderr=True)  # fmt: skip


def http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    allow: Iterable[str] | str | None = None,
    deny: Iterable[str] | str | None = None,
    prefix: str = "",
    timeout: float | None = None,
    trust: bool = False,
    defer: bool = False,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> MCPServer:
    """A server reached over streamable HTTP (the MCP transport since 2025-03-26).

    Args:
        url: The server's MCP endpoint (``http://host:port/mcp``).
        headers: Sent with every request (an ``Authorization`` header…); never logged.
        allow: Only the tools whose names match one of these (glob patterns).
        deny: Leave out the tools whose names match one of these.
        prefix: Put before every tool name.
        timeout: Seconds one call may take.
        trust: Run its tools without ``before_tool_call`` approval.
        defer: Send its tools to the model only once it searched for them.
        connect_timeout: Seconds to connect, finish the handshake and list the tools.

    Returns:
        The server, not connected yet.

    Raises:
        ConfigurationError: A bad argument, or the ``mcp`` SDK is not installed.

    Example:
        ```python
        from modelwire import mcp

        docs = mcp.http("https://mcp.example.com/mcp", headers={"Authorization": "Bearer <token>"},
                        allow=["search_*"], timeout=30)
        print(docs.is_open)  # False
        ```
    """
    _sdk()
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"url must be an http:// or https:// URL, got {url!r}")
    if headers is not None and not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ConfigurationError("headers must map strings to strings")
    sent = dict(headers or {})

    @contextlib.asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # The SDK's timeouts (30 s, 300 s to read: a server may hold a stream open);
        # the SDK does not close a client it was given, so this does.
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=sent, timeout=timeout) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    def connect(_errlog: Any) -> Any:
        return transport()

    # The label is what errors and logs show: the URL without userinfo, query or fragment.
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    shown = f"{parts.scheme}://{parts.hostname or ''}"
    shown += f":{parts.port}" if parts.port else ""
    return MCPServer(connect, f"the MCP server {shown}{parts.path}", allow=allow, deny=deny,
                     prefix=prefix, timeout=timeout, trust=trust, defer=defer,
                     connect_timeout=connect_timeout)  # fmt: skip


def in_process(
    server: Any,
    *,
    allow: Iterable[str] | str | None = None,
    deny: Iterable[str] | str | None = None,
    prefix: str = "",
    timeout: float | None = None,
    trust: bool = False,
    defer: bool = False,
) -> MCPServer:
    """A server object of the SDK (``mcp.server.mcpserver.MCPServer``, FastMCP's
    successor, or a low-level ``Server``) run in this process: no subprocess, no
    socket — how tests give an agent MCP tools.

    Args:
        server: The SDK server object.
        allow: Only the tools whose names match one of these (glob patterns).
        deny: Leave out the tools whose names match one of these.
        prefix: Put before every tool name.
        timeout: Seconds one call may take.
        trust: Run its tools without ``before_tool_call`` approval.
        defer: Send its tools to the model only once it searched for them.

    Returns:
        The server, not connected yet.

    Raises:
        ConfigurationError: Not an SDK server, or the ``mcp`` SDK is not installed.

    Example:
        ```python
        from mcp.server.mcpserver import MCPServer

        from modelwire import mcp

        notes = MCPServer("notes", log_level="WARNING")

        @notes.tool()
        def forget(day: str) -> str:
            '''Delete the notes of a day.'''
            return "deleted"

        with mcp.in_process(notes) as server:
            print([(t.name, t.approval) for t in server.tools])  # [('forget', True)]
        ```
    """
    _sdk()
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer as SDKServer

    if not isinstance(server, Server | SDKServer):
        raise ConfigurationError(
            f"in_process() takes an mcp SDK server object, got {type(server).__name__}"
        )
    name = getattr(server, "name", None) or type(server).__name__
    return MCPServer(lambda _errlog: server, f"the in-process MCP server {name!r}",
                     allow=allow, deny=deny, prefix=prefix, timeout=timeout, trust=trust,
                     defer=defer)  # fmt: skip

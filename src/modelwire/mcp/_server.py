"""``MCPServer``: one connection to an MCP server, its tools as ordinary ``Tool``s.

The official ``mcp`` SDK speaks the protocol (``mcp.Client`` over stdio, streamable
HTTP or in process); this module only hosts it. The connection lives on its own
event loop in a daemon thread, so one server serves the async path, the sync path
and an agent's worker threads alike, and the SDK's task groups are entered and left
by the one task that owns them.

Each tool's ``execute`` is a plain function: it hands the call to the connection's
loop and waits, watching ``ctx.cancel`` — set when the run is aborted or the
tool's ``timeout`` passed —, and cancels the request, which the SDK reports to the
server with ``notifications/cancelled``. A call the server cannot answer (the
process died, the connection closed) is answered with a ``tool_unavailable`` error
result at once, never a hang: when the connection ends, every call still waiting
is failed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fnmatch
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import ConfigurationError, ToolServerError
from ..tools import Tool, ToolContext, ToolFailure, ToolOutput
from ..tools._toolset import Toolset
from ._convert import output_of, tool_name, tool_schema

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "MCPServer"]

log = logging.getLogger("modelwire.mcp")

DEFAULT_CONNECT_TIMEOUT = 30.0
"""Seconds to start a server, finish the handshake and list its tools."""
# How often a waiting call looks at ctx.cancel (a threading.Event cannot be awaited
# together with a future).
_POLL = 0.05

Connect = Callable[[Any], Any]  # (errlog file or None) -> a transport or server for mcp.Client


def _names(value: Iterable[str] | str | None, what: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = (value,)
    names = tuple(value)
    if not all(isinstance(n, str) and n for n in names):
        raise ConfigurationError(f"{what} must be tool names or glob patterns (strings)")
    return names


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


class _StderrLog:
    """A pipe whose write end is the server's stderr; a thread logs each line it
    reads at INFO on ``modelwire.mcp`` — never shown to the model."""

    def __init__(self, label: str) -> None:
        r, w = os.pipe()
        self.file = os.fdopen(w, "w", encoding="utf-8", errors="replace")
        self._read = os.fdopen(r, "r", encoding="utf-8", errors="replace")
        self._thread = threading.Thread(
            target=self._pump, args=(label,), name="modelwire-mcp-stderr", daemon=True
        )
        self._thread.start()

    def _pump(self, label: str) -> None:
        with self._read:
            for line in self._read:
                log.info("%s stderr: %s", label, line.rstrip("\n"))

    def close(self) -> None:
        # Our copy of the write end; the pump ends when the server's copy closes too.
        with contextlib.suppress(OSError):
            self.file.close()


class MCPServer(Toolset):
    """An MCP server's tools, for an ``Agent`` or for calling yourself.

    Made by :func:`modelwire.mcp.stdio`, :func:`modelwire.mcp.http` or
    :func:`modelwire.mcp.in_process`. Open it with ``async with server:`` or
    ``with server:`` (then it stays open for every run of every agent given it), or
    give it to an ``Agent`` unopened: the agent opens it at the start of each run
    and closes it at the end. Once open, ``tools`` holds one :class:`~modelwire.Tool`
    per listed tool: its name (``prefix`` + the server's name), description and
    input schema as the server gives them — arguments are validated against that
    schema before anything is sent.

    A tool whose annotations do not say ``readOnlyHint: true`` is made with
    ``approval=True``: an agent's ``before_tool_call`` hook decides inline, and with
    none the run pauses for ``agent.resume(state, decisions)`` (``trust=True`` opts
    the whole server out of this); one whose annotations say ``idempotentHint:
    true`` is ``idempotent=True``.
    """

    def __init__(
        self,
        connect: Connect,
        label: str,
        *,
        allow: Iterable[str] | str | None = None,
        deny: Iterable[str] | str | None = None,
        prefix: str = "",
        timeout: float | None = None,
        trust: bool = False,
        defer: bool = False,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        stderr: bool = False,
    ) -> None:
        self._connect = connect
        self.label = label
        self.allow = _names(allow, "allow")
        self.deny = _names(deny, "deny")
        if not isinstance(prefix, str):
            raise ConfigurationError("prefix must be a string")
        self.prefix = prefix
        for what, value in (("timeout", timeout), ("connect_timeout", connect_timeout)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
            ):
                raise ConfigurationError(f"{what} must be a positive number of seconds")
        self.timeout = timeout
        self.connect_timeout = float(connect_timeout)
        for what, flag in (("trust", trust), ("defer", defer)):
            if not isinstance(flag, bool):
                raise ConfigurationError(f"{what} must be True or False")
        self.trust = trust
        self.defer = defer
        self._stderr = stderr
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._tools: tuple[Tool, ...] = ()
        self._calls: set[asyncio.Task[Any]] = set()
        self._dead: str | None = None  # why the connection ended, once it did
        self._log: _StderrLog | None = None
        self._host_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"MCPServer({self.label})"

    # ----------------------------------------------------------- open and close

    @property
    def is_open(self) -> bool:
        return self._thread is not None

    @property
    def tools(self) -> tuple[Tool, ...]:
        if self._thread is None:
            raise ConfigurationError(
                f"{self.label} is not open: use `async with server:` / `with server:`, "
                "or give it to an Agent, which opens it for each run"
            )
        return self._tools

    def _start(self) -> concurrent.futures.Future[None]:
        with self._lock:
            if self._thread is not None:
                done: concurrent.futures.Future[None] = concurrent.futures.Future()
                done.set_result(None)
                return done
            ready: concurrent.futures.Future[None] = concurrent.futures.Future()
            loop = asyncio.new_event_loop()
            self._loop, self._dead, self._tools = loop, None, ()
            self._log = _StderrLog(self.label) if self._stderr else None

            def main() -> None:
                host = loop.create_task(self._host(ready))
                self._host_task = host
                try:
                    loop.run_until_complete(host)
                except asyncio.CancelledError:
                    pass  # closed while still opening (_shutdown)
                finally:
                    loop.close()

            self._thread = threading.Thread(target=main, name="modelwire-mcp", daemon=True)
            self._thread.start()
            return ready

    async def _host(self, ready: concurrent.futures.Future[None]) -> None:
        """The task that owns the connection: opens it, lists the tools, waits for
        :meth:`close`, closes it. Whatever ends it fails the calls still waiting."""
        from mcp import Client

        self._stop = asyncio.Event()
        try:
            target = self._connect(self._log.file if self._log else None)
            async with Client(target, raise_exceptions=False) as client:
                self._client = client
                self._tools = await self._list(client)
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as caught:
            exc = _innermost(caught)
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            if not ready.done():
                ready.set_exception(
                    exc
                    if isinstance(exc, ConfigurationError)
                    else ToolServerError(f"could not open {self.label}: {why}")
                )
            else:
                log.warning("%s stopped: %s", self.label, why)
            self._dead = f"{self.label} stopped ({why})"
        finally:
            self._dead = self._dead or f"{self.label} was closed"
            self._client = None
            for task in list(self._calls):
                task.cancel()
            if self._log is not None:
                self._log.close()

    async def _list(self, client: Any) -> tuple[Tool, ...]:
        listed: list[Any] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        tools: list[Tool] = []
        seen: dict[str, str] = {}
        for t in listed:
            if self.allow is not None and not _matches(t.name, self.allow):
                continue
            if self.deny is not None and _matches(t.name, self.deny):
                continue
            name = tool_name(self.prefix, t.name)
            if name in seen:
                raise ConfigurationError(
                    f"the tools {seen[name]!r} and {t.name!r} of {self.label} both become "
                    f"{name!r}; leave one out with deny="
                )
            seen[name] = t.name
            tools.append(self._tool(t, name))
        return tuple(tools)

    def _tool(self, listed: Any, name: str) -> Tool:
        annotations = listed.annotations
        read_only = bool(annotations is not None and annotations.read_only_hint is True)
        idempotent = bool(annotations is not None and annotations.idempotent_hint is True)
        remote = listed.name

        def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            return self._call_sync(remote, args, ctx)

        try:
            return Tool(
                name,
                listed.description or "",
                tool_schema(listed.input_schema),
                execute,
                timeout=self.timeout,
                read_only=read_only,
                approval=not (read_only or self.trust),
                idempotent=idempotent,
                defer=self.defer,
            )
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"the tool {remote!r} of {self.label} cannot be used: {exc}; "
                "leave it out with deny="
            ) from None

    async def open(self) -> None:
        """Start (or connect to) the server and list its tools; no-op when open.

        Raises:
            ToolServerError: It did not start, answer or list its tools within
                ``connect_timeout``.
            ConfigurationError: Two listed tools end up with one name, or a tool's
                schema is not a valid JSON Schema.
        """
        ready = self._start()
        try:
            await asyncio.wait_for(asyncio.wrap_future(ready), self.connect_timeout)
        except BaseException as exc:
            await asyncio.to_thread(self._shutdown)
            raise self._open_error(exc) from None

    def open_sync(self) -> None:
        """:meth:`open` without an event loop (also inside a running one)."""
        ready = self._start()
        try:
            ready.result(self.connect_timeout)
        except BaseException as exc:
            self._shutdown()
            raise self._open_error(exc) from None

    def _open_error(self, exc: BaseException) -> BaseException:
        if isinstance(exc, ToolServerError | ConfigurationError):
            return exc
        if isinstance(exc, TimeoutError | concurrent.futures.TimeoutError):
            return ToolServerError(
                f"{self.label} did not finish its handshake and tool listing "
                f"within {self.connect_timeout:g} s (connect_timeout=)"
            )
        return exc

    async def close(self) -> None:
        """Stop the server (a process is ended) and fail any call still waiting."""
        await asyncio.to_thread(self._shutdown)

    def close_sync(self) -> None:
        """:meth:`close` without an event loop."""
        self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            thread, loop, stop = self._thread, self._loop, self._stop
            self._thread = None
        if thread is None or loop is None:
            return
        host = self._host_task
        with contextlib.suppress(RuntimeError):  # the loop already ended
            if self._client is None and host is not None:
                # Still opening (a server that never answers the handshake): waiting
                # for it to stop would wait as long as it hangs; the task is cancelled
                # and the transport ends the process.
                loop.call_soon_threadsafe(host.cancel)
            elif stop is not None:
                loop.call_soon_threadsafe(stop.set)
        thread.join()

    async def __aenter__(self) -> MCPServer:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __enter__(self) -> MCPServer:
        self.open_sync()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_sync()

    # ------------------------------------------------------------------- calls

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        client = self._client
        if client is None:
            raise ToolFailure("tool_unavailable", self._dead or f"{self.label} is not open")
        task = asyncio.current_task()
        assert task is not None
        self._calls.add(task)
        try:
            return await client.call_tool(name, args)
        finally:
            self._calls.discard(task)

    def _call_sync(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        loop = self._loop
        if self._thread is None or loop is None or self._dead is not None:
            raise ToolFailure("tool_unavailable", self._dead or f"{self.label} is not open")
        try:
            future = asyncio.run_coroutine_threadsafe(self._call(name, args), loop)
        except RuntimeError:  # the loop ended between the check and the call
            raise ToolFailure("tool_unavailable", self._dead or "the server stopped") from None
        while True:
            try:
                result = future.result(_POLL)
                break
            except concurrent.futures.TimeoutError:
                if ctx.cancelled:
                    future.cancel()  # the SDK sends notifications/cancelled
                    raise ToolFailure(
                        "aborted", f"the {name} call was cancelled before it finished"
                    ) from None
            except concurrent.futures.CancelledError:
                raise ToolFailure(
                    "tool_unavailable",
                    (self._dead or f"{self.label} stopped")
                    + f" before the {name} call was answered; whether it ran is unknown",
                ) from None
            except ToolFailure:
                raise
            except Exception as exc:
                raise ToolFailure(
                    "tool_unavailable",
                    f"{self.label} did not answer the {name} call ({type(exc).__name__}: "
                    f"{exc}); whether it ran is unknown",
                ) from None
        return output_of(result, name)

    async def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        """Call one of ``tools`` by its name here, validating the arguments first;
        its output (an ``isError`` result raises :class:`~modelwire.ToolFailure`).

        Args:
            name: The tool's name in ``tools`` (with the prefix).
            arguments: Its arguments.

        Returns:
            The tool's output: content blocks, and ``details["structured_content"]``.

        Raises:
            ToolFailure: Unknown tool, invalid arguments, the server's error result,
                or a server that stopped.
        """
        return await asyncio.to_thread(self.call_sync, name, arguments)

    def call_sync(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutput:
        """:meth:`call` without an event loop.

        Args:
            name: The tool's name in ``tools`` (with the prefix).
            arguments: Its arguments.

        Returns:
            The tool's output.

        Raises:
            ToolFailure: As :meth:`call`.
        """
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            raise ToolFailure("unknown_tool", f"{self.label} has no tool named {name!r}")
        args = dict(arguments or {})
        problems = tool.validate(args)
        if problems:
            raise ToolFailure(
                "invalid_arguments", "; ".join(problems), details={"errors": problems}
            )
        out = tool.execute(args, ToolContext.for_test())
        assert isinstance(out, ToolOutput)
        return out


def _innermost(exc: BaseException) -> BaseException:
    """The first leaf of the exception groups the SDK's task groups raise: the
    group's own message ("unhandled errors in a TaskGroup") says nothing."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc

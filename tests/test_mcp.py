"""MCP servers' tools in the agent, over real processes and sockets.

The servers are real: ``mcp-server-time`` (published on PyPI, started as a
subprocess), and ``tests/mcp/toolbox.py`` (built with the official SDK) over stdio,
over streamable HTTP on a loopback uvicorn, and in process. The model is a
``MockServer`` script that calls their tools; what reached a server is read from
the file the toolbox appends each executed call to, never from modelwire.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire import mcp
from modelwire.errors import ConfigurationError, ToolServerError
from modelwire.testing import MockServer, tool_call
from modelwire.tools import ToolContext, ToolFailure, ToolOutput
from modelwire.types import DocumentContent, ImageContent, TextContent, ToolResultMessage

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent
TOOLBOX = str(HERE / "mcp" / "toolbox.py")
sys.path.insert(0, str(HERE / "mcp"))
import toolbox  # noqa: E402

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def _calls(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def _results(run: Any) -> list[ToolResultMessage]:
    return [m for m in run.messages if isinstance(m, ToolResultMessage)]


def _declared(request: Any) -> dict[str, Any]:
    return {t["function"]["name"]: t["function"] for t in request.json().get("tools", [])}


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.log"
    monkeypatch.setenv("MCP_TOOLBOX_LOG", str(path))  # the in-process and HTTP servers
    return path


def _stdio(log: Path, **kw: Any) -> mcp.MCPServer:
    return mcp.stdio(sys.executable, [TOOLBOX], env={"MCP_TOOLBOX_LOG": str(log)}, **kw)


class _Uvicorn:
    """The toolbox's streamable-HTTP app on a loopback port, in a thread; records
    the request headers it receives."""

    def __init__(self, name: str = "toolbox") -> None:
        import uvicorn

        app = toolbox.build(name).streamable_http_app()
        self.headers: list[dict[str, str]] = []

        async def recording(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.headers.append({k.decode(): v.decode() for k, v in scope["headers"]})
            await app(scope, receive, send)

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(recording, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]})
        self.thread.start()
        while not self.server.started:
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join()


@pytest.fixture
def http_toolbox() -> Iterator[_Uvicorn]:
    server = _Uvicorn()
    yield server
    server.stop()


def _server(kind: str, log: Path, http: _Uvicorn | None = None, **kw: Any) -> mcp.MCPServer:
    if kind == "stdio":
        return _stdio(log, **kw)
    if kind == "http":
        assert http is not None
        return mcp.http(http.url, **kw)
    return mcp.in_process(toolbox.build(), **kw)


TRANSPORTS = ["stdio", "http", "in_process"]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make(transport: str, log: Path, request: pytest.FixtureRequest) -> Callable[..., Any]:
    http = request.getfixturevalue("http_toolbox") if transport == "http" else None
    return lambda **kw: _server(transport, log, http, **kw)


# ------------------------------------------------------------ a published server


def test_a_published_stdio_server_answers_through_the_agent_sync() -> None:
    time_server = mcp.stdio(TIME_SERVER[0], TIME_SERVER[1:])
    script = [tool_call("get_current_time", {"timezone": "Asia/Tokyo"}), "It is late."]
    with MockServer(script) as srv:
        run = mw.Agent(srv.model(), [time_server]).run_sync("Time in Tokyo?")
    assert run.text == "It is late."
    (result,) = _results(run)
    assert not result.is_error
    shown = json.loads(result.text)
    assert shown["timezone"] == "Asia/Tokyo" and shown["datetime"].endswith("+09:00")
    assert result.details["structured_content"]["timezone"] == "Asia/Tokyo"
    # The model was told the server's own description and schema.
    declared = _declared(srv.requests[0])
    assert set(declared) == {"get_current_time", "convert_time"}
    assert declared["get_current_time"]["parameters"]["required"] == ["timezone"]
    assert not time_server.is_open  # the agent opened it for the run, and closed it


async def test_a_published_stdio_server_answers_through_the_agent_async() -> None:
    script = [tool_call("convert_time", {"source_timezone": "UTC", "time": "12:00",
                                         "target_timezone": "Asia/Kolkata"}), "Noted."]  # fmt: skip
    async with mcp.stdio(TIME_SERVER[0], TIME_SERVER[1:]) as time_server:
        with MockServer(script) as srv:
            run = await mw.Agent(srv.model(), [time_server]).run("Noon UTC in India?")
        assert time_server.is_open  # opened by the caller: the run left it open
    (result,) = _results(run)
    assert "17:30" in result.text
    assert not time_server.is_open


# ------------------------------------------------------------- results, mapped


async def test_text_images_resources_and_structured_content_reach_the_model(
    make: Callable[..., Any], log: Path
) -> None:
    script = [
        [tool_call("echo", {"text": "héllo"}, id="c1"), tool_call("picture", {}, id="c2"),
         tool_call("documents", {}, id="c3"), tool_call("weather", {"city": "Oslo"}, id="c4")],
        "Seen.",
    ]  # fmt: skip
    with MockServer(script) as srv:
        model = srv.model("anthropic-messages", input=("text", "image", "document"))
        run = await mw.Agent(model, [make()]).run("Use them all.")
    echo, picture, documents, weather = _results(run)
    assert echo.text == "héllo" and not echo.is_error
    image, caption = picture.content
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert isinstance(caption, TextContent) and caption.text == "a caption"
    text, pdf = documents.content
    assert isinstance(text, TextContent) and "the notes" in text.text
    assert isinstance(pdf, DocumentContent) and pdf.mime_type == "application/pdf"
    assert weather.details["structured_content"] == {"city": "Oslo", "celsius": 18}
    assert json.loads(weather.text) == {"city": "Oslo", "celsius": 18}
    # What the provider was sent: the image and the PDF as blocks of the tool results.
    sent = srv.requests[1].json()["messages"][-1]["content"]
    kinds = [[c["type"] for c in b["content"]] for b in sent]
    assert kinds == [["text"], ["image", "text"], ["text", "document"], ["text"]]
    assert sorted(_calls(log)) == ["documents", "echo héllo", "picture", "weather Oslo"]


async def test_an_error_result_of_the_server_is_an_error_result_for_the_model(
    make: Callable[..., Any],
) -> None:
    with MockServer([tool_call("fail", {"reason": "disk full"}), "Sorry."]) as srv:
        run = await mw.Agent(srv.model(), [make()]).run("Try.")
    (result,) = _results(run)
    assert result.is_error and "disk full" in result.text
    assert run.stop_reason == "stop" and run.text == "Sorry."


async def test_arguments_that_fail_the_listed_schema_never_reach_the_server(
    make: Callable[..., Any], log: Path
) -> None:
    # The server's own validation would coerce "7" to 7; the listed schema says
    # integer, and that is what is checked before anything is sent.
    script = [tool_call("count", {"n": "7"}), tool_call("count", {"n": 3}), "Done."]
    with MockServer(script) as srv:
        run = await mw.Agent(srv.model(), [make()]).run("Count.")
    refused, counted = _results(run)
    assert refused.is_error and refused.details["failure"] == "invalid_arguments"
    assert "$.n" in refused.text
    assert counted.text == "1 2 3"
    assert _calls(log) == ["count 3"]


# ------------------------------------------------------- failures and cancellation


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_a_server_killed_mid_call_answers_that_call_and_the_run_goes_on(
    log: Path, path: str
) -> None:
    server = _stdio(log)
    script = [tool_call("die", {}), tool_call("echo", {"text": "again"}), "The server died."]
    with MockServer(script) as srv:
        agent = mw.Agent(srv.model(), [server])
        run = agent.run_sync("Go.") if path == "sync" else await agent.run("Go.")
    died, after = _results(run)
    for result in (died, after):
        assert result.is_error and result.details["failure"] == "tool_unavailable"
        assert "whether it ran is unknown" in result.text
    assert run.text == "The server died." and run.stop_reason == "stop"
    assert _calls(log) == ["die"]  # nothing was sent to a dead server
    assert not server.is_open


async def test_a_call_past_its_timeout_is_cancelled_at_the_server(log: Path) -> None:
    server = _stdio(log, timeout=0.5)
    with MockServer([tool_call("slow", {"seconds": 60}), "Too slow."]) as srv:
        async with server:
            run = await mw.Agent(srv.model(), [server]).run("Wait.")
            (result,) = _results(run)
            assert result.details["failure"] == "timeout_unknown"
            # The SDK told the server (notifications/cancelled): the tool saw it.
            for _ in range(500):
                if "slow cancelled" in _calls(log):
                    break
                await asyncio.sleep(0.02)
    assert _calls(log) == ["slow started", "slow cancelled"]


async def test_an_aborted_run_cancels_the_call_at_the_server(log: Path) -> None:
    server = _stdio(log)
    with MockServer([tool_call("slow", {"seconds": 60}), "never"]) as srv:
        async with server:
            agent = mw.Agent(srv.model(), [server])
            stream = agent.stream("Wait.")

            async def abort_once_started() -> None:
                for _ in range(500):  # the call reached the server
                    if _calls(log):
                        break
                    await asyncio.sleep(0.02)
                stream.abort()

            aborter = asyncio.create_task(abort_once_started())
            run = await stream.result()
            await aborter
            assert run is not None and run.stop_reason == "aborted"
            for _ in range(500):
                if "slow cancelled" in _calls(log):
                    break
                await asyncio.sleep(0.02)
    assert _calls(log) == ["slow started", "slow cancelled"]


def test_a_server_that_cannot_start_is_a_tool_server_error(tmp_path: Path) -> None:
    missing = mcp.stdio(str(tmp_path / "no-such-server"))
    with pytest.raises(ToolServerError, match="could not open the MCP server") as info:
        missing.open_sync()
    assert "TaskGroup" not in str(info.value)  # the cause itself, not the SDK's group
    assert "no-such-server" in str(info.value)
    assert not missing.is_open
    with MockServer(["unused"]) as srv, pytest.raises(ToolServerError):
        mw.Agent(srv.model(), [missing]).run_sync("Go.")
    # A URL where nothing listens: the same error, within connect_timeout.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ToolServerError, match=f"127.0.0.1:{port}/mcp"):
        mcp.http(f"http://127.0.0.1:{port}/mcp", connect_timeout=5).open_sync()


def test_a_server_that_never_answers_the_handshake_times_out(tmp_path: Path) -> None:
    silent = mcp.stdio(sys.executable, ["-c", "import time; time.sleep(120)"],
                       connect_timeout=0.5)  # fmt: skip
    started = time.monotonic()
    with pytest.raises(ToolServerError, match=r"within 0\.5 s"):
        silent.open_sync()
    # The hung server is ended, not waited for until it exits by itself.
    assert time.monotonic() - started < 60
    assert not silent.is_open


# ------------------------------------------------------- names, filters, approval


def test_two_servers_with_one_tool_name_are_refused_naming_both(log: Path) -> None:
    a, b = mcp.in_process(toolbox.build("a")), _stdio(log)
    with MockServer(["unused"]) as srv:
        agent = mw.Agent(srv.model(), [a, b])
        with pytest.raises(ConfigurationError) as info:
            agent.run_sync("Go.")
    message = str(info.value)
    assert "in-process MCP server 'a'" in message and "toolbox.py" in message
    assert "prefix=" in message
    assert not a.is_open and not b.is_open  # both closed again


def test_prefixes_keep_two_servers_apart_and_calls_reach_the_right_one(log: Path) -> None:
    a = mcp.in_process(toolbox.build("a"), prefix="a_", allow=["echo"])
    b = _stdio(log, prefix="b_", allow=["echo"])
    script = [[tool_call("a_echo", {"text": "one"}, id="c1"),
               tool_call("b_echo", {"text": "two"}, id="c2")], "Both."]  # fmt: skip
    with MockServer(script) as srv:
        run = mw.Agent(srv.model(), [a, b]).run_sync("Echo.")
    assert sorted(_declared(srv.requests[0])) == ["a_echo", "b_echo"]
    assert [r.text for r in _results(run)] == ["one", "two"]
    assert _calls(log) == ["echo one", "echo two"]  # in-process and stdio share the log


def test_allow_and_deny_filter_by_glob_and_a_local_tool_clash_is_refused() -> None:
    with mcp.in_process(toolbox.build(), allow=["e*", "w*"], deny=["write_*"]) as server:
        assert [t.name for t in server.tools] == ["echo", "weather"]

    @mw.tool
    def echo(text: str) -> str:
        """A local echo."""
        return text

    with MockServer(["unused"]) as srv, pytest.raises(ConfigurationError) as info:
        mw.Agent(srv.model(), [echo, mcp.in_process(toolbox.build())]).run_sync("Go.")
    assert "the agent's own tools" in str(info.value)


def test_names_a_provider_refuses_are_mapped_and_still_call_the_server_s_name() -> None:
    from mcp.server.mcpserver import MCPServer as SDKServer

    sdk = SDKServer("dots")

    @sdk.tool(name="files.read")
    def read(path: str) -> str:
        return f"read {path}"

    with mcp.in_process(sdk) as server:
        (t,) = server.tools
        assert t.name == "files_read"
        assert server.call_sync("files_read", {"path": "a.txt"}).text == "read a.txt"


@pytest.mark.parametrize("path", ["sync", "async"])
async def test_a_tool_not_marked_read_only_needs_approval(log: Path, path: str) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    def approve(call: Any, args: dict[str, Any]) -> bool:
        asked.append((call.name, args))
        return bool(args["text"] != "no")

    script = [tool_call("write_note", {"text": "x"}), tool_call("echo", {"text": "y"}), "ok"]

    async def run(server: mcp.MCPServer, **kw: Any) -> Any:
        with MockServer(script) as srv:
            agent = mw.Agent(srv.model(), [server], **kw)
            return agent.run_sync("Go.") if path == "sync" else await agent.run("Go.")

    # No hook: the write pauses the run (nothing reaches the server) until it is
    # decided; denied, the model is told so and the read-only echo runs.
    with MockServer(script) as srv:
        agent = mw.Agent(srv.model(), [mcp.in_process(toolbox.build())])
        paused = agent.run_sync("Go.") if path == "sync" else await agent.run("Go.")
        assert paused.stop_reason == "paused" and _calls(log) == []
        (pending,) = paused.pending
        assert (pending.name, pending.arguments) == ("write_note", {"text": "x"})
        decisions = {pending.id: mw.Deny("not now")}
        done = (
            agent.resume_sync(paused.state, decisions)
            if path == "sync"
            else await agent.resume(paused.state, decisions)
        )
    denied, echoed = _results(done)
    assert denied.is_error and denied.details["failure"] == "denied"
    assert "not now" in denied.text
    assert not echoed.is_error and done.text == "ok"
    assert _calls(log) == ["echo y"]
    # A hook decides (it sees every call, as for any tool).
    allowed, _ = _results(await run(mcp.in_process(toolbox.build()), before_tool_call=approve))
    assert not allowed.is_error and ("write_note", {"text": "x"}) in asked
    # A trusted server needs no approval.
    trusted, _ = _results(await run(mcp.in_process(toolbox.build(), trust=True)))
    assert not trusted.is_error
    assert _calls(log) == ["echo y", "write_note x", "echo y", "write_note x", "echo y"]
    with mcp.in_process(toolbox.build()) as server:
        flags = {t.name: (t.read_only, t.approval) for t in server.tools}
    assert flags["write_note"] == (False, True) and flags["echo"] == (True, False)


# ---------------------------------------------------------------- logs and headers


def test_the_server_s_stderr_goes_to_the_log_never_to_the_model(
    log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="modelwire.mcp")
    with MockServer([tool_call("die", {}), "Gone."]) as srv:
        mw.Agent(srv.model(), [_stdio(log)]).run_sync("Go.")
    lines = [r.getMessage() for r in caplog.records if r.name == "modelwire.mcp"]
    assert any(line.endswith("stderr: toolbox: started") for line in lines)
    assert any(line.endswith("stderr: toolbox: dying now") for line in lines)
    assert all("dying" not in r.body.decode() for r in srv.requests)


def test_http_headers_are_sent_with_every_request(http_toolbox: _Uvicorn, log: Path) -> None:
    server = mcp.http(http_toolbox.url, headers={"Authorization": "Bearer t0ken"})
    with server:
        assert server.call_sync("echo", {"text": "hi"}).text == "hi"
    assert http_toolbox.headers
    assert all(h.get("authorization") == "Bearer t0ken" for h in http_toolbox.headers)
    assert "t0ken" not in server.label and "t0ken" not in repr(server)


def test_a_caller_opened_server_serves_many_runs_and_threads(log: Path) -> None:
    script = [tool_call("echo", {"text": "a"}), "one", tool_call("echo", {"text": "b"}), "two"]
    with _stdio(log) as server, MockServer(script) as srv:
        agent = mw.Agent(srv.model(), [server])
        assert agent.run_sync("1").text == "one"
        assert agent.run_sync("2").text == "two"
        outs: list[str] = []
        threads = [threading.Thread(target=lambda i=i: outs.append(
            server.call_sync("echo", {"text": str(i)}).text)) for i in range(8)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outs) == [str(i) for i in range(8)]
    assert _calls(log)[:2] == ["echo a", "echo b"]


# ------------------------------------------------------------------ bad arguments


@pytest.mark.parametrize(
    ("make_it", "message"),
    [
        (lambda: mcp.stdio(""), "command"),
        (lambda: mcp.stdio("x", "not-a-list"), "args"),
        (lambda: mcp.stdio("x", prefix=3), "prefix"),  # type: ignore[arg-type]
        (lambda: mcp.stdio("x", allow=[""]), "allow"),
        (lambda: mcp.stdio("x", timeout=0), "timeout"),
        (lambda: mcp.stdio("x", trust="yes"), "trust"),  # type: ignore[arg-type]
        (lambda: mcp.http("ftp://example.test/mcp"), "http://"),
        (lambda: mcp.http("http://h/mcp", headers={"a": 1}), "headers"),  # type: ignore[dict-item]
        (lambda: mcp.in_process(object()), "mcp SDK server"),
    ],
)
def test_bad_arguments_are_configuration_errors(make_it: Callable[[], Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        make_it()


def test_tools_of_a_server_not_open_say_how_to_open_it() -> None:
    with pytest.raises(ConfigurationError, match="async with server"):
        _ = mcp.in_process(toolbox.build()).tools
    with mcp.in_process(toolbox.build()) as server, pytest.raises(ToolFailure) as info:
        server.call_sync("nope", {})
    assert info.value.kind == "unknown_tool"


def test_tool_output_carries_documents_and_audio() -> None:
    doc = DocumentContent(mime_type="application/pdf", data="JVBERg==")
    out = ToolOutput([TextContent(text="t"), doc])
    assert out.content[1] is doc
    with pytest.raises(ConfigurationError, match="DocumentContent"):
        ToolOutput([object()])  # type: ignore[list-item]
    assert ToolContext.for_test().cancelled is False


# ------------------------------------------------------------- the documented examples


@pytest.mark.parametrize("where", ["module", "stdio", "http", "in_process"])
def test_the_docstring_examples_run_as_printed(
    where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = (mcp if where == "module" else getattr(mcp, where)).__doc__
    assert doc is not None
    (code,) = re.findall(r"```python\n(.*?)```", textwrap.dedent(doc.split("Example:")[1]), re.S)
    exec(compile(textwrap.dedent(code), f"<mcp.{where} example>", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    promised = re.findall(r"print\(.*\)  # (.+)", code)
    assert printed == promised

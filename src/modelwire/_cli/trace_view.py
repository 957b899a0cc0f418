"""``modelwire trace`` and ``modelwire demo --trace``: one call, every layer, linked by ids.

The records come from the library's trace hook (:mod:`modelwire.trace`); this
module only renders them. One line per record, aligned::

    sse-4     ← read-4      data: {"id":"chatcmpl-mock",…"delta":{"content":"好的，我"},…}
    delta-5   ← sse-4       TextDelta 'text' → #0  text='好的，我'
    event-6   ← delta-5     text_delta      #0  '好的，我'

``--json`` prints ``record.to_dict()`` instead, one JSON object per line (with
``"call": n`` in the demo, which makes several calls).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..trace import (
    ContextTrace,
    DeltaTrace,
    EndTrace,
    ErrorTrace,
    EventTrace,
    MessageTrace,
    ReadTrace,
    RequestTrace,
    ResponseTrace,
    RetryTrace,
    SSETrace,
    TraceRecord,
)
from ..types import (
    AssistantMessage,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .common import (
    EXIT_CONFIG,
    EXIT_FAILED,
    CLIError,
    default_model,
    fail,
    request_options,
    resolve_model,
    retry_text,
    silence_stdout,
)
from .output import Screen, json_line, one_line

if TYPE_CHECKING:
    import argparse

    from ..types import Context, Model, ToolDefinition

__all__ = ["TraceView", "describe", "trace"]

ID_WIDTH = 10
PARENT_WIDTH = 12
INDENT = " " * (ID_WIDTH + PARENT_WIDTH)
WIDTH = 150  # detail characters per line before trimming (the JSON output is never trimmed)

STYLES = {
    "context": "bold",
    "request": "bold blue",
    "response": "blue",
    "read": "yellow",
    "sse": "magenta",
    "delta": "cyan",
    "event": "green",
    "eof": "yellow",
    "error": "bold red",
    "retry": "bold yellow",
    "message": "bold green",
    "tool": "bold cyan",
}


# --------------------------------------------------------------------------- formatting


def trim(text: str, limit: int = WIDTH) -> str:
    """One line, cut at the end to ``limit`` characters."""
    flat = text.replace("\n", "\\n").replace("\r", "\\r")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def trim_middle(text: str, limit: int = WIDTH) -> str:
    """One line, cut in the middle: a payload's start names it, its end holds the delta."""
    flat = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(flat) <= limit:
        return flat
    head = limit // 4
    return flat[:head] + "…" + flat[len(flat) - (limit - head - 1) :]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)


def _key(key: Any) -> str:
    return repr(key)


def _context_lines(r: ContextTrace) -> list[str]:
    ctx = r.context
    tools = ", ".join(t.name for t in ctx.tools or ()) or "none"
    n = len(ctx.messages)
    head = f"{r.api} · {r.provider}/{r.model} · {n} message{'s' if n != 1 else ''} · tools: {tools}"
    lines = [head]
    if ctx.system_prompt is not None:
        lines.append(f"system: {trim(ctx.system_prompt, 120)}")
    for i, m in enumerate(ctx.messages):
        lines.append(f"[{i}] {_message_summary(m)}")
    lines += [f"handoff: {note}" for note in r.handoff]
    return lines


def _message_summary(m: Any) -> str:
    if isinstance(m, UserMessage):
        text = (
            m.content
            if isinstance(m.content, str)
            else " ".join(getattr(c, "text", f"<{c.type}>") for c in m.content)
        )
        return f"user: {trim(text, 120)}"
    if isinstance(m, ToolResultMessage):
        state = "error" if m.is_error else "ok"
        return f"tool_result {m.tool_name} (id {m.tool_call_id}, {state}): {trim(m.text, 90)}"
    if isinstance(m, SystemMessage):
        return f"system: {trim(m.content, 120)}"
    if isinstance(m, AssistantMessage):
        parts = [_block_summary(b, 60) for b in m.content]
        return f"assistant ({m.stop_reason}): " + " · ".join(parts)
    return type(m).__name__


def _block_summary(b: Any, limit: int) -> str:
    if isinstance(b, TextContent):
        cites = f" ({len(b.citations)} citations)" if b.citations else ""
        return f"text {trim(b.text, limit)!r}{cites}"
    if isinstance(b, ThinkingContent):
        return f"thinking {trim(b.thinking, limit)!r}"
    if isinstance(b, ToolCall):
        return (
            f"tool_call {b.name} (id {b.id}) {trim(b.raw_arguments or _json(b.arguments), limit)}"
        )
    if isinstance(b, ServerToolCall):
        return f"server_tool_call {b.name} (id {b.id}, {b.provider_type}) {trim(_json(b.input), limit)}"
    if isinstance(b, ServerToolResult):
        state = "error" if b.is_error else "ok"
        return f"server_tool_result {b.name or b.provider_type} (for {b.tool_call_id}, {state})"
    if isinstance(b, ProviderItem):
        return f"provider_item {b.provider_type} ({b.api}, {len(b.data)} bytes)"
    return str(getattr(b, "type", type(b).__name__))


def _request_lines(r: RequestTrace) -> list[str]:
    lines = [f"{r.method} {r.url} · {r.size} bytes"]
    lines += [f"{k}: {v}" for k, v in r.headers.items()]
    body = r.body
    if isinstance(body, dict):
        for k, v in body.items():
            if isinstance(v, list) and v:
                lines += [trim(f"body.{k}[{i}] {_json(item)}") for i, item in enumerate(v)]
            else:
                lines.append(trim(f"body.{k} {_json(v)}"))
    else:
        lines.append(trim(f"body {body!r}"))
    return lines


def _read_line(r: ReadTrace) -> str:
    size = f"{r.size} byte{'s' if r.size != 1 else ''}"
    text = f"{size} at {r.offset} · " + _cut_text(r.cut, r.utf8, r.in_string, r.pending)
    if r.cut is not None:
        # The last bytes as text; a cut character shows as \xNN.
        text += " · ends …" + r.data[-16:].decode("utf-8", "backslashreplace")
    return text


def _cut_text(
    cut: str | None, utf8: tuple[int, int] | None, in_string: bool | None, pending: int
) -> str:
    where = ""
    if in_string is not None:
        where = " inside a JSON string" if in_string else " between JSON tokens"
    if cut == "utf8" and utf8 is not None:
        return f"cuts a UTF-8 character ({utf8[0]} of {utf8[1]} bytes){where}"
    if cut == "json":
        return f"cuts a data: line after {pending} bytes{where}"
    if cut == "line":
        return f"cuts a field line after {pending} bytes"
    if cut == "event":
        return "ends between the lines of one event"
    return "ends on an event boundary"


def _delta_line(r: DeltaTrace) -> str:
    d = r.delta
    head = type(d).__name__
    if r.key is not None:
        head += f" {_key(r.key)} → " + (f"#{r.content_index}" if r.content_index is not None
                                         else "(no block)")  # fmt: skip
    fields = []
    for name in d.__struct_fields__:
        if name == "key":
            continue
        value = getattr(d, name)
        if value is None or value == "" or value is False:
            continue
        fields.append(f"{name}={value!r}")
    return trim(head + ("  " + " ".join(fields) if fields else ""))


def _event_line(r: EventTrace) -> str:
    ev: Any = r.event
    t: str = ev.type
    if t == "start":
        return t
    if t in ("done", "error"):
        err = ev.message.error
        return f"{t:<16}reason={ev.reason}" + (f" [{err.kind}]" if err is not None else "")
    head = f"{t:<16}#{ev.content_index}"
    if t.endswith("_delta"):
        return trim(f"{head}  {ev.delta!r}")
    if t == "tool_call_start":
        call = ev.partial.content[ev.content_index]
        return f"{head}  {call.name} (id {call.id})"
    if t == "tool_call_end":
        c = ev.tool_call
        return trim(f"{head}  {c.name} (id {c.id}) arguments={_json(c.arguments)}")
    if t in ("text_end", "thinking_end"):
        c = ev.content
        return trim(f"{head}  {(c.text if t == 'text_end' else c.thinking)!r}")
    if t == "block":
        return trim(f"{head}  {_block_summary(ev.content, 90)}")
    if t == "citation":
        c = ev.citation
        return trim(f"{head}  {c.kind} {c.title or ''} <{c.url or c.document or ''}>")
    return head


def _eof_line(r: EndTrace) -> str:
    where = _cut_text(r.cut, None, None, r.pending)
    if r.cut is not None:
        where = "ends mid-event: " + where
    return f"body complete: {r.size} bytes in {r.reads} read{'s' if r.reads != 1 else ''} · {where}"


def _error_lines(r: ErrorTrace) -> list[str]:
    status = f" HTTP {r.status}" if r.status is not None else ""
    lines = [trim(f"[{r.kind}] at the {r.at} layer{status}, after {r.offset} bytes: {r.message}",
                  400)]  # fmt: skip
    if r.payload is not None:
        lines.append(trim_middle(f"payload: {r.payload}"))
    return lines


def _message_lines(r: MessageTrace) -> list[str]:
    m = r.message
    head = f"stop_reason: {m.stop_reason}"
    if m.provider_stop_reason:
        head += f" (provider: {m.provider_stop_reason})"
    if m.error is not None:
        head += f" · error [{m.error.kind}]"
    lines = [head]
    for i, b in enumerate(m.content):
        if isinstance(b, ToolCall):
            note = " (a length finish: never trusted)" if m.stop_reason == "length" else ""
            lines.append(trim(f"[{i}] tool_call {b.name} (id {b.id}) raw_arguments="
                              f"{b.raw_arguments!r} arguments={_json(b.arguments)}{note}"))  # fmt: skip
        else:
            lines.append(f"[{i}] {_block_summary(b, 120)}")
    u = m.usage
    lines.append(f"usage: {u.input} in · {u.output} out · {u.total_tokens} total")
    return lines


def describe(record: TraceRecord) -> list[str]:
    """A record as text: the first line and its continuation lines."""
    if isinstance(record, ContextTrace):
        return _context_lines(record)
    if isinstance(record, RequestTrace):
        return _request_lines(record)
    if isinstance(record, ResponseTrace):
        ctype = record.headers.get("content-type", "?")
        return [f"HTTP {record.status} · content-type: {ctype}"]
    if isinstance(record, ReadTrace):
        return [_read_line(record)]
    if isinstance(record, SSETrace):
        head = "" if record.event == "message" else f"event: {record.event} · "
        return [trim_middle(f"{head}data: {record.data}")]
    if isinstance(record, DeltaTrace):
        return [_delta_line(record)]
    if isinstance(record, EventTrace):
        return [_event_line(record)]
    if isinstance(record, EndTrace):
        return [_eof_line(record)]
    if isinstance(record, ErrorTrace):
        return _error_lines(record)
    if isinstance(record, MessageTrace):
        return _message_lines(record)
    if isinstance(record, RetryTrace):
        return [retry_text(record)]
    return [trim(_json(record.to_dict()))]


class TraceView:
    """Prints trace records as they arrive: aligned lines, or JSON lines."""

    def __init__(self, screen: Screen, *, as_json: bool) -> None:
        self.screen = screen
        self.as_json = as_json
        self.message: AssistantMessage | None = None
        self.closed = False

    def observer(self, call: int | None = None) -> Any:
        def observe(record: TraceRecord) -> None:
            self.show(record, call)

        return observe

    def show(self, record: TraceRecord, call: int | None = None) -> None:
        if isinstance(record, MessageTrace):
            self.message = record.message
        if self.closed:
            return
        try:
            self._show(record, call)
        except BrokenPipeError:
            # stdout closed early (``| head``): keep the call going, print nothing more.
            self.closed = True
            silence_stdout()

    def _show(self, record: TraceRecord, call: int | None) -> None:
        if self.as_json:
            data = record.to_dict()
            json_line({"call": call, **data} if call is not None else data)
            return
        self.item(record.id, record.parent, record.layer, describe(record))

    def item(self, id: str, parent: str | None, layer: str, lines: list[str]) -> None:
        arrow = f"← {parent}" if parent else ""
        head = f"{id:<{ID_WIDTH - 1}} {arrow:<{PARENT_WIDTH - 1}} "
        style = STYLES.get(layer)
        self.screen.line((head + lines[0]).rstrip(), style)
        for more in lines[1:]:
            self.screen.line(INDENT + more, style)

    def header(self, text: str) -> None:
        if not self.as_json:
            self.screen.line(f"── {text} " + "─" * max(4, 60 - len(text)), "dim")


# --------------------------------------------------------------------------- command


def _split_points(args: argparse.Namespace, size: int) -> list[int]:
    points: list[int] = []
    if args.split:
        try:
            points = [int(p) for p in args.split.split(",") if p.strip()]
        except ValueError:
            raise CLIError(
                "usage", f"--split takes byte offsets like 40,120, got {args.split!r}"
            ) from None
        bad = [p for p in points if not 0 < p < size]
        if bad:
            raise CLIError("usage", f"--split offsets must be between 1 and {size - 1} "
                           f"(FILE has {size} bytes), got {bad[0]}")  # fmt: skip
    if args.chunk_size is not None:
        if args.chunk_size < 1:
            raise CLIError("usage", "--chunk-size must be at least 1")
        points += range(args.chunk_size, size, args.chunk_size)
    return sorted(set(points))


def _pieces(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a] or [data]


def _is_live(args: argparse.Namespace) -> bool:
    """A live call: ``-m``, or the default model (``$MODELWIRE_MODEL``, ``model`` in
    config.toml) when nothing says FILE (``--api`` without ``--base-url``, an offline
    flag, or one argument that is a file)."""
    if args.model:
        return True
    offline = (
        (args.api is not None and not args.base_url) or args.loopback
        or any(getattr(args, f) for f in ("split", "chunk_size", "cut_after"))
        or (len(args.source) == 1 and Path(args.source[0]).is_file())
    )  # fmt: skip
    return not offline and bool(args.source) and default_model() is not None


def trace(args: argparse.Namespace) -> int:
    """``trace --api API FILE.sse`` (offline) or ``trace -m provider/model PROMPT`` (live)."""
    screen = Screen(plain=True if (args.plain or args.json) else None)
    view = TraceView(screen, as_json=args.json)
    if _is_live(args):
        offline_only = [f for f in ("split", "chunk_size", "cut_after") if getattr(args, f)]
        if args.loopback or offline_only:
            flag = "--loopback" if args.loopback else "--" + offline_only[0].replace("_", "-")
            raise CLIError("usage", f"{flag} is for tracing a FILE, not a live call with -m")
        prompt = " ".join(args.source).strip()
        if not prompt:
            raise CLIError("usage", "trace -m PROVIDER/MODEL needs a prompt")
        message = _live(args, view, prompt)
    else:
        if len(args.source) != 1:
            raise CLIError("usage", "trace takes one FILE.sse (or a prompt, with -m "
                           "PROVIDER/MODEL, $MODELWIRE_MODEL or model in config.toml)")  # fmt: skip
        if args.api is None:
            raise CLIError("usage", "trace FILE.sse needs --api (the wire API that produced it)")
        if args.cut_after is not None and not args.loopback:
            raise CLIError("usage", "--cut-after needs --loopback (a connection to cut)")
        path = args.source[0]
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise CLIError("file", f"cannot read {path!r}: {exc.strerror}") from None
        points = _split_points(args, len(data))
        if args.loopback:
            message = _loopback(args, view, path, data, points)
        else:
            from .._client._replay import replay

            n = len(points) + 1
            view.header(f"{path} · {args.api} · offline, {n} read{'s' if n != 1 else ''}")
            replay(args.api, _pieces(data, points), trace=view.observer())
            message = view.message
    if message is not None and message.error is not None:
        fail(message.error.kind, message.error.message)
    if message is None or message.stop_reason in ("error", "aborted"):
        return EXIT_FAILED
    return 0


def _run_call(model: Model, ctx: Context, view: TraceView, opts: dict[str, Any]) -> None:
    from .._client import stream

    async def go() -> None:
        s = stream(model, ctx, trace=view.observer(), **opts)
        async for _ in s:
            pass

    asyncio.run(go())


def _live(args: argparse.Namespace, view: TraceView, prompt: str) -> AssistantMessage | None:
    from ..types import Context

    model = resolve_model(args)
    ctx = Context(system_prompt=args.system, messages=(UserMessage(content=prompt),))
    view.header(f"{model.provider}/{model.id} · {model.api} · live")
    _run_call(model, ctx, view, request_options(args))
    return view.message


def _loopback(
    args: argparse.Namespace, view: TraceView, path: str, data: bytes, points: list[int]
) -> AssistantMessage | None:
    from ..testing import MockServer, Reply
    from ..types import Context

    if args.delay < 0:
        raise CLIError("usage", "--delay must be zero or positive", EXIT_CONFIG)
    reply = Reply(body=data, split_points=tuple(points), delay=args.delay,
                  cut_after=args.cut_after)  # fmt: skip
    with MockServer([reply]) as server:
        model = server.model(args.api, "replay")
        ctx = Context(messages=(UserMessage(content=f"(the server replays {Path(path).name})"),),
                      tools=_recorded_tools(args.api, data))  # fmt: skip
        view.header(f"{path} · {args.api} · served over loopback HTTP")
        _run_call(model, ctx, view, {"max_retries": 0})
    return view.message


def _recorded_tools(api: str, data: bytes) -> tuple[ToolDefinition, ...] | None:
    """A definition for every tool the recording calls: a real request declares the tools
    the model may call, and a call to an undeclared tool is a ``tool_call_protocol`` error."""
    from .._client._replay import replay
    from ..events import ToolCallEndEvent
    from ..types import ToolDefinition

    names: list[str] = []
    for ev in replay(api, data):
        if isinstance(ev, ToolCallEndEvent) and ev.tool_call.name not in names:
            names.append(ev.tool_call.name)
    if not names:
        return None
    return tuple(ToolDefinition(name=n, description="called by the recording",
                                 parameters={"type": "object"}) for n in names)  # fmt: skip


# --------------------------------------------------------------------------- demo


class DemoTracer:
    """``demo --trace``: a trace per model call, and the agent's tool results between them."""

    def __init__(self, view: TraceView) -> None:
        self.view = view
        self.calls = 0

    def stream_fn(self, model: Model, context: Context, **options: Any) -> Any:
        from .._client import stream

        self.calls += 1
        self.view.header(f"model call {self.calls}")
        return stream(model, context, trace=self.view.observer(self.calls), **options)

    def agent_event(self, ev: Any) -> None:
        if getattr(ev, "type", "") != "tool_execution_end":
            return
        call = getattr(ev, "tool_call", None)
        result = getattr(ev, "result", None)
        text = result.text if isinstance(result, ToolResultMessage) else str(result)
        is_error = bool(getattr(ev, "is_error", False))
        if self.view.as_json:
            json_line({"call": self.calls, "layer": "tool", "id": "tool",
                       "parent": "message", "tool_call_id": getattr(call, "id", None),
                       "name": getattr(call, "name", None), "is_error": is_error,
                       "result": text})  # fmt: skip
            return
        name = call.name if isinstance(call, ToolCall) else "tool"
        cid = call.id if isinstance(call, ToolCall) else "?"
        state = "failed" if is_error else "ran"
        self.view.item("tool", "message", "tool",
                       [f"{name} (id {cid}) {state} → {one_line(text, 110)}"])  # fmt: skip

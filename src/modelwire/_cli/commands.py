"""The CLI commands: each takes the parsed arguments and returns an exit code."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .._apis import DEFAULT_API
from .._redact import redact_url
from .common import (
    EXIT_CONFIG,
    EXIT_FAILED,
    CLIError,
    fail,
    is_loopback,
    note_retries,
    read_prompt,
    request_options,
    resolve_model,
)
from .output import (
    MUTED,
    TOOL,
    USER,
    EventPrinter,
    Screen,
    _isatty,
    format_usage,
    json_line,
    one_line,
    run_agent,
    to_plain,
)

if TYPE_CHECKING:
    import argparse

    from ..testing import RecordedRequest, Reply
    from ..types import AssistantMessage, Context, Model, ToolCall, ToolDefinition

__all__ = ["chat", "demo", "mock_server", "models", "replay", "run", "trace"]


def _screen(args: argparse.Namespace) -> Screen:
    return Screen(plain=True if (args.plain or args.json) else None)


def _exit_for(message: AssistantMessage | None) -> int:
    if message is None or message.stop_reason in ("error", "aborted"):
        return EXIT_FAILED
    return 0


def _report_failure(message: AssistantMessage | None, model: Model | None = None) -> None:
    if message is not None and message.error is not None:
        text = message.error.message
        if model is not None and message.error.kind == "connect":
            # Which server was tried (e.g. ollama's 127.0.0.1:11434), unless already said.
            from urllib.parse import urlsplit

            where = urlsplit(model.base_url).netloc.rpartition("@")[2]
            if where and where not in text:
                text += f" (tried {redact_url(model.base_url)})"
        fail(message.error.kind, text)


# --------------------------------------------------------------------------- demo


def demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)


# --------------------------------------------------------------------------- chat


async def _stream_answer(
    model: Model,
    ctx: Context,
    opts: dict[str, Any],
    printer: EventPrinter,
    as_json: bool,
    *,
    show_stream: bool = True,
) -> AssistantMessage:
    """One answer, rendered live (or, ``show_stream=False``, once complete).

    Ctrl-C cancels this task (``asyncio.run`` turns SIGINT into a cancellation): the
    stream is aborted and still ends with its terminal ``error(aborted)`` event, which
    carries the partial message — in ``--json`` it is the last line.
    """
    from .._client import stream

    printer.screen.spinner("waiting for the model…")
    s = stream(model, ctx, **opts)

    def show(ev: Any) -> None:
        if as_json:
            # --no-stream --json: the terminal event and the message, nothing before.
            if show_stream or ev.type in ("done", "error"):
                json_line(to_plain(ev))
        elif show_stream:
            printer.model_event(ev)

    aborted = False
    try:
        try:
            async for ev in s:
                show(ev)
        except asyncio.CancelledError:
            aborted = True
            s.abort()
            async for ev in s:  # the terminal error(aborted), partial message inside
                show(ev)
    finally:
        printer.screen.stop_spinner()
    message = await s.result()
    if as_json:
        if not aborted:
            json_line(msgspec.to_builtins(message))
        printer.message_done(message, show=False)
    elif not show_stream:
        if message.text:
            printer.screen.line(message.text)
        printer.message_done(message)
    if aborted:
        printer.screen.newline()
        raise _Interrupted(message)
    return message


class _Interrupted(Exception):
    def __init__(self, message: AssistantMessage) -> None:
        super().__init__("interrupted")
        self.message = message


def _history_path() -> Path:
    from .common import data_dir

    return data_dir() / "last-chat.json"


def _load_history(args: argparse.Namespace) -> tuple[Model | None, Context | None]:
    from ..types import Context, Model, from_json

    path = _history_path()
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        model = from_json(json.dumps(saved["model"]), Model)
        ctx = from_json(json.dumps(saved["context"]), Context)
    except FileNotFoundError:
        raise CLIError("not_found", f"no conversation to continue: {path} does not exist "
                       "(chat once without -c first)") from None  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CLIError("configuration", f"cannot continue from {path}: {exc}; delete it "
                       "to start afresh") from None  # fmt: skip
    return model, ctx


def _save_history(model: Model, ctx: Context) -> None:
    from ..types import to_json

    path = _history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"model": json.loads(to_json(model)), "context": json.loads(to_json(ctx))}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        fail("history", f"could not save the conversation to {path}: {exc.strerror}")


def _script_tools(replies: list[Reply]) -> tuple[ToolDefinition, ...] | None:
    """A definition for every tool a script calls: a real request declares the tools the
    model may call, and a call to an undeclared one is a ``tool_call_protocol`` error."""
    from ..types import AssistantMessage, ToolCall, ToolDefinition

    names: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, ToolCall) and item.name not in names:
            names.append(item.name)
        elif isinstance(item, AssistantMessage):
            walk(item.content)
        elif isinstance(item, list | tuple):
            for x in item:
                walk(x)

    for reply in replies:
        walk(reply.message)
    if not names:
        return None
    return tuple(ToolDefinition(name=n, description="called by the script",
                                parameters={"type": "object"}) for n in names)  # fmt: skip


def chat(args: argparse.Namespace) -> int:
    """``chat -m provider/model [prompt]``: one answer, or interactive without a prompt."""
    if args.script is None:
        return _chat(args, None)
    from ..testing import MockServer, load_script
    from ..types import Context

    if args.base_url or args.cont:
        raise CLIError("usage", "--script plays its own server: it takes no --base-url or -c")
    replies = load_script(args.script)
    with MockServer(replies) as server:
        spec = (args.model or "mock/mock-model").partition("/")
        model = server.model(args.api or DEFAULT_API, spec[2] or spec[0])
        ctx = Context(system_prompt=args.system, tools=_script_tools(replies))
        return _chat(args, (model, ctx))


def _chat(args: argparse.Namespace, scripted: tuple[Model, Context] | None) -> int:
    from ..types import Context, UserMessage

    ctx = Context(system_prompt=args.system)
    if scripted is not None:
        model, ctx = scripted
    elif args.cont:
        saved_model, saved_ctx = _load_history(args)
        ctx = saved_ctx or ctx
        if args.system:
            ctx = msgspec.structs.replace(ctx, system_prompt=args.system)
        if args.model is None and args.base_url is None and saved_model is not None:
            model = saved_model
            from .._options import resolve_api_key

            resolve_api_key(model.provider, args.key)
        else:
            model = resolve_model(args)
    else:
        model = resolve_model(args)
    opts = note_retries(request_options(args))
    screen = _screen(args)
    notes = Screen(plain=True if (args.plain or args.json) else None, out=sys.stderr)
    printer = EventPrinter(screen)
    interactive = args.interactive or (not args.prompt and _isatty(sys.stdin))
    prompt = "" if interactive else read_prompt(args.prompt, stdin_is_prompt=not _isatty(sys.stdin))

    def answer(ctx: Context) -> AssistantMessage:
        try:
            return asyncio.run(_stream_answer(model, ctx, opts, printer, args.json,
                                              show_stream=not args.no_stream))  # fmt: skip
        except _Interrupted as exc:
            save(ctx.with_messages(exc.message))
            raise KeyboardInterrupt from None

    def save(ctx: Context) -> None:
        if scripted is None:  # a scripted server is gone once chat ends: nothing to continue
            _save_history(model, ctx)

    if not interactive:
        if not prompt:
            raise CLIError("usage", "no prompt: give it as an argument or on stdin ('-'), or "
                           "run chat in a terminal (or with -i) to chat line by line")  # fmt: skip
        ctx = ctx.with_messages(UserMessage(content=prompt))
        message = answer(ctx)
        save(ctx.with_messages(message))
        if args.usage:
            notes.line(format_usage(printer.usage), MUTED)
        _report_failure(message, model)
        return _exit_for(message)
    if not args.json:
        notes.line(f"chatting with {model.provider}/{model.id} — an empty line or Ctrl-D ends",
                   MUTED)  # fmt: skip
    last: AssistantMessage | None = None
    while True:
        try:
            text = input("" if args.json else "you › ")
        except (EOFError, KeyboardInterrupt) as exc:
            # The cursor is still after the prompt (and ^C or ^D): end that line first.
            if _isatty(sys.stdin):
                sys.stdout.write("\n")
                sys.stdout.flush()
            if isinstance(exc, KeyboardInterrupt):
                raise
            break
        text = text.strip()
        if not text or text in ("/exit", "/quit"):
            break
        ctx = ctx.with_messages(UserMessage(content=text))
        last = answer(ctx)
        ctx = ctx.with_messages(last)
        save(ctx)
        if last.error is not None:
            _report_failure(last, model)
    if args.usage and printer.responses:
        notes.line(format_usage(printer.usage, turns=printer.responses), MUTED)
    return 0 if last is None else _exit_for(last)


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    """``run -m provider/model --root DIR TASK``: the agent with read-only tools."""
    model = resolve_model(args)
    root = Path(args.root)
    if not is_loopback(model.base_url) and not args.allow_paid_api:
        raise CLIError(
            "paid_api_not_allowed",
            f"run sends the contents of files under {str(root)!r} to {redact_url(model.base_url)}, "
            "a remote API that may bill you; pass --allow-paid-api to allow it",
        )
    if not root.is_dir():
        raise CLIError("configuration", f"--root {args.root!r} is not a directory")
    screen = _screen(args)
    task = read_prompt(args.task, stdin_is_prompt=not _isatty(sys.stdin))
    if not task:
        raise CLIError("usage", "no task: give it as arguments or on stdin ('-')")
    from ..agent import Agent
    from ..tools import read_only

    # The live paid mode retries nothing unless asked (--max-retries): a repeated
    # paid call is the caller's decision.
    opts = note_retries({"max_retries": 0, **request_options(args)})
    agent = Agent(model, tools=read_only(root=root), system_prompt=args.system, **opts)
    printer = EventPrinter(screen)
    if not args.json:
        screen.line(f"you › {task}", USER)
    asyncio.run(run_agent(agent, task, printer, args.json))
    if args.usage:
        notes = Screen(plain=True if (args.plain or args.json) else None, out=sys.stderr)
        notes.line(format_usage(printer.usage, turns=printer.responses), MUTED)
    _report_failure(printer.failed, model)
    return _exit_for(printer.final)


# --------------------------------------------------------------------------- replay


def replay(args: argparse.Namespace) -> int:
    """``replay --api API FILE``: decode a recorded body, print the events."""
    from .._pipeline import replay as do_replay

    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        raise CLIError("file", f"cannot read {args.file!r}: {exc.strerror}") from None
    events = do_replay(args.api, data)
    terminal = events[-1]
    message: AssistantMessage = terminal.message  # type: ignore[union-attr]
    if args.json:
        for ev in events:
            json_line(to_plain(ev))
        json_line(msgspec.to_builtins(message))
    else:
        screen = _screen(args)
        for ev in events:
            screen.line(_event_line(ev), _event_style(ev.type))
        _summary(screen, message)
    _report_failure(message)
    return _exit_for(message)


def _event_line(ev: Any) -> str:
    t: str = ev.type
    head = f"{t:<16}"
    if t in ("start",):
        return t
    idx = f"#{ev.content_index}" if hasattr(ev, "content_index") else ""
    if t.endswith("_delta"):
        return f"{head}{idx}  {ev.delta!r}"
    if t in ("text_end", "thinking_end"):
        c = ev.content
        body = c.text if t == "text_end" else c.thinking
        return f"{head}{idx}  {one_line(body, 80)!r}"
    if t == "tool_call_start":
        call: ToolCall = ev.partial.content[ev.content_index]
        return f"{head}{idx}  {call.name} (id {call.id})"
    if t == "tool_call_end":
        call = ev.tool_call
        return f"{head}{idx}  {call.name} {one_line(call.raw_arguments or '', 120)}"
    if t == "done":
        return f"{head}reason={ev.reason}"
    if t == "error":
        err = ev.message.error
        kind = err.kind if err else ev.reason
        return f"{head}reason={ev.reason} [{kind}] {one_line(err.message if err else '', 200)}"
    return t


def _event_style(t: str) -> str | None:
    if t.startswith("thinking"):
        return "dim italic"
    if t.startswith("tool_call"):
        return TOOL
    if t == "error":
        return "bold red"
    if t == "done":
        return "bold green"
    return None


def _summary(screen: Screen, message: AssistantMessage) -> None:
    screen.line("── final message " + "─" * 40, MUTED)
    reason: str = message.stop_reason or "?"
    if message.provider_stop_reason:
        reason += f" (provider: {message.provider_stop_reason})"
    screen.line(f"stop_reason: {reason}")
    if message.response_id:
        screen.line(f"response_id: {message.response_id}")
    from ..types import TextContent, ThinkingContent, ToolCall

    for i, b in enumerate(message.content):
        if isinstance(b, TextContent):
            screen.line(f"[{i}] text: {one_line(b.text, 300)}")
        elif isinstance(b, ThinkingContent):
            kind = "redacted thinking" if b.redacted else "thinking"
            screen.line(f"[{i}] {kind}: {one_line(b.thinking, 300)}", "dim italic")
        elif isinstance(b, ToolCall):
            args = one_line(b.raw_arguments or "", 300)
            screen.line(f"[{i}] tool call {b.name} (id {b.id}): {args}", TOOL)
    screen.line(format_usage(message.usage), MUTED)


# --------------------------------------------------------------------------- trace


def trace(args: argparse.Namespace) -> int:
    from .trace_view import trace as run_trace

    return run_trace(args)


# --------------------------------------------------------------------------- mock-server


def _last_user_text(rec: RecordedRequest) -> str:
    """The last user message's text in a request (messages, input or contents)."""
    try:
        body = rec.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    items = body.get("messages") or body.get("input") or body.get("contents") or []
    if isinstance(items, str):
        return items
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or item.get("role") not in ("user", None):
            continue
        content = item.get("content", item.get("parts"))
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict)]
            joined = "".join(t for t in texts if isinstance(t, str))
            if joined:
                return joined
    return ""


def _reply_note(reply: Reply) -> str:
    """The error message of a JSON error reply (e.g. "MockServer has no reply left")."""
    if reply.status < 400 or not reply.body:
        return ""
    try:
        err = json.loads(reply.body).get("error", {})
    except (ValueError, AttributeError):
        return ""
    message = err.get("message") if isinstance(err, dict) else err
    return one_line(message, 200) if isinstance(message, str) else ""


def mock_server(args: argparse.Namespace) -> int:
    """``mock-server``: serve a script (or echo) until Ctrl-C / SIGTERM."""
    from .._apis import builtin_api_names, get_api
    from ..testing import MockServer, load_script

    apis = builtin_api_names()

    screen = _screen(args)
    lock = threading.Lock()
    answered: list[tuple[bytes, int]] = []  # (body, status) of every request so far

    def log(rec: RecordedRequest, reply: Reply) -> None:
        # Every request, answered or not ("no reply left"), with its status; a request
        # repeating the body of one answered 429/5xx is the client's retry.
        with lock:
            retry = bool(answered) and answered[-1][0] == rec.body and (
                answered[-1][1] == 429 or answered[-1][1] >= 500)  # fmt: skip
            answered.append((rec.body, reply.status))
            n = len(answered)
        note = _reply_note(reply)
        if args.json:
            json_line({"event": "request", "n": n, "method": rec.method, "path": rec.path,
                       "api": rec.api, "model": rec.model, "status": reply.status,
                       "retry": retry, **({"note": note} if note else {})})  # fmt: skip
        else:
            extra = (" · retry" if retry else "") + (f" · {note}" if note else "")
            screen.line(f"#{n} {rec.method} {rec.path} ({rec.api or 'unknown api'}, "
                        f"model {rec.model or '?'}) → {reply.status}{extra}", MUTED)  # fmt: skip

    if args.script:
        replies: list[Any] = list(load_script(args.script))
        source = f"{len(replies)} replies from {args.script}"
        repeat = args.repeat_last
    else:
        replies = [lambda rec: f"echo: {_last_user_text(rec) or '(no user text)'}"]
        source = "echo (no --script): each reply repeats the last user message"
        repeat = True
    server = MockServer(replies, repeat_last=repeat, host=args.host, port=args.port,
                        on_request=log)  # fmt: skip
    try:
        server.start()
    except OSError as exc:
        raise CLIError("connect", f"cannot listen on {args.host}:{args.port}: {exc.strerror}",
                       EXIT_CONFIG) from None  # fmt: skip
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        bases = {api: server.model(api).base_url for api in apis}
        if args.json:
            json_line({"event": "listening", "host": args.host, "port": server.port,
                       "origin": server.origin, "base_urls": bases, "replies": source})  # fmt: skip
        else:
            screen.line(f"modelwire mock-server listening on {server.origin}", "bold")
            for api in apis:
                endpoint = get_api(api).path("MODEL").split("?", 1)[0]
                screen.line(f"  {api:<22} base_url {bases[api]:<32} POST …{endpoint}")
            screen.line(f"replies: {source}", MUTED)
            screen.line("Ctrl-C to stop", MUTED)
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass  # Ctrl-C is how it stops, whenever it comes
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.stop()
    return 0


# --------------------------------------------------------------------------- models


def models(args: argparse.Namespace) -> int:
    """``models [provider]``: the catalog as a table."""
    from .. import _catalog as catalog

    entries = list(catalog.models(args.provider))
    if not entries:
        what = f"provider {args.provider!r}" if args.provider else "the catalog"
        raise CLIError("not_found", f"no models for {what}", EXIT_FAILED)
    if args.json:
        for m in entries:
            json_line(msgspec.to_builtins(m))
        return 0
    rows = [
        [m.provider, m.id, m.api, f"{m.context_window:,}", f"{m.max_tokens:,}",
         _price(m.cost.input), _price(m.cost.output), "yes" if m.reasoning else ""]
        for m in entries
    ]  # fmt: skip
    _screen(args).table(
        ["provider", "model", "api", "context", "max out", "$/M in", "$/M out", "reasoning"], rows
    )
    return 0


def _price(value: float) -> str:
    return f"{value:g}" if value else "-"

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

from .._redact import redact_url
from ..types import AssistantMessage
from .common import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    CLIError,
    is_loopback,
    log_path,
    logging_enabled,
    note_retries,
    read_prompt,
    request_options,
    resolve_model,
)
from .common import (
    exit_for as _exit_for,
)
from .common import (
    report_failure as _report_failure,
)
from .output import (
    MUTED,
    TOOL,
    USER,
    EventPrinter,
    Screen,
    _isatty,
    end_lines,
    format_usage,
    json_line,
    one_line,
    run_agent,
    to_plain,
)
from .runs import Record, new_run_id, record, runs_path

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from ..agent import AgentState
    from ..testing import RecordedRequest, Reply
    from ..types import Message, Model, ToolCall
    from .functions import Toolset
    from .inputs import Inputs

__all__ = ["chat", "demo", "mock_server", "models", "replay", "run", "trace"]


def _screen(args: argparse.Namespace) -> Screen:
    return Screen(plain=True if (args.plain or args.json) else None)


# --------------------------------------------------------------------------- demo


def demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(args)


# --------------------------------------------------------------------------- chat


def chat(args: argparse.Namespace) -> int:
    from .chat import chat as run_chat

    return run_chat(args)


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    """``run -m provider/model --root DIR TASK``: the agent with read-only tools;
    ``run --resume [ID]``: a stopped run goes on (:mod:`.runs`)."""
    resumed = _resumed(args) if args.resume is not None else None
    if args.root is None:
        args.root = "."
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
    from .schema import schema_of

    schema = schema_of(args)
    if schema is not None:  # stdout is the value alone; the run shows on stderr
        screen = Screen(plain=True if args.plain else None, out=sys.stderr)
    from .inputs import read_inputs

    inputs = read_inputs(args, args.task)  # -f / -a / --at
    model = inputs.fit(model)
    if resumed is not None:
        task = resumed.task
    else:
        stdin_is_prompt = not _isatty(sys.stdin) and not inputs.stdin_used
        task = read_prompt(args.task, stdin_is_prompt=stdin_is_prompt)
        if not task and not inputs:
            raise CLIError("usage", "no task: give it as arguments or on stdin ('-')")
    from .functions import toolset

    tools = toolset(args, keep_builtins=True)  # read, ls, grep, any --functions and --mcp
    assert tools is not None
    try:
        return _run_agent(args, model, tools, schema, inputs, task, screen, resumed)
    finally:
        tools.close()  # the --mcp servers


def _resumed(args: argparse.Namespace) -> Record:
    """The run ``--resume [ID]`` names, its model and ``--root`` filled into ``args``."""
    from .runs import find

    if args.task:
        raise CLIError("usage", "--resume continues a run where it stopped and takes no task; "
                       "start a new run for a new task")  # fmt: skip
    if not logging_enabled(args):
        raise CLIError("usage", "--resume continues a run kept beside the log, which --no-log "
                       "(or log = false in config.toml) turns off")  # fmt: skip
    record = find(args.resume)
    record.apply(args)
    return record


def _run_agent(
    args: argparse.Namespace,
    model: Model,
    tools: Toolset,
    schema: dict[str, Any] | None,
    inputs: Inputs,
    task: str,
    screen: Screen,
    resumed: Record | None,
) -> int:
    from ..agent import Agent, Approve

    # The live paid mode retries nothing unless asked (--max-retries): a repeated
    # paid call is the caller's decision.
    opts = note_retries({"max_retries": 0, **request_options(args)})
    if schema is not None:
        opts["output"] = schema
    if logging_enabled(args):
        from .._client._log import recorder
        from .chat import chain, log_failed

        # One observer for the run: its model calls are made one after another, each
        # recorded as a row of one conversation.
        opts["trace"] = chain(opts["trace"], recorder(log_path(), model, on_error=log_failed,
                                                      schema=schema, **inputs.log_args()))  # fmt: skip
    key = opts.pop("api_key", None)  # the Agent takes the key itself, not as an option
    # The ledger beside the log: each call recorded before it runs and after, the run's
    # state at each turn, so that --resume goes on without running a call twice.
    kept = logging_enabled(args)
    store = runs_path() if kept else None
    if store is not None:
        store.parent.mkdir(parents=True, exist_ok=True)
    agent = Agent(model, tools=tools.tools, system_prompt=args.system, api_key=key,
                  before_tool_call=tools.before, store=store, **opts)  # fmt: skip
    printer = EventPrinter(screen)
    observed = tools.observe(agent)
    if resumed is not None:
        run_id = resumed.run_id
        state = _state_to_resume(run_id)
        # A paused call is approved here, so that --ta or the question decides it.
        events = observed.resume_stream(state, {p.id: Approve() for p in state.pending})
        if not args.json:
            screen.line(f"run {run_id} › {task}", USER)
    else:
        run_id = new_run_id()
        if kept:
            record(args, run_id, Path(args.root), task)
        events = observed.stream(inputs.message(task), run_id=run_id)
        if not args.json:
            screen.line(f"you › {task}", USER)
    as_json = args.json and schema is None
    try:
        asyncio.run(run_agent(events, printer, as_json))
    except KeyboardInterrupt:
        if not kept:
            raise
        end_lines()
        raise CLIError("interrupted", f"stopped by Ctrl-C; {_resume_hint(run_id)}",
                       EXIT_INTERRUPTED) from None  # fmt: skip
    if schema is not None and printer.final is not None and _exit_for(printer.final) == 0:
        from .schema import print_value

        print_value(printer.final.parsed, one_line=args.json or not _isatty(sys.stdout))
    if args.usage:
        notes = Screen(plain=True if (args.plain or args.json) else None, out=sys.stderr)
        notes.line(format_usage(printer.usage, turns=printer.responses), MUTED)
    hint = _resume_hint(run_id) if kept and not _finished(agent.messages) else ""
    if not _report_failure(printer.failed, model, then=hint) and hint:
        end_lines()  # e.g. the turn limit: no error, and no answer yet
        sys.stderr.write(f"modelwire: run {run_id} stopped before its answer; {hint}\n")
    return _exit_for(printer.final)


def _resume_hint(run_id: str) -> str:
    return f"continue it with: modelwire run --resume {run_id}"


def _finished(messages: Sequence[Message]) -> bool:
    """The run ended with its answer: a last response that stopped by itself."""
    last = messages[-1] if messages else None
    return isinstance(last, AssistantMessage) and last.stop_reason == "stop" and not last.error


def _state_to_resume(run_id: str) -> AgentState:
    """The stored state of ``run_id``, if there is anything left to do in it."""
    from ..agent import AgentState
    from ..errors import ConfigurationError

    try:
        state = AgentState.load(runs_path(), run_id)
    except ConfigurationError:
        raise CLIError("usage", f"run {run_id} stopped before its first model response: "
                       "nothing was done in it; start it again") from None  # fmt: skip
    if not state.pending and _finished(state.messages):
        raise CLIError("usage", f"run {run_id} finished with its answer: nothing to continue")
    return state


# --------------------------------------------------------------------------- replay


def replay(args: argparse.Namespace) -> int:
    """``replay --api API FILE``: decode a recorded body, print the events."""
    from .._client._replay import replay as do_replay

    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        raise CLIError("file", f"cannot read {args.file!r}: {exc.strerror}") from None
    api = args.api or _detect_api(args.file, data)
    events = do_replay(api, data)
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


def _detect_api(name: str, data: bytes) -> str:
    """The wire API whose body ``data`` plainly is (``--api`` omitted)."""
    from .._apis import builtin_api_names
    from .._apis._sniff import looks_like
    from .._wire.pipeline import SNIFF_BYTES

    api = looks_like(data[:SNIFF_BYTES])
    if api is None:
        raise CLIError("usage", f"cannot tell which wire API wrote {name!r}: pass --api "
                       f"(one of {', '.join(builtin_api_names())})")  # fmt: skip
    return api


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

"""``modelwire chat``: one answer, or a conversation in the terminal (the REPL).

Every answer is recorded in the call log (:mod:`modelwire._client._log`) unless ``--no-log``
or ``log = false`` in ``config.toml``; ``-c`` continues the newest conversation in
it and ``--cid ID`` any other. Ctrl-C while an answer streams stops only that
answer: its partial text stays in the conversation (logged as an aborted turn) and
the next prompt follows it.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

import msgspec

from .._apis import DEFAULT_API
from .common import (
    CLIError,
    config,
    exit_for,
    fail,
    log_path,
    logging_enabled,
    note_retries,
    read_prompt,
    report_failure,
    request_options,
    resolve_model,
)
from .exits import Interrupted
from .output import MUTED, EventPrinter, Screen, _isatty, format_usage, json_line, to_plain

if TYPE_CHECKING:
    import argparse

    from ..testing import Reply
    from ..types import AssistantMessage, Context, Message, Model, ToolDefinition
    from .functions import Toolset

__all__ = ["chain", "chat", "log_failed", "settle"]


async def _stream_answer(
    model: Model,
    ctx: Context,
    opts: dict[str, Any],
    printer: EventPrinter,
    as_json: bool,
    *,
    show_stream: bool = True,
    structured: bool = False,
) -> AssistantMessage:
    """One answer, rendered live (or, ``show_stream=False``, once complete; or,
    ``structured``, only its validated value: :mod:`.schema`).

    Ctrl-C cancels this task (``asyncio.run`` turns SIGINT into a cancellation): the
    stream is aborted and still ends with its terminal ``error(aborted)`` event, which
    carries the partial message — in ``--json`` it is the last line.
    """
    from .._client import stream

    printer.screen.spinner("waiting for the model…")
    s = stream(model, ctx, **opts)

    def show(ev: Any) -> None:
        if structured:
            return  # the value alone, once validated
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
    if structured:
        printer.message_done(message, show=False)
        if message.stop_reason not in ("error", "aborted"):
            from .schema import print_value

            print_value(message.parsed, one_line=as_json or not _isatty(sys.stdout))
    elif as_json:
        if not aborted:
            json_line(msgspec.to_builtins(message))
        printer.message_done(message, show=False)
    elif not show_stream:
        if message.text:
            printer.screen.line(message.text)
        printer.message_done(message)
    if aborted:
        printer.screen.newline()
        raise Interrupted(message)
    return message


def settle(ctx: Context) -> Context:
    """The conversation as the next turn sends it: a turn that failed or was stopped
    keeps its partial text as a finished assistant turn (the model sees what the user
    saw); one with no text is dropped with the question it answered. Otherwise the
    next question would follow the last one directly, which providers refuse or
    misread (a failed turn is never replayed: :mod:`modelwire._client._handoffs`)."""
    from ..types import AssistantMessage, TextContent, UserMessage

    out: list[Message] = []
    changed = False
    for m in ctx.messages:
        if isinstance(m, AssistantMessage) and m.stop_reason in ("error", "aborted"):
            changed = True
            text = tuple(b for b in m.content if isinstance(b, TextContent) and b.text)
            if text:
                out.append(msgspec.structs.replace(m, content=text, stop_reason="stop",
                                                   error=None))  # fmt: skip
            elif out and isinstance(out[-1], UserMessage):
                out.pop()
            continue
        out.append(m)
    return msgspec.structs.replace(ctx, messages=tuple(out)) if changed else ctx


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

    if args.base_url or args.cont or args.cid:
        raise CLIError("usage", "--script plays its own server: it takes no --base-url, -c "
                       "or --cid")  # fmt: skip
    replies = load_script(args.script)
    with MockServer(replies) as server:
        spec = (args.model or "mock/mock-model").partition("/")
        model = server.model(args.api or DEFAULT_API, spec[2] or spec[0])
        from .settings import apply_config

        apply_config(args, model, config())
        ctx = Context(system_prompt=args.system, tools=_script_tools(replies))
        return _chat(args, (model, ctx))


def _continued(args: argparse.Namespace) -> tuple[str, Model, Context]:
    """``-c`` / ``--cid ID``: the conversation id, model and context from the log."""
    from .._client._log import CallLog

    path = log_path()
    log = CallLog(path)
    cid = args.cid
    if cid is None:
        cid = log.last_conversation() if path.exists() else None
        if cid is None:
            raise CLIError("not_found", f"no conversation to continue: the log {path} is "
                           "empty (chat once without -c first)")  # fmt: skip
    if args.cid is not None and path.exists():
        from .logs import resolve_cid

        cid = resolve_cid(log, args.cid)
    found = log.conversation(cid) if path.exists() else None
    if found is None:
        raise CLIError("not_found", f"no conversation {cid!r} in the log {path} (see: "
                       "modelwire logs)")  # fmt: skip
    saved_model, ctx = found
    if args.system:
        ctx = msgspec.structs.replace(ctx, system_prompt=args.system)
    if args.model is None and args.base_url is None:
        from .._client._options import resolve_api_key
        from .common import config_dir
        from .store import export_keys

        export_keys(config_dir())  # after the environment, as resolve_model does
        resolve_api_key(saved_model.provider, args.key)
        from .settings import apply_config

        apply_config(args, saved_model, config())  # after the system check: the saved one stays
        return cid, saved_model, ctx
    return cid, resolve_model(args), ctx


def _chat(args: argparse.Namespace, scripted: tuple[Model, Context] | None) -> int:
    from .functions import toolset
    from .schema import schema_of

    schema = schema_of(args)
    tools = toolset(args)  # --functions / -T / --mcp: each turn runs the agent with them
    try:
        return _converse(args, scripted, schema, tools)
    finally:
        if tools is not None:
            tools.close()  # the --mcp servers, kept for every turn until now


def _converse(
    args: argparse.Namespace,
    scripted: tuple[Model, Context] | None,
    schema: dict[str, Any] | None,
    tools: Toolset | None,
) -> int:
    from .._client._log import new_conversation_id
    from ..types import Context

    cid = new_conversation_id()
    if scripted is not None:
        model, ctx = scripted
    elif args.cont or args.cid:
        cid, model, ctx = _continued(args)
    else:
        model = resolve_model(args)
        ctx = Context(system_prompt=args.system)  # config.toml's, unless --system
    from .inputs import read_inputs

    interactive = args.interactive or (not args.prompt and _isatty(sys.stdin))
    inputs = read_inputs(args, args.prompt, repl=interactive)  # -f / -a / --at
    model = inputs.fit(model, ctx)
    opts = note_retries(request_options(args))
    if schema is not None:
        opts["output"] = schema
    # A scripted server is gone once chat ends: nothing to log or continue.
    logging = scripted is None and logging_enabled(args)
    screen = Screen(plain=True if (args.plain or args.json) else None)
    notes = Screen(plain=True if (args.plain or args.json) else None, out=sys.stderr)
    printer = EventPrinter(screen)
    stdin_is_prompt = not _isatty(sys.stdin) and not inputs.stdin_used
    prompt = "" if interactive else read_prompt(args.prompt, stdin_is_prompt=stdin_is_prompt)
    # The REPL's first message carries the fragments and attachments too.
    state: dict[str, Any] = {"model": model, "message": inputs.message}

    def answer(ctx: Context) -> AssistantMessage:
        call_opts = dict(opts)
        if logging:
            from .._client._log import recorder

            record = recorder(log_path(), state["model"], cid, on_error=log_failed,
                              schema=schema, **inputs.log_args())  # fmt: skip
            call_opts["trace"] = chain(opts.get("trace"), record)
        if tools is not None:
            return tools.answer(
                state["model"], settle(ctx), call_opts, printer, args, structured=schema is not None
            )
        return asyncio.run(_stream_answer(state["model"], settle(ctx), call_opts, printer,
                                          args.json, show_stream=not args.no_stream,
                                          structured=schema is not None))  # fmt: skip

    if not interactive:
        if not prompt and not inputs:
            raise CLIError("usage", "no prompt: give it as an argument or on stdin ('-'), or "
                           "run chat in a terminal (or with -i) to chat line by line")  # fmt: skip
        ctx = ctx.with_messages(inputs.message(prompt))
        try:
            message = answer(ctx)
        except Interrupted:
            raise KeyboardInterrupt from None
        if args.usage:
            notes.line(format_usage(printer.usage), MUTED)
        report_failure(message, state["model"])
        return exit_for(message)
    from .repl import run_repl

    return run_repl(args, ctx, state, answer, printer, notes, Interrupted)


def chain(first: Any, second: Any) -> Any:
    """One trace observer calling ``first`` (when there is one), then ``second``."""
    if first is None:
        return second

    def observe(record: Any) -> None:
        first(record)
        second(record)

    return observe


def log_failed(exc: Exception) -> None:
    """Report a call that could not be recorded; the command goes on."""
    # The answer matters more than its record: say so once and go on.
    fail("log", f"could not record the call in {log_path()}: {exc} (--no-log turns the "
         "log off)")  # fmt: skip

"""One tool call: five separate judgements, each with its own error result.

1. the tool exists (``unknown_tool``);
2. the arguments are a JSON object valid against the tool's JSON Schema,
   Draft 2020-12 (``invalid_arguments``, listing each failing path);
3. ``before_tool_call`` allows it (``blocked``); with no hook, a call that needs
   approval (``Agent(approval=...)``, default the tool's ``approval`` flag) is not
   executed: the run pauses for a decision (:mod:`modelwire.agent._durable`), and
   a ``Deny`` answers it ``denied``;
4. the tool's own semantic checks pass (a :class:`ToolFailure` it raises, with
   its own kind: ``not_found``, ``too_large``…);
5. execution succeeds (``execution_failed``; ``timeout_unknown`` past the tool's
   time limit; ``aborted`` when the run is aborted meanwhile).

Before all five, a call id that was already answered in the conversation is not
executed again (``duplicate_call``): each id executes at most once.
"""

from __future__ import annotations

import copy
import inspect
import threading
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeAlias

from .._wire.assemble import parse_arguments
from ..tools import Tool, ToolContext, ToolFailure, ToolOutput
from ..types import Message, TextContent, ToolCall, ToolResultMessage
from ._intents import Intent, Invoke, InvokeAborted, InvokeTimedOut, Resolve

__all__ = [
    "AfterToolCall",
    "BeforeToolCall",
    "Prepared",
    "execute",
    "failure_result",
    "is_async_tool",
    "output_result",
    "prepare",
    "result_kind",
]

#: ``before_tool_call(call, args)``, sync or async: return ``None``/``True`` to
#: allow the call; ``False`` or a reason (``str``) to block it; or return/raise a
#: :class:`ToolFailure` to block it with that kind and text.
BeforeToolCall: TypeAlias = Callable[[ToolCall, dict[str, Any]], Any]
#: ``after_tool_call(call, result)``, sync or async: return a replacement
#: :class:`ToolResultMessage`, or ``None`` to keep ``result``.
AfterToolCall: TypeAlias = Callable[[ToolCall, ToolResultMessage], Any]

_SNIPPET = 200


def failure_result(call: ToolCall, failure: ToolFailure) -> ToolResultMessage:
    """The error result the model sees for ``failure``."""
    details: dict[str, Any] = {"failure": failure.kind}
    details.update(failure.details)
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=(TextContent(text=failure.text),),
        is_error=True,
        details=details,
    )


def _snippet(raw: str) -> str:
    return repr(raw if len(raw) <= _SNIPPET else raw[:_SNIPPET] + "…")


class Prepared:
    """A call that passed (or failed) judgements 1–3."""

    __slots__ = ("args", "call", "failure", "pending", "tool")

    def __init__(
        self,
        call: ToolCall,
        tool: Tool | None = None,
        args: dict[str, Any] | None = None,
        failure: ToolFailure | None = None,
    ) -> None:
        self.call = call
        self.tool = tool
        self.args = args
        self.failure = failure
        #: Needs approval and has no decision yet: the run pauses on it.
        self.pending = False


def _arguments(call: ToolCall) -> dict[str, Any] | ToolFailure:
    # ``raw_arguments`` is what the model sent. A response can end done(tool_use)
    # with arguments that are not a JSON object: the assembler then keeps the raw
    # text and sets ``arguments={}`` (DESIGN §2a). Re-parsing the raw text is how
    # that case is told apart from a real ``{}``; it also gives the tool a fresh
    # dict that cannot alter the transcript.
    raw = call.raw_arguments
    if raw is None:
        return copy.deepcopy(call.arguments)
    args = parse_arguments(raw)
    if args is None:
        return ToolFailure(
            "invalid_arguments",
            f"the arguments of this {call.name} call are not a JSON object: {_snippet(raw)}",
            hint="Send the arguments as one JSON object matching the tool's parameter "
            "schema, then call the tool again.",
        )
    return args


def prepare(
    call: ToolCall,
    tools: Mapping[str, Tool],
    answered: set[str],
    before: BeforeToolCall | None,
    approval: Callable[[ToolCall, dict[str, Any]], Any] | None = None,
    approved: bool = False,
) -> Generator[Intent, Any, Prepared]:
    """Judgements 1–3 (and the once-per-id rule); marks the id as answered. A step
    generator (:mod:`modelwire.agent._intents`): ``before_tool_call`` is resolved by
    the driver."""
    if call.id in answered:
        return Prepared(
            call,
            failure=ToolFailure(
                "duplicate_call",
                f"tool call id {call.id!r} was already answered in this conversation; "
                "it was not executed again",
            ),
        )
    answered.add(call.id)
    tool = tools.get(call.name)
    if tool is None:
        names = ", ".join(sorted(tools)) or "(none)"
        return Prepared(
            call,
            failure=ToolFailure(
                "unknown_tool",
                f"there is no tool named {call.name!r}; the available tools are: {names}",
            ),
        )
    args = _arguments(call)
    if isinstance(args, ToolFailure):
        return Prepared(call, tool, failure=args)
    problems = tool.validate(args)
    if problems:
        listing = "\n".join(f"- {p}" for p in problems)
        return Prepared(
            call,
            tool,
            failure=ToolFailure(
                "invalid_arguments",
                f"the arguments of this {call.name} call do not match its parameter "
                f"schema:\n{listing}",
                details={"errors": problems},
            ),
        )
    if before is None and not approved:
        needs: Any = tool.approval
        if approval is not None:
            try:
                needs = yield Resolve(approval(call, copy.deepcopy(args)))
            except Exception:
                needs = True  # fail closed: a policy that cannot decide asks
        if needs:
            prep = Prepared(call, tool, args)
            prep.pending = True
            return prep
    if before is not None:
        try:
            verdict = yield Resolve(before(call, copy.deepcopy(args)))
        except ToolFailure as failure:
            verdict = failure
        except Exception as exc:
            # Fail closed: a hook that cannot decide does not allow.
            verdict = f"before_tool_call failed ({type(exc).__name__}: {exc})"
        if isinstance(verdict, ToolFailure):
            return Prepared(call, tool, args, failure=verdict)
        if verdict is False or isinstance(verdict, str):
            reason = verdict if isinstance(verdict, str) and verdict else "no reason given"
            return Prepared(
                call,
                tool,
                args,
                failure=ToolFailure(
                    "blocked", f"the application did not allow this {call.name} call: {reason}"
                ),
            )
    return Prepared(call, tool, args)


def is_async_tool(tool: Tool) -> bool:
    """True when ``tool.execute`` is an ``async def`` function (or callable object)."""
    fn: Any = tool.execute
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - async callable objects
    )


def _crashed(call: ToolCall, exc: BaseException) -> ToolFailure:
    return ToolFailure(
        "execution_failed", f"the {call.name} tool failed: {type(exc).__name__}: {exc}"
    )


def output_result(call: ToolCall, output: str | ToolOutput) -> ToolResultMessage:
    """The result the model sees for a tool's ``output``."""
    content = output if isinstance(output, str) else output.content
    return ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=(TextContent(text=content),) if isinstance(content, str) else content,
        is_error=False,
        details=None if isinstance(output, str) else output.details,
    )


def result_kind(result: ToolResultMessage) -> str | None:
    """The failure kind of a result (``None`` when it is not an error)."""
    return _kind(result, None)


def _kind(result: ToolResultMessage, failure: ToolFailure | None) -> str | None:
    if not result.is_error:
        return None
    if failure is not None:
        return failure.kind
    details = result.details
    kind = details.get("failure") if isinstance(details, dict) else None
    return kind if isinstance(kind, str) else "execution_failed"


def execute(
    prep: Prepared,
    messages: tuple[Message, ...],
    on_update: Callable[[str | ToolOutput], None],
    cancel: threading.Event,
    after: AfterToolCall | None,
) -> Generator[Intent, Any, tuple[ToolResultMessage, str | None]]:
    """Judgements 4–5 for a call that passed 1–3: ``(result, failure kind or None)``.
    A step generator: the driver runs the tool (:class:`~._intents.Invoke`) and
    resolves ``after_tool_call``."""
    call, tool, args = prep.call, prep.tool, prep.args
    assert tool is not None and args is not None and prep.failure is None
    ctx = ToolContext(call, messages=messages, on_update=on_update, cancel=cancel)
    failure: ToolFailure | None = None
    output: Any = None
    try:
        output = yield Invoke(tool, args, ctx)
    except ToolFailure as exc:
        failure = exc
    except InvokeTimedOut:
        cancel.set()
        failure = ToolFailure(
            "timeout_unknown",
            f"the {call.name} tool did not finish within {tool.timeout or 0:g} s and was cancelled",
        )
    except InvokeAborted:
        cancel.set()
        failure = ToolFailure(
            "aborted", f"the run was aborted before this {call.name} call finished"
        )
    except Exception as exc:  # the tool's own TimeoutError included
        failure = _crashed(call, exc)
    if failure is None and not isinstance(output, str | ToolOutput):
        failure = ToolFailure(
            "execution_failed",
            f"the {call.name} tool returned {type(output).__name__}, not a str or ToolOutput",
        )
    if failure is not None:
        result = failure_result(call, failure)
    else:
        assert isinstance(output, str | ToolOutput)
        result = output_result(call, output)
    if after is not None:
        try:
            replaced = yield Resolve(after(call, result))
        except Exception as exc:
            # Fail closed: the hook may exist to redact; an unprocessed result is withheld.
            failure = ToolFailure(
                "execution_failed",
                f"the result of this {call.name} call was withheld: after_tool_call failed "
                f"({type(exc).__name__})",
            )
            return failure_result(call, failure), failure.kind
        if replaced is not None:
            if not isinstance(replaced, ToolResultMessage) or replaced.tool_call_id != call.id:
                failure = ToolFailure(
                    "execution_failed",
                    f"the result of this {call.name} call was withheld: after_tool_call "
                    "returned something other than a ToolResultMessage for this call",
                )
                return failure_result(call, failure), failure.kind
            result = replaced
    return result, _kind(result, failure)

"""A script — what a test says the model should answer — and its normal form.

A *script* is a string (text), a :class:`~modelwire.types.ToolCall`, a content block
(provider-run tool calls and results, and opaque items, for the APIs that carry them;
text with its citations), a sequence of those, or a whole
:class:`~modelwire.types.AssistantMessage` (its ``stop_reason``,
``provider_stop_reason``, ``usage`` and ``response_id`` are kept too).
:func:`normalize` brings any of them to :class:`ScriptedReply`, the one form the
scripted model and the mock server turn into events.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from .._apis._server.reply import compact_json
from ..errors import ConfigurationError
from ..types import (
    AssistantContent,
    AssistantMessage,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = ["Script", "ScriptedReply", "normalize", "split_text", "tool_call", "with_id_prefix"]

Block: TypeAlias = (
    str
    | TextContent
    | ThinkingContent
    | ToolCall
    | ServerToolCall
    | ServerToolResult
    | ProviderItem
)
_BLOCKS = (TextContent, ThinkingContent, ToolCall, ServerToolCall, ServerToolResult, ProviderItem)
#: Anything a scripted model or the mock server accepts as a model reply.
Script: TypeAlias = AssistantMessage | Block | Sequence[Block]


class ScriptedReply(msgspec.Struct, frozen=True, kw_only=True):
    """A script in normal form: blocks in order, how it ends, token counts."""

    content: tuple[AssistantContent, ...]
    """The blocks in the order they are streamed: text (with its citations), thinking,
    tool calls, and the provider-run tool blocks and opaque items an API can carry."""
    stop_reason: Literal["stop", "length", "tool_use"]
    """``tool_use`` when there is a tool call (unless ``length``), else ``stop``."""
    usage: Usage
    """Token counts to report (all zero unless the script gave them)."""
    response_id: str | None = None
    """The response id to send, when the script fixed one."""
    provider_stop_reason: str | None = None
    """The provider's own stop reason to send (e.g. Anthropic ``pause_turn``), when
    the script gave one; each API's renderer decides whether it can say it."""


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters (never splits a code point;
    an empty text gives no pieces)."""
    if size <= 0:
        raise ConfigurationError("piece_chars must be a positive integer")
    return [text[i : i + size] for i in range(0, len(text), size)]


_ids = itertools.count(1)
_DEFAULT_PREFIX = "call_"
# The calls ``tool_call`` made an id for (kept alive, so an identity is never reused).
_made_up: dict[int, ToolCall] = {}


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None
) -> ToolCall:
    """A :class:`ToolCall` for a script; ``id`` defaults to a process-unique ``call_<n>``
    (an agent answers calls by id, so ids must not repeat within a conversation),
    sent with the prefix of the API that renders it (``toolu_<n>`` for Anthropic, as
    the provider's own ids look: :func:`with_id_prefix`); an ``id`` given is sent as
    given.

    Args:
        name: The tool's name.
        arguments: The arguments object (default: ``{}``).
        id: The call id.

    Returns:
        The :class:`ToolCall`, with ``raw_arguments`` its compact JSON.

    Example:
        ```python
        from modelwire.testing import MockServer, tool_call

        with MockServer([tool_call("read", {"path": "a.txt"}), "Done."]) as server:
            ...  # an agent with a read tool gets the call, then the answer
        ```
    """
    args = dict(arguments or {})
    call = ToolCall(
        id=id or f"{_DEFAULT_PREFIX}{next(_ids)}", name=name, arguments=args,
        raw_arguments=compact_json(args),
    )  # fmt: skip
    if not id:
        # Known by identity, not by its text: a script may give the same id itself.
        _made_up[builtins.id(call)] = call
    return call


def _is_made_up(block: object) -> bool:
    return _made_up.get(builtins.id(block)) is block


def with_id_prefix(reply: ScriptedReply, prefix: str) -> ScriptedReply:
    """``reply`` with every tool-call id :func:`tool_call` made up carrying the API's
    ``prefix`` (``WireServer.tool_id_prefix``) instead of ``call_``."""
    if prefix == _DEFAULT_PREFIX or not any(_is_made_up(b) for b in reply.content):
        return reply
    content = tuple(
        msgspec.structs.replace(b, id=prefix + b.id.removeprefix(_DEFAULT_PREFIX))
        if isinstance(b, ToolCall) and _is_made_up(b)
        else b
        for b in reply.content
    )
    return msgspec.structs.replace(reply, content=content)


def normalize(script: Script) -> ScriptedReply:
    """Bring any accepted script to :class:`ScriptedReply`.

    ``ConfigurationError`` for what a successful stream cannot say: a message
    whose ``stop_reason`` is ``error``/``aborted`` (script failures with
    ``Reply(status=…)``, ``cut_after`` or a raw ``body`` instead), or an
    unknown block type.
    """
    provider_stop = None
    if isinstance(script, AssistantMessage):
        if script.stop_reason in ("error", "aborted"):
            raise ConfigurationError(
                f"cannot render a message with stop_reason {script.stop_reason!r} as a "
                "successful stream; script failures with Reply(status=...), cut_after, "
                "stall_after or a raw body"
            )
        blocks: tuple[AssistantContent, ...] = script.content
        usage = script.usage
        response_id = script.response_id
        explicit = script.stop_reason
        provider_stop = script.provider_stop_reason
    else:
        items: Iterable[Any] = (script,) if isinstance(script, (str, *_BLOCKS)) else script
        out: list[AssistantContent] = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                out.append(TextContent(text=item))
            elif isinstance(item, _BLOCKS):
                out.append(item)
            else:
                raise ConfigurationError(
                    f"script[{i}] must be a str, TextContent, ThinkingContent, ToolCall, "
                    f"ServerToolCall, ServerToolResult or ProviderItem, got {type(item).__name__}"
                )
        blocks, usage, response_id, explicit = tuple(out), Usage(), None, None
    # A provider-run tool call is not the caller's to answer: it never makes tool_use.
    has_calls = any(isinstance(b, ToolCall) for b in blocks)
    stop: Literal["stop", "length", "tool_use"] = (
        "length" if explicit == "length" else "tool_use" if has_calls else "stop"
    )
    return ScriptedReply(content=blocks, stop_reason=stop, usage=usage, response_id=response_id,
                         provider_stop_reason=provider_stop)  # fmt: skip

"""What every encoder checks before it renders a request, each named by its path in the
context or the options: input kinds the model takes, a tool choice that can be met, a
reasoning level the model has, tool-call arguments that are JSON, assistant turns an
API can replay, provider-run tools the API has. Each is a ``ConfigurationError`` before
any I/O (DESIGN §3 rule 6): nothing is dropped or sent to fail remotely."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError
from ..types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ServerTool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    check_json,
)

__all__ = [
    "as_image",
    "as_tool_call",
    "check_context_values",
    "check_input",
    "check_reasoning",
    "check_tool_choice",
    "refuse_assistant_images",
    "server_tool_objects",
]


def check_context_values(context: Context) -> None:
    """Tool-call arguments are encoded to text before the body is built (OpenAI
    Chat sends them as a string), so they are checked here, by their path in the
    context: ``messages[1].content[0].arguments.x``."""
    for i, message in enumerate(context.messages):
        if message.role != "assistant":
            continue
        for j, block in enumerate(message.content):
            if isinstance(block, ToolCall) and not (block.raw_arguments or "").strip():
                check_json(block.arguments, f"messages[{i}].content[{j}].arguments")


def check_input(model: Model, context: Context) -> None:
    """Every block a user message or a tool result holds is of a kind ``model``
    accepts (``Model.input``): an image, a document or audio sent to a model not
    declared to take it is a ``ConfigurationError`` naming the model, the block's
    path in the context and how to declare it — before any I/O, for every API, so
    nothing is silently replaced or dropped on the way."""
    accepted = model.input
    for i, message in enumerate(context.messages):
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                continue
            content = message.content
        elif isinstance(message, ToolResultMessage):
            content = message.content
        else:
            continue
        for j, block in enumerate(content):
            kind = block.type
            if kind not in accepted:
                declared = ", ".join(repr(k) for k in accepted) or "nothing"
                wanted = ", ".join(repr(k) for k in (*accepted, kind))
                raise ConfigurationError(
                    f"model {model.id!r} does not accept {kind} input, but "
                    f"messages[{i}].content[{j}] is {'an' if kind[0] in 'aeiou' else 'a'} "
                    f"{kind} block (Model.input declares {declared}): if the model takes "
                    f"it, declare it with Model(..., input=[{wanted}]); otherwise remove "
                    "the block"
                )


def check_tool_choice(tc: str | dict[str, Any] | None, context: Context) -> None:
    """Refuse, before any request, a tool choice no response could satisfy: one that
    requires a call with no tool declared, or forces a tool that is not declared.
    (``auto`` and ``none`` without tools mean nothing to choose from: not sent.)"""
    if tc is None or tc in ("auto", "none"):
        return
    names = [t.name for t in context.tools or ()]
    if not names:
        raise ConfigurationError(
            f"tool_choice={tc!r} needs tools, but the context declares no tools: "
            "add tools to the Context or drop tool_choice"
        )
    if isinstance(tc, dict) and tc["name"] not in names:
        raise ConfigurationError(
            f"tool_choice names {tc['name']!r}, which is not a declared tool (not among the "
            f"context's tools: {', '.join(map(repr, names))})"
        )


def check_reasoning(model: Model, level: str | None) -> None:
    """A reasoning level for a model without reasoning is a caller mistake.

    Args:
        model: The model the request is for.
        level: The ``reasoning`` option (``None``: not asked).

    Raises:
        ConfigurationError: A level for a model whose ``reasoning`` is false.
    """
    if level is not None and not model.reasoning:
        raise ConfigurationError(
            f"model {model.id!r} does not support a reasoning level "
            "(Model.reasoning is False); pass reasoning=None"
        )


def as_tool_call(block: object, where: str) -> ToolCall:
    """``block`` where only a client tool call can be: another kind of block (a
    provider-run tool, an opaque item) is refused with a typed error, never sent as
    a call."""
    if isinstance(block, ToolCall):
        return block
    kind = getattr(block, "type", type(block).__name__)
    raise ConfigurationError(f"{where} cannot carry {_article(kind)} {kind} block")


def refuse_assistant_images(msg: AssistantMessage, where: str, api: str) -> None:
    """An image a model generated, in an assistant message of an API that has no form
    for one there: refused naming the field, never dropped (``mw.handoff`` turns
    another API's image into a note the next model can read)."""
    for j, b in enumerate(msg.content):
        if isinstance(b, ImageContent):
            raise ConfigurationError(
                f"{where}.content[{j}] is an image the model generated ({b.mime_type}): "
                f"{_article(api)} {api} request cannot carry an image in an assistant "
                "message; pass the context through mw.handoff(context, model) first"
            )


def as_image(block: object, where: str) -> ImageContent:
    """``block`` where only an image can be (after text): a document or audio block
    the API cannot carry is refused with a typed error, never replaced or dropped."""
    if isinstance(block, ImageContent):
        return block
    kind = getattr(block, "type", type(block).__name__)
    raise ConfigurationError(f"{where} cannot carry {_article(kind)} {kind} block")


def server_tool_objects(
    tools: Sequence[ServerTool], native: Mapping[str, Mapping[str, Any]], api: str
) -> list[dict[str, Any]]:
    """Each provider-run tool as the API's own tool object: ``native[name]``, with the
    tool's options laid over it when they are this API's fields (the gateway passes a
    client's own tool object so, ``type`` included). The client has checked each name
    against the model's profile; a profile that lists a tool the API cannot render
    (``Model.capabilities`` claiming too much) is refused here."""
    out: list[dict[str, Any]] = []
    for i, tool in enumerate(tools):
        if tool.name not in native:
            raise ConfigurationError(
                f"server_tools[{i}]: {api} has no provider-run {tool.name} tool "
                f"(it has {', '.join(native) or 'none'})"
            )
        obj = dict(native[tool.name])
        if tool.options and tool.api in (None, api):
            obj.update(tool.options)
        out.append(obj)
    return out


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"

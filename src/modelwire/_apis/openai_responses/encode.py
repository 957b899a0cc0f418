"""Outbound half of the ``openai-responses`` API: compat flags and the ``input`` items.

Pure functions of the model and context (DESIGN §3 rule 9): nothing here changes
its arguments, and the same conversation always gives the same items.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..._wire.request import RESERVED_BODY_KEYS
from ...errors import ConfigurationError
from ...types import (
    AssistantMessage,
    AudioContent,
    Context,
    DocumentContent,
    ImageContent,
    Model,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._common import (
    as_tool_call,
    block_as_text,
    decoder_for,
    merge_compat,
    same_model,
    with_sources,
)
from .._common import raw_or_json_arguments as _raw_args
from ..openai_chat._input import audio_format, data_url, filename
from ._client import client_item_type, client_output
from ._schema import _item_head_decoder
from ._server import API as _API
from ._server import image_item

__all__ = ["RESERVED", "ResponsesCompat", "detect_compat", "encode_input"]


# --------------------------------------------------------------------------- compat


class ResponsesCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one server departs from OpenAI's own Responses API."""

    system_role: Literal["instructions", "developer", "system"] = "instructions"
    """Where the system prompt goes: the ``instructions`` field, or a first input
    message with role ``developer``/``system``."""
    store: bool | None = False
    """Send ``store`` with this value (``None``: omit). ``False`` keeps the request
    stateless, so replaying the items themselves is what carries the history."""
    encrypted_reasoning: bool | None = None
    """Send ``include: ["reasoning.encrypted_content"]`` (``None``: when the model
    reasons, i.e. ``Model.reasoning`` or a reasoning level is given — OpenAI rejects
    it for models without reasoning)."""
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = "auto"
    """``reasoning.summary`` sent with a reasoning level (``None``: omit; OpenAI asks
    for organization verification before it returns summaries)."""
    reasoning_effort_map: dict[str, str] | None = None
    """Rename levels for servers with fewer (e.g. ``{"xhigh": "high"}``)."""
    prompt_cache_key: bool = True
    """Send ``prompt_cache_key`` from ``session_id`` (when ``cache`` is on)."""
    strict_tools: bool | None = False
    """``strict`` on function tools. The Responses API defaults it to true, which
    rejects any schema that is not in OpenAI's strict subset, so modelwire sends
    false unless told otherwise (``None``: omit)."""


def detect_compat(model: Model) -> ResponsesCompat:
    """The provider record's defaults, then ``model.compat`` overrides (unknown flags
    are refused)."""
    from ..._catalog._records import compat_defaults

    base = compat_defaults(model, "openai-responses")
    if not model.compat and not base:
        return _DEFAULT_COMPAT
    return merge_compat("openai-responses", ResponsesCompat, model.compat, base)


_DEFAULT_COMPAT = ResponsesCompat()


# --------------------------------------------------------------------------- outbound

#: Body keys ``extra_body`` may not override: the shared list plus ``instructions``.
RESERVED = RESERVED_BODY_KEYS | frozenset({"instructions"})


class _TextSig(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    phase: str | None = None


_text_sig_decoder = decoder_for(_TextSig)


def _parse_text_signature(sig: str, where: str) -> tuple[str, str | None]:
    if not sig.startswith("{"):
        return sig, None
    try:
        parsed = _text_sig_decoder.decode(sig)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ConfigurationError(
            f"{where} is not an OpenAI Responses message signature ({exc})"
        ) from None
    return parsed.id, parsed.phase


def _reasoning_item(sig: str, where: str) -> msgspec.Raw:
    """The stored reasoning item, checked, ready to embed byte for byte."""
    try:
        head = _item_head_decoder.decode(sig)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ConfigurationError(
            f"{where} is not an OpenAI Responses reasoning item ({exc})"
        ) from None
    if head.type != "reasoning":
        raise ConfigurationError(f"{where} is a {head.type!r} item, not a reasoning item")
    return msgspec.Raw(sig.encode())


def _handoff_thinking(block: ThinkingContent) -> str | None:
    """Thinking that cannot be replayed as a reasoning item (another model produced
    it, or it has no stored item): visible text, or nothing. One small function so
    the handoff module can replace the rule."""
    if block.redacted or not block.thinking.strip():
        return None
    return f"<thinking>\n{block.thinking}\n</thinking>"


def _part(b: UserContent, where: str, *, audio: bool = True) -> dict[str, Any]:
    """One input content part (API reference, "Input item list": ``input_text``,
    ``input_image``, ``input_file``, ``input_audio``)."""
    if isinstance(b, TextContent):
        return {"type": "input_text", "text": b.text}
    if isinstance(b, ImageContent):
        return {"type": "input_image", "image_url": data_url(b.mime_type, b.data), "detail": "auto"}
    if isinstance(b, DocumentContent):
        if b.file_id is not None:
            return {"type": "input_file", "file_id": b.file_id}
        if b.url is not None:
            return {"type": "input_file", "file_url": b.url}
        assert b.data is not None  # exactly one source (DocumentContent)
        return {"type": "input_file", "filename": filename(b),
                "file_data": data_url(b.mime_type, b.data)}  # fmt: skip
    if isinstance(b, AudioContent) and audio:
        return {"type": "input_audio",
                "input_audio": {"data": b.data, "format": audio_format(b, where)}}  # fmt: skip
    # function_call_output.output takes input_text, input_image and input_file only.
    raise ConfigurationError(
        f"{where} is a {b.type} block, which an openai-responses tool result cannot carry "
        "(text, images and documents only): send it in a user message instead"
    )


def _user_item(msg: UserMessage, i: int) -> dict[str, Any]:
    if isinstance(msg.content, str):
        parts: list[dict[str, Any]] = [{"type": "input_text", "text": msg.content}]
    else:
        parts = [_part(b, f"messages[{i}].content[{j}]") for j, b in enumerate(msg.content)]
    return {"type": "message", "role": "user", "content": parts}


def _assistant_items(
    msg: AssistantMessage, i: int, same: bool, out: list[Any], answers: dict[str, str]
) -> None:
    # A reasoning item that could not be replayed orphans the fc_ ids OpenAI paired
    # with it ("Item 'rs_…' … provided without its required following item"), so
    # call item ids are sent only while every reasoning item before them was.
    skipped_reasoning = False
    for j, block in enumerate(msg.content):
        where = f"messages[{i}].content[{j}].signature"
        if isinstance(block, ThinkingContent):
            if same and block.signature:
                out.append(_reasoning_item(block.signature, where))
                continue
            skipped_reasoning = True
            text = _handoff_thinking(block)
            if text is not None:
                out.append({"type": "message", "role": "assistant", "content": text})
        elif isinstance(block, TextContent):
            if same and block.signature:
                item_id, phase = _parse_text_signature(block.signature, where)
                # The annotations as received (API reference, output_text.annotations).
                notes = [msgspec.Raw(c.raw.encode()) for c in block.citations if c.raw]
                item: dict[str, Any] = {
                    "type": "message",
                    "role": "assistant",
                    "id": item_id,
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": notes}],
                }
                if phase is not None:
                    item["phase"] = phase
                out.append(item)
            elif block.text:
                # No item id to keep: the "easy" message form, which needs none; sources
                # another API cited become text the model can read.
                text = block.text if same else with_sources(block.text, block.citations)
                out.append({"type": "message", "role": "assistant", "content": text})
        elif isinstance(block, ImageContent):
            # A generated image: its image_generation_call item (``_server``).
            if same and not skipped_reasoning and msg.api == _API and block.signature:
                image = _image_replay(block, block.signature, msg)
                if image is not None:
                    out.append(image)
            else:
                # Another model made it (or nothing names its item): an assistant
                # message cannot carry an image, so the next model reads that one was made.
                text = f"[an image ({block.mime_type}) was generated]"
                out.append({"type": "message", "role": "assistant", "content": text})
        elif isinstance(block, ServerToolCall | ServerToolResult | ProviderItem):
            raw = block.data if isinstance(block, ProviderItem) else block.raw
            if same and not skipped_reasoning and msg.api == _API:
                # A server-run item or an opaque one, back exactly as received; a result
                # without raw of its own came in its call's item (``_server``).
                if raw:
                    out.append(msgspec.Raw(raw.encode()))
            elif not isinstance(block, ProviderItem):
                # Another model ran it: what was run and found, as text (``block_as_text``).
                out.append(
                    {"type": "message", "role": "assistant", "content": block_as_text(block)}
                )
        else:
            block = as_tool_call(block, "an openai-responses request")
            sig = block.signature
            kind = client_item_type(sig)
            if sig is not None and kind is not None and same and not skipped_reasoning:
                # A client-executed item (local shell, apply_patch, custom tool…):
                # sent back exactly as received; its result answers it by type.
                out.append(msgspec.Raw(sig.encode()))
                answers[block.id] = sig
                continue
            # Otherwise (another model, or a plain function call) a function_call,
            # which any Responses model accepts.
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": block.id,
                "name": block.name,
                "arguments": _raw_args(block.raw_arguments, block.arguments),
            }
            if same and block.signature and kind is None and not skipped_reasoning:
                call["id"] = block.signature
            out.append(call)


def _image_replay(
    block: ImageContent, item_id: str, msg: AssistantMessage
) -> dict[str, Any] | None:
    """The item a generated image goes back as: none when its call's item as received
    (which holds the image as ``result``) goes back; else rebuilt from its id (the
    image's ``signature``)."""
    if any(isinstance(b, ServerToolCall) and b.id == item_id and b.raw for b in msg.content):
        return None
    return image_item(block, item_id)


def _tool_output(msg: ToolResultMessage, i: int, answers: dict[str, str]) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    if any(not isinstance(b, TextContent) for b in msg.content):
        # function_call_output.output may be a list of input_text/input_image/input_file.
        output = [
            _part(b, f"messages[{i}].content[{j}]", audio=False) for j, b in enumerate(msg.content)
        ]
    else:
        output = msg.text
    item = answers.get(msg.tool_call_id)
    kind = client_item_type(item)
    if item is not None and kind is not None:
        return client_output(msg, kind, output, f"messages[{i}]", item)
    return {"type": "function_call_output", "call_id": msg.tool_call_id, "output": output}


def encode_input(
    model: Model, context: Context, compat: ResponsesCompat | None = None
) -> list[Any]:
    """The ``input`` array for ``context`` (pure; the context is not changed).

    Reasoning items appear as ``msgspec.Raw`` values: the bytes as received.
    """
    compat = compat or detect_compat(model)
    items: list[Any] = []
    # call id → the client-executed item replayed for it (as received), so its result
    # becomes the matching output item (``_client.client_output``).
    answers: dict[str, str] = {}
    if context.system_prompt and compat.system_role != "instructions":
        items.append(
            {"type": "message", "role": compat.system_role, "content": context.system_prompt}
        )
    for i, msg in enumerate(context.messages):
        if isinstance(msg, UserMessage):
            items.append(_user_item(msg, i))
        elif isinstance(msg, SystemMessage):
            # In place, as a developer message when the leading prompt is `instructions`.
            role = "developer" if compat.system_role == "instructions" else compat.system_role
            items.append({"type": "message", "role": role, "content": msg.content})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            _assistant_items(msg, i, _replay_signatures(model, msg), items, answers)
        else:
            items.append(_tool_output(msg, i, answers))
    return items


def _replay_signatures(model: Model, msg: AssistantMessage) -> bool:
    """Whether the opaque data of ``msg`` (reasoning items, item ids) may go back."""
    return same_model(model, msg)


def _tool_choice(tc: str | dict[str, Any] | None, names: set[str]) -> Any:
    # Checked before (apis._common.check_tool_choice).
    if tc is None or not names:
        return None  # nothing to choose from; OpenAI rejects tool_choice without tools
    if isinstance(tc, dict):
        return {"type": "function", "name": tc["name"]}
    return tc


def _tool(
    name: str,
    description: str,
    parameters: dict[str, Any],
    compat: ResponsesCompat,
    *,
    defer: bool = False,
) -> Any:
    # Responses tools are flat: no nested "function" object as in Chat Completions.
    tool: dict[str, Any] = {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": parameters,
    }
    if compat.strict_tools is not None:
        tool["strict"] = compat.strict_tools
    if defer:
        # Searchable by tool_search: the model sees the name and description, the
        # parameters once its search loads the function ("Tool search" guide).
        tool["defer_loading"] = True
    return tool

"""Output items and the Response object, shared by the stream renderer and the
non-streamed body (API reference, "The response object" and "Output items":
https://platform.openai.com/docs/api-reference/responses/object).

Ids. A block that came from a Responses backend keeps the provider's own ids (a
message item's ``id``/``phase`` from ``TextContent.signature``, a function call's
item id from ``ToolCall.signature``, a reasoning item as received). A block from any
other API gets a gateway id, ``<prefix>_mwgw_<response>_<n>`` (read back as "no
signature"), or — when it carries a signature of its own (a thought signature on a
call or text) — the sealed origin as its id
(:func:`modelwire._apis._server.origin.seal`); its thinking's signature goes, sealed, in
the reasoning item's ``encrypted_content``. Id prefixes and the ending's status come
from the Responses spec (:mod:`modelwire._apis.openai_responses.spec`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from ...types import (
    AssistantMessage,
    Citation,
    ImageContent,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from .._common import block_as_text, raw_or_json_arguments
from .._server.origin import Origin, seal
from .._server.request import GatewayRequest
from ._client import client_item_type
from ._server import image_item, server_item
from .spec import INCOMPLETE_REASONS, ITEM_ID_PREFIXES, NO_REASON, RESPONSE_ID_PREFIX, Stop

__all__ = [
    "API",
    "annotation",
    "block_item",
    "call_item",
    "client_item",
    "image_block_item",
    "incomplete_reason",
    "is_generated",
    "new_id",
    "reasoning_id",
    "reasoning_item",
    "response_object",
    "text_id",
    "text_item",
    "usage_object",
]

API = "openai-responses"
_MARK = "_mwgw_"
encode = msgspec.json.Encoder().encode
_item_head = msgspec.json.Decoder(dict[str, Any])


def new_id(item_type: str, response_id: str, n: int) -> str:
    """A gateway id for an item of ``item_type`` (``msg_mwgw_<response>_<n>``)."""
    head = ITEM_ID_PREFIXES[item_type]
    return f"{head}{_MARK}{response_id.removeprefix(RESPONSE_ID_PREFIX)}_{n}"


def is_generated(item_id: str) -> bool:
    """Whether an item id is one the gateway made up (it carries no signature)."""
    head, sep, _ = item_id.partition(_MARK)
    return bool(sep) and head in ITEM_ID_PREFIXES.values()


def incomplete_reason(message: AssistantMessage, stop: Stop) -> str | None:
    """The ``incomplete_details.reason`` a response ending with ``stop`` carries
    (``None``: it is not incomplete). A Responses backend's own reason for a cut-off
    answer goes back as it sent it."""
    why = INCOMPLETE_REASONS.get(stop)
    own = message.provider_stop_reason
    if why is None or stop.error_kind is not None or message.api != API:
        return why
    return why if own in (None, NO_REASON) else str(own)


def origin_of(message: AssistantMessage, signature: str | None, redacted: bool = False) -> Origin:
    return Origin(message.api, message.provider, message.model, signature, redacted)


# --------------------------------------------------------------------------- text


def text_id(
    block: TextContent, message: AssistantMessage, response_id: str, n: int
) -> tuple[str, str | None]:
    """The message item's id and ``phase`` for a text block."""
    sig = block.signature
    if message.api == API:
        if sig and sig.startswith("{"):
            try:
                value = _item_head.decode(sig)
            except (msgspec.DecodeError, msgspec.ValidationError):
                value = {}
            item_id, phase = value.get("id"), value.get("phase")
            if isinstance(item_id, str) and item_id:
                return item_id, phase if isinstance(phase, str) else None
        elif sig:
            return sig, None
    elif sig:
        return seal(origin_of(message, sig)), None
    return new_id("message", response_id, n), None


def annotation(c: Citation, same: bool, length: int) -> Any:
    """A citation as an ``output_text`` annotation: the provider's own object when it
    came from a Responses backend, else one built from its fields. Another API counts
    its spans in its own units and text (an Anthropic citation's are in the cited
    document), so the cited block's span is given: the whole text of the item, which
    is ``length`` characters (as the Chat front-end gives the block's span)."""
    if same and c.raw:
        return msgspec.Raw(c.raw.encode())
    start, end = (c.start or 0, c.end or 0) if same else (0, length)
    if c.kind == "url" or (c.url and c.kind == "other"):
        return {"type": "url_citation", "url": c.url or "", "title": c.title or "",
                "start_index": start, "end_index": end}  # fmt: skip
    return {"type": "file_citation", "file_id": c.document or "", "filename": c.title or "",
            "index": start if same else end}  # fmt: skip


def text_item(
    item_id: str, phase: str | None, text: str, notes: Sequence[Any], status: str
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id, "type": "message", "status": status, "role": "assistant",
        "content": [{"type": "output_text", "annotations": list(notes), "logprobs": [],
                     "text": text}],
    }  # fmt: skip
    if phase is not None:
        item["phase"] = phase
    return item


# --------------------------------------------------------------------------- reasoning


def reasoning_id(
    block: ThinkingContent, message: AssistantMessage, response_id: str, n: int
) -> str:
    """The reasoning item's id: the provider's (Responses backend), else a gateway id."""
    if message.api == API and block.signature:
        stored = _stored_reasoning(block.signature)
        if stored is not None:
            return str(stored["id"])
    return new_id("reasoning", response_id, n)


def _stored_reasoning(signature: str) -> dict[str, Any] | None:
    try:
        value = _item_head.decode(signature)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if value.get("type") != "reasoning" or not isinstance(value.get("id"), str):
        return None
    return value


def reasoning_item(block: ThinkingContent, message: AssistantMessage, item_id: str) -> Any:
    """The finished reasoning item: the one the Responses backend sent, as received;
    else one holding the thinking as its summary and, as its ``encrypted_content``,
    this API's bare signature or another API's signature sealed."""
    sig = block.signature
    same = message.api == API
    if same and sig and _stored_reasoning(sig) is not None:
        return msgspec.Raw(sig.encode())
    summary = [{"type": "summary_text", "text": block.thinking}] if block.thinking else []
    item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": summary}
    if same and sig:  # this API's own opaque reasoning, given as a bare signature
        item["encrypted_content"] = sig
    elif sig or block.redacted:
        item["encrypted_content"] = seal(origin_of(message, sig, block.redacted))
    return item


# --------------------------------------------------------------------------- calls


def call_id_of(call: ToolCall, message: AssistantMessage, response_id: str, n: int) -> str:
    """The function call item's id."""
    sig = call.signature
    if message.api == API:
        if sig:
            return sig
    elif sig:
        return seal(origin_of(message, sig))
    return new_id("function_call", response_id, n)


def client_item(call: ToolCall, message: AssistantMessage) -> msgspec.Raw | None:
    """A call of a Responses backend the client executes (``shell_call``,
    ``apply_patch_call``, ``custom_tool_call``…): its item as received, which is what
    the call is (``_client``); ``None`` for a function call."""
    sig = call.signature
    if message.api != API or sig is None or client_item_type(sig) is None:
        return None
    return msgspec.Raw(sig.encode())


def call_item(
    call: ToolCall, item_id: str, status: str, arguments: str | None = None,
    namespaces: Mapping[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    args = (
        arguments
        if arguments is not None
        else raw_or_json_arguments(call.raw_arguments, call.arguments)
    )
    item = {"id": item_id, "type": "function_call", "status": status, "arguments": args,
            "call_id": call.id, "name": call.name}  # fmt: skip
    if namespaces and call.name in namespaces:
        # A tool of a ``namespace`` tool: its call names the group too (the
        # function_call item's ``namespace``).
        item["namespace"] = namespaces[call.name]
    return item


# --------------------------------------------------------------------------- provider blocks


def image_block_item(
    image: ImageContent, message: AssistantMessage, response_id: str, n: int
) -> dict[str, Any] | None:
    """A generated image as an ``image_generation_call`` item: ``None`` when the item
    as received of its call (a Responses backend's, whose id the image's signature
    names) carries it; else one holding the image, with the backend's item id, a
    sealed origin (another API's signature) or a gateway id."""
    sig = image.signature
    if message.api == API and sig:
        if any(isinstance(b, ServerToolCall) and b.id == sig and b.raw for b in message.content):
            return None
        item_id = sig
    elif sig:
        item_id = seal(origin_of(message, sig))
    else:
        item_id = new_id("image_generation_call", response_id, n)
    return image_item(image, item_id)


def block_item(
    block: ServerToolCall | ServerToolResult | ProviderItem | ImageContent,
    message: AssistantMessage,
    response_id: str,
    n: int,
    result: ServerToolResult | None = None,
) -> Any:
    """A provider-run tool or opaque item: native from a Responses backend — as
    received, or built from a call given as blocks (``result``: its result, which goes
    in the same item); from another API the handoff's text (``block_as_text``) in a
    message item; ``None`` when it has no item (a result its call's item carries,
    another API's opaque item). A generated image is an ``image_generation_call``
    item (:func:`image_block_item`)."""
    if isinstance(block, ImageContent):
        return image_block_item(block, message, response_id, n)
    if message.api == API:
        if isinstance(block, ServerToolCall) and built_call(block):
            return server_item(block, result)
        raw = block.data if isinstance(block, ProviderItem) else block.raw
        if raw:
            return msgspec.Raw(raw.encode())
        if isinstance(block, ServerToolResult) and any(
            isinstance(b, ServerToolCall) and b.id == block.tool_call_id and b.raw
            for b in message.content
        ):
            return None  # the call's item as received carries it
    text = block_as_text(block)
    if text is None:
        return None
    return text_item(new_id("message", response_id, n), None, text, (), "completed")


def built_call(block: object) -> bool:
    """Whether ``block`` is a provider-run call given as blocks (no item as received):
    its item is built, with its result when that follows."""
    return isinstance(block, ServerToolCall) and not block.raw


def paired_result(block: object, following: object) -> ServerToolResult | None:
    """``following`` when it is the result, given as a block, of ``block``, a call
    given as blocks: both are one output item."""
    if (built_call(block) and isinstance(following, ServerToolResult) and not following.raw
            and following.tool_call_id == block.id):  # type: ignore[attr-defined]  # fmt: skip
        return following
    return None


# --------------------------------------------------------------------------- response


def usage_object(u: Usage) -> dict[str, Any]:
    """Usage in the API's fields: ``input_tokens`` counts cached and cache-written
    tokens (``ResponseUsage``), modelwire's ``input`` neither."""
    prompt = u.input + u.cache_read + u.cache_write
    return {"input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": u.cache_read,
                                     "cache_write_tokens": u.cache_write},
            "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + u.output}  # fmt: skip


def response_object(
    request: GatewayRequest,
    response_id: str,
    created: int,
    status: str,
    output: Sequence[Any],
    usage: Usage | None,
    *,
    error: Mapping[str, Any] | None = None,
    incomplete: str | None = None,
) -> dict[str, Any]:
    """The Response object, every field the reference marks required, the request's
    echoed fields as the client sent them."""
    echo = request.echo
    obj: dict[str, Any] = {
        "id": response_id, "object": "response", "created_at": created, "status": status,
        "background": bool(echo.get("background", False)), "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete is not None else None,
        "instructions": echo.get("instructions"),
        "max_output_tokens": echo.get("max_output_tokens"),
        "metadata": echo.get("metadata") or {}, "model": request.model, "output": list(output),
        "parallel_tool_calls": echo.get("parallel_tool_calls", True),
        "reasoning": echo.get("reasoning") or {"effort": None, "summary": None},
        "store": False, "temperature": echo.get("temperature"),
        "text": echo.get("text") or {"format": {"type": "text"}},
        "tool_choice": echo.get("tool_choice", "auto"), "tools": echo.get("tools") or [],
        "top_p": echo.get("top_p"), "truncation": echo.get("truncation", "disabled"),
        "usage": usage_object(usage) if usage is not None else None,
        "user": echo.get("user"),
    }  # fmt: skip
    return obj


def now() -> int:
    return int(time.time())


def message_output(
    message: AssistantMessage, response_id: str, namespaces: Mapping[str, str] | None = None
) -> list[Any]:
    """The output items of a finished message (the non-streamed body)."""
    same = message.api == API
    out: list[Any] = []
    content = message.content
    paired: set[int] = set()
    for i, block in enumerate(content):
        if i in paired:
            continue
        n = len(out)
        if isinstance(block, TextContent):
            item_id, phase = text_id(block, message, response_id, n)
            notes = [annotation(c, same, len(block.text)) for c in block.citations]
            out.append(text_item(item_id, phase, block.text, notes, "completed"))
        elif isinstance(block, ThinkingContent):
            out.append(reasoning_item(block, message, reasoning_id(block, message, response_id, n)))
        elif isinstance(block, ToolCall):
            native = client_item(block, message)
            if native is not None:
                out.append(native)
            else:
                item_id = call_id_of(block, message, response_id, n)
                out.append(call_item(block, item_id, "completed", namespaces=namespaces))
        else:
            result = paired_result(block, content[i + 1]) if i + 1 < len(content) else None
            if result is not None and same:
                paired.add(i + 1)
            item = block_item(block, message, response_id, n, result if same else None)
            if item is not None:
                out.append(item)
    return out


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The ``response`` object of a finished message (a request without a stream)."""
    output = message_output(message, response_id, request.namespaces)
    # As the stream says it: an error the spec gives an incomplete reason (a content
    # filter's stop) first, then the stop itself.
    why = None
    if message.error is not None:
        why = incomplete_reason(message, Stop("error", message.error.kind))
    if why is None:
        why = incomplete_reason(message, Stop(message.stop_reason))
    status = "completed" if why is None else "incomplete"
    obj = response_object(request, response_id, now(), status, output, message.usage,
                          incomplete=why)  # fmt: skip
    return encode(obj)

"""Output items the provider executes itself, opaque items, and text annotations.

Reference: the Responses API reference, "Output items" (``web_search_call``,
``file_search_call``, ``code_interpreter_call``, ``image_generation_call``, ``mcp_call``,
``mcp_list_tools``, ``tool_search_call``/``tool_search_output`` with ``execution:
"server"``) and the ``output_text`` part's ``annotations`` (``url_citation``,
``file_citation``, ``container_file_citation``, ``file_path``).

A server-executed item becomes a :class:`~modelwire.types.ServerToolCall` whose ``raw``
is the item exactly as received in ``response.output_item.done`` — what goes back to
the same model, byte for byte — followed by a
:class:`~modelwire.types.ServerToolResult` holding the result the item carries
(``results``, ``outputs``, ``result``, ``output``, ``tools``, the search ``sources``);
that result has no ``raw`` of its own, because the one item carries both and is
replayed once. The image an ``image_generation_call`` made is its result: an
:class:`~modelwire.types.ImageContent` (base64 ``result``, MIME type from
``output_format``, png by default) whose ``signature`` is the item's id, so the
image is replayed as that same item (its call's ``raw``, or rebuilt from the id). Any other item type modelwire does not model (``compaction``, a
type added after this was written) becomes a :class:`~modelwire.types.ProviderItem`:
kept, never dropped, replayed as received.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import MalformedChunkError
from ...types import Citation, ImageContent, ProviderItem, ServerToolCall, ServerToolResult

__all__ = [
    "API",
    "IMAGE_FORMATS",
    "SERVER_ITEMS",
    "citation",
    "image_item",
    "item_blocks",
    "raw_citation",
    "server_item",
]

API = "openai-responses"

#: Server-executed item type → ``ServerToolCall.name`` ("" = the item's own ``name``)
#: and the field holding its result (``None``: the item has no result of its own).
SERVER_ITEMS: dict[str, tuple[str, str | None]] = {
    "web_search_call": ("web_search", "action.sources"),
    "file_search_call": ("file_search", "results"),
    "code_interpreter_call": ("code_interpreter", "outputs"),
    "image_generation_call": ("image_generation", "result"),
    "mcp_call": ("", "output"),
    "mcp_list_tools": ("mcp_list_tools", "tools"),
    "tool_search_call": ("tool_search", None),
}

# What each item was run with: these fields of the item, as the tool's input.
_INPUT_FIELDS: dict[str, tuple[str, ...]] = {
    "file_search_call": ("queries",),
    "code_interpreter_call": ("code", "container_id"),
    "image_generation_call": ("revised_prompt", "size", "quality", "background", "output_format"),
    "mcp_list_tools": ("server_label",),
}


#: ``image_generation_call.output_format`` → the image's MIME type (the image
#: generation tool's ``output_format``: png, the default, jpeg or webp —
#: https://platform.openai.com/docs/guides/tools-image-generation).
IMAGE_FORMATS: dict[str, str] = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}


def _object(raw: bytes, etype: str) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:  # pragma: no cover - the framing gave valid JSON
        raise MalformedChunkError(f"malformed {etype} event: item is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise MalformedChunkError(f"malformed {etype} event: item must be an object")
    return value


def _str(item: dict[str, Any], field: str, etype: str, *, required: bool = False) -> str | None:
    value = item.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise MalformedChunkError(f"malformed {etype} event: item.{field} must be a string")
    return value


def _mcp_input(item: dict[str, Any], etype: str) -> dict[str, Any]:
    # mcp_call.arguments is "a JSON string of the arguments passed to the tool".
    text = _str(item, "arguments", etype) or ""
    try:
        value = msgspec.json.decode(text) if text.strip() else {}
    except msgspec.DecodeError:
        value = None
    return value if isinstance(value, dict) else {"arguments": text}


def item_blocks(
    raw: bytes, item_type: str, etype: str, search_call: str | None = None
) -> list[ServerToolCall | ServerToolResult | ProviderItem | ImageContent]:
    """The blocks of one finished output item that is neither a message, a reasoning
    item, a function call nor a client-executed item (``search_call``: the id of the
    last ``tool_search_call`` before it, which a ``tool_search_output`` without a
    ``call_id`` answers)."""
    item = _object(raw, etype)
    text = raw.decode()
    known = SERVER_ITEMS.get(item_type)
    if item_type == "tool_search_call" and item.get("execution") != "server":
        known = None  # a client search is a ToolCall (``_client``); anything else: opaque
    if item_type == "tool_search_output" and item.get("execution") == "server":
        # ``call_id`` is nullable: a server search's output then answers the search
        # call just before it (the output follows its call in ``output``), as a Gemini
        # result without an id answers the call before it — never its own item id.
        call_id = (
            _str(item, "call_id", etype) or search_call or _str(item, "id", etype, required=True)
        )
        assert call_id is not None
        return [
            ServerToolResult(
                tool_call_id=call_id,
                provider_type=item_type,
                result=item.get("tools"),
                is_error=item.get("status") == "failed",
                name="tool_search",
                raw=text,
            )
        ]
    if known is None:
        return [ProviderItem(api=API, provider_type=item_type, data=text)]
    name, result_field = known
    item_id = _str(item, "id", etype, required=True)
    assert item_id is not None
    if not name:
        name = _str(item, "name", etype, required=True) or ""
    if item_type == "mcp_call":
        tool_input = _mcp_input(item, etype)
    elif item_type == "web_search_call":
        action = item.get("action")
        tool_input = (
            {k: v for k, v in action.items() if k != "sources"} if isinstance(action, dict) else {}
        )
    elif item_type == "tool_search_call":
        args = item.get("arguments")
        tool_input = args if isinstance(args, dict) else {}
    else:
        tool_input = {f: item[f] for f in _INPUT_FIELDS.get(item_type, ()) if f in item}
    call = ServerToolCall(
        id=item_id, name=name, input=tool_input, provider_type=item_type, raw=text
    )
    if result_field is None:
        return [call]
    value: Any = item
    for part in result_field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    error = item.get("error")
    if item_type == "image_generation_call" and isinstance(value, str) and value and not error:
        fmt = _str(item, "output_format", etype) or "png"
        mime = IMAGE_FORMATS.get(fmt, f"image/{fmt}")
        return [call, ImageContent(data=value, mime_type=mime, signature=item_id)]
    result = ServerToolResult(
        tool_call_id=item_id,
        provider_type=item_type,
        result=value if error is None else {"error": error, "output": value},
        is_error=error is not None or item.get("status") in ("failed", "incomplete"),
        name=name,
    )
    return [call, result]


def server_item(call: ServerToolCall, result: ServerToolResult | None) -> dict[str, Any]:
    """The output item of a provider-run tool given as blocks (no ``raw`` of its own),
    as :func:`item_blocks` reads it back: the call's input where the item keeps it,
    ``result`` in the item's result field."""
    item: dict[str, Any] = {"id": call.id, "type": call.provider_type, "status": "completed"}
    if call.provider_type == "mcp_call":
        item.update(name=call.name, arguments=msgspec.json.encode(call.input).decode())
    elif call.provider_type == "web_search_call":
        item["action"] = dict(call.input)
    else:
        item.update(call.input)
    field = SERVER_ITEMS.get(call.provider_type, ("", None))[1]
    if result is not None and field is not None:
        if result.is_error:
            item["status"] = "failed"
        *path, last = field.split(".")
        holder = item
        for part in path:
            holder = holder.setdefault(part, {})
        holder[last] = result.result
    return item


def image_item(image: ImageContent, item_id: str) -> dict[str, Any]:
    """The ``image_generation_call`` item of a generated image given without its item
    as received: its id, the image as ``result``, its format as ``output_format``."""
    fmt = next((f for f, m in IMAGE_FORMATS.items() if m == image.mime_type), None)
    item: dict[str, Any] = {"id": item_id, "type": "image_generation_call",
                            "status": "completed", "result": image.data}  # fmt: skip
    if fmt is None and image.mime_type.startswith("image/"):
        fmt = image.mime_type.removeprefix("image/")
    if fmt is not None:
        item["output_format"] = fmt
    return item


def citation(annotation: dict[str, Any], raw: str) -> Citation:
    """A Citation from one ``output_text`` annotation (``raw``: its exact JSON text)."""
    kind = annotation.get("type")

    def s(field: str) -> str | None:
        v = annotation.get(field)
        return v if isinstance(v, str) else None

    def n(field: str) -> int | None:
        v = annotation.get(field)
        return v if type(v) is int else None

    if kind == "url_citation":
        return Citation(kind="url", url=s("url"), title=s("title"), start=n("start_index"),
                        end=n("end_index"), raw=raw)  # fmt: skip
    if kind in ("file_citation", "container_file_citation", "file_path"):
        # file_citation / file_path: ``index`` is where in the text the file is cited.
        start = n("start_index") if kind == "container_file_citation" else n("index")
        end = n("end_index") if kind == "container_file_citation" else None
        return Citation(kind="file", document=s("file_id"), title=s("filename"), start=start,
                        end=end, raw=raw)  # fmt: skip
    return Citation(kind="other", url=s("url"), title=s("title"), raw=raw)


def raw_citation(raw: msgspec.Raw, etype: str) -> Citation:
    """The Citation of one annotation as received (its JSON text kept as ``raw``)."""
    text = bytes(raw).decode()
    value = msgspec.json.decode(text) if text else None
    if not isinstance(value, dict):
        raise MalformedChunkError(f"malformed {etype} event: annotation must be an object")
    return citation(value, text)

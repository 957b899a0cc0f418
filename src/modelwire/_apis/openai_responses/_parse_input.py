"""The ``input`` items of a Responses request → the conversation's messages.

The inverse of :func:`modelwire._apis.openai_responses.encode_input` (API reference,
"Input item list"): consecutive output items — ``reasoning``, assistant ``message``,
``function_call``, provider-run tool items — are one assistant turn; a sealed value
(:mod:`modelwire._apis._server.origin`) in a reasoning item's ``encrypted_content`` or an
item's ``id`` gives the turn its origin (api, provider, model) and the block its own
signature back. A reasoning item that is not sealed is kept whole, as the client sent
it, as the signature: what a Responses backend replays byte for byte.
"""

from __future__ import annotations

import mimetypes
import re
from typing import Any

import msgspec

from ...errors import MalformedChunkError
from ...types import (
    AssistantContent,
    AssistantMessage,
    AudioContent,
    Citation,
    DocumentContent,
    ImageContent,
    Message,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)
from .._server.fields import arguments as _arguments
from .._server.origin import CLIENT_PROVIDER, Origin, unseal
from ._items import text_signature
from ._output_items import API, is_generated
from ._parse_checks import as_list as _list
from ._parse_checks import as_object as _obj
from ._parse_checks import fail as _fail
from ._parse_checks import string as _str

__all__ = ["conversation"]

_any = msgspec.json.Decoder()
_encode = msgspec.json.Encoder().encode

_SERVER_ITEM_TYPES = frozenset({
    "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
    "mcp_call", "mcp_list_tools", "tool_search_call", "tool_search_output", "compaction",
})  # fmt: skip

_AUDIO_MIME = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.S)
# The ``filename`` modelwire's encoder makes up for an untitled document
# (``openai_chat._input.filename``): read back as no title.
_MADE_UP_NAME = re.compile(r"document\.(pdf|txt|md|csv|html|json|bin)")


class _Turn:
    """The assistant turn being collected from consecutive output items."""

    __slots__ = ("blocks", "origin")

    def __init__(self) -> None:
        self.blocks: list[AssistantContent] = []
        self.origin: Origin | None = None


def conversation(value: str | list[msgspec.Raw], model: str) -> tuple[list[Message], list[str]]:
    """The messages of ``input``, and the text of its ``system``/``developer`` messages
    before the first turn, in order (a later one is a ``SystemMessage`` in its place)."""
    if isinstance(value, str):
        if not value:
            raise _fail("input", "must not be empty: send the user's text")
        return [UserMessage(content=value)], []
    messages: list[Message] = []
    leading: list[str] = []
    turn: _Turn | None = None
    names: dict[str, str] = {}  # call_id → tool name, for the outputs that answer them

    def close() -> None:
        nonlocal turn
        if turn is not None and turn.blocks:
            messages.append(_assistant(turn, model))
        turn = None

    for i, raw in enumerate(value):
        path = f"input[{i}]"
        item = _obj(_any.decode(raw), path)
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"
        if not isinstance(kind, str):
            raise _fail(f"{path}.type", "is missing" if kind is None else "must be a string")
        if kind == "message":
            role = _str(item, "role", path)
            if role in ("system", "developer"):
                # Before the first turn: the system prompt; later: in its place
                # (handoff rule 11 decides what each backend model gets).
                text = _plain_text(item.get("content"), f"{path}.content")
                if messages or turn is not None:
                    close()
                    if text:
                        messages.append(SystemMessage(content=text))
                else:
                    leading.append(text)
                continue
            if role == "user":
                close()
                if item.get("content") in ("", []):  # backends refuse an empty turn
                    raise _fail(f"{path}.content", "must not be empty")
                messages.append(UserMessage(content=_user_content(item.get("content"), path)))
                continue
            if role != "assistant":
                raise _fail(
                    f"{path}.role", f"must be user, assistant, system or developer (got {role!r})"
                )
            turn = _join(turn, close, _text_item(item, path))
        elif kind == "reasoning":
            turn = _join(turn, close, _reasoning_item(item, bytes(raw), path))
        elif kind == "function_call":
            call, origin = _call_item(item, path)
            names[call.id] = call.name
            turn = _join(turn, close, (call, origin))
        elif kind == "function_call_output":
            close()
            messages.append(_tool_output(item, path, names))
        elif kind in _SERVER_ITEM_TYPES:
            # A provider-run item the gateway streamed from a Responses backend: its
            # blocks, as modelwire's decoder makes them (replayed as received).
            from ._server import item_blocks

            try:
                blocks = item_blocks(bytes(raw), kind, "input item")
            except MalformedChunkError as exc:
                raise _fail(
                    path, str(exc).replace("malformed input item event: item.", "")
                ) from None
            for b in blocks:
                turn = _join(turn, close, (b, None))
        elif kind == "item_reference":
            raise _fail(
                path, "is an item_reference: the gateway keeps no items; send the item itself"
            )
        else:
            raise _fail(
                f"{path}.type",
                f"{kind!r} is not supported by this gateway (message, reasoning, function_call, "
                "function_call_output and provider-run tool items are)",
            )
    close()
    return messages, leading


def _join(turn: _Turn | None, close: Any, part: tuple[AssistantContent, Origin | None]) -> _Turn:
    block, origin = part
    if (
        turn is not None
        and origin is not None
        and turn.origin is not None
        and (
            (origin.api, origin.provider, origin.model)
            != (turn.origin.api, turn.origin.provider, turn.origin.model)
        )
    ):
        # A sealed item of another model's: a turn of its own.
        close()
        turn = None
    if turn is None:
        turn = _Turn()
    if origin is not None and turn.origin is None:
        turn.origin = origin
    turn.blocks.append(block)
    return turn


def _assistant(turn: _Turn, model: str) -> AssistantMessage:
    origin = turn.origin
    calls = any(isinstance(b, ToolCall) for b in turn.blocks)
    if origin is None:
        api, provider, model_id = API, CLIENT_PROVIDER, model
    else:
        api, provider, model_id = origin.api, origin.provider, origin.model
    return AssistantMessage(
        content=tuple(turn.blocks), api=api, provider=provider, model=model_id,
        stop_reason="tool_use" if calls else "stop",
    )  # fmt: skip


def _sealed(value: str | None) -> Origin | None:
    return unseal(value) if value else None


def _text_item(item: dict[str, Any], path: str) -> tuple[TextContent, Origin | None]:
    content = item.get("content")
    item_id = _str(item, "id", path, required=False)
    origin = _sealed(item_id)
    citations: tuple[Citation, ...] = ()
    if isinstance(content, str):
        text = content
    else:
        parts = _list(content, f"{path}.content")
        texts: list[str] = []
        cites: list[Citation] = []
        for j, part in enumerate(parts):
            ppath = f"{path}.content[{j}]"
            p = _obj(part, ppath)
            ptype = p.get("type")
            if ptype in ("output_text", "input_text"):
                texts.append(_str(p, "text", ppath) or "")
                notes = p.get("annotations")
                if notes is not None:
                    for k, note in enumerate(_list(notes, f"{ppath}.annotations")):
                        cites.append(_citation(_obj(note, f"{ppath}.annotations[{k}]")))
            elif ptype == "refusal":
                texts.append(_str(p, "refusal", ppath) or "")
            else:
                raise _fail(f"{ppath}.type", f"must be output_text or refusal (got {ptype!r})")
        text, citations = "".join(texts), tuple(cites)
    if origin is not None:
        signature = origin.signature
    elif item_id is None or is_generated(item_id):
        signature = None
    else:
        signature = text_signature(item_id, _str(item, "phase", path, required=False))
    return TextContent(text=text, signature=signature, citations=citations), origin


def _citation(note: dict[str, Any]) -> Citation:
    from ._server import citation

    return citation(note, _encode(note).decode())


def _reasoning_item(
    item: dict[str, Any], raw: bytes, path: str
) -> tuple[ThinkingContent, Origin | None]:
    texts: list[str] = []
    for key in ("summary", "content"):
        parts = item.get(key)
        if parts is None:
            continue
        for j, part in enumerate(_list(parts, f"{path}.{key}")):
            p = _obj(part, f"{path}.{key}[{j}]")
            texts.append(_str(p, "text", f"{path}.{key}[{j}]") or "")
    thinking = "\n\n".join(t for t in texts if t)
    origin = _sealed(_str(item, "encrypted_content", path, required=False))
    if origin is not None:
        return (
            ThinkingContent(
                thinking=thinking, signature=origin.signature, redacted=origin.redacted
            ),
            origin,
        )
    item_id = _str(item, "id", path, required=False)
    if item_id is not None and is_generated(item_id) and "encrypted_content" not in item:
        # A reasoning item the gateway made for a backend's thinking without a
        # signature: its text only.
        return ThinkingContent(thinking=thinking), None
    # The item itself, as the client sent it: what a Responses backend replays.
    return ThinkingContent(thinking=thinking, signature=raw.decode()), None


def _call_item(item: dict[str, Any], path: str) -> tuple[ToolCall, Origin | None]:
    call_id = _str(item, "call_id", path)
    name = _str(item, "name", path)
    arguments = _str(item, "arguments", path)
    assert call_id is not None and name is not None and arguments is not None
    item_id = _str(item, "id", path, required=False)
    origin = _sealed(item_id)
    if origin is not None:
        signature = origin.signature
    elif item_id is None or is_generated(item_id):
        signature = None
    else:
        signature = item_id
    args = _arguments(arguments, f"{path}.arguments")
    call = ToolCall(
        id=call_id, name=name, arguments=args, raw_arguments=arguments, signature=signature
    )
    return call, origin


def _tool_output(item: dict[str, Any], path: str, names: dict[str, str]) -> ToolResultMessage:
    call_id = _str(item, "call_id", path)
    assert call_id is not None
    name = names.get(call_id)
    if name is None:
        raise _fail(
            f"{path}.call_id",
            f"{call_id!r} answers no function_call earlier in input: the gateway keeps no "
            "responses, so send the call before its output",
        )
    output = item.get("output")
    content: tuple[UserContent, ...]
    if isinstance(output, str):
        content = (TextContent(text=output),)
    else:
        parts = _list(output, f"{path}.output")
        content = tuple(_part(p, f"{path}.output[{j}]", audio=False) for j, p in enumerate(parts))
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=content)


def _plain_text(content: Any, path: str) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for j, part in enumerate(_list(content, path)):
        p = _obj(part, f"{path}[{j}]")
        if p.get("type") not in ("input_text", "output_text", "text"):
            raise _fail(f"{path}[{j}].type", "must be input_text in a system or developer message")
        texts.append(_str(p, "text", f"{path}[{j}]") or "")
    return "".join(texts)


def _user_content(content: Any, path: str) -> str | tuple[UserContent, ...]:
    if content is None:
        raise _fail(f"{path}.content", "is missing")
    if isinstance(content, str):
        return content
    parts = _list(content, f"{path}.content")
    blocks = tuple(_part(p, f"{path}.content[{j}]") for j, p in enumerate(parts))
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        return blocks[0].text  # one text part reads as the plain string
    return blocks


def _part(value: Any, path: str, *, audio: bool = True) -> UserContent:
    """One input content part (API reference, "Input item list")."""
    p = _obj(value, path)
    kind = p.get("type")
    if kind == "input_text":
        text = _str(p, "text", path)
        assert text is not None
        return TextContent(text=text)
    if kind == "input_image":
        if p.get("file_id") is not None:
            raise _fail(f"{path}.file_id", "is not supported: send the image as a data: URL")
        url = _str(p, "image_url", path)
        assert url is not None
        m = _DATA_URL.fullmatch(url)
        if m is None:
            raise _fail(
                f"{path}.image_url",
                "must be a data: URL (data:image/png;base64,...): the gateway sends images "
                "to every backend as data; download the image and send its bytes",
            )
        return ImageContent(data=m.group(2), mime_type=m.group(1))
    if kind == "input_file":
        return _file(p, path)
    if kind == "input_audio" and audio:
        spec = _obj(p.get("input_audio"), f"{path}.input_audio")
        data = _str(spec, "data", f"{path}.input_audio")
        fmt = _str(spec, "format", f"{path}.input_audio")
        mime = _AUDIO_MIME.get(fmt or "")
        if mime is None:
            raise _fail(f"{path}.input_audio.format", f"must be wav or mp3 (got {fmt!r})")
        assert data is not None
        return AudioContent(data=data, mime_type=mime)
    want = "input_text, input_image or input_file" + (" or input_audio" if audio else "")
    raise _fail(f"{path}.type", f"must be {want} (got {kind!r})")


def _file(p: dict[str, Any], path: str) -> DocumentContent:
    name = _str(p, "filename", path, required=False)
    title = None if name is None or _MADE_UP_NAME.fullmatch(name) else name
    file_id = _str(p, "file_id", path, required=False)
    if file_id is not None:
        return DocumentContent(mime_type=_guess(name), file_id=file_id, title=title)
    url = _str(p, "file_url", path, required=False)
    if url is not None:
        return DocumentContent(mime_type=_guess(name or url), url=url, title=title)
    data = _str(p, "file_data", path, required=False)
    if data is None:
        raise _fail(path, "needs one of file_id, file_url or file_data")
    m = _DATA_URL.fullmatch(data)
    if m is None:
        raise _fail(f"{path}.file_data", "must be a data: URL (data:application/pdf;base64,...)")
    return DocumentContent(mime_type=m.group(1), data=m.group(2), title=title)


def _guess(name: str | None) -> str:
    """A document's MIME type from its name; PDF (what ``input_file`` takes) when unknown."""
    if name:
        guessed, _ = mimetypes.guess_type(name.split("?", 1)[0])
        if guessed:
            return guessed
    return "application/pdf"

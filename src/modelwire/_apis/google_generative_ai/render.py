"""modelwire's events → Gemini ``streamGenerateContent?alt=sse`` chunks, live; a final
message → the ``GenerateContentResponse`` of ``generateContent``.

References: https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent
(every event is a ``GenerateContentResponse``: one candidate whose ``content.parts`` hold
what is new, ``usageMetadata``, ``modelVersion``, ``responseId``; ``finishReason`` and
the whole usage on the last one), https://ai.google.dev/gemini-api/docs/thought-signatures
(``thoughtSignature`` on the part it signs; when streaming it may come in a part of its
own with empty text), https://ai.google.dev/gemini-api/docs/function-calling (a call
arrives whole in one ``functionCall`` part), https://ai.google.dev/gemini-api/docs/code-execution
and https://ai.google.dev/gemini-api/docs/google-search (``executableCode`` /
``codeExecutionResult`` parts; searches and citations as ``groundingMetadata``) and
https://ai.google.dev/gemini-api/docs/image-generation (a generated image is an
``inlineData`` part: ``mimeType`` and base64 ``data``).

Gemini numbers nothing: a chunk is its parts, so text and thoughts stream as they come,
one chunk per delta. A block's signature is known for sure only at its end, so it goes
in a part of its own then (the decoder puts it on the block it follows). A function
call goes whole at its end, its arguments an object. Citations have no part: they are
``groundingMetadata`` of the last chunk, whose segments count UTF-8 bytes of the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

import msgspec

from ...events import (
    BlockEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ...types import (
    AssistantContent,
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
from .._common import block_as_text
from .._server.reply import ErrorReply, arguments_object, declared_tools, text_of
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ._embed_render import EMBED_PATHS, render_embeddings
from .spec import (
    API_NAME,
    CODE_PARTS,
    FILTERED_FINISH,
    FILTERED_FINISH_REASONS,
    FINISH_OF,
    FINISH_REASONS,
    GROUNDING,
    MOCK_ID,
    ROLE,
    RPC_STATUS_OF,
    STREAM_ERROR_CODE,
    STREAM_ERROR_STATUS,
)

__all__ = ["SERVER", "Renderer", "error_body", "finish_reason", "message_body", "render_models",
           "request_model", "request_tools", "tool_results", "usage_object"]  # fmt: skip

_enc = msgspec.json.encode
_SEP = b"\r\n\r\n"  # Gemini ends each SSE event with CRLF CRLF
_HEAD = b'data: {"candidates":[{"content":{"parts":['
_ROLE = b'],"role":' + _enc(ROLE) + b'},"index":0}],"usageMetadata":'
_TEXT = b'{"text":'
_THOUGHT = b',"thought":true}'


def finish_reason(message: AssistantMessage) -> str:
    """The ``finishReason`` of a finished ``message``: a Gemini backend's own when it
    means the same stop, else the stop reason's (STOP for a turn that calls tools)."""
    reason = message.stop_reason or "stop"
    given = message.provider_stop_reason
    if message.api == API_NAME and given is not None and FINISH_REASONS.get(given) == reason:
        return given
    return FINISH_OF.get(reason, FINISH_OF["stop"])


def _filtered(message: AssistantMessage) -> bool:
    """Stopped by a content filter: Gemini says so with a ``finishReason`` (SAFETY…)
    on a normal last chunk, not with an error object."""
    return message.error is not None and message.error.kind == "content_filter"


def _filtered_finish(message: AssistantMessage) -> tuple[str, str | None]:
    """A filtered answer's ``finishReason`` and ``finishMessage``: a Gemini backend's
    own reason (its message is in modelwire's error text already), else SAFETY with
    the error's text."""
    given = message.provider_stop_reason
    if message.api == API_NAME and given in FILTERED_FINISH_REASONS:
        return given, None
    return FILTERED_FINISH, message.error.message if message.error is not None else None


def usage_object(u: Usage) -> dict[str, Any]:
    """The last chunk's ``usageMetadata``: ``promptTokenCount`` counts cached and
    cache-written tokens too (modelwire's ``Usage.input`` does not), and
    ``cachedContentTokenCount`` the reads."""
    prompt = u.input + u.cache_read + u.cache_write
    out = {"promptTokenCount": prompt, "candidatesTokenCount": u.output,
           "totalTokenCount": prompt + u.output}  # fmt: skip
    if u.cache_read:
        out["cachedContentTokenCount"] = u.cache_read
    return out


def _object(text: str | None) -> dict[str, Any] | None:
    """``text`` as the JSON object it holds (``None``: none, or not an object)."""
    if text is None:
        return None
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _call_part(call: ToolCall) -> dict[str, Any]:
    # ``id`` is optional in the API; the arguments an object (FunctionCall.args).
    part: dict[str, Any] = {
        "functionCall": {"name": call.name, "args": arguments_object(call), "id": call.id}
    }
    if call.signature:
        part["thoughtSignature"] = call.signature
    return part


def _block_part(
    block: ServerToolCall | ServerToolResult | ProviderItem | ImageContent,
) -> dict[str, Any] | None:
    """The part of a whole block: an image the model generated as ``inlineData`` (with
    its ``thoughtSignature``); code Gemini ran as it sent it (``raw``), else built from
    the block; ``None`` for a search (metadata) and another API's opaque item. Another
    API's provider-run tools read as text, as ``mw.handoff`` shows them."""
    if isinstance(block, ImageContent):
        image: dict[str, Any] = {"inlineData": {"mimeType": block.mime_type, "data": block.data}}
        if block.signature:
            image["thoughtSignature"] = block.signature
        return image
    if isinstance(block, ProviderItem):
        return _object(block.data) if block.api == API_NAME else None
    if block.provider_type == GROUNDING:
        return None
    if block.provider_type not in CODE_PARTS:
        text = block_as_text(block)
        return {"text": text} if text else None
    part = _object(block.raw)
    if part is not None:
        return part
    if isinstance(block, ServerToolCall):
        return {"executableCode": {"language": "PYTHON", **block.input, "id": block.id}}
    result = block.result if isinstance(block.result, dict) else {"output": block.result}
    outcome = "OUTCOME_FAILED" if block.is_error else "OUTCOME_OK"
    return {"codeExecutionResult": {"outcome": outcome, **result, "id": block.tool_call_id}}


def _answer_text(block: AssistantContent) -> str:
    """What ``block`` adds to the answer's text (what grounding offsets count)."""
    if isinstance(block, TextContent):
        return block.text
    part = _block_part(block) if isinstance(block, ServerToolCall | ServerToolResult) else None
    text = part.get("text") if part is not None else None
    return text if isinstance(text, str) else ""


def _kept(c: Citation) -> tuple[Any, Any]:
    """The grounding chunk and segment a Gemini citation's ``raw`` holds (``None``
    where it holds none)."""
    kept = _object(c.raw) or {}
    support = kept.get("groundingSupport")
    return kept.get("groundingChunk"), support.get("segment") if isinstance(support, dict) else None


def _grounding(content: tuple[AssistantContent, ...], native: bool) -> dict[str, Any] | None:
    """``groundingMetadata`` for the searches and citations: a web chunk per citation and
    a support whose segment is its span — a Gemini backend's own offsets (UTF-8 bytes
    of the answer text, as Gemini counts), else its whole text block's."""
    queries: list[str] = []
    chunks: list[dict[str, Any]] = []
    supports: list[dict[str, Any]] = []
    offset = 0
    for block in content:
        if isinstance(block, ServerToolCall) and block.provider_type == GROUNDING:
            found = block.input.get("queries")
            queries += [str(q) for q in found] if isinstance(found, list) else []
        size = len(_answer_text(block).encode())
        for c in block.citations if isinstance(block, TextContent) else ():
            # Gemini's own citation keeps the chunk and segment it came with (``raw``):
            # a file-search chunk stays one, with its passage, store and metadata.
            chunk, seg = _kept(c) if native else (None, None)
            chunks.append(chunk if isinstance(chunk, dict)
                          else {"web": {"uri": c.url or "", "title": c.title or ""}})  # fmt: skip
            start = c.start if native and c.start is not None else offset
            end = c.end if native and c.end is not None else offset + size
            segment: dict[str, Any] = {"startIndex": start, "endIndex": end}
            if isinstance(seg, dict):
                segment = seg
            elif c.cited_text is not None:
                segment["text"] = c.cited_text
            supports.append({"segment": segment, "groundingChunkIndices": [len(chunks) - 1]})
        offset += size
    if not (queries or chunks):
        return None
    out: dict[str, Any] = {}
    if queries:
        out["webSearchQueries"] = queries
    if chunks:
        out["groundingChunks"] = chunks
        out["groundingSupports"] = supports
    return out


def _response(
    parts: list[dict[str, Any]], message: AssistantMessage, model: str, rid: str
) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": parts, "role": ROLE}, "index": 0}
    if _filtered(message):
        cand["finishReason"], note = _filtered_finish(message)
        if note:
            cand["finishMessage"] = note
    else:
        cand["finishReason"] = finish_reason(message)
    grounding = _grounding(message.content, message.api == API_NAME)
    if grounding is not None:
        cand["groundingMetadata"] = grounding
    return {"candidates": [cand], "usageMetadata": usage_object(message.usage),
            "modelVersion": model, "responseId": rid}  # fmt: skip


def message_body(request: GatewayRequest, message: AssistantMessage, response_id: str) -> bytes:
    """The ``GenerateContentResponse`` of ``:generateContent``: one candidate holding
    every part (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse)."""
    parts: list[dict[str, Any]] = []
    for b in message.content:
        if isinstance(b, TextContent):
            parts.append({"text": b.text, "thoughtSignature": b.signature} if b.signature
                         else {"text": b.text})  # fmt: skip
        elif isinstance(b, ThinkingContent):
            if b.redacted:
                continue  # Gemini has no redacted thinking: nothing readable to send
            part: dict[str, Any] = {"text": b.thinking, "thought": True}
            if b.signature:
                part["thoughtSignature"] = b.signature
            parts.append(part)
        elif isinstance(b, ToolCall):
            parts.append(_call_part(b))
        else:
            block = _block_part(b)
            if block is not None:
                parts.append(block)
    return _enc(_response(parts, message, request.model, response_id or MOCK_ID))


class Renderer:
    """One streamed answer: :meth:`feed` each event, write what it returns."""

    __slots__ = ("_closed", "_meta", "_model", "_prompt", "_rid", "_tail")

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        self._model = request.model
        self._rid = response_id or MOCK_ID
        self._meta = (b',"modelVersion":' + _enc(self._model) + b',"responseId":'
                      + _enc(self._rid) + b"}" + _SEP)  # fmt: skip
        self._prompt = -1
        self._tail = b""  # what follows a chunk's parts: role, usage so far, ids
        self._usage(Usage())
        self._closed = False  # the last chunk or an error was written: nothing more

    def _usage(self, u: Usage) -> None:
        # Every chunk carries ``usageMetadata``: the prompt count as known so far
        # (refreshed as blocks start); the last chunk carries the whole usage.
        prompt = u.input + u.cache_read + u.cache_write
        if prompt != self._prompt:
            self._prompt = prompt
            usage = b'{"promptTokenCount":%d,"totalTokenCount":%d}' % (prompt, prompt)
            self._tail = _ROLE + usage + self._meta

    def _chunk(self, part: dict[str, Any]) -> bytes:
        return _HEAD + _enc(part) + self._tail

    def feed(self, event: Event) -> bytes:
        """The bytes ``event`` becomes (``b""`` for events with no form here)."""
        t = type(event)
        if t is TextDeltaEvent or t is ThinkingDeltaEvent:
            ev: Any = event
            delta: str = ev.delta
            if not delta or self._closed:
                return b""
            end = _THOUGHT if t is ThinkingDeltaEvent else b"}"
            return _HEAD + _TEXT + _enc(delta) + end + self._tail
        if self._closed:
            return b""
        if isinstance(event, TextStartEvent | ThinkingStartEvent | ToolCallStartEvent):
            self._usage(event.partial.usage)
            return b""
        if isinstance(event, TextEndEvent):
            sig = event.content.signature
            return self._chunk({"text": "", "thoughtSignature": sig}) if sig else b""
        if isinstance(event, ThinkingEndEvent):
            block = event.content
            if not block.signature or block.redacted:
                return b""
            return self._chunk({"text": "", "thought": True, "thoughtSignature": block.signature})
        if isinstance(event, ToolCallEndEvent):
            return self._chunk(_call_part(event.tool_call))
        if isinstance(event, BlockEvent):
            self._usage(event.partial.usage)
            part = _block_part(event.content)
            return self._chunk(part) if part is not None else b""
        if isinstance(event, DoneEvent):
            return self._last(event.message)
        if isinstance(event, ErrorEvent):
            message = event.message
            if _filtered(message):
                return self._last(message)
            self._closed = True
            # A google.rpc.Status in a data event, no finishReason: the client reads
            # the stream as failed.
            err = message.error
            text = err.message if err is not None else "the response was aborted"
            status = {"code": STREAM_ERROR_CODE, "message": text, "status": STREAM_ERROR_STATUS}
            return b"data: " + _enc({"error": status}) + _SEP
        # Start, restart (the next model's parts simply follow), tool-call deltas
        # (a call goes whole at its end), citations (grounding of the last chunk).
        return b""

    def _last(self, message: AssistantMessage) -> bytes:
        self._closed = True
        body = _response([{"text": ""}], message, self._model, self._rid)
        return b"data: " + _enc(body) + _SEP


def tool_results(body: object) -> list[str]:
    """The ``response`` of every ``functionResponse`` part of the contents."""
    found: list[str] = []
    for c in body.get("contents", []) if isinstance(body, dict) else []:
        for part in c.get("parts", []) if isinstance(c, dict) else []:
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                found.append(text_of(part["functionResponse"].get("response")))
    return found


def request_model(path: str, body: object) -> str | None:
    """The model id, a path segment: ``/models/{id}:streamGenerateContent``."""
    tail = path.split("?", 1)[0].rsplit("/models/", 1)[-1]
    return unquote(tail.split(":", 1)[0]) or None


def request_tools(body: object) -> list[tuple[str, dict[str, Any]]]:
    """``tools[].functionDeclarations[]``: name and parameters."""
    found: list[tuple[str, dict[str, Any]]] = []
    for tool in body.get("tools", []) if isinstance(body, dict) else []:
        decls = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        found += declared_tools(decls, spec=None, name="name", schema="parameters")
    return found


def error_body(status: int, message: str, kind: str | None = None) -> ErrorReply:
    """Google's ``{"error": {"code", "message", "status"}}``."""
    name = kind or RPC_STATUS_OF.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return ErrorReply(body={"error": {"code": status, "message": message, "status": name}})


def render_models(ids: Sequence[str]) -> dict[str, Any]:
    """``GET /v1beta/models`` (https://ai.google.dev/api/models#method:-models.list)."""
    return {"models": [{"name": f"models/{i}", "baseModelId": i, "version": "001",
                        "displayName": i, "inputTokenLimit": 1048576,
                        "outputTokenLimit": 65536,
                        "supportedGenerationMethods": ["generateContent",
                                                       "streamGenerateContent"]}
                       for i in ids]}  # fmt: skip


#: How a server speaks the Gemini API (the mock server).
SERVER = WireServer(
    renderer=Renderer, message_body=message_body, tool_results=tool_results,
    request_model=request_model, version_segment="/v1beta", request_tools=request_tools,
    streams=lambda path, body: True,  # the method, not the body, says it
    complete_paths=("/models/{model}:generateContent",), error_body=error_body,
    models_path="/models", render_models=render_models, models_header="x-goog-api-key",
    sse_query="alt=sse",
    embed_paths=EMBED_PATHS, render_embeddings=render_embeddings,
)  # fmt: skip

"""modelwire's events → the Responses stream, live (API reference, "Streaming events":
https://platform.openai.com/docs/api-reference/responses-streaming).

The sequence is the one OpenAI sends, so the official SDK's stream accumulator
(``client.responses.stream``) takes it: ``response.created``, ``response.in_progress``;
per output item ``response.output_item.added``, its parts and deltas
(``content_part.*`` + ``output_text.*`` for a message, ``reasoning_summary_part.*`` +
``reasoning_summary_text.*`` for reasoning, ``function_call_arguments.*`` for a call),
``response.output_item.done``; then ``response.completed`` (``response.incomplete``
for a ``length`` stop) with every item and the usage. A failure after the stream
started is ``response.failed`` with the error and the items finished so far, and
nothing after it.

Deltas are written from pre-encoded pieces (the event's constant head, the item's
ids, then the JSON string of the delta): no dict is built per delta.

A reasoning item from a Responses backend is sent when it ends: its id is known only
then (modelwire keeps the whole item, ``encrypted_content`` included, as the
signature), and the SDK refuses an item whose id changes between ``added`` and
``done``. Thinking from any other backend streams live.
"""

from __future__ import annotations

from typing import Any

from ..._apis._common import raw_or_json_arguments
from ...events import (
    BlockEvent,
    CitationEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    RestartEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ...types import AssistantMessage, TextContent, ThinkingContent, ToolCall
from .._frontend import GatewayRequest
from ._errors import failure
from ._items import (
    API,
    annotation,
    block_item,
    call_id_of,
    call_item,
    encode,
    now,
    reasoning_id,
    reasoning_item,
    response_object,
    text_id,
    text_item,
)

__all__ = ["ResponsesRenderer"]

_TEXT, _THINKING, _CALL = 0, 1, 2


def _head(kind: str) -> bytes:
    return f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":'.encode()


_TEXT_DELTA = _head("response.output_text.delta")
_SUMMARY_DELTA = _head("response.reasoning_summary_text.delta")
_ARGS_DELTA = _head("response.function_call_arguments.delta")
_DELTA_KEY = b',"delta":'
_TEXT_TAIL = b',"logprobs":[]}\n\n'
_TAIL = b"}\n\n"
_EMPTY_TEXT_PART = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
_EMPTY_SUMMARY_PART = {"type": "summary_text", "text": ""}


class _Item:
    """One output item being streamed."""

    __slots__ = ("buffer", "id", "index", "kind", "mid", "notes", "phase", "streamed")

    def __init__(self, kind: int, index: int, item_id: str) -> None:
        self.kind = kind
        self.index = index
        self.id = item_id
        self.phase: str | None = None
        self.notes = 0  # annotations streamed
        # Whether a delta was written: a block that arrives whole (an Ollama or Gemini
        # call) still gets one, for clients that read the deltas only.
        self.streamed = False
        self.buffer: list[str] | None = None  # a Responses backend's reasoning, until it ends
        ids = encode(item_id).decode()
        if kind == _TEXT:
            mid = f',"item_id":{ids},"output_index":{index},"content_index":0'
        elif kind == _THINKING:
            mid = f',"item_id":{ids},"output_index":{index},"summary_index":0'
        else:
            mid = f',"item_id":{ids},"output_index":{index}'
        self.mid = mid.encode()


class ResponsesRenderer:
    """One streamed answer's events → Responses SSE bytes."""

    __slots__ = ("_created", "_done", "_items", "_open", "_output", "_request", "_rid", "_seq")

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        self._request = request
        self._rid = response_id
        self._seq = 0
        self._created = now()
        self._open: dict[int, _Item] = {}  # content index → item being streamed
        self._output: dict[int, Any] = {}  # output index → finished item
        self._items = 0  # output indexes given so far
        self._done = False

    # ------------------------------------------------------------------ writing

    def _event(self, kind: str, fields: dict[str, Any]) -> bytes:
        seq = self._seq
        self._seq = seq + 1
        body = encode({"type": kind, "sequence_number": seq, **fields})
        return b"event: " + kind.encode() + b"\ndata: " + body + b"\n\n"

    def _delta(self, head: bytes, item: _Item, delta: str, tail: bytes) -> bytes:
        seq = self._seq
        self._seq = seq + 1
        return b"".join((head, str(seq).encode(), item.mid, _DELTA_KEY, encode(delta), tail))

    def _response(
        self, status: str, message: AssistantMessage | None, **extra: Any
    ) -> dict[str, Any]:
        output = [self._output[k] for k in sorted(self._output)]
        usage = message.usage if message is not None and status != "in_progress" else None
        return response_object(
            self._request, self._rid, self._created, status, output if status != "in_progress" else (),
            usage, **extra,
        )  # fmt: skip

    # ------------------------------------------------------------------ events

    def feed(self, event: Event) -> bytes:
        if self._done:
            return b""
        if isinstance(event, TextDeltaEvent):
            item = self._open.get(event.content_index)
            if item is None or not event.delta:
                return b""
            item.streamed = True
            return self._delta(_TEXT_DELTA, item, event.delta, _TEXT_TAIL)
        if isinstance(event, ToolCallDeltaEvent):
            item = self._open.get(event.content_index)
            if item is None or not event.delta:
                return b""
            item.streamed = True
            return self._delta(_ARGS_DELTA, item, event.delta, _TAIL)
        if isinstance(event, ThinkingDeltaEvent):
            item = self._open.get(event.content_index)
            if item is None or not event.delta:
                return b""
            if item.buffer is not None:
                item.buffer.append(event.delta)
                return b""
            item.streamed = True
            return self._delta(_SUMMARY_DELTA, item, event.delta, _TAIL)
        if isinstance(event, TextStartEvent | ThinkingStartEvent | ToolCallStartEvent):
            return self._start(event)
        if isinstance(event, TextEndEvent):
            return self._text_end(event.content_index, event.content, event.partial)
        if isinstance(event, ThinkingEndEvent):
            return self._thinking_end(event.content_index, event.content, event.partial)
        if isinstance(event, ToolCallEndEvent):
            return self._call_end(event.content_index, event.tool_call, event.partial)
        if isinstance(event, CitationEvent):
            return self._citation(event)
        if isinstance(event, BlockEvent):
            return self._block(event)
        if isinstance(event, StartEvent):
            obj = self._response("in_progress", None)
            return self._event("response.created", {"response": obj}) + self._event(
                "response.in_progress", {"response": obj}
            )
        if isinstance(event, DoneEvent):
            return self._finish(event)
        if isinstance(event, ErrorEvent):
            return self._fail(event.message)
        if isinstance(event, RestartEvent):
            return self._restart(event.message)
        return b""  # pragma: no cover - every event type is handled above

    def _new(self, kind: int, content_index: int, item_id: str) -> _Item:
        item = _Item(kind, self._items, item_id)
        self._items += 1
        self._open[content_index] = item
        return item

    def _start(self, event: TextStartEvent | ThinkingStartEvent | ToolCallStartEvent) -> bytes:
        ci = event.content_index
        partial = event.partial
        block = partial.content[ci]
        n = self._items
        if isinstance(block, TextContent):
            item_id, phase = text_id(block, partial, self._rid, n)
            item = self._new(_TEXT, ci, item_id)
            item.phase = phase
            added = text_item(item_id, phase, "", (), "in_progress")
            added["content"] = []
            return self._event(
                "response.output_item.added", {"output_index": item.index, "item": added}
            ) + self._event(
                "response.content_part.added",
                {"item_id": item_id, "output_index": item.index, "content_index": 0,
                 "part": _EMPTY_TEXT_PART},
            )  # fmt: skip
        if isinstance(block, ThinkingContent):
            if partial.api == API:
                item = self._new(_THINKING, ci, "")
                item.buffer = []
                return b""
            item = self._new(_THINKING, ci, reasoning_id(block, partial, self._rid, n))
            return self._reasoning_head(item)
        assert isinstance(block, ToolCall)
        item = self._new(_CALL, ci, call_id_of(block, partial, self._rid, n))
        added = call_item(block, item.id, "in_progress", "")
        return self._event(
            "response.output_item.added", {"output_index": item.index, "item": added}
        )

    def _reasoning_head(self, item: _Item) -> bytes:
        added = {"id": item.id, "type": "reasoning", "summary": []}
        return self._event(
            "response.output_item.added", {"output_index": item.index, "item": added}
        ) + self._event(
            "response.reasoning_summary_part.added",
            {"item_id": item.id, "output_index": item.index, "summary_index": 0,
             "part": _EMPTY_SUMMARY_PART},
        )  # fmt: skip

    def _text_end(self, ci: int, block: TextContent, partial: AssistantMessage) -> bytes:
        item = self._open.pop(ci, None)
        if item is None:
            return b""
        same = partial.api == API
        notes = [annotation(c, same) for c in block.citations]
        done = text_item(item.id, item.phase, block.text, notes, "completed")
        self._output[item.index] = done
        common = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        whole = b""
        if not item.streamed and block.text:
            whole = self._delta(_TEXT_DELTA, item, block.text, _TEXT_TAIL)
        return whole + b"".join((
            self._event("response.output_text.done",
                        {**common, "text": block.text, "logprobs": []}),
            self._event("response.content_part.done", {**common, "part": done["content"][0]}),
            self._event("response.output_item.done", {"output_index": item.index, "item": done}),
        ))  # fmt: skip

    def _thinking_end(self, ci: int, block: ThinkingContent, partial: AssistantMessage) -> bytes:
        item = self._open.pop(ci, None)
        if item is None:
            return b""
        out: list[bytes] = []
        if item.buffer is not None:
            item.id = reasoning_id(block, partial, self._rid, item.index)
            item.mid = _Item(_THINKING, item.index, item.id).mid
            out.append(self._reasoning_head(item))
            out.extend(self._delta(_SUMMARY_DELTA, item, p, _TAIL) for p in item.buffer)
        elif not item.streamed and block.thinking:
            out.append(self._delta(_SUMMARY_DELTA, item, block.thinking, _TAIL))
        done = reasoning_item(block, partial, item.id)
        self._output[item.index] = done
        common = {"item_id": item.id, "output_index": item.index, "summary_index": 0}
        part = {"type": "summary_text", "text": block.thinking}
        out.append(self._event("response.reasoning_summary_text.done",
                               {**common, "text": block.thinking}))  # fmt: skip
        out.append(self._event("response.reasoning_summary_part.done", {**common, "part": part}))
        out.append(self._event("response.output_item.done",
                               {"output_index": item.index, "item": done}))  # fmt: skip
        return b"".join(out)

    def _call_end(self, ci: int, call: ToolCall, partial: AssistantMessage) -> bytes:
        item = self._open.pop(ci, None)
        if item is None:
            return b""
        args = raw_or_json_arguments(call.raw_arguments, call.arguments)
        done = call_item(call, item.id, "completed", args)
        self._output[item.index] = done
        whole = b""
        if not item.streamed and args:
            whole = self._delta(_ARGS_DELTA, item, args, _TAIL)
        return (
            whole
            + self._event(
                "response.function_call_arguments.done",
                {
                    "item_id": item.id,
                    "output_index": item.index,
                    "name": call.name,
                    "arguments": args,
                },
            )
            + self._event("response.output_item.done", {"output_index": item.index, "item": done})
        )

    def _citation(self, event: CitationEvent) -> bytes:
        item = self._open.get(event.content_index)
        if item is None or item.kind != _TEXT:
            return b""
        n = item.notes
        item.notes = n + 1
        note = annotation(event.citation, event.partial.api == API)
        return self._event(
            "response.output_text.annotation.added",
            {"item_id": item.id, "output_index": item.index, "content_index": 0,
             "annotation_index": n, "annotation": note},
        )  # fmt: skip

    def _block(self, event: BlockEvent) -> bytes:
        done = block_item(event.content, event.partial, self._rid, self._items)
        if done is None:
            return b""
        index = self._items
        self._items += 1
        self._output[index] = done
        return self._event(
            "response.output_item.added", {"output_index": index, "item": done}
        ) + self._event("response.output_item.done", {"output_index": index, "item": done})

    # ------------------------------------------------------------------ the end

    def _finish(self, event: DoneEvent) -> bytes:
        self._done = True
        message = event.message
        if event.reason == "length":
            why = "max_output_tokens"
            if message.api == API and message.provider_stop_reason not in (None, "incomplete"):
                why = str(message.provider_stop_reason)
            obj = self._response("incomplete", message, incomplete=why)
            return self._event("response.incomplete", {"response": obj})
        obj = self._response("completed", message)
        return self._event("response.completed", {"response": obj})

    def _fail(self, message: AssistantMessage) -> bytes:
        self._done = True
        obj = self._response("failed", message, error=failure(message.error))
        return self._event("response.failed", {"response": obj})

    def _restart(self, message: AssistantMessage) -> bytes:
        # The next model starts over from content index 0: the items left open end
        # as incomplete, and only the next model's items make the final output.
        out: list[bytes] = []
        for ci, item in self._open.items():
            block = message.content[ci] if ci < len(message.content) else None
            if item.kind == _TEXT and isinstance(block, TextContent):
                done: Any = text_item(item.id, item.phase, block.text, (), "incomplete")
            elif item.kind == _CALL and isinstance(block, ToolCall):
                done = call_item(block, item.id, "incomplete")
            elif item.buffer is None:
                done = {"id": item.id, "type": "reasoning", "summary": [], "status": "incomplete"}
            else:
                continue  # never announced
            out.append(self._event("response.output_item.done",
                                   {"output_index": item.index, "item": done}))  # fmt: skip
        self._open.clear()
        self._output.clear()
        return b"".join(out)

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
``done``. Thinking from any other backend streams live. A function call from a
backend whose profile says its call signatures come late
(``Capabilities.late_call_signatures``, ``GatewayRequest.backend``) is sent when it ends too, for the same reason: its item id carries that signature.

Items follow one another, as OpenAI sends them, also when the backend's blocks
overlap (Chat Completions and Ollama end every block at the finish): a text or
reasoning item still open when the next block starts is done with what it holds,
and text that comes for it later continues in a new item of its own. Function calls
stay open until they end (the SDK takes calls whose arguments interleave).

A Responses backend's call that the client executes (``shell_call``,
``apply_patch_call``, ``custom_tool_call``…) is sent when it ends, as the item it
came as (its signature), so the client runs what it knows how to run; a generated
image is an ``image_generation_call`` item holding it (``_output_items``).
"""

from __future__ import annotations

from typing import Any

from ..._wire.request import OUTPUT_TOOL
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
from ...types import AssistantMessage, ServerToolResult, TextContent, ThinkingContent, ToolCall
from .._common import raw_or_json_arguments
from .._profile import origin_profile
from .._server.reply import declared_tools
from .._server.request import GatewayRequest
from .._server.wire import WireServer
from ..openai_chat.render import render_models
from ._error_shape import failure
from ._output_items import (
    API,
    annotation,
    block_item,
    built_call,
    call_id_of,
    call_item,
    client_item,
    encode,
    incomplete_reason,
    message_body,
    new_id,
    now,
    paired_result,
    reasoning_id,
    reasoning_item,
    response_object,
    text_id,
    text_item,
)
from ._render_items import CALL as _CALL
from ._render_items import CLIENT as _CLIENT
from ._render_items import TEXT as _TEXT
from ._render_items import THINKING as _THINKING
from ._render_items import Item as _Item
from ._render_items import mid as _mid
from .parse import tool_results
from .spec import RESPONSE_ID_PREFIX, TERMINAL_EVENTS, Stop

__all__ = ["SERVER", "ResponsesRenderer", "message_body"]


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


class ResponsesRenderer:
    """One streamed answer's events → Responses SSE bytes."""

    __slots__ = ("_answer", "_closed", "_created", "_done", "_held", "_items", "_late_sigs",
                 "_open", "_output", "_request", "_rid", "_seq")  # fmt: skip

    def __init__(self, request: GatewayRequest, response_id: str) -> None:
        self._request = request
        self._rid = response_id
        self._seq = 0
        self._created = now()
        self._open: dict[int, _Item] = {}  # content index → item being streamed
        # content index → (characters, citations) already sent of a text or thinking
        # block whose item was done before the block ended (a later block started).
        self._closed: dict[int, tuple[int, int]] = {}
        self._output: dict[int, Any] = {}  # output index → finished item
        self._items = 0  # output indexes given so far
        self._done = False
        # A provider-run call given as blocks (no item as received), held until the next
        # event says whether its result follows: both go in one item.
        self._held: BlockEvent | None = None
        self._late_sigs: bool | None = None  # whether call signatures may come late
        # Structured output asked for as a forced tool call (``output_mode="tool"``, for a
        # backend without a native field): that call is the answer's text to the client,
        # which declared no such tool (modelwire's final message turns it into text too).
        tools = request.context.tools or ()
        self._answer = "output" in request.options and all(t.name != OUTPUT_TOOL for t in tools)

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
        live = status != "in_progress"
        output = [self._output[k] for k in sorted(self._output)] if live else []
        usage = message.usage if message is not None and live else None
        return response_object(
            self._request, self._rid, self._created, status, output, usage, **extra
        )

    # ------------------------------------------------------------------ events

    def feed(self, event: Event) -> bytes:
        if self._done:
            return b""
        if self._held is not None and not isinstance(event, BlockEvent):
            return self._block(None) + self.feed(event)
        if isinstance(event, TextDeltaEvent):
            item = self._open.get(event.content_index)
            if item is None:
                return self._late(event) if event.delta else b""
            if not event.delta:
                return b""
            item.streamed = True
            return self._delta(_TEXT_DELTA, item, event.delta, _TEXT_TAIL)
        if isinstance(event, ToolCallDeltaEvent):
            item = self._open.get(event.content_index)
            if item is None or not event.delta:
                return b""
            if item.buffer is not None:
                item.buffer.append(event.delta)
                return b""
            item.streamed = True
            if item.kind == _TEXT:  # the answer tool: its arguments are the answer's text
                return self._delta(_TEXT_DELTA, item, event.delta, _TEXT_TAIL)
            return self._delta(_ARGS_DELTA, item, event.delta, _TAIL)
        if isinstance(event, ThinkingDeltaEvent):
            item = self._open.get(event.content_index)
            if item is None:
                return self._late(event) if event.delta else b""
            if not event.delta:
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

    # ------------------------------------------------------------------ items in turn

    def _new(self, kind: int, ci: int, item_id: str, offset: int = 0, cite0: int = 0) -> _Item:
        item = _Item(kind, self._items, item_id, offset, cite0)
        self._items += 1
        self._open[ci] = item
        return item

    def _late_signatures(self, partial: AssistantMessage) -> bool:
        """Whether the backend may give a call's signature only as the call ends: the
        routed backend's profile, else (not routed) that of the model answering."""
        if self._late_sigs is None:
            backend = self._request.backend
            caps = backend if backend is not None else origin_profile(partial)
            self._late_sigs = bool(caps.late_call_signatures)
        return self._late_sigs

    def _close_open(self, partial: AssistantMessage) -> bytes:
        """Finish the text and reasoning items still open with what they hold (a new
        block starts); the rest of their blocks, if any, comes as new items."""
        out: list[bytes] = []
        for ci, item in list(self._open.items()):
            if item.kind == _CALL or item.buffer is not None or ci >= len(partial.content):
                continue
            block = partial.content[ci]
            if isinstance(block, TextContent):
                del self._open[ci]
                self._closed[ci] = (len(block.text), len(block.citations))
                out.append(self._text_done(item, block, partial))
            elif isinstance(block, ThinkingContent):
                del self._open[ci]
                self._closed[ci] = (len(block.thinking), 0)
                out.append(self._thinking_done(item, block, partial))
            # (The answer tool of structured output streams as text and stays open: a
            # call's arguments cannot continue in another item.)
        return b"".join(out)

    def _late(self, event: TextDeltaEvent | ThinkingDeltaEvent | CitationEvent) -> bytes:
        """A delta (or citation) for a block whose item was done early: a new item
        continues it, after the items open now are done."""
        ci = event.content_index
        sent = self._closed.pop(ci, None)
        if sent is None:
            return b""
        partial = event.partial
        out = self._close_open(partial)
        if isinstance(event, ThinkingDeltaEvent):
            item = self._new(_THINKING, ci, new_id("reasoning", self._rid, self._items), sent[0])
            out += self._reasoning_head(item)
            item.streamed = True
            return out + self._delta(_SUMMARY_DELTA, item, event.delta, _TAIL)
        item = self._new(_TEXT, ci, new_id("message", self._rid, self._items), sent[0], sent[1])
        out += self._text_head(item)
        if isinstance(event, CitationEvent):
            return out + self._citation(event)
        item.streamed = True
        return out + self._delta(_TEXT_DELTA, item, event.delta, _TEXT_TAIL)

    def _start(self, event: TextStartEvent | ThinkingStartEvent | ToolCallStartEvent) -> bytes:
        ci = event.content_index
        partial = event.partial
        block = partial.content[ci]
        out = self._close_open(partial) if self._open else b""
        n = self._items
        if isinstance(block, TextContent):
            item_id, phase = text_id(block, partial, self._rid, n)
            item = self._new(_TEXT, ci, item_id)
            item.phase = phase
            return out + self._text_head(item)
        if isinstance(block, ThinkingContent):
            if partial.api == API:
                item = self._new(_THINKING, ci, "")
                item.buffer = []
                return out
            item = self._new(_THINKING, ci, reasoning_id(block, partial, self._rid, n))
            return out + self._reasoning_head(item)
        assert isinstance(block, ToolCall)
        if self._answer and block.name == OUTPUT_TOOL:
            item = self._new(_TEXT, ci, new_id("message", self._rid, n))
            return out + self._text_head(item)
        if client_item(block, partial) is not None:
            # Its item, as the backend finishes it, is what the client is given.
            item = self._new(_CLIENT, ci, "")
            item.buffer = []
            return out
        item = self._new(_CALL, ci, call_id_of(block, partial, self._rid, n))
        if not block.signature and (partial.api == API or self._late_signatures(partial)):
            # (A Responses call without its id yet, as a scripted reply gives it, may
            # turn out to be an item the client executes: it is sent whole too.)
            # Its signature comes as it ends, and the item's id must hold it from the
            # start (clients key a call's deltas by item id): the call is sent whole.
            item.buffer = []
            return out
        added = call_item(block, item.id, "in_progress", "", self._request.namespaces)
        return out + self._event(
            "response.output_item.added", {"output_index": item.index, "item": added}
        )

    def _text_head(self, item: _Item) -> bytes:
        added = text_item(item.id, item.phase, "", (), "in_progress")
        added["content"] = []
        return self._event(
            "response.output_item.added", {"output_index": item.index, "item": added}
        ) + self._event(
            "response.content_part.added",
            {"item_id": item.id, "output_index": item.index, "content_index": 0,
             "part": _EMPTY_TEXT_PART},
        )  # fmt: skip

    def _reasoning_head(self, item: _Item) -> bytes:
        added = {"id": item.id, "type": "reasoning", "summary": []}
        return self._event(
            "response.output_item.added", {"output_index": item.index, "item": added}
        ) + self._event(
            "response.reasoning_summary_part.added",
            {"item_id": item.id, "output_index": item.index, "summary_index": 0,
             "part": _EMPTY_SUMMARY_PART},
        )  # fmt: skip

    # ------------------------------------------------------------------ items done

    def _text_end(self, ci: int, block: TextContent, partial: AssistantMessage) -> bytes:
        item = self._open.pop(ci, None)
        if item is None:
            sent = self._closed.pop(ci, None)
            if sent is None or (len(block.text) <= sent[0] and len(block.citations) <= sent[1]):
                return b""
            # More came for an item done early than its deltas said: a last item.
            out = self._close_open(partial)
            item = self._new(_TEXT, ci, new_id("message", self._rid, self._items), *sent)
            del self._open[ci]
            return out + self._text_head(item) + self._text_done(item, block, partial)
        return self._text_done(item, block, partial)

    def _text_done(self, item: _Item, block: TextContent, partial: AssistantMessage) -> bytes:
        same = partial.api == API
        text = block.text[item.offset :]
        notes = [annotation(c, same, len(text)) for c in block.citations[item.cite0 :]]
        done = text_item(item.id, item.phase, text, notes, "completed")
        self._output[item.index] = done
        common = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        whole = b""
        if not item.streamed and text:
            whole = self._delta(_TEXT_DELTA, item, text, _TEXT_TAIL)
        # Another API's citations wait for the item's end, when their span is known.
        for n in range(item.notes, len(notes)):
            whole += self._event(
                "response.output_text.annotation.added",
                {**common, "annotation_index": n, "annotation": notes[n]},
            )
        item.notes = len(notes)
        return whole + b"".join((
            self._event("response.output_text.done", {**common, "text": text, "logprobs": []}),
            self._event("response.content_part.done", {**common, "part": done["content"][0]}),
            self._event("response.output_item.done", {"output_index": item.index, "item": done}),
        ))  # fmt: skip

    def _thinking_end(self, ci: int, block: ThinkingContent, partial: AssistantMessage) -> bytes:
        item = self._open.pop(ci, None)
        if item is None:
            sent = self._closed.pop(ci, None)
            if sent is None or len(block.thinking) <= sent[0]:
                return b""
            head = self._close_open(partial)
            item = self._new(_THINKING, ci, new_id("reasoning", self._rid, self._items), sent[0])
            del self._open[ci]
            return head + self._reasoning_head(item) + self._thinking_done(item, block, partial)
        out: list[bytes] = []
        if item.buffer is not None:
            item.id = reasoning_id(block, partial, self._rid, item.index)
            item.mid = _mid(_THINKING, item.index, item.id)
            if not block.thinking:
                # Encrypted reasoning with no summary: the item alone, as OpenAI sends it.
                done = reasoning_item(block, partial, item.id)
                self._output[item.index] = done
                added = {"id": item.id, "type": "reasoning", "summary": []}
                return self._event(
                    "response.output_item.added", {"output_index": item.index, "item": added}
                ) + self._event(
                    "response.output_item.done", {"output_index": item.index, "item": done}
                )
            out.append(self._reasoning_head(item))
            out.extend(self._delta(_SUMMARY_DELTA, item, p, _TAIL) for p in item.buffer)
            item.streamed = bool(item.buffer)
        out.append(self._thinking_done(item, block, partial))
        return b"".join(out)

    def _thinking_done(
        self, item: _Item, block: ThinkingContent, partial: AssistantMessage
    ) -> bytes:
        text = block.thinking[item.offset :]
        if item.offset:
            block = ThinkingContent(
                thinking=text, signature=block.signature, redacted=block.redacted
            )
        done = reasoning_item(block, partial, item.id)
        self._output[item.index] = done
        common = {"item_id": item.id, "output_index": item.index, "summary_index": 0}
        out: list[bytes] = []
        if not item.streamed and text:
            out.append(self._delta(_SUMMARY_DELTA, item, text, _TAIL))
        out.append(self._event("response.reasoning_summary_text.done", {**common, "text": text}))
        out.append(self._event("response.reasoning_summary_part.done",
                               {**common, "part": {"type": "summary_text", "text": text}}))  # fmt: skip
        out.append(self._event("response.output_item.done",
                               {"output_index": item.index, "item": done}))  # fmt: skip
        return b"".join(out)

    def _call_end(self, ci: int, call: ToolCall, partial: AssistantMessage) -> bytes:
        item = self._open.pop(ci, None)
        if item is None:
            return b""
        args = raw_or_json_arguments(call.raw_arguments, call.arguments)
        if item.kind == _TEXT:
            return self._text_done(item, TextContent(text=args), partial)
        if item.kind == _CLIENT or item.buffer is not None:
            native = client_item(call, partial)
            if native is not None:
                self._output[item.index] = native
                return self._event(
                    "response.output_item.added", {"output_index": item.index, "item": native}
                ) + self._event(
                    "response.output_item.done", {"output_index": item.index, "item": native}
                )
            item.kind = _CALL  # it ended without its item: a function call after all
        whole = b""
        if item.buffer is not None:
            item.id = call_id_of(call, partial, self._rid, item.index)
            item.mid = _mid(_CALL, item.index, item.id)
            added = call_item(call, item.id, "in_progress", "", self._request.namespaces)
            whole = self._event(
                "response.output_item.added", {"output_index": item.index, "item": added}
            )
            whole += b"".join(self._delta(_ARGS_DELTA, item, p, _TAIL) for p in item.buffer)
            item.streamed = bool(item.buffer)
        done = call_item(call, item.id, "completed", args, self._request.namespaces)
        self._output[item.index] = done
        if not item.streamed and args:
            whole += self._delta(_ARGS_DELTA, item, args, _TAIL)
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
        if item is None:
            return self._late(event)
        if item.kind != _TEXT or event.partial.api != API:
            return b""  # (another API's: sent when the item is done, with its span)
        n = item.notes
        item.notes = n + 1
        note = annotation(event.citation, True, 0)
        return self._event(
            "response.output_text.annotation.added",
            {"item_id": item.id, "output_index": item.index, "content_index": 0,
             "annotation_index": n, "annotation": note},
        )  # fmt: skip

    def _block(self, event: BlockEvent | None) -> bytes:
        held, self._held = self._held, None
        out = b""
        if held is not None:  # the held call's item, with its result if that is this block
            result = paired_result(held.content, event.content if event else None)
            out = self._item(held, result)
            if result is not None:
                return out
        if event is None:
            return out
        if event.partial.api == API and built_call(event.content):
            self._held = event
            return out
        return out + self._item(event, None)

    def _item(self, event: BlockEvent, result: ServerToolResult | None) -> bytes:
        done = block_item(event.content, event.partial, self._rid, self._items, result)
        if done is None:
            return b""
        out = self._close_open(event.partial) if self._open else b""
        index = self._items
        self._items += 1
        self._output[index] = done
        return (
            out
            + self._event("response.output_item.added", {"output_index": index, "item": done})
            + self._event("response.output_item.done", {"output_index": index, "item": done})
        )

    # ------------------------------------------------------------------ the end

    def _end(self, status: str, message: AssistantMessage, **extra: Any) -> bytes:
        obj = self._response(status, message, **extra)
        return self._event(TERMINAL_EVENTS[status], {"response": obj})

    def _finish(self, event: DoneEvent) -> bytes:
        self._done = True
        message = event.message
        why = incomplete_reason(message, Stop(event.reason))
        if why is not None:
            return self._end("incomplete", message, incomplete=why)
        return self._end("completed", message)

    def _fail(self, message: AssistantMessage) -> bytes:
        self._done = True
        error = message.error
        why = incomplete_reason(message, Stop("error", error.kind)) if error is not None else None
        if why is not None:
            # An error the spec gives an incomplete reason (a content filter's stop) is
            # an incomplete response, as OpenAI sends it, not a failure.
            out = self._close_open(message) if self._open else b""
            return out + self._end("incomplete", message, incomplete=why)
        return self._end("failed", message, error=failure(message.error))

    def _restart(self, message: AssistantMessage) -> bytes:
        # The next model starts over from content index 0: the items left open end
        # as incomplete, and only the next model's items make the final output.
        out: list[bytes] = []
        for ci, item in self._open.items():
            block = message.content[ci] if ci < len(message.content) else None
            if item.kind == _TEXT and isinstance(block, TextContent):
                done: Any = text_item(item.id, item.phase, block.text[item.offset :], (),
                                      "incomplete")  # fmt: skip
            elif item.kind == _CALL and isinstance(block, ToolCall):
                done = call_item(block, item.id, "incomplete", None, self._request.namespaces)
            elif item.buffer is None:
                done = {"id": item.id, "type": "reasoning", "summary": [], "status": "incomplete"}
            else:
                continue  # never announced
            out.append(self._event("response.output_item.done",
                                   {"output_index": item.index, "item": done}))  # fmt: skip
        self._open.clear()
        self._closed.clear()
        self._output.clear()
        return b"".join(out)


def _request_tools(body: object) -> list[tuple[str, dict[str, Any]]]:
    tools = body.get("tools") if isinstance(body, dict) else None
    return declared_tools(tools, spec=None, name="name", schema="parameters")


#: How a server speaks Responses (the gateway's front end and the mock server).
SERVER = WireServer(
    renderer=ResponsesRenderer, message_body=message_body, tool_results=tool_results,
    id_prefix=RESPONSE_ID_PREFIX, request_tools=_request_tools,
    models_path="/models", render_models=render_models,  # OpenAI's one listing
)  # fmt: skip

"""Inbound half of the ``openai-responses`` API: stream events → normalized deltas.

Reference: https://platform.openai.com/docs/api-reference/responses-streaming.
Events are dispatched on the JSON ``type`` (OpenRouter sends no ``event:`` lines);
blocks are keyed by ``output_index`` (the item id when a server omits it).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Literal

import msgspec

from ..._wire.deltas import (
    BlockComplete,
    BlockEnd,
    BlockSignature,
    BlockStart,
    CitationDelta,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallArguments,
    ToolCallDelta,
    UsageUpdate,
)
from ..._wire.sse import Frame
from ...errors import MalformedChunkError, TruncatedStreamError
from ...types import ServerToolCall
from .._common import decode_json, dumps, in_band_error
from ._client import CLIENT_ITEMS, ClientItem, client_call, client_item, is_client
from ._errors import error_from_code as _error_from_code
from ._errors import event_error as _event_error
from ._items import _CLIENT, _IGNORED, _PART_SEP, _TEXT, _THINKING, _TOOL, _ItemState
from ._items import fill as _fill
from ._items import text_signature as _text_signature
from ._schema import (
    _annotation_event,
    _AnnotationEvent,
    _args_done_event,
    _ArgsDoneEvent,
    _call_item,
    _CallItem,
    _delta_event,
    _DeltaEvent,
    _envelope,
    _error_event,
    _input_done_event,
    _InputDoneEvent,
    _item_event,
    _item_head_decoder,
    _ItemEvent,
    _ItemHead,
    _Response,
    _response_event,
    _text_delta_event,
    _text_item,
    _TextDeltaEvent,
    _TextItem,
)
from ._server import item_blocks
from ._server import raw_citation as _citation
from .spec import (
    COMPLETED_EVENT,
    CUT_SHORT,
    FAILED_EVENT,
    INCOMPLETE_EVENT,
    INCOMPLETE_STOPS,
    NO_REASON,
)

__all__ = ["ResponsesDecoder"]


def _decode(
    data: str | bytes, decoder: msgspec.json.Decoder[Any], what: str, prefix: str = ""
) -> Any:
    """Decode one payload (or a nested item, paths prefixed with ``prefix``)."""
    return decode_json(data, decoder, what, prefix)


# The start of every response.output_text.delta payload (OpenAI and OpenRouter put
# ``type`` first, as the peek in ``decode`` relies on).
_TEXT_DELTA_HEAD = b'{"type":"response.output_text.delta"'

# An event's type bytes → its name, shared by every decoder: streams use a few dozen
# names, so the table stays small; it stops growing at _TYPES_MAX entries.
_TYPES: dict[bytes, str] = {}
_TYPES_MAX = 256
# The terminal events, for a stream that ends without one.
_TERMINALS = f"{COMPLETED_EVENT}, {INCOMPLETE_EVENT} or {FAILED_EVENT}"


class ResponsesDecoder:
    """Per-response decoder: SSE events → normalized deltas.

    Keeps, per output item, the text streamed so far, so an item whose text
    arrives only (or partly) in ``response.output_item.done`` still gets it all,
    as function-call arguments that arrive only in ``.done`` do (LM Studio).
    """

    __slots__ = ("_handlers", "_ids", "_items", "_meta", "_saw_call", "_search", "_terminal")

    def __init__(self) -> None:
        self._items: dict[Hashable, _ItemState] = {}
        self._search: str | None = None  # the last server tool_search_call's id
        self._ids: dict[str, Hashable] = {}
        self._meta = False
        self._saw_call = False
        self._terminal = False
        self._handlers: dict[str, Callable[[bytes, str], list[Delta]]] = {
            "response.output_text.delta": self._text_delta,
            "response.refusal.delta": self._text_delta,
            "response.reasoning_summary_text.delta": self._summary_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.function_call_arguments.delta": self._args_delta,
            "response.function_call_arguments.done": self._args_done,
            "response.custom_tool_call_input.delta": self._input_delta,
            "response.custom_tool_call_input.done": self._input_done,
            "response.output_text.annotation.added": self._annotation,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.created": self._meta_event,
            "response.in_progress": self._meta_event,
            "response.queued": self._meta_event,
            COMPLETED_EVENT: self._completed,
            INCOMPLETE_EVENT: self._incomplete,
            FAILED_EVENT: self._failed,
            "error": self._error,
        }

    # ------------------------------------------------------------------ dispatch

    def decode(self, frame: Frame) -> list[Delta]:
        data = frame.data
        if self._terminal:
            return []
        if data == b"[DONE]":
            # OpenRouter ends with [DONE] after response.completed (never reached:
            # the stream is over by then); before it, the response is incomplete.
            raise TruncatedStreamError(f"the stream sent [DONE] before {_TERMINALS}")
        # Fast path: OpenAI and OpenRouter put "type" first; peek at it without a
        # second JSON pass. Anything else goes through the typed envelope.
        etype: str | None = None
        if data.startswith(b'{"type":"'):
            end = data.find(b'"', 9)
            if end > 0:
                raw = data[9:end]
                etype = _TYPES.get(raw)
                if etype is None and b"\\" not in raw and raw.isascii():
                    etype = raw.decode()
                    if len(_TYPES) < _TYPES_MAX:
                        _TYPES[raw] = etype
        if etype is None:
            if frame.event == "error" and b'"type":"' not in data:
                # An error line without a Responses event type (llama.cpp's non-SSE
                # ``error: {...}`` line, which the framing hands over as an error event).
                return self._error(data, "error")
            etype = _decode(data, _envelope, "event").type
        handler = self._handlers.get(etype)
        if handler is None:
            if frame.event == "error":
                return self._error(data, "error")
            return []  # unknown or provider-run-tool events (web_search_call.*…): ignored
        return handler(data, etype)

    def end(self) -> list[Delta]:
        if self._terminal:
            return []
        raise TruncatedStreamError(
            f"the stream ended without {_TERMINALS} (the response may be incomplete)"
        )

    # ------------------------------------------------------------------ keys

    def _key(self, output_index: int | None, item_id: str | None, etype: str) -> Hashable:
        if output_index is not None:
            return output_index
        if item_id is not None:
            return self._ids.get(item_id, item_id)
        raise MalformedChunkError(f"malformed {etype} event: output_index must be an integer")

    def _open(self, key: Hashable, kind: int, etype: str) -> _ItemState | None:
        """The state of item ``key`` for a delta of ``kind`` (``None``: ignore it)."""
        st = self._items.get(key)
        if st is None:
            # A delta before output_item.added: the block starts with it.
            st = self._items[key] = _ItemState(kind)
            return st
        if st.kind == _IGNORED:
            return None
        if st.closed:
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} already ended "
                "(response.output_item.done) but a delta arrived for it"
            )
        if st.kind != kind:
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} is not a "
                f"{('message', 'reasoning', 'function_call', '', 'client-executed')[kind]} item"
            )
        return st

    # ------------------------------------------------------------------ deltas

    def decode_batch(self, frames: list[Frame], out: list[Delta]) -> None:
        """:meth:`decode` of each frame of one read, appended to ``out`` (one call per
        read: the pipeline's batched hand-off). A text delta to an open message item
        is mapped here, as :meth:`_text_delta` maps it; every other frame goes through
        :meth:`decode`, which decodes it again. A frame that fails adds nothing."""
        decode, append, items = self.decode, out.append, self._items
        for frame in frames:
            data = frame.data
            if data.startswith(_TEXT_DELTA_HEAD) and not self._terminal:
                try:
                    ev = _text_delta_event.decode(data)
                except (msgspec.ValidationError, msgspec.DecodeError):
                    out += decode(frame)  # raises, naming the field
                    continue
                key = ev.output_index
                if key is not None:
                    st = items.get(key)
                    if st is not None and st.kind == _TEXT and not st.closed:
                        delta = ev.delta
                        if delta:
                            st.pieces.append(delta)
                            append(TextDelta(key, delta))
                        continue
            out += decode(frame)

    def _text_delta(self, data: bytes, etype: str) -> list[Delta]:
        # The hot path of every stream, kept flat: one typed decode, two lookups; the
        # full event (its ``item_id``) only when ``output_index`` is absent.
        try:
            ev: _TextDeltaEvent | _DeltaEvent = _text_delta_event.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            ev = _decode(data, _delta_event, etype)  # raises, naming the field
        key: Hashable = ev.output_index
        if key is None:
            full = _decode(data, _delta_event, etype)
            key = self._key(None, full.item_id, etype)
        st = self._items.get(key)
        if st is None or st.kind != _TEXT or st.closed:
            st = self._open(key, _TEXT, etype)
            if st is None:
                return []
        delta = ev.delta
        if not delta:
            return []
        st.pieces.append(delta)
        return [TextDelta(key, delta)]

    def _thinking(
        self, key: Hashable, part: tuple[str, int], delta: str, etype: str
    ) -> list[Delta]:
        st = self._open(key, _THINKING, etype)
        if st is None or not delta:
            return []
        out: list[Delta] = []
        if st.part is not None and st.part != part and st.pieces:
            # Separate summary parts with a blank line, as they read in ChatGPT.
            st.pieces.append(_PART_SEP)
            out.append(ThinkingDelta(key, _PART_SEP))
        st.part = part
        st.pieces.append(delta)
        out.append(ThinkingDelta(key, delta))
        return out

    def _summary_delta(self, data: bytes, etype: str) -> list[Delta]:
        ev: _DeltaEvent = _decode(data, _delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        index = ev.summary_index
        if index is None:
            st = self._items.get(key)
            index = st.part[1] if st is not None and st.part is not None else 0
        return self._thinking(key, ("summary", index), ev.delta, etype)

    def _reasoning_delta(self, data: bytes, etype: str) -> list[Delta]:
        ev: _DeltaEvent = _decode(data, _delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        return self._thinking(key, ("content", ev.content_index or 0), ev.delta, etype)

    def _args_delta(self, data: bytes, etype: str) -> list[Delta]:
        ev: _DeltaEvent = _decode(data, _delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._open(key, _TOOL, etype)
        if st is None or not ev.delta:
            return []
        return [ToolCallDelta(key, None, None, ev.delta)]

    def _args_done(self, data: bytes, etype: str) -> list[Delta]:
        # The whole arguments text: used even when no delta came (LM Studio sends
        # function_call_arguments.done only).
        ev: _ArgsDoneEvent = _decode(data, _args_done_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._items.get(key)
        if st is None or st.kind != _TOOL:
            if st is not None and st.kind == _IGNORED:
                return []
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} is not a function_call item"
            )
        return [ToolCallArguments(key, ev.arguments)]

    def _input_delta(self, data: bytes, etype: str) -> list[Delta]:
        # custom_tool_call input streams as free text; the call's arguments are
        # {"input": text}, so the display text is that object as it grows.
        ev: _DeltaEvent = _decode(data, _delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._open(key, _CLIENT, etype)
        if st is None or not ev.delta:
            return []
        head = "" if st.pieces else '{"input":"'
        st.pieces.append(ev.delta)
        return [ToolCallDelta(key, None, None, head + dumps(ev.delta).decode()[1:-1])]

    def _input_done(self, data: bytes, etype: str) -> list[Delta]:
        ev: _InputDoneEvent = _decode(data, _input_done_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._items.get(key)
        if st is None or st.kind != _CLIENT:
            if st is not None and st.kind == _IGNORED:
                return []
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} is not a custom_tool_call item"
            )
        return [ToolCallArguments(key, dumps({"input": ev.input}).decode())]

    def _annotation(self, data: bytes, etype: str) -> list[Delta]:
        # A citation streamed while its text does (file_search, web_search).
        ev: _AnnotationEvent = _decode(data, _annotation_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._open(key, _TEXT, etype)
        if st is None:
            return []
        if st.cites is None:
            st.cites = {}
        st.cites[ev.content_index] = st.cites.get(ev.content_index, 0) + 1
        return [CitationDelta(key, _citation(ev.annotation, etype))]

    # ------------------------------------------------------------------ items

    def _item_added(self, data: bytes, etype: str) -> list[Delta]:
        ev: _ItemEvent = _decode(data, _item_event, etype)
        head: _ItemHead = _decode(ev.item, _item_head_decoder, etype, "item.")
        key = self._item_key(ev.output_index, head.id, etype)
        if head.type == "message":
            m: _TextItem = _decode(ev.item, _text_item, etype, "item.")
            return self._start(key, _TEXT, signature=_text_signature(head.id, m.phase))
        if head.type == "reasoning":
            return self._start(key, _THINKING)
        if head.type == "function_call":
            c: _CallItem = _decode(ev.item, _call_item, etype, "item.")
            out = self._start(key, _TOOL, call=c, item_id=head.id)
            if c.arguments:
                # The added item may already hold arguments; deltas extend them
                # (as the SDK's accumulator does).
                out.append(ToolCallDelta(key, None, None, c.arguments))
            return out
        if head.type in CLIENT_ITEMS:
            ci: ClientItem = _decode(ev.item, client_item, etype, "item.")
            if is_client(ci):
                call_id, name, args = client_call(ci, etype)
                # Its signature is the item (the added one until the done one replaces
                # it), so a renderer knows from the start it is no function call.
                out = self._start(key, _CLIENT, call=_CallItem(call_id, name), item_id=head.id,
                                  signature=bytes(ev.item).decode())  # fmt: skip
                if args is not None and head.type == "custom_tool_call" and ci.input:
                    st = self._items[key]
                    st.pieces.append(ci.input)
                    out.append(ToolCallDelta(key, None, None, args[:-2]))  # without '"}'
                return out
        # Provider-run tools (web_search_call, code_interpreter_call…) and items not
        # modelled: their progress events are ignored; the done item is the block.
        self._items.setdefault(key, _ItemState(_IGNORED))
        return []

    def _item_key(self, output_index: int | None, item_id: str | None, etype: str) -> Hashable:
        key = self._key(output_index, item_id, etype)
        if item_id is not None:
            self._ids[item_id] = key
        return key

    def _start(
        self,
        key: Hashable,
        kind: int,
        *,
        signature: str | None = None,
        call: _CallItem | None = None,
        item_id: str | None = None,
    ) -> list[Delta]:
        st = self._items.get(key)
        if st is not None and (st.closed or st.kind != kind):
            raise MalformedChunkError(
                f"malformed response.output_item.added event: output item {key!r} was already used"
            )
        if call is not None:
            self._saw_call = True
            call_id = call.call_id or item_id
            sig = signature if signature is not None else item_id
            if st is None:
                self._items[key] = _ItemState(kind)
                return [BlockStart(key, "tool_call", id=call_id, name=call.name, signature=sig)]
            # Fragments came first (the assembler refuses those without id/name).
            out: list[Delta] = [ToolCallDelta(key, call_id, call.name)]
            return [*out, BlockSignature(key, sig)] if sig else out
        if st is None:
            st = self._items[key] = _ItemState(kind)
            st.signature = signature
            return [BlockStart(key, "text" if kind == _TEXT else "thinking", signature=signature)]
        if signature is not None and signature != st.signature:
            # A delta came first and started the block; the item still names it.
            st.signature = signature
            return [BlockSignature(key, signature)]
        return []

    def _item_done(self, data: bytes, etype: str) -> list[Delta]:
        ev: _ItemEvent = _decode(data, _item_event, etype)
        raw = ev.item
        head: _ItemHead = _decode(raw, _item_head_decoder, etype, "item.")
        key = self._item_key(ev.output_index, head.id, etype)
        return self._end_item(key, raw, head, etype, "item.")

    def _backfill(self, output: list[msgspec.Raw] | None, etype: str) -> list[Delta]:
        """End, from the terminal event's ``response.output`` (the whole response:
        https://platform.openai.com/docs/api-reference/responses/object), each item no
        ``output_item.done`` ended — added only (OpenAI sends the done event of only the
        last of several ``mcp_list_tools``) or never announced — in output order, after
        the blocks already streamed (a content index, once given, never moves)."""
        out: list[Delta] = []
        for i, raw in enumerate(output or ()):
            where = f"response.output[{i}]."
            head: _ItemHead = _decode(raw, _item_head_decoder, etype, where)
            # The item streamed with this id, else the one at this output index.
            key: Hashable = self._ids.get(head.id, i) if head.id is not None else i
            st = self._items.get(key)
            if st is not None and st.closed:
                continue
            out += self._end_item(key, raw, head, etype, where)
        return out

    def _end_item(
        self, key: Hashable, raw: msgspec.Raw, head: _ItemHead, etype: str, where: str
    ) -> list[Delta]:
        """The deltas that end output item ``key`` with its finished form ``raw``."""
        out: list[Delta] = []
        if head.type == "message":
            m: _TextItem = _decode(raw, _text_item, etype, where)
            sig = _text_signature(head.id, m.phase)
            st = self._done_state(key, _TEXT, out, signature=sig)
            full = "".join(
                (p.text or "") if p.type == "output_text" else (p.refusal or "")
                for p in m.content or ()
                if p.type in ("output_text", "refusal")
            )
            _fill(key, st, full, out, TextDelta)
            seen = st.cites or {}
            for pi, p in enumerate(m.content or ()):
                for ann in (p.annotations or ())[seen.get(pi, 0) :]:
                    out.append(CitationDelta(key, _citation(ann, etype)))
            if sig is not None and sig != st.signature:
                st.signature = sig
                out.append(BlockSignature(key, sig))
        elif head.type == "reasoning":
            r: _TextItem = _decode(raw, _text_item, etype, where)
            st = self._done_state(key, _THINKING, out)
            texts = [p.text for p in (*(r.summary or ()), *(r.content or ())) if p.text]
            _fill(key, st, _PART_SEP.join(texts), out, ThinkingDelta)
            # The whole item as received: replayed byte for byte (encrypted_content).
            out.append(BlockSignature(key, bytes(raw).decode()))
        elif head.type == "function_call":
            c: _CallItem = _decode(raw, _call_item, etype, where)
            st = self._done_state(key, _TOOL, out, call=c, item_id=head.id)
            if c.arguments is not None:
                out.append(ToolCallArguments(key, c.arguments))
        else:
            prior = self._items.get(key)
            ci: ClientItem | None = None
            if head.type in CLIENT_ITEMS:
                ci = _decode(raw, client_item, etype, where)
            if ci is None or not is_client(ci) or (prior is not None and prior.kind == _IGNORED):
                # Run by the provider (web search, code interpreter, MCP…) or not modelled:
                # whole blocks at the item's place, the item kept as received.
                if prior is not None and (prior.closed or prior.kind != _IGNORED):
                    raise MalformedChunkError(
                        f"malformed {etype} event: output item {key!r} "
                        + ("ended twice" if prior.closed else "changed its type")
                    )
                self._items.setdefault(key, _ItemState(_IGNORED)).closed = True
                blocks = item_blocks(bytes(raw), head.type, etype, self._search)
                if head.type == "tool_search_call" and isinstance(blocks[0], ServerToolCall):
                    self._search = blocks[0].id
                return [BlockComplete(key if n == 0 else (key, n), b) for n, b in enumerate(blocks)]
            call_id, name, args = client_call(ci, etype)
            st = self._done_state(key, _CLIENT, out, call=_CallItem(call_id, name), item_id=head.id)
            if args is None and ci.type == "custom_tool_call" and st.pieces:
                # The done item left ``input`` out: the streamed input stands.
                args = dumps({"input": "".join(st.pieces)}).decode()
            out.append(ToolCallArguments(key, args if args is not None else "{}"))
            # The whole item as received: replayed byte for byte, answered by type.
            out.append(BlockSignature(key, bytes(raw).decode()))
        st.closed = True
        st.pieces = []
        out.append(BlockEnd(key))
        return out

    def _done_state(
        self,
        key: Hashable,
        kind: int,
        out: list[Delta],
        *,
        signature: str | None = None,
        call: _CallItem | None = None,
        item_id: str | None = None,
    ) -> _ItemState:
        st = self._items.get(key)
        if st is None:
            # Never added: the item arrives whole (servers that skip .added).
            out.extend(self._start(key, kind, signature=signature, call=call, item_id=item_id))
            return self._items[key]
        if st.closed or st.kind != kind:
            raise MalformedChunkError(
                f"malformed response.output_item.done event: output item {key!r} "
                + ("ended twice" if st.closed else "changed its type")
            )
        return st

    # ------------------------------------------------------------------ response

    def _meta_event(self, data: bytes, etype: str) -> list[Delta]:
        # Read until the model is known: llama.cpp names it only in response.completed.
        if self._meta:
            return []
        resp = _decode(data, _response_event, etype).response
        self._meta = resp.model is not None
        return [ResponseMeta(response_id=resp.id, model=resp.model)]

    def _terminal_deltas(self, resp: _Response, finish: Finish) -> list[Delta]:
        out: list[Delta] = []
        if not self._meta:
            self._meta = True
            out.append(ResponseMeta(response_id=resp.id, model=resp.model))
        out.append(finish)
        u = resp.usage
        if u is not None:
            details = u.input_tokens_details
            cached = (details.cached_tokens or 0) if details is not None else 0
            written = (details.cache_write_tokens or 0) if details is not None else 0
            # input_tokens counts cached and cache-written tokens; output_tokens
            # already includes reasoning_tokens (ResponseUsage docs): count once.
            out.append(
                UsageUpdate(
                    input=max(u.input_tokens - cached - written, 0),
                    output=u.output_tokens,
                    cache_read=cached,
                    cache_write=written,
                )
            )
        out.append(EndOfStream())
        self._terminal = True
        return out

    def _completed(self, data: bytes, etype: str) -> list[Delta]:
        resp = _decode(data, _response_event, etype).response
        out = self._backfill(resp.output, etype)
        reason: Literal["stop", "tool_use"] = "tool_use" if self._saw_call else "stop"
        return out + self._terminal_deltas(resp, Finish(reason, resp.status or "completed"))

    def _incomplete(self, data: bytes, etype: str) -> list[Delta]:
        resp = _decode(data, _response_event, etype).response
        items = self._backfill(resp.output, etype)
        why = resp.incomplete_details.reason if resp.incomplete_details else None
        stop = INCOMPLETE_STOPS.get(why, CUT_SHORT) if why is not None else CUT_SHORT
        if stop.reason == "error":
            finish = Finish(
                "error",
                why,
                stop.error_kind,
                f"the provider's content filter stopped the response "
                f"({INCOMPLETE_EVENT}, reason {why})",
            )
        else:
            finish = Finish("length", why or NO_REASON)
        return items + self._terminal_deltas(resp, finish)

    def _failed(self, data: bytes, etype: str) -> list[Delta]:
        resp = _decode(data, _response_event, etype).response
        err = resp.error
        if err is None:
            raise in_band_error("the response failed (response.failed without an error)")
        raise _error_from_code(err.message or "the response failed", err.code, err.type)

    def _error(self, data: bytes, etype: str) -> list[Delta]:
        raise _event_error(_decode(data, _error_event, "error event"))

"""The :class:`Assembler`: one response's state machine from deltas to events and
the final message (routing, snapshots, the tool-call collector, finish semantics,
usage); the package docstring says what it owns and why."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable, Iterable
from typing import Any, Literal

import msgspec

from ...errors import (
    AbortedError,
    StreamError,
    ToolCallProtocolError,
    TruncatedStreamError,
    error_class_for_kind,
)
from ...events import (
    BlockEvent,
    CitationEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
)
from ...types import (
    AssistantContent,
    AssistantMessage,
    ErrorInfo,
    ModelCost,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    now_ms,
)
from ..deltas import (
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
from ._blocks import NO_COST, NO_USAGE, Block, compute_cost
from ._collector import ToolCallCollector, malformed_kind, malformed_missing
from ._policy import CompletionPolicy, ToolChoice

__all__ = ["Assembler"]


# No key: the feed loop's remembered text block is unset.
_NO_KEY = object()


class Assembler(ToolCallCollector):
    """State machine from deltas to events; one per response.

    ``tool_choice`` and ``tools_declared`` drive the completion policy (DESIGN
    §2a): with ``tools_declared=None`` (replay, where the request is unknown)
    calls are accepted as the stream presents them. ``policy`` (a
    :data:`CompletionPolicy`) replaces the checks derived from ``tool_choice``
    and ``tools_declared``: it judges the finished response instead. Protocol
    integrity (ids, names, a ``tool_use`` finish without a call) is always checked.
    """

    __slots__ = (
        "_blocks",
        "_call_ids",
        "_finish",
        "_forced_name",
        "_keys",
        "_response_id",
        "_response_model",
        "_usage",
        "_usage_hist",
        "_usage_vs",
        "_v",
        "api",
        "done",
        "message",
        "model",
        "policy",
        "prices",
        "provider",
        "started",
        "timestamp",
        "tool_choice",
        "tools_declared",
    )

    def __init__(
        self,
        *,
        api: str,
        provider: str = "",
        model: str = "",
        tool_choice: ToolChoice = None,
        tools_declared: bool | None = None,
        prices: ModelCost | None = None,
        policy: CompletionPolicy | None = None,
    ) -> None:
        self.api = api
        self.policy = policy
        self.provider = provider
        self.model = model
        self.tool_choice = tool_choice
        self.tools_declared = tools_declared
        self.prices = prices
        self.timestamp = now_ms()
        self._forced_name = tool_choice.get("name") if isinstance(tool_choice, dict) else None
        self._blocks: list[Block] = []
        self._keys: dict[Hashable, Block] = {}
        self._call_ids: dict[str, Block] = {}
        self._v = 0
        self._usage = NO_USAGE
        self._usage_hist: list[Usage] = []
        self._usage_vs: list[int] = []
        self._finish: Finish | None = None
        self._response_id: str | None = None
        self._response_model: str | None = None
        self.started = False
        self.done = False
        self.message: AssistantMessage | None = None

    # ------------------------------------------------------------------ snapshots

    def snapshot(self, v: int) -> AssistantMessage:
        """The message as it stood at version ``v`` (``event.partial``)."""
        content = tuple(b.build(v) for b in self._blocks if b.start_v <= v)
        usage = self._usage
        if self._usage_vs and self._usage_vs[-1] > v:
            i = bisect_right(self._usage_vs, v)
            usage = self._usage_hist[i - 1] if i else NO_USAGE
        return AssistantMessage(
            content=content,
            api=self.api,
            provider=self.provider,
            model=self.model,
            usage=usage,
            stop_reason=None,
            response_id=self._response_id,
            response_model=self._response_model,
            timestamp=self.timestamp,
        )

    # ------------------------------------------------------------------ driving

    def start(self, out: list[Event]) -> None:
        """Append the ``start`` event (once)."""
        if not self.started:
            self.started = True
            out.append(StartEvent(_src=self, _v=self._v))
            self._v += 1

    def feed(self, deltas: Iterable[Delta], out: list[Event]) -> None:
        """Apply deltas, appending events to ``out``.

        Raises a :class:`StreamError` on a protocol violation; events appended
        before it stay valid, and the caller ends the stream with :meth:`fail`.
        """
        if self.done:
            return
        handlers = _HANDLERS
        keys = self._keys  # never replaced
        append = out.append
        # The version counter is kept local and written back before every handler (which
        # may read or bump it) and at the end; ``done`` changes in handlers only. The
        # open text block of the last text delta is remembered (its key, index and
        # lists) until a handler runs, which may close or replace it; so is the open
        # tool call of the last arguments delta.
        v = self._v
        tkey: Any = _NO_KEY
        tci = 0
        tpieces: list[str] = []
        tvs: list[int] = []
        # The same for the open tool call of the last arguments delta.
        ckey: Any = _NO_KEY
        cci = 0
        cpieces: list[str] = []
        cvs: list[int] = []
        last_usage: Any = None
        for d in deltas:
            if d.__class__ is TextDelta:
                # _on_text inline: nearly every delta of a stream is one, and the call
                # through the table was a fifth of the assembler's cost per delta.
                text = d.text
                if text:
                    if d.key != tkey:
                        b = keys.get(d.key)
                        if b is None or b.closed or b.kind != "text":
                            self._v = v
                            b = self._block(d.key, "text", out)
                            v = self._v
                        tkey, tci, tpieces, tvs = d.key, b.ci, b.pieces, b.vs
                    tpieces.append(text)
                    tvs.append(v)
                    append(TextDeltaEvent(content_index=tci, delta=text, _src=self, _v=v))
                    v += 1
                continue
            if d.__class__ is ToolCallDelta and d.id is None and d.name is None:
                # _on_tool's hot path inline: more arguments for an open call.
                if d.key != ckey:
                    b = keys.get(d.key)
                    if b is None or b.kind != "tool_call" or b.closed:
                        b = None
                    else:
                        ckey, cci, cpieces, cvs = d.key, b.ci, b.pieces, b.vs
                if d.key == ckey:
                    args = d.arguments
                    if args:
                        cpieces.append(args)
                        cvs.append(v)
                        append(ToolCallDeltaEvent(content_index=cci, delta=args, _src=self, _v=v))
                        v += 1
                    continue
            if d is last_usage:
                # The very usage delta applied last, again (a decoder that repeats an
                # equal snapshot hands the same delta): applying it changes nothing.
                continue
            self._v = v
            handlers[type(d)](self, d, out)
            v = self._v
            tkey = ckey = _NO_KEY
            if d.__class__ is UsageUpdate:
                last_usage = d
            if self.done:
                return
        self._v = v

    def fail(self, exc: StreamError, out: list[Event]) -> None:
        """End the stream with an ``error``/``aborted`` event keeping all content."""
        if self.done:
            return
        self.start(out)
        reason: Literal["error", "aborted"] = (
            "aborted" if isinstance(exc, AbortedError) else "error"
        )
        provider_reason = self._finish.provider_reason if self._finish else None
        msg = self._final_message(reason, exc.to_info(), provider_reason, untrusted=False)
        out.append(ErrorEvent(reason=reason, message=msg, _partial=msg))
        self._v += 1

    def abort(self, out: list[Event], reason: str = "the stream was aborted by the caller") -> None:
        self.fail(AbortedError(reason), out)

    # ------------------------------------------------------------------ helpers

    def _block(self, key: Hashable, kind: str, out: list[Event]) -> Block:
        b = self._keys.get(key)
        if b is not None and not b.closed:
            if b.kind != kind:
                raise malformed_kind(key, b.kind, kind)
            return b
        b = Block(kind, self._v)
        self._keys[key] = b
        ci = b.ci = len(self._blocks)
        self._blocks.append(b)
        if kind == "text":
            out.append(TextStartEvent(content_index=ci, _src=self, _v=self._v))
        elif kind == "thinking":
            out.append(ThinkingStartEvent(content_index=ci, _src=self, _v=self._v))
        self._v += 1
        return b

    def _index(self, b: Block) -> int:
        return b.ci

    # ------------------------------------------------------------------ text/thinking

    # The two handlers below run once per event of nearly every stream: locals, no
    # helper calls.

    def _on_text(self, d: TextDelta, out: list[Event]) -> None:
        text = d.text
        if not text:
            return
        b = self._keys.get(d.key)
        if b is None or b.closed or b.kind != "text":
            b = self._block(d.key, "text", out)
        v = self._v
        b.pieces.append(text)
        b.vs.append(v)
        out.append(TextDeltaEvent(content_index=b.ci, delta=text, _src=self, _v=v))
        self._v = v + 1

    def _on_thinking(self, d: ThinkingDelta, out: list[Event]) -> None:
        text = d.text
        if not text:
            return
        b = self._keys.get(d.key)
        if b is None or b.closed or b.kind != "thinking":
            b = self._block(d.key, "thinking", out)
        v = self._v
        b.pieces.append(text)
        b.vs.append(v)
        out.append(ThinkingDeltaEvent(content_index=b.ci, delta=text, _src=self, _v=v))
        self._v = v + 1

    def _on_block_start(self, d: BlockStart, out: list[Event]) -> None:
        existing = self._keys.get(d.key)
        if existing is not None and not existing.closed:
            return
        if d.kind == "tool_call":
            self._on_tool(ToolCallDelta(key=d.key, id=d.id, name=d.name), out)
            b = self._keys[d.key]
        else:
            b = self._block(d.key, d.kind, out)
        if d.redacted:
            b.redacted = True
        if d.signature is not None:
            b.sigs.append(d.signature)
            b.sig_vs.append(b.start_v)

    def _on_signature(self, d: BlockSignature, out: list[Event]) -> None:
        b = self._keys.get(d.key)
        if b is None:
            raise malformed_missing(d.key, "signature")
        prev = b.sigs[-1] if b.sigs else None
        sig = (prev or "") + d.signature if d.append else d.signature
        b.sigs.append(sig)
        b.sig_vs.append(self._v)

    # ------------------------------------------------------------------ whole blocks

    def _on_block_complete(self, d: BlockComplete, out: list[Event]) -> None:
        # A provider-run tool call, its result or an opaque item: final on arrival,
        # never a ToolCall, so the completion rules below never count it as an action.
        existing = self._keys.get(d.key)
        if existing is not None and not existing.closed:
            raise malformed_kind(d.key, existing.kind, d.block.type)
        b = Block(d.block.type, self._v)
        self._keys[d.key] = b
        ci = b.ci = len(self._blocks)
        self._blocks.append(b)
        b.final = d.block
        b.final_v = self._v
        b.closed = True
        out.append(BlockEvent(content_index=ci, content=d.block, _src=self, _v=self._v))
        self._v += 1

    def _on_citation(self, d: CitationDelta, out: list[Event]) -> None:
        b = self._keys.get(d.key)
        if b is None or b.closed or b.kind != "text":
            b = self._block(d.key, "text", out)
        v = self._v
        b.cites.append(d.citation)
        b.cite_vs.append(v)
        out.append(CitationEvent(content_index=b.ci, citation=d.citation, _src=self, _v=v))
        self._v = v + 1

    # ------------------------------------------------------------------ ends

    def _close(self, b: Block, out: list[Event], trusted: bool = True) -> None:
        if b.closed:
            return
        if b.kind == "tool_call":
            self._complete_call(b, out, trusted)
            return
        content = b.build(self._v)
        b.final = content
        b.final_v = self._v
        b.closed = True
        ci = self._index(b)
        if isinstance(content, TextContent):
            out.append(TextEndEvent(content_index=ci, content=content, _src=self, _v=self._v))
        elif isinstance(content, ThinkingContent):
            out.append(ThinkingEndEvent(content_index=ci, content=content, _src=self, _v=self._v))
        self._v += 1

    def _on_block_end(self, d: BlockEnd, out: list[Event]) -> None:
        b = self._keys.get(d.key)
        if b is None:
            return
        self._close(b, out)

    def _on_finish(self, d: Finish, out: list[Event]) -> None:
        self._finish = d

    def _on_usage(self, d: UsageUpdate, out: list[Event]) -> None:
        u = self._usage
        i = u.input if d.input is None else d.input
        o = u.output if d.output is None else d.output
        cr = u.cache_read if d.cache_read is None else d.cache_read
        cw = u.cache_write if d.cache_write is None else d.cache_write
        if i == u.input and o == u.output and cr == u.cache_read and cw == u.cache_write:
            # The same counts again (Gemini, Bedrock and Ollama repeat the usage snapshot
            # on every chunk): a snapshot at any version reads the same usage without it.
            return
        total = i + o + cr + cw
        new = Usage(
            input=i, output=o, cache_read=cr, cache_write=cw, total_tokens=total, cost=NO_COST
        )
        self._usage = new
        self._usage_hist.append(new)
        self._usage_vs.append(self._v)

    def _on_meta(self, d: ResponseMeta, out: list[Event]) -> None:
        if d.response_id and self._response_id is None:
            self._response_id = d.response_id
        # The model that answered (often a dated snapshot of the requested id).
        if d.model and self._response_model is None:
            self._response_model = d.model

    def _on_end(self, d: EndOfStream, out: list[Event]) -> None:
        fin = self._finish
        if fin is None:
            raise TruncatedStreamError(
                "the stream ended without a finish reason (the response may be incomplete)"
            )
        if fin.stop_reason == "error":
            kind = fin.error_kind or "provider_stream"
            text = fin.error_message or f"the provider stopped with {fin.provider_reason!r}"
            raise error_class_for_kind(kind)(text)
        length = fin.stop_reason == "length"
        calls = [b for b in self._blocks if b.kind == "tool_call"]
        # Close open blocks in content order: tool_call_end before done (rule 3).
        for b in self._blocks:
            self._close(b, out, trusted=not length)
        reason: Literal["stop", "length", "tool_use"] = fin.stop_reason
        if not length:
            complete = [b for b in calls if isinstance(b.final, ToolCall)]
            if reason == "tool_use" and not complete:
                raise ToolCallProtocolError(
                    f"finish reason {fin.provider_reason or 'tool_use'!r} but no tool call was made"
                )
            if complete:
                reason = "tool_use"
        if not length and self.policy is None:
            if self.tool_choice == "required" and not complete:
                raise ToolCallProtocolError(
                    'tool_choice was "required" but the model made no complete tool call'
                )
            if self._forced_name is not None and not any(
                isinstance(b.final, ToolCall) and b.final.name == self._forced_name
                for b in complete
            ):
                raise ToolCallProtocolError(
                    f"tool_choice forced {self._forced_name!r} but the model did not call it"
                )
        # Rule 3: after a length finish no call is trusted, not even one whose block
        # closed before the limit; the raw text stays for inspection.
        msg = self._final_message(reason, None, fin.provider_reason, untrusted=length)
        if not length and self.policy is not None:
            verdict = self._judge(msg)
            if verdict is not None:
                self.done = False  # fail() forms the terminal error event
                self.message = None
                raise ToolCallProtocolError(verdict)
        out.append(DoneEvent(reason=reason, message=msg, _partial=msg))
        self._v += 1
        self.done = True
        self.message = msg

    def _judge(self, msg: AssistantMessage) -> str | None:
        assert self.policy is not None
        try:
            verdict = self.policy(msg, self.tool_choice, self.tools_declared)
        except Exception as exc:  # the stream must still end typed, never raise
            return f"the completion policy failed: {exc!r}"
        if verdict is None or isinstance(verdict, str):
            return verdict
        return (
            f"the completion policy returned {verdict!r}; it must return None (accept) "
            "or a string (the reason to reject)"
        )

    def _final_message(
        self,
        reason: Literal["stop", "length", "tool_use", "error", "aborted"],
        error: ErrorInfo | None,
        provider_reason: str | None,
        *,
        untrusted: bool,
    ) -> AssistantMessage:
        v = self._v
        content: list[AssistantContent] = []
        for b in self._blocks:
            if b.final is not None:
                final = b.final
                if untrusted and isinstance(final, ToolCall) and final.arguments:
                    final = msgspec.structs.replace(final, arguments={})
                content.append(final)
            elif b.kind == "tool_call":
                # An unfinished call keeps its raw text; its arguments are never trusted.
                content.append(b.build(v, final_args={}))
            else:
                content.append(b.build(v))
        msg = AssistantMessage(
            content=tuple(content),
            api=self.api,
            provider=self.provider,
            model=self.model,
            usage=compute_cost(self._usage, self.prices),
            stop_reason=reason,
            error=error,
            provider_stop_reason=provider_reason,
            response_id=self._response_id,
            response_model=self._response_model,
            timestamp=self.timestamp,
        )
        self.done = True
        self.message = msg
        return msg


# Delta type → handler, shared by every assembler: a per-instance table of bound
# methods would cost eleven allocations per response, which shows on short streams.
_HANDLERS: dict[type, Any] = {
    TextDelta: Assembler._on_text,
    ThinkingDelta: Assembler._on_thinking,
    ToolCallDelta: Assembler._on_tool,
    ToolCallArguments: Assembler._on_tool_args,
    BlockStart: Assembler._on_block_start,
    BlockSignature: Assembler._on_signature,
    BlockEnd: Assembler._on_block_end,
    BlockComplete: Assembler._on_block_complete,
    CitationDelta: Assembler._on_citation,
    Finish: Assembler._on_finish,
    UsageUpdate: Assembler._on_usage,
    ResponseMeta: Assembler._on_meta,
    EndOfStream: Assembler._on_end,
}

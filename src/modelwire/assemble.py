"""The one shared assembler: normalized deltas → events → one assistant message.

Sans-IO and API-neutral (DESIGN §1). It owns:

* routing: a provider key (chat ``tool_calls[].index``, an Anthropic block index,
  a Responses item id…) maps to a block; the content index is the position where
  the block first appeared (DESIGN §3 rule 2);
* lazy immutable snapshots: blocks are append-only lists of pieces stamped with
  the version at which they arrived, so an event records only ``(source,
  version)`` and ``event.partial`` is rebuilt on access — producing an event
  never copies content;
* the tool-call collector and the completion policy: by default derived from
  ``tool_choice`` and the declared tools (DESIGN §2a, "Tool-call protocol"); a
  caller may pass another :data:`CompletionPolicy`;
* finish semantics: the last ``Finish`` is remembered and one terminal event is
  formed at ``EndOfStream`` (rule 4); no finish at all → ``truncated_stream``;
* usage and cost.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Literal, TypeAlias

import jiter
import msgspec

from .deltas import (
    BlockEnd,
    BlockSignature,
    BlockStart,
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
from .errors import (
    AbortedError,
    StreamError,
    ToolCallProtocolError,
    TruncatedStreamError,
    error_class_for_kind,
)
from .events import (
    DoneEvent,
    ErrorEvent,
    Event,
    SnapshotSource,
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
from .types import (
    AssistantContent,
    AssistantMessage,
    Cost,
    ErrorInfo,
    ModelCost,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    now_ms,
)

__all__ = [
    "Assembler",
    "CompletionPolicy",
    "SnapshotSource",
    "ToolChoice",
    "compute_cost",
    "default_completion_policy",
    "parse_arguments",
]

ToolChoice = str | dict[str, Any] | None
#: Decides whether a finished response is acceptable:
#: ``policy(message, tool_choice, tools_declared) -> None | str``. ``message`` is
#: the final message of a response that finished ``stop`` or ``tool_use`` (its tool
#: calls complete and parsed); ``tool_choice`` is the request's (``None``,
#: ``"auto"``, ``"required"``, ``"none"`` or ``{"name": ...}``); ``tools_declared``
#: whether the request declared tools (``None`` when unknown). Return ``None`` to
#: accept, or a reason: the stream then ends with an ``error`` event of kind
#: ``tool_call_protocol`` whose message is that reason (all content kept, nothing
#: executed). A ``length`` finish is never judged (nothing of it is trusted).
CompletionPolicy: TypeAlias = Callable[[AssistantMessage, ToolChoice, "bool | None"], "str | None"]


def default_completion_policy(
    message: AssistantMessage, tool_choice: ToolChoice, tools_declared: bool | None
) -> str | None:
    """The policy used when none is given, as one function a custom policy can wrap.

    A call when ``tool_choice`` is ``"none"`` or no tools were declared; no call
    when it is ``"required"``; with ``{"name": n}``, a call to another tool or no
    call to ``n``. (Without a custom policy the assembler applies the same rules,
    the first two and the wrong name as soon as the call starts.)
    """
    calls = message.tool_calls
    if calls and tool_choice == "none":
        return f'the model called {calls[0].name!r} although tool_choice was "none"'
    if calls and tools_declared is False:
        return f"the model called {calls[0].name!r} although no tools were declared"
    if tool_choice == "required" and not calls:
        return 'tool_choice was "required" but the model made no complete tool call'
    if isinstance(tool_choice, dict):
        forced = tool_choice.get("name")
        for c in calls:
            if c.name != forced:
                return f"tool_choice forced {forced!r} but the model called {c.name!r}"
        if not calls:
            return f"tool_choice forced {forced!r} but the model did not call it"
    return None


_json_decode = msgspec.json.decode
# Frozen values, shared rather than built again for every response and usage update.
_NO_COST = Cost()
_NO_USAGE = Usage(cost=_NO_COST)


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Parse complete tool-call arguments; ``None`` unless they are a JSON object.

    An empty string means "no arguments" (some servers send nothing for ``{}``).
    """
    if not raw or raw.isspace():
        return {}
    try:
        value = _json_decode(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, dict) else None


def _partial_arguments(raw: str) -> dict[str, Any]:
    # Display only (DESIGN §3 rule 3): never used to act.
    if not raw:
        return {}
    try:
        value = jiter.from_json(raw.encode(), partial_mode="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def compute_cost(usage: Usage, prices: ModelCost | None) -> Usage:
    """``usage`` with ``cost`` filled from per-million prices."""
    if prices is None:
        return usage
    c_in = usage.input * prices.input / 1e6
    c_out = usage.output * prices.output / 1e6
    c_cr = usage.cache_read * prices.cache_read / 1e6
    c_cw = usage.cache_write * prices.cache_write / 1e6
    cost = Cost(input=c_in, output=c_out, cache_read=c_cr, cache_write=c_cw,
                total=c_in + c_out + c_cr + c_cw)  # fmt: skip
    return msgspec.structs.replace(usage, cost=cost)


class _Block:
    """Append-only state of one content block."""

    __slots__ = (
        "args_override",
        "cache",
        "call_id",
        "ci",
        "closed",
        "final",
        "final_v",
        "kind",
        "name",
        "pieces",
        "redacted",
        "sig_vs",
        "sigs",
        "start_v",
        "vs",
    )

    def __init__(self, kind: str, start_v: int) -> None:
        self.kind = kind
        self.start_v = start_v
        self.ci = -1
        self.pieces: list[str] = []
        self.vs: list[int] = []
        self.sigs: list[str | None] = []
        self.sig_vs: list[int] = []
        self.redacted = False
        self.call_id: str | None = None
        self.name: str | None = None
        self.args_override: tuple[int, str] | None = None
        self.closed = False
        self.final: AssistantContent | None = None
        self.final_v = -1
        # (n, the first n pieces joined): snapshots read in stream order extend it
        # with the pieces since, instead of joining every piece again. One tuple, so
        # a reader on another thread never sees a count and a text that disagree.
        self.cache: tuple[int, str] = (0, "")

    def text_at(self, v: int) -> str:
        pieces = self.pieces
        n = len(pieces)
        if n and self.vs[-1] > v:
            n = bisect_right(self.vs, v)
        if self.args_override is not None and self.args_override[0] <= v:
            return self.args_override[1]
        cn, cached = self.cache
        if cn == n:
            return cached
        if 0 < cn < n:
            text = cached + "".join(pieces[cn:n])
        else:
            text = "".join(pieces[:n]) if n != len(pieces) else "".join(pieces)
        self.cache = (n, text)
        return text

    def signature_at(self, v: int) -> str | None:
        if not self.sigs:
            return None
        i = bisect_right(self.sig_vs, v)
        return self.sigs[i - 1] if i else None

    def build(self, v: int, *, final_args: dict[str, Any] | None = None) -> AssistantContent:
        if self.final is not None and self.final_v <= v:
            return self.final
        text = self.text_at(v)
        sig = self.signature_at(v)
        if self.kind == "text":
            return TextContent(text=text, signature=sig)
        if self.kind == "thinking":
            return ThinkingContent(thinking=text, signature=sig, redacted=self.redacted)
        args = final_args if final_args is not None else _partial_arguments(text)
        return ToolCall(
            id=self.call_id or "",
            name=self.name or "",
            arguments=args,
            raw_arguments=text,
            signature=sig,
        )


class Assembler(SnapshotSource):
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
        self._blocks: list[_Block] = []
        self._keys: dict[Hashable, _Block] = {}
        self._call_ids: dict[str, _Block] = {}
        self._v = 0
        self._usage = _NO_USAGE
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
            usage = self._usage_hist[i - 1] if i else _NO_USAGE
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
        handlers = _HANDLERS
        for d in deltas:
            if self.done:
                return
            handlers[type(d)](self, d, out)

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

    def _block(self, key: Hashable, kind: str, out: list[Event]) -> _Block:
        b = self._keys.get(key)
        if b is not None and not b.closed:
            if b.kind != kind:
                raise _malformed_kind(key, b.kind, kind)
            return b
        b = _Block(kind, self._v)
        self._keys[key] = b
        ci = b.ci = len(self._blocks)
        self._blocks.append(b)
        if kind == "text":
            out.append(TextStartEvent(content_index=ci, _src=self, _v=self._v))
        elif kind == "thinking":
            out.append(ThinkingStartEvent(content_index=ci, _src=self, _v=self._v))
        self._v += 1
        return b

    def _index(self, b: _Block) -> int:
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
            raise _malformed_missing(d.key, "signature")
        prev = b.sigs[-1] if b.sigs else None
        sig = (prev or "") + d.signature if d.append else d.signature
        b.sigs.append(sig)
        b.sig_vs.append(self._v)

    # ------------------------------------------------------------------ tool calls

    def _on_tool(self, d: ToolCallDelta, out: list[Event]) -> None:
        b = self._keys.get(d.key)
        if (
            b is not None
            and d.id is None
            and d.name is None
            and b.kind == "tool_call"
            and not b.closed
        ):
            # The hot path: more arguments for an open call (what the checks below
            # amount to when the fragment carries no id and no name).
            args = d.arguments
            if args:
                v = self._v
                b.pieces.append(args)
                b.vs.append(v)
                out.append(ToolCallDeltaEvent(content_index=b.ci, delta=args, _src=self, _v=v))
                self._v = v + 1
            return
        if b is not None and (b.closed or b.kind != "tool_call"):
            b = None if b.closed else b
            if b is not None:
                raise _malformed_kind(d.key, b.kind, "tool_call")
        if b is not None and d.id and b.call_id and d.id != b.call_id:
            # A new id at a used index is a new call (Groq, Ollama).
            b = None
        if d.id and (b is None or b.call_id is None):
            # Checked before a block is opened, so the conflicting fragment leaves
            # no phantom call (id "", name "") in the error message.
            other = self._call_ids.get(d.id)
            if other is not None and other is not b:
                raise ToolCallProtocolError(
                    f"tool call id {d.id!r} appears at two provider indexes"
                )
        if b is None:
            if self.policy is None:
                self._check_call_allowed(d)
            if not d.id and not d.name:
                raise ToolCallProtocolError(
                    f"tool call {_key_str(d.key)}: a fragment arrived before the call "
                    "started (no id and no name)"
                )
            b = _Block("tool_call", self._v)
            self._keys[d.key] = b
            ci = b.ci = len(self._blocks)
            self._blocks.append(b)
            out.append(ToolCallStartEvent(content_index=ci, _src=self, _v=self._v))
            self._v += 1
        if d.id and b.call_id is None:
            b.call_id = d.id
            self._call_ids[d.id] = b
        if d.name:
            if b.name is None:
                b.name = d.name  # kept in the error message if the check below fails
                if self.policy is None:
                    self._check_name(d.name)
            elif d.name != b.name:
                raise ToolCallProtocolError(
                    f"tool call {b.call_id or _key_str(d.key)}: name changed from "
                    f"{b.name!r} to {d.name!r}"
                )
        if d.arguments:
            v = self._v
            b.pieces.append(d.arguments)
            b.vs.append(v)
            out.append(ToolCallDeltaEvent(content_index=b.ci, delta=d.arguments, _src=self, _v=v))
            self._v = v + 1

    def _on_tool_args(self, d: ToolCallArguments, out: list[Event]) -> None:
        b = self._keys.get(d.key)
        if b is None or b.kind != "tool_call":
            raise _malformed_missing(d.key, "arguments")
        streamed = "".join(b.pieces)
        if d.arguments == streamed:
            return
        if d.arguments.startswith(streamed):
            # Arguments that arrive only (or partly) in the final event must be used.
            self._on_tool(ToolCallDelta(key=d.key, arguments=d.arguments[len(streamed) :]), out)
        else:
            b.args_override = (self._v, d.arguments)

    def _check_call_allowed(self, d: ToolCallDelta) -> None:
        if self.tool_choice == "none":
            raise ToolCallProtocolError(
                f"the model started a tool call ({d.name or d.id or _key_str(d.key)}) "
                'although tool_choice was "none"'
            )
        if self.tools_declared is False:
            raise ToolCallProtocolError(
                f"the model started a tool call ({d.name or d.id or _key_str(d.key)}) "
                "although no tools were declared"
            )

    def _check_name(self, name: str) -> None:
        if self._forced_name is not None and name != self._forced_name:
            raise ToolCallProtocolError(
                f"tool_choice forced {self._forced_name!r} but the model called {name!r}"
            )

    def _complete_call(self, b: _Block, out: list[Event], trusted: bool) -> None:
        if b.call_id is None or b.name is None:
            raise ToolCallProtocolError(
                f"tool call at content index {self._index(b)} ended without "
                + ("an id" if b.call_id is None else "a name")
            )
        raw = b.text_at(self._v)
        args = parse_arguments(raw) if trusted else None
        call = ToolCall(
            id=b.call_id,
            name=b.name,
            arguments=args if args is not None else {},
            raw_arguments=raw,
            signature=b.signature_at(self._v),
        )
        b.final = call
        b.final_v = self._v
        b.closed = True
        out.append(
            ToolCallEndEvent(content_index=self._index(b), tool_call=call, _src=self, _v=self._v)
        )
        self._v += 1

    # ------------------------------------------------------------------ ends

    def _close(self, b: _Block, out: list[Event], trusted: bool = True) -> None:
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
        total = i + o + cr + cw
        new = Usage(
            input=i, output=o, cache_read=cr, cache_write=cw, total_tokens=total, cost=_NO_COST
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
    Finish: Assembler._on_finish,
    UsageUpdate: Assembler._on_usage,
    ResponseMeta: Assembler._on_meta,
    EndOfStream: Assembler._on_end,
}


def _key_str(key: Hashable) -> str:
    if isinstance(key, tuple):
        return "[" + "][".join(str(k) for k in key) + "]"
    return str(key)


def _malformed_kind(key: Hashable, have: str, got: str) -> StreamError:
    from .errors import MalformedChunkError

    return MalformedChunkError(
        f"block {_key_str(key)} is a {have} block but a {got} fragment arrived for it"
    )


def _malformed_missing(key: Hashable, what: str) -> StreamError:
    from .errors import MalformedChunkError

    return MalformedChunkError(f"{what} for block {_key_str(key)}, which never started")

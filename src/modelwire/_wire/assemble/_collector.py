"""The tool-call collector: how fragments of client tool calls become calls —
routing by provider index and id, the id/name protocol checks, the arguments
parsed only once the call is complete (DESIGN §3 rules 2, 3)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from ...errors import MalformedChunkError, StreamError, ToolCallProtocolError
from ...events import (
    Event,
    SnapshotSource,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ...types import ToolCall
from ..deltas import ToolCallArguments, ToolCallDelta
from ._blocks import Block, parse_arguments

if TYPE_CHECKING:
    from ._policy import CompletionPolicy, ToolChoice

__all__ = ["ToolCallCollector", "key_str", "malformed_kind", "malformed_missing"]


class ToolCallCollector(SnapshotSource):
    """The assembler's tool-call handlers (a base of :class:`Assembler`, which owns
    the state named below)."""

    if not TYPE_CHECKING:  # the Assembler declares the slots; mypy reads the names below
        __slots__ = ()
    else:
        _keys: dict[Hashable, Block]
        _blocks: list[Block]
        _call_ids: dict[str, Block]
        _v: int
        _forced_name: str | None
        policy: CompletionPolicy | None
        tool_choice: ToolChoice
        tools_declared: bool | None

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
                raise malformed_kind(d.key, b.kind, "tool_call")
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
                    f"tool call {key_str(d.key)}: a fragment arrived before the call "
                    "started (no id and no name)"
                )
            b = Block("tool_call", self._v)
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
                    f"tool call {b.call_id or key_str(d.key)}: name changed from "
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
            raise malformed_missing(d.key, "arguments")
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
                f"the model started a tool call ({d.name or d.id or key_str(d.key)}) "
                'although tool_choice was "none"'
            )
        if self.tools_declared is False:
            raise ToolCallProtocolError(
                f"the model started a tool call ({d.name or d.id or key_str(d.key)}) "
                "although no tools were declared"
            )

    def _check_name(self, name: str) -> None:
        if self._forced_name is not None and name != self._forced_name:
            raise ToolCallProtocolError(
                f"tool_choice forced {self._forced_name!r} but the model called {name!r}"
            )

    def _complete_call(self, b: Block, out: list[Event], trusted: bool) -> None:
        if b.call_id is None or b.name is None:
            raise ToolCallProtocolError(
                f"tool call at content index {b.ci} ended without "
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
        out.append(ToolCallEndEvent(content_index=b.ci, tool_call=call, _src=self, _v=self._v))
        self._v += 1


def key_str(key: Hashable) -> str:
    if isinstance(key, tuple):
        return "[" + "][".join(str(k) for k in key) + "]"
    return str(key)


def malformed_kind(key: Hashable, have: str, got: str) -> StreamError:
    return MalformedChunkError(
        f"block {key_str(key)} is a {have} block but a {got} fragment arrived for it"
    )


def malformed_missing(key: Hashable, what: str) -> StreamError:
    return MalformedChunkError(f"{what} for block {key_str(key)}, which never started")

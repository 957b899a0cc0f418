"""Content blocks as the assembler grows them: append-only pieces stamped with the
version at which they arrived, so a snapshot at any version is rebuilt on access;
tool-call argument parsing (whole and partial) and usage cost."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import jiter
import msgspec

from ...types import (
    AssistantContent,
    Citation,
    Cost,
    ModelCost,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = ["NO_COST", "NO_USAGE", "Block", "compute_cost", "parse_arguments", "partial_arguments"]

_json_decode = msgspec.json.decode
# Frozen values, shared rather than built again for every response and usage update.
NO_COST = Cost()
NO_USAGE = Usage(cost=NO_COST)


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


def partial_arguments(raw: str) -> dict[str, Any]:
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


class Block:
    """Append-only state of one content block."""

    __slots__ = (
        "args_override",
        "cache",
        "call_id",
        "ci",
        "cite_vs",
        "cites",
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
        self.cites: list[Citation] = []
        self.cite_vs: list[int] = []
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
            cites = self.cites
            if cites:
                n = len(cites) if self.cite_vs[-1] <= v else bisect_right(self.cite_vs, v)
                return TextContent(text=text, signature=sig, citations=tuple(cites[:n]))
            return TextContent(text=text, signature=sig)
        if self.kind == "thinking":
            return ThinkingContent(thinking=text, signature=sig, redacted=self.redacted)
        args = final_args if final_args is not None else partial_arguments(text)
        return ToolCall(
            id=self.call_id or "",
            name=self.name or "",
            arguments=args,
            raw_arguments=text,
            signature=sig,
        )

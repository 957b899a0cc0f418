"""Vertex AI streamed function-call arguments: ``partialArgs`` fragments, each setting
the value at a JSON path, assembled into the call's arguments object.

Reference:
https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling#streaming-fc
(``PartialArg``: ``jsonPath``, ``stringValue`` / ``numberValue`` / ``boolValue`` /
``nullValue``, ``willContinue``).
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

import msgspec

from ...errors import MalformedChunkError
from .._common import dumps

__all__ = ["PartialArg", "StreamedCall"]

_PATH_TOKEN = re.compile(
    r"\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\[\"((?:[^\"\\]|\\.)*)\"\]"
)
_MAX_INDEX = 100_000


class PartialArg(msgspec.Struct, gc=False):
    jsonPath: str
    stringValue: str | None = None
    numberValue: int | float | None = None
    boolValue: bool | None = None
    nullValue: Any = msgspec.UNSET  # present (any value) = JSON null
    willContinue: bool | None = None


def _json_path(path: str, where: str) -> list[str | int]:
    """``$.a.b[0]``, ``$['k.with.dots']`` → segments (partialArgs[].jsonPath)."""
    if not path.startswith("$"):
        raise MalformedChunkError(f"malformed chunk: {where} must start with '$' (got {path!r})")
    segs: list[str | int] = []
    pos = 1
    while pos < len(path):
        m = _PATH_TOKEN.match(path, pos)
        if m is None:
            raise MalformedChunkError(f"malformed chunk: {where} is not a JSON path: {path!r}")
        name, index, q1, q2 = m.groups()
        if index is not None:
            if int(index) > _MAX_INDEX:
                raise MalformedChunkError(f"malformed chunk: {where} index too large: {path!r}")
            segs.append(int(index))
        else:
            segs.append(name if name is not None else re.sub(r"\\(.)", r"\1", q1 or q2 or ""))
        pos = m.end()
    return segs


class StreamedCall:
    """Arguments of one call streamed as ``partialArgs`` (Vertex AI streaming
    function calling): each fragment sets the value at a JSON path, or, after a
    fragment with ``willContinue``, extends the string there ("another PartialArg
    for the current json_path is expected to follow"). The call stays open while
    its parts say ``willContinue`` — also parts with nothing else — and ends with
    ``functionCall: {}`` or a part without it.

    The text streamed for display is the serialized object without its closing
    brackets (nor the quote of a string still growing). Extending the string at
    the end of that text is O(fragment); any other update re-serializes, and if
    the new text does not extend what was shown, the display stops (the final
    ``ToolCallArguments`` carries the whole object anyway).
    """

    __slots__ = ("diverged", "key", "open", "pieces", "root", "sent")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.root: dict[str, Any] = {}
        self.open: list[str | int] | None = None  # path of the string still growing
        self.pieces: list[str] = []  # its text, joined into ``root`` lazily
        self.sent: list[str] = []  # the display text streamed so far
        self.diverged = False

    def apply(self, args: list[PartialArg], where: str) -> str:
        out: list[str] = []
        for j, a in enumerate(args):
            at = f"{where}.partialArgs[{j}]"
            segs = _json_path(a.jsonPath, f"{at}.jsonPath")
            if not segs:
                raise MalformedChunkError(f"malformed chunk: {at}.jsonPath names no field")
            if a.stringValue is not None and self.open == segs:
                self.pieces.append(a.stringValue)
                if not self.diverged:
                    out.append(dumps(a.stringValue).decode()[1:-1])
                if not a.willContinue:
                    self._flush()
                    self.open = None
                    if not self.diverged:
                        out.append('"')
                continue
            value: Any
            if a.stringValue is not None:
                value = a.stringValue
            elif a.numberValue is not None:
                value = a.numberValue
            elif a.boolValue is not None:
                value = a.boolValue
            elif a.nullValue is not msgspec.UNSET:
                value = None
            else:
                continue  # no value in this fragment
            self._flush()
            self.open = None
            self._set(segs, value, at)
            if a.stringValue is not None and a.willContinue:
                self.open, self.pieces = segs, [a.stringValue]
            if not self.diverged:
                out.append(self._resync("".join(out)))
            if self.open is not None and not self._at_tail(segs):
                self.diverged = True  # growing a string that is not at the end of the text
        delta = "".join(out)
        if delta:
            self.sent.append(delta)
        return delta

    def _resync(self, pending: str) -> str:
        # What the full partial text adds beyond what was sent (and is pending).
        before = "".join(self.sent)
        self.sent = [before] if before else []
        sent = before + pending
        text = self.partial_text()
        if not text.startswith(sent):
            self.diverged = True
            return ""
        return text[len(sent) :]

    def _at_tail(self, segs: list[str | int]) -> bool:
        node: Any = self.root
        for seg in segs:
            last = next(reversed(node)) if isinstance(node, dict) else len(node) - 1
            if seg != last:
                return False
            node = node[seg]
        return True

    def _flush(self) -> None:
        if self.open is not None and len(self.pieces) > 1:
            self._set(self.open, "".join(self.pieces), "")
            self.pieces = ["".join(self.pieces)]

    def _set(self, segs: list[str | int], value: Any, at: str) -> None:
        node: Any = self.root
        for depth, seg in enumerate(segs):
            if isinstance(node, list) and isinstance(seg, int):
                node.extend([None] * (seg + 1 - len(node)))
            elif not (isinstance(node, dict) and isinstance(seg, str)):
                raise MalformedChunkError(
                    f"malformed chunk: {at}.jsonPath conflicts with an earlier value"
                )
            if depth == len(segs) - 1:
                node[seg] = value
                return
            container: Any = node
            child = container[seg] if isinstance(node, list) else container.get(seg)
            if child is None:
                child = node[seg] = [] if isinstance(segs[depth + 1], int) else {}
            node = child

    def text(self) -> str:
        self._flush()
        return dumps(self.root).decode()

    def partial_text(self) -> str:
        text = self.text().rstrip("}]")
        return text[:-1] if self.open is not None and text.endswith('"') else text

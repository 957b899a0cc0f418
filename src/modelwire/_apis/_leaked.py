"""Tool calls a local server leaked into the text, recovered as calls (opt-in).

Servers that do not parse a model's tool-call syntax pass it through as text: Hermes
and Qwen write ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` (the Hermes
function-calling format, NousResearch/Hermes-Function-Calling; Qwen's chat template),
Mistral ``[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`` (tokenizer v3) or
``[TOOL_CALLS]name[ARGS]{…}`` (tokenizer v11 and later, mistral-common).

A block becomes a call only when it is complete, names a declared tool and its
arguments are a JSON object; any other block stays text, exactly as sent. Wire APIs
turn this on with a compat flag (off by default: a model quoting the syntax in prose
must not act). :func:`split_leaked` is the pure parser; :class:`LeakedText` holds a
stream's text back from the first marker on, so nothing is shown as text that may
still turn into a call.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

import msgspec

__all__ = ["MARKERS", "LeakedCall", "LeakedText", "split_leaked"]

#: What opens a leaked block.
MARKERS = ("<tool_call>", "[TOOL_CALLS]")

_HERMES = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]")
_NAMED = re.compile(r"\s*([A-Za-z0-9_.:-]+)\[ARGS\]")
_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class LeakedCall(msgspec.Struct, frozen=True, gc=False):
    """One recovered call: the tool's name and its arguments as JSON object text."""

    name: str
    arguments: str


def _call(value: Any, names: Collection[str]) -> LeakedCall | None:
    if not isinstance(value, dict):
        return None
    name, args = value.get("name"), value.get("arguments", value.get("parameters"))
    if isinstance(args, str):  # some templates encode the arguments as a JSON string
        try:
            args = _decoder.decode(args)
        except msgspec.DecodeError:
            return None
    if not isinstance(name, str) or name not in names or not isinstance(args, dict):
        return None
    return LeakedCall(name, _encoder.encode(args).decode())


def _hermes(text: str, names: Collection[str]) -> list[str | LeakedCall]:
    out: list[str | LeakedCall] = []
    pos = 0
    for m in _HERMES.finditer(text):
        try:
            call = _call(_decoder.decode(m.group(1).strip()), names)
        except msgspec.DecodeError:
            call = None
        if call is None:
            continue  # stays text
        out.append(text[pos : m.start()])
        out.append(call)
        pos = m.end()
    out.append(text[pos:])
    return out


def _mistral_tail(tail: str, names: Collection[str]) -> list[LeakedCall] | None:
    """The calls after one ``[TOOL_CALLS]``: a JSON array (or object), or ``name[ARGS]{…}``."""
    named = _NAMED.match(tail)
    if named is not None:
        try:
            args = _decoder.decode(tail[named.end() :].strip())
        except msgspec.DecodeError:
            return None
        call = _call({"name": named.group(1), "arguments": args}, names)
        return None if call is None else [call]
    try:
        value = _decoder.decode(tail.strip())
    except msgspec.DecodeError:
        return None
    items = value if isinstance(value, list) else [value]
    calls = [_call(v, names) for v in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def split_leaked(text: str, names: Collection[str]) -> list[str | LeakedCall]:
    """``text`` cut into text pieces and recovered calls, in order (pure).

    Whitespace-only pieces next to a call are dropped; with no valid block the
    result is ``[text]``.
    """
    if not names or not any(m in text for m in MARKERS):
        return [text]
    pieces: list[str | LeakedCall] = []
    for piece in _hermes(text, names):
        if not isinstance(piece, str) or "[TOOL_CALLS]" not in piece:
            pieces.append(piece)
            continue
        # Mistral: everything after a marker up to the next one is that marker's calls.
        parts = _MISTRAL.split(piece)
        pieces.append(parts[0])
        for tail in parts[1:]:
            calls = _mistral_tail(tail, names)
            if calls is None:
                pieces.append("[TOOL_CALLS]" + tail)
            else:
                pieces.extend(calls)
    out: list[str | LeakedCall] = []
    for p in pieces:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    if not any(isinstance(p, LeakedCall) for p in out):
        return [text]
    return [p for p in out if not isinstance(p, str) or p.strip()]


class LeakedText:
    """One stream's text, held back from the first marker on (incremental).

    :meth:`feed` returns the text that can be shown now: everything before a marker,
    minus a tail that may be the start of one (``<tool_`` at a chunk's end).
    :meth:`finish` returns the held text split by :func:`split_leaked`.
    """

    __slots__ = ("_held", "_names", "_open")

    def __init__(self, names: Collection[str]) -> None:
        self._names = names
        self._held: list[str] = []
        self._open = False  # a marker was seen: hold everything to the end

    def feed(self, text: str) -> str:
        if self._open:
            self._held.append(text)
            return ""
        pending = "".join(self._held) + text
        self._held = []
        first = min((i for i in (pending.find(m) for m in MARKERS) if i >= 0), default=-1)
        if first >= 0:
            self._open = True
            self._held.append(pending[first:])
            return pending[:first]
        # Hold a tail that a marker may start with.
        keep = 0
        for m in MARKERS:
            for n in range(min(len(m) - 1, len(pending)), 0, -1):
                if pending.endswith(m[:n]):
                    keep = max(keep, n)
                    break
        if keep:
            self._held.append(pending[-keep:])
            return pending[:-keep]
        return pending

    def finish(self) -> list[str | LeakedCall]:
        held = "".join(self._held)
        self._held = []
        opened, self._open = self._open, False
        if not held:
            return []
        if not opened:
            return [held]
        return split_leaked(held, self._names)

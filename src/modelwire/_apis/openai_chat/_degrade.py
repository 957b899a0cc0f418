"""Blocks another API produced, as text an OpenAI model can read.

A provider-run tool call and its result, or a text's citations, replay verbatim only
to the API (and model) that produced them. Sent to an OpenAI API from elsewhere (a
handoff, a fallback), they become text in the assistant turn, so the next model still
sees what was searched, run and cited — never a block its request schema rejects
(a 400). Opaque :class:`~modelwire.types.ProviderItem` values carry no portable
meaning and are left out. Used by the ``openai-chat`` and ``openai-responses`` encoders.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ...types import Citation, ServerToolCall, ServerToolResult

__all__ = ["RESULT_CHARS", "server_block_text", "with_sources"]

#: A result longer than this (search hits, a generated image's base64) is cut, with
#: a note of how much was left out: the next model needs the gist, not megabytes.
RESULT_CHARS = 4000


def _json(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (TypeError, msgspec.EncodeError):  # pragma: no cover - values came from JSON
        return repr(value)


def server_block_text(block: ServerToolCall | ServerToolResult) -> str:
    """``[web_search ran with {"query": "…"}]``, ``[web_search result: …]``."""
    if isinstance(block, ServerToolCall):
        return f"[the provider ran {block.name} with {_json(block.input)}]"
    text = _json(block.result)
    if len(text) > RESULT_CHARS:
        text = f"{text[:RESULT_CHARS]}… [{len(text) - RESULT_CHARS} more characters]"
    what = "failed" if block.is_error else "result"
    return f"[{block.name or block.provider_type} {what}: {text}]"


def with_sources(text: str, citations: Sequence[Citation]) -> str:
    """``text`` followed by its sources, numbered: ``[1] Title — https://…``."""
    if not citations:
        return text
    lines: list[str] = []
    seen: set[tuple[str | None, str | None, str | None]] = set()
    for c in citations:
        key = (c.url, c.document, c.title)
        if key in seen:
            continue
        seen.add(key)
        where = c.url or c.document or ""
        label = " — ".join(x for x in (c.title, where) if x) or c.kind
        if c.cited_text:
            label += f': "{c.cited_text}"'
        lines.append(f"[{len(lines) + 1}] {label}")
    return f"{text}\n\nSources:\n" + "\n".join(lines)

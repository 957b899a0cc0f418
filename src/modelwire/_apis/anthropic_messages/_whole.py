"""Anthropic blocks kept whole — provider-run tool calls and results, and opaque
items — and citations, as the ``anthropic-messages`` decoder builds them.

References (Anthropic docs): server tools (web search, web fetch, code execution,
tool search), the MCP connector (``mcp_tool_use``/``mcp_tool_result``), citations
(``citations_delta``, the location types), compaction (``compaction_delta``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import MalformedChunkError
from ...types import Citation, ProviderItem, ServerToolCall, ServerToolResult
from .._common import Count, decode_json, decoder_for, dumps

__all__ = ["API_NAME", "SERVER_CALLS", "WHOLE", "Whole", "citation", "whole_kind"]

API_NAME = "anthropic-messages"


class _ServerCall(msgspec.Struct, gc=False):
    # server_tool_use / mcp_tool_use (server-tools docs; MCP connector docs).
    id: str
    name: str
    input: Any = None


class _ServerResult(msgspec.Struct, gc=False):
    # ``*_tool_result`` blocks: ``content`` is the result or an ``*_error`` object;
    # mcp_tool_result says ``is_error`` itself.
    tool_use_id: str
    content: Any = None
    is_error: bool | None = None


class _Cite(msgspec.Struct, gc=False):
    # The citation types of the citations and web-search docs: char_location,
    # page_location, content_block_location, web_search_result_location,
    # search_result_location. Unknown types keep what these fields say.
    type: str
    cited_text: str | None = None
    url: str | None = None
    title: str | None = None
    source: str | None = None
    document_index: Count | None = None
    document_title: str | None = None
    file_id: str | None = None
    search_result_index: Count | None = None
    start_char_index: Count | None = None
    end_char_index: Count | None = None
    start_page_number: Count | None = None
    end_page_number: Count | None = None
    start_block_index: Count | None = None
    end_block_index: Count | None = None


_call_decoder = decoder_for(_ServerCall)
_result_decoder = decoder_for(_ServerResult)
_cite_decoder = decoder_for(_Cite)


#: Provider-run tool calls (server-tools docs: ``server_tool_use`` for web search,
#: web fetch, code execution, tool search; MCP connector: ``mcp_tool_use``).
SERVER_CALLS = frozenset({"server_tool_use", "mcp_tool_use"})
WHOLE = frozenset({"call", "result", "item"})


def whole_kind(block_type: str) -> str:
    if block_type in SERVER_CALLS:
        return "call"
    # web_search_tool_result, web_fetch_tool_result, code_execution_tool_result,
    # bash_code_execution_tool_result, text_editor_code_execution_tool_result,
    # tool_search_tool_result, mcp_tool_result…
    if block_type.endswith("_tool_result"):
        return "result"
    return "item"


def citation(raw: msgspec.Raw | bytes, where: str, what: str = "chunk") -> Citation:
    """A Messages citation object as a :class:`Citation` (``raw`` keeps its bytes)."""
    c = decode_json(raw, _cite_decoder, what, f"{where}.")
    text = bytes(raw).decode("utf-8")
    t = c.type
    kind = "other"
    url, title, document = c.url, c.title or c.document_title, None
    start = end = None
    if t == "web_search_result_location":
        kind = "url"
    elif t in ("char_location", "page_location", "content_block_location"):
        kind = "file" if c.file_id else "document"
        document = c.file_id or (str(c.document_index) if c.document_index is not None else None)
        if t == "char_location":
            start, end = c.start_char_index, c.end_char_index
        elif t == "page_location":
            start, end = c.start_page_number, c.end_page_number
        else:
            start, end = c.start_block_index, c.end_block_index
    elif t == "search_result_location":
        url = c.source
        kind = "url" if (c.source or "").startswith(("https://", "http://")) else "other"
        if c.search_result_index is not None:
            document = str(c.search_result_index)
        start, end = c.start_block_index, c.end_block_index
    return Citation(kind=kind, url=url, title=title, cited_text=c.cited_text,
                    document=document, start=start, end=end, raw=text)  # fmt: skip


class Whole:
    """A block kept whole while it is open: its start bytes and what its deltas add."""

    __slots__ = ("call", "encrypted", "kind", "parts", "raw", "summary", "type")

    def __init__(
        self, kind: str, type_: str, raw: bytes, where: str, what: str, names: dict[str, str]
    ) -> None:
        """Validated now (a bad field is named by its path); a server call's tool name
        goes into ``names`` for its result."""
        self.kind = kind
        self.type = type_
        self.raw = raw
        self.parts: list[str] = []  # input_json_delta text
        self.summary: list[str] = []  # compaction_delta text
        self.encrypted: str | None = None
        self.call: _ServerCall | None = None
        if kind == "call":
            call = self.call = decode_json(raw, _call_decoder, what, f"{where}.")
            if call.input is not None and not isinstance(call.input, dict):
                raise MalformedChunkError(
                    f"malformed {what}: {where}.input must be an object "
                    f"(got {type(call.input).__name__})"
                )
            names[call.id] = call.name
        elif kind == "result":
            decode_json(raw, _result_decoder, what, f"{where}.")

    def complete(
        self, i: int, names: dict[str, str]
    ) -> ServerToolCall | ServerToolResult | ProviderItem:
        """The finished block; ``raw`` is the start's bytes exactly, or, when deltas
        added to it, the start's JSON with what they added (key order kept)."""
        streamed = "".join(self.parts)
        value: Any = None
        if streamed.strip():
            try:
                value = msgspec.json.decode(streamed)
            except msgspec.DecodeError:
                value = None
            if not isinstance(value, dict):
                raise MalformedChunkError(
                    f"malformed chunk: the input streamed for block {i} ({self.type}) "
                    "is not a JSON object"
                )
        if self.kind == "result":
            res = _result_decoder.decode(self.raw)
            content = res.content
            if res.is_error is not None:
                failed = res.is_error
            else:
                # web_search_tool_result_error, web_fetch_tool_error,
                # code_execution_tool_result_error…: the result is an error object.
                kind = content.get("type") if isinstance(content, dict) else None
                failed = isinstance(kind, str) and kind.endswith("_error")
            return ServerToolResult(tool_call_id=res.tool_use_id, provider_type=self.type,
                                    result=content, is_error=failed,
                                    name=names.get(res.tool_use_id),
                                    raw=self.raw.decode())  # fmt: skip
        data = self.raw.decode()
        if value is not None or self.summary or self.encrypted is not None:
            obj = msgspec.json.decode(self.raw)
            if value is not None:
                obj["input"] = value
            if self.summary:
                before = obj.get("content")
                obj["content"] = (before if isinstance(before, str) else "") + "".join(self.summary)
            if self.encrypted is not None:
                obj["encrypted_content"] = self.encrypted
            data = dumps(obj).decode()
        if self.kind == "call":
            call = self.call
            assert call is not None
            args = value if value is not None else (call.input or {})
            return ServerToolCall(id=call.id, name=call.name, input=args,
                                  provider_type=self.type, raw=data)  # fmt: skip
        return ProviderItem(api=API_NAME, provider_type=self.type, data=data)

"""What Gemini ran and what it rests on: code execution parts, grounding, URL context
and citation metadata, read into provider-run tool blocks and citations.

References: code execution (https://ai.google.dev/gemini-api/docs/code-execution:
``ExecutableCode``, ``CodeExecutionResult``), grounding with Google Search
(https://ai.google.dev/gemini-api/docs/google-search: ``groundingMetadata`` with
``webSearchQueries``, ``searchEntryPoint``, ``groundingChunks``, ``groundingSupports``),
URL context (https://ai.google.dev/gemini-api/docs/url-context: ``urlContextMetadata``)
and the API reference (``Candidate.citationMetadata``, ``Segment``).

* An ``executableCode`` part is a :class:`~modelwire.types.ServerToolCall`
  (``code_execution``), a ``codeExecutionResult`` part its
  :class:`~modelwire.types.ServerToolResult`, matched by ``id`` (without one, the
  result answers the code before it); ``raw`` is the part as received (with its
  ``thoughtSignature``), which is what is replayed.
* Each chunk a grounding support names is a citation of the support's ``segment``,
  whose offsets count UTF-8 bytes of the response's text (thought text excluded) —
  kept as received; ``raw`` is ``{"groundingSupport": …, "groundingChunk": …}``, both
  as received. A ``web`` or ``maps`` chunk gives the url and title and the segment's
  text is the cited text; a ``retrievedContext`` chunk (file search, RAG: ``uri``,
  ``title``, ``text``, ``fileSearchStore``, ``customMetadata``, ``ragChunk``…, see
  https://ai.google.dev/api/generate-content#RetrievedContext) cites its own passage
  (``text``), its store or document as ``document``, and keeps the rest (custom
  metadata, page numbers) in ``raw``, which :class:`~modelwire.types.Citation` has no
  field for. The search (``webSearchQueries``) is a ``google_search`` ServerToolCall
  whose ``raw`` is the whole metadata: response-only data, which Gemini takes no part
  for, so it is not replayed.
* When streaming, each response's ``groundingChunks`` holds only the chunks not sent
  before, and ``groundingChunkIndices`` count "across all responses"; "it is the
  client's responsibility to accumulate the grounding chunks from all responses (while
  maintaining the same order)" (``GroundingSupport``,
  https://ai.google.dev/api/generate-content#GroundingSupport). So chunks accumulate
  over the stream; a support naming a chunk not received yet waits for it, and one
  still unresolved when the stream ends is a malformed chunk naming its field.
* ``urlContextMetadata.urlMetadata`` and ``citationMetadata.citationSources`` entries
  are citations too (``raw``: the entry).

Gemini repeats metadata across chunks (``"groundingMetadata": {}`` on every one):
what was reported already is not reported again.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from ...errors import MalformedChunkError
from ...types import Citation, ServerToolCall, ServerToolResult
from .._common import decode_json, decoder_for, dumps

__all__ = ["SourceReader"]

_Count = Annotated[int, msgspec.Meta(ge=0)]


class _Code(msgspec.Struct, gc=False):
    """ExecutableCode: ``language`` (PYTHON), ``code``, and an ``id`` on Gemini 3."""

    code: str = ""
    language: str | None = None
    id: str | None = None


class _CodeResult(msgspec.Struct, gc=False):
    """CodeExecutionResult: ``outcome`` (OUTCOME_OK, OUTCOME_FAILED,
    OUTCOME_DEADLINE_EXCEEDED), ``output``, and the ``id`` of its code."""

    outcome: str | None = None
    output: str | None = None
    id: str | None = None


class _Segment(msgspec.Struct, gc=False):
    startIndex: _Count = 0
    endIndex: _Count = 0
    text: str | None = None
    partIndex: _Count | None = None


class _Support(msgspec.Struct, gc=False):
    segment: _Segment | None = None
    groundingChunkIndices: list[_Count] = msgspec.field(default_factory=list)


class _Source(msgspec.Struct, gc=False):
    uri: str | None = None
    title: str | None = None


class _RagChunk(msgspec.Struct, gc=False):
    text: str | None = None


class _Retrieved(msgspec.Struct, gc=False):
    """RetrievedContext: a file-search (Gemini API) or RAG / Vertex AI Search chunk.
    Fields not read here (``customMetadata``, ``pageNumber``, ``mediaId``…) stay in
    the citation's ``raw``."""

    uri: str | None = None
    title: str | None = None
    text: str | None = None  # the passage retrieved ("Text of the chunk")
    fileSearchStore: str | None = None
    documentName: str | None = None  # Vertex AI Search
    ragChunk: _RagChunk | None = None  # Vertex RAG Engine


class _GroundingChunk(msgspec.Struct, gc=False):
    web: _Source | None = None
    retrievedContext: _Retrieved | None = None
    maps: _Source | None = None


class _Grounding(msgspec.Struct, gc=False):
    webSearchQueries: list[str] | None = None
    groundingChunks: list[msgspec.Raw] = msgspec.field(default_factory=list)
    groundingSupports: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _Pending(msgspec.Struct, gc=False):
    """A support index naming a grounding chunk not received yet."""

    support: _Support
    raw: msgspec.Raw
    at: str  # the support's field path, ending in "."
    n: int  # the position of ``index`` in ``groundingChunkIndices``
    index: int


class _UrlEntry(msgspec.Struct, gc=False):
    retrievedUrl: str | None = None
    urlRetrievalStatus: str | None = None


class _UrlContext(msgspec.Struct, gc=False):
    urlMetadata: list[msgspec.Raw] = msgspec.field(default_factory=list)


class _CitationSource(msgspec.Struct, gc=False):
    startIndex: _Count | None = None
    endIndex: _Count | None = None
    uri: str | None = None
    title: str | None = None
    license: str | None = None


class _CitationMetadata(msgspec.Struct, gc=False):
    citationSources: list[msgspec.Raw] = msgspec.field(default_factory=list)


_code_decoder = decoder_for(_Code)
_code_result_decoder = decoder_for(_CodeResult)
_any_decoder = decoder_for(Any)
_object_decoder = decoder_for(dict[str, Any])
_grounding_decoder = decoder_for(_Grounding)
_grounding_chunk_decoder = decoder_for(_GroundingChunk)
_support_decoder = decoder_for(_Support)
_url_context_decoder = decoder_for(_UrlContext)
_url_entry_decoder = decoder_for(_UrlEntry)
_citation_metadata_decoder = decoder_for(_CitationMetadata)
_citation_source_decoder = decoder_for(_CitationSource)
#: ``CodeExecutionResult.outcome`` values that mean the code ran to its end.
_CODE_OK = frozenset({"OUTCOME_OK"})


class SourceReader:
    """Per-response state: the last code's id and what was reported already."""

    __slots__ = ("_chunks", "_code_id", "_pending", "_seen")

    def __init__(self) -> None:
        self._code_id: str | None = None
        self._seen: set[bytes] = set()
        # Every grounding chunk of the stream so far, in order, with its JSON text.
        self._chunks: list[tuple[_GroundingChunk, bytes]] = []
        self._pending: list[_Pending] = []

    def code(
        self,
        code: msgspec.Raw,
        result: msgspec.Raw,
        signature: str | None,
        where: str,
        fallback_id: str,
    ) -> ServerToolCall | ServerToolResult:
        """The block of an ``executableCode`` (``code``) or ``codeExecutionResult`` part."""
        wrapper: dict[str, Any]
        if code:
            c = decode_json(code, _code_decoder, prefix=f"{where}.executableCode.")
            call_id = c.id or fallback_id
            self._code_id = call_id
            wrapper = {"executableCode": code}
            if signature:
                wrapper["thoughtSignature"] = signature
            return ServerToolCall(
                id=call_id, name="code_execution", input=decode_json(code, _object_decoder),
                provider_type="executableCode", raw=dumps(wrapper).decode(),
            )  # fmt: skip
        r = decode_json(result, _code_result_decoder, prefix=f"{where}.codeExecutionResult.")
        wrapper = {"codeExecutionResult": result}
        if signature:
            wrapper["thoughtSignature"] = signature
        return ServerToolResult(
            tool_call_id=r.id or self._code_id or fallback_id,
            provider_type="codeExecutionResult",
            result=decode_json(result, _any_decoder),
            is_error=r.outcome not in _CODE_OK,
            name="code_execution",
            raw=dumps(wrapper).decode(),
        )

    def search(self, grounding: msgspec.Raw, where: str, call_id: str) -> ServerToolCall | None:
        """The ``google_search`` the metadata reports, the first time it does."""
        g = decode_json(grounding, _grounding_decoder, prefix=f"{where}.groundingMetadata.")
        if not g.webSearchQueries or not self._fresh(b"q" + dumps(g.webSearchQueries)):
            return None
        return ServerToolCall(
            id=call_id, name="google_search", input={"queries": list(g.webSearchQueries)},
            provider_type="groundingMetadata", raw=bytes(grounding).decode(),
        )  # fmt: skip

    def citations(
        self,
        grounding: msgspec.Raw,
        url_context: msgspec.Raw,
        citation_metadata: msgspec.Raw,
        where: str,
    ) -> list[tuple[int | None, Citation]]:
        """New citations of a candidate's metadata, each with the byte offset in the
        response's text it starts at (``None``: not tied to a span)."""
        out: list[tuple[int | None, Citation]] = []
        if grounding:
            at = f"{where}.groundingMetadata."
            g = decode_json(grounding, _grounding_decoder, prefix=at)
            for k, raw in enumerate(g.groundingChunks):
                chunk = decode_json(raw, _grounding_chunk_decoder,
                                    prefix=f"{at}groundingChunks[{k}].")  # fmt: skip
                self._chunks.append((chunk, bytes(raw)))
            if self._pending and g.groundingChunks:
                # Supports of earlier responses waiting for these chunks, in order.
                waiting, self._pending = self._pending, []
                for p in waiting:
                    self._cite(p.support, p.raw, p.at, p.n, p.index, out)
            for k, raw in enumerate(g.groundingSupports):
                sat = f"{at}groundingSupports[{k}]."
                support = decode_json(raw, _support_decoder, prefix=sat)
                indices = support.groundingChunkIndices
                if not indices:
                    self._cite(support, raw, sat, 0, None, out)
                for n, idx in enumerate(indices):
                    self._cite(support, raw, sat, n, idx, out)
        if url_context:
            u = decode_json(url_context, _url_context_decoder,
                            prefix=f"{where}.urlContextMetadata.")  # fmt: skip
            for k, raw in enumerate(u.urlMetadata):
                if self._fresh(b"u" + bytes(raw)):
                    entry = decode_json(raw, _url_entry_decoder,
                                        prefix=f"{where}.urlContextMetadata.urlMetadata[{k}].")  # fmt: skip
                    out.append((None, Citation(kind="url", url=entry.retrievedUrl,
                                               raw=bytes(raw).decode())))  # fmt: skip
        if citation_metadata:
            cm = decode_json(citation_metadata, _citation_metadata_decoder,
                             prefix=f"{where}.citationMetadata.")  # fmt: skip
            for k, raw in enumerate(cm.citationSources):
                if self._fresh(b"c" + bytes(raw)):
                    src = decode_json(raw, _citation_source_decoder,
                                      prefix=f"{where}.citationMetadata.citationSources[{k}].")  # fmt: skip
                    c = Citation(kind="url" if src.uri else "other", url=src.uri,
                                 title=src.title, start=src.startIndex, end=src.endIndex,
                                 raw=bytes(raw).decode())  # fmt: skip
                    out.append((src.startIndex, c))
        return out

    def _fresh(self, mark: bytes) -> bool:
        if mark in self._seen:
            return False
        self._seen.add(mark)
        return True

    def unresolved(self) -> None:
        """At the end of the stream: a support index no grounding chunk of the whole
        stream answers is a malformed chunk, named by its field."""
        if self._pending:
            p = self._pending[0]
            raise MalformedChunkError(
                f"malformed chunk: {p.at}groundingChunkIndices[{p.n}] is {p.index}, but "
                f"groundingChunks has {len(self._chunks)} entries over the whole stream"
            )

    def _cite(
        self,
        support: _Support,
        raw: msgspec.Raw,
        at: str,
        n: int,
        idx: int | None,
        out: list[tuple[int | None, Citation]],
    ) -> None:
        """The citation of chunk ``idx`` of ``support`` (``None``: the support names no
        chunk), once; one whose chunk has not arrived yet waits for it."""
        if idx is not None and idx >= len(self._chunks):
            self._pending.append(_Pending(support, raw, at, n, idx))
            return
        if not self._fresh(b"s%d:" % (-1 if idx is None else idx) + bytes(raw)):
            return
        seg = support.segment
        text = seg.text if seg is not None else None
        start = seg.startIndex if seg is not None else None
        end = seg.endIndex if seg is not None else None
        wrapper: dict[str, Any] = {"groundingSupport": raw}
        c: Citation
        if idx is None:
            c = Citation(kind="other", cited_text=text, start=start, end=end,
                         raw=dumps(wrapper).decode())  # fmt: skip
        else:
            chunk, chunk_raw = self._chunks[idx]
            wrapper["groundingChunk"] = msgspec.Raw(chunk_raw)
            raw_text = dumps(wrapper).decode()
            src = chunk.web or chunk.maps
            rc = chunk.retrievedContext
            if src is not None:
                c = Citation(kind="url", url=src.uri, title=src.title, cited_text=text,
                             start=start, end=end, raw=raw_text)  # fmt: skip
            elif rc is not None:
                # The passage the answer rests on is the chunk's own text; a store's
                # file is a provider-stored file, like OpenAI's file citations.
                passage = rc.text if rc.text is not None else (
                    rc.ragChunk.text if rc.ragChunk is not None else None)  # fmt: skip
                c = Citation(
                    kind="file" if rc.fileSearchStore else "document", url=rc.uri,
                    title=rc.title, cited_text=passage if passage is not None else text,
                    document=rc.documentName or rc.fileSearchStore or rc.uri,
                    start=start, end=end, raw=raw_text,
                )  # fmt: skip
            else:
                c = Citation(kind="other", cited_text=text, start=start, end=end,
                             raw=raw_text)  # fmt: skip
        out.append((start, c))

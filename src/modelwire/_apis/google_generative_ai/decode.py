"""Gemini stream decoding: ``GenerateContentResponse`` chunks → normalized deltas.

References: the API reference (https://ai.google.dev/api/generate-content:
``Candidate``, ``Part``, ``FunctionCall``, ``FinishReason``, ``UsageMetadata``,
``PromptFeedback``), the thought-signatures guide
(https://ai.google.dev/gemini-api/docs/thought-signatures) and Vertex AI's
streamed function-call arguments
(https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling#streaming-fc).

Typed schemas cover the fields used only: unknown fields (``safetyRatings``,
``trafficType``…) are ignored, so new ones never break a stream.

Provider-run code, grounding and citations are read by ``_sources``; streamed
function-call arguments are assembled by ``_streamed``; an image the model generated
(an ``inlineData`` part, https://ai.google.dev/gemini-api/docs/image-generation) is an
:class:`~modelwire.types.ImageContent` block in place among the text.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Hashable

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
from ..._wire.sse._frames import Run, frames_of, run_values
from ...errors import (
    InvalidRequestError,
    MalformedChunkError,
    ProviderStreamError,
    StreamError,
    TruncatedStreamError,
)
from ...types import ImageContent
from .._codec import first_sse_json
from .._common import decode_json, decoder_for, in_band_error
from ._response import Blob, Body, Candidate, Chunk, Error, FunctionCall, Part, Usage
from ._sources import SourceReader
from ._streamed import StreamedCall
from .spec import FILTERED_FINISH_REASONS, STATUS_OF_RPC

__all__ = ["SYNTHETIC_ID_PREFIX", "GoogleDecoder", "recognizes"]

#: Prefix of the ids the decoder makes up when ``functionCall.id`` is absent; such
#: ids are never sent back to Gemini (only provider-given ids are).
SYNTHETIC_ID_PREFIX = "gcall_"

_chunk_decoder = decoder_for(Chunk)
_body_decoder = decoder_for(Body)
_blob_decoder = decoder_for(Blob)
_decode_chunk = _chunk_decoder.decode
_decode_body = _body_decoder.decode
_body_lines = _body_decoder.decode_lines

_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def _in_band(err: Error) -> StreamError:
    """``{"error": {code, message, status}}`` inside a 200 stream → a typed error."""
    code = err.code if err.code is not None and 400 <= err.code < 600 else None
    status = code or STATUS_OF_RPC.get(err.status or "")
    exc = in_band_error(err.message or "", type_=err.status, status=status)
    if type(exc) is ProviderStreamError and status in (400, 413, 422):
        return InvalidRequestError(exc.message, status=status)
    return exc


def _finish(reason: str, message: str | None) -> Finish:
    detail = f": {message}" if message else ""
    if reason == "STOP":
        return Finish("stop", reason)
    if reason == "MAX_TOKENS":
        return Finish("length", reason)
    if reason in FILTERED_FINISH_REASONS:
        text = f"Gemini stopped the response (finishReason {reason}){detail}"
        return Finish("error", reason, "content_filter", text)
    text = f"Gemini ended the response with finishReason {reason}{detail}"
    return Finish("error", reason, "provider_stream", text)


def _usage(u: Usage) -> UsageUpdate | None:
    prompt, cached = u.promptTokenCount, u.cachedContentTokenCount
    cand, thoughts, tool_use = (
        u.candidatesTokenCount,
        u.thoughtsTokenCount,
        u.toolUsePromptTokenCount,
    )
    if prompt is None and cached is None and cand is None and thoughts is None and tool_use is None:
        return None  # e.g. Vertex's ``{"trafficType": …}`` alone: no counts yet
    cached = cached or 0
    # ``promptTokenCount`` includes cached tokens; tool-use prompt tokens (search,
    # code execution) are prompt tokens too, so they count as input and
    # total_tokens matches ``totalTokenCount``. Each usageMetadata is a snapshot.
    return UsageUpdate(
        input=max((prompt or 0) + (tool_use or 0) - cached, 0),
        output=(cand or 0) + (thoughts or 0),
        cache_read=cached,
        cache_write=0,
    )


class GoogleDecoder:
    """Per-response decoder: SSE events → normalized deltas.

    Keys: ``("block", n)`` for text/thinking blocks — consecutive text parts of
    one kind share a block; any other part kind in between, or a second
    signature, starts a new one — and ``("call", n)`` for function calls.
    """

    __slots__ = ("_calls", "_cur", "_cur_signed", "_finish", "_id_base", "_ids",
                 "_n_blocks", "_n_images", "_n_server", "_n_synth", "_response_id",
                 "_sources", "_starts", "_stream", "_texts", "_usage")  # fmt: skip

    def __init__(self) -> None:
        self._n_server = 0  # provider-run blocks so far: their keys ("server", n)
        self._n_images = 0  # generated images so far: their keys ("image", n)
        self._texts: list[str] = []  # the answer's text pieces (grounding offsets count them)
        self._starts: list[tuple[int, Hashable]] = []  # each text block's first piece
        self._sources = SourceReader()
        self._finish: str | None = None
        self._response_id: str | None = None
        self._n_blocks = 0
        self._cur: tuple[Hashable, str] | None = None  # the open text/thinking block
        self._cur_signed = False
        self._calls = 0
        self._ids: set[str] = set()
        self._id_base: str | None = None
        self._n_synth = 0
        self._stream: StreamedCall | None = None
        # The last usageMetadata and its delta: every chunk repeats the snapshot, and an
        # equal one maps to the same delta (built once).
        self._usage: tuple[Usage, UsageUpdate | None] | None = None

    def decode(self, frame: Frame) -> list[Delta]:
        data = frame.data
        known = self._response_id is not None
        try:
            chunk = _decode_body(data) if known else _decode_chunk(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            # Raises MalformedChunkError with the path.
            if known:
                decode_json(data, _body_decoder)
            decode_json(data, _chunk_decoder)
            raise  # pragma: no cover - decode_json raised already
        if chunk.error is not None:
            raise _in_band(chunk.error)
        out: list[Delta] = []
        if not known and isinstance(chunk, Chunk) and chunk.responseId:
            self._response_id = chunk.responseId
            out.append(ResponseMeta(response_id=chunk.responseId, model=chunk.modelVersion))
        candidates = chunk.candidates
        if candidates:
            # One candidate per stream (DESIGN §2a): candidateCount > 1 is refused.
            if len(candidates) > 1 or candidates[0].index != 0:
                bad = next((i for i, c in enumerate(candidates) if c.index != 0), 1)
                raise MalformedChunkError(
                    f"malformed chunk: candidates[{bad}].index must be 0: modelwire reads one "
                    f"candidate per stream (got {len(candidates)}); do not set candidateCount"
                )
            cand = candidates[0]
            if cand.content is not None:
                for i, part in enumerate(cand.content.parts):
                    self._part(part, i, out)
            if cand.groundingMetadata or cand.urlContextMetadata or cand.citationMetadata:
                self._metadata(cand, out)
            if cand.finishReason:
                if self._stream is not None:
                    self._close_stream(out, trusted=cand.finishReason != "MAX_TOKENS")
                self._finish = cand.finishReason
                out.append(_finish(cand.finishReason, cand.finishMessage))
        feedback = chunk.promptFeedback
        if feedback is not None and feedback.blockReason not in (None, "BLOCK_REASON_UNSPECIFIED"):
            reason = feedback.blockReason or ""
            self._finish = reason
            text = f"Gemini blocked the prompt (promptFeedback.blockReason {reason})"
            out.append(Finish("error", reason, "content_filter", text))
        meta = chunk.usageMetadata
        if meta is not None:
            last = self._usage
            if last is not None and last[0] == meta:
                usage = last[1]
            else:
                usage = _usage(meta)
                self._usage = (meta, usage)
            if usage is not None:
                out.append(usage)
        return out

    # The pipeline may hand decode_batch a ``Run`` (frames joined, one decode_lines).
    takes_runs = True

    def decode_batch(self, frames: list[Frame], out: list[Delta]) -> None:
        """:meth:`decode` of each frame of one read, appended to ``out`` (one call per
        read: the pipeline's batched hand-off). The commonest chunk once the response id
        is known (one candidate, one plain text part continuing the open text block, no
        finish, feedback or metadata; usage or not) is mapped here; every other frame
        goes through :meth:`decode`, which decodes it again. A frame that fails adds
        nothing to ``out`` (nothing is appended or changed before the last check). A
        :class:`Run` is decoded in one ``decode_lines`` call; when that fails, or yields
        another number of chunks than the run has frames, frame by frame."""
        if self._response_id is None:
            for frame in frames:
                if frame.__class__ is Run:
                    self.decode_batch(frames_of(frame), out)
                else:
                    out += self.decode(frame)
            return
        decode, append, texts = self.decode, out.append, self._texts
        chunks: list[Body] | tuple[Body] | None
        for frame in frames:
            parts: list[Frame] | None = None
            if frame.__class__ is Run:
                chunks = run_values(frame, _body_lines)
                if chunks is None:
                    self.decode_batch(frames_of(frame), out)
                    continue
            else:
                try:
                    chunks = (_decode_body(frame.data),)
                except (msgspec.ValidationError, msgspec.DecodeError):
                    out += decode(frame)  # raises, naming the field
                    continue
            for n, chunk in enumerate(chunks):
                cands = chunk.candidates
                cur = self._cur
                if (
                    cands is not None
                    and len(cands) == 1
                    and cur is not None
                    and cur[1] == "text"
                    and chunk.error is None
                    and chunk.promptFeedback is None
                ):
                    cand = cands[0]
                    content = cand.content
                    if (
                        content is not None
                        and len(content.parts) == 1
                        and cand.index == 0
                        and not cand.finishReason
                        and not cand.groundingMetadata
                        and not cand.urlContextMetadata
                        and not cand.citationMetadata
                    ):
                        part = content.parts[0]
                        text = part.text
                        if (
                            text
                            and part.functionCall is None
                            and part.thought is not True
                            and not part.thoughtSignature
                        ):
                            texts.append(text)
                            append(TextDelta(cur[0], text))
                            meta = chunk.usageMetadata
                            if meta is not None:
                                last = self._usage
                                if last is not None and last[0] == meta:
                                    usage = last[1]
                                else:
                                    usage = _usage(meta)
                                    self._usage = (meta, usage)
                                if usage is not None:
                                    append(usage)
                            continue
                if frame.__class__ is Run:
                    if parts is None:
                        parts = frames_of(frame)
                    out += decode(parts[n])
                else:
                    out += decode(frame)

    def end(self) -> list[Delta]:
        # Gemini's terminal signal is the finish reason itself (there is no [DONE]).
        if self._finish is None:
            raise TruncatedStreamError(
                "the Gemini stream ended without a finishReason (the response may be incomplete)"
            )
        self._sources.unresolved()  # a grounding index no chunk of the stream answers
        return [EndOfStream()]

    # ------------------------------------------------------------------ parts

    def _part(self, part: Part, i: int, out: list[Delta]) -> None:
        # ``i``: the part's index, for the field path of an error (built only then).
        if part.text is not None and part.functionCall is None:
            self._text(part.text, part.thought is True, part.thoughtSignature, out)
        elif part.functionCall is not None:
            self._end_block(out)
            where = f"candidates[0].content.parts[{i}]"
            self._function_call(part.functionCall, part.thoughtSignature, where, out)
        elif part.executableCode or part.codeExecutionResult:
            self._end_block(out)
            self._code(part, f"candidates[0].content.parts[{i}]", out)
        elif part.inlineData and part.thought is not True:
            self._end_block(out)
            self._image(part, f"candidates[0].content.parts[{i}]", out)
        elif (part.inlineData or part.fileData
              or part.functionResponse or part.toolCall or part.toolResponse):  # fmt: skip
            self._end_block(out)  # not surfaced; it separates the text around it
        elif part.thoughtSignature:
            # A part carrying only a signature belongs with the block it follows.
            self._text("", part.thought is True, part.thoughtSignature, out)
        else:
            self._end_block(out)  # a part kind unknown today: it separates text too

    def _text(self, text: str, thought: bool, signature: str | None, out: list[Delta]) -> None:
        if not text and not signature:
            return
        kind = "thinking" if thought else "text"
        cur = self._cur
        if cur is None or cur[1] != kind or (signature and self._cur_signed):
            self._end_block(out)
            cur = self._cur = (("block", self._n_blocks), kind)
            self._n_blocks += 1
            self._cur_signed = False
            if not thought:
                self._starts.append((len(self._texts), cur[0]))
        key = cur[0]
        if text:
            if thought:
                out.append(ThinkingDelta(key, text))
            else:
                self._texts.append(text)  # measured only when a citation needs it
                out.append(TextDelta(key, text))
        else:
            out.append(BlockStart(key, "thinking" if thought else "text"))
        if signature:
            # A signature stays on the block of the part that carried it; it does
            # not make the part thinking (thought-signatures guide).
            out.append(BlockSignature(key, signature))
            self._cur_signed = True

    def _end_block(self, out: list[Delta]) -> None:
        if self._cur is not None:
            out.append(BlockEnd(self._cur[0]))
            self._cur = None

    def _image(self, part: Part, where: str, out: list[Delta]) -> None:
        # An image the model generated (image-generation models with
        # ``responseModalities: ["TEXT", "IMAGE"]``,
        # https://ai.google.dev/gemini-api/docs/image-generation): a whole block, in
        # place among the text, its thoughtSignature kept for replay. Interim "thought"
        # images (``thought: true``) are the model's drafts and are not surfaced.
        blob = decode_json(part.inlineData, _blob_decoder, prefix=f"{where}.inlineData.")
        if not blob.mimeType:
            raise MalformedChunkError(f"malformed chunk: {where}.inlineData.mimeType is empty")
        image = ImageContent(data=blob.data, mime_type=blob.mimeType,
                             signature=part.thoughtSignature or None)  # fmt: skip
        out.append(BlockComplete(("image", self._n_images), image))
        self._n_images += 1

    # ------------------------------------------------------------------ provider-run tools

    def _server_key(self) -> Hashable:
        key = ("server", self._n_server)
        self._n_server += 1
        return key

    def _code(self, part: Part, where: str, out: list[Delta]) -> None:
        block = self._sources.code(part.executableCode, part.codeExecutionResult,
                                   part.thoughtSignature, where, f"gcode_{self._n_server}")  # fmt: skip
        out.append(BlockComplete(self._server_key(), block))

    def _metadata(self, cand: Candidate, out: list[Delta]) -> None:
        if cand.groundingMetadata:
            call = self._sources.search(cand.groundingMetadata, "candidates[0]",
                                        f"google_search_{self._n_server}")  # fmt: skip
            if call is not None:
                out.append(BlockComplete(self._server_key(), call))
        cites = self._sources.citations(cand.groundingMetadata, cand.urlContextMetadata,
                                        cand.citationMetadata, "candidates[0]")  # fmt: skip
        starts = self._byte_starts() if cites else []
        for offset, c in cites:
            out.append(CitationDelta(self._text_key(offset, starts), c))

    def _byte_starts(self) -> list[tuple[int, Hashable]]:
        # Where each text block starts, in UTF-8 bytes of the answer text (thoughts
        # excluded): what grounding segment offsets count.
        out: list[tuple[int, Hashable]] = []
        done = size = 0
        for first, key in self._starts:
            size += sum(len(t.encode()) for t in self._texts[done:first])
            done = first
            out.append((size, key))
        return out

    def _text_key(self, offset: int | None, starts: list[tuple[int, Hashable]]) -> Hashable:
        """The text block a citation belongs to: the one its byte offset falls in while
        it is still open, else the open text block, else a new one (a citation is
        never dropped)."""
        cur = self._cur
        open_key = cur[0] if cur is not None and cur[1] == "text" else None
        if offset is not None and starts:
            key = starts[0][1]
            for start, k in starts:
                if start > offset:
                    break
                key = k
            if key == open_key:
                return key
        if open_key is not None:
            return open_key
        key = ("block", self._n_blocks)
        self._n_blocks += 1
        return key

    # ------------------------------------------------------------------ function calls

    def _function_call(
        self, fc: FunctionCall, signature: str | None, where: str, out: list[Delta]
    ) -> None:
        if fc.name is not None and fc.willContinue is True:
            # A streamed call starts: name now, partialArgs in later parts.
            self._close_stream(out, trusted=True)
            key = self._start_call(fc, signature, "", out)
            self._stream = StreamedCall(key)
            if fc.partialArgs:
                self._stream_args(fc, where, out)
            return
        if fc.partialArgs is not None:
            if self._stream is None:
                raise MalformedChunkError(
                    f"malformed chunk: {where}.functionCall.partialArgs continue a call "
                    "that never started"
                )
            if signature:
                out.append(BlockSignature(self._stream.key, signature))
            self._stream_args(fc, where, out)
            return
        if fc.name is None:
            if fc.args:
                raise MalformedChunkError(f"malformed chunk: {where}.functionCall.name is missing")
            if fc.willContinue is True and self._stream is not None:
                # ``{"functionCall": {"willContinue": true}}`` between fragments: "another
                # partial message for the current FunctionCall is expected to follow"
                # (FunctionCall.willContinue), so the call stays open, its string too.
                if signature:
                    out.append(BlockSignature(self._stream.key, signature))
                return
            self._close_stream(out, trusted=True)  # ``functionCall: {}`` ends a streamed call
            return
        # A whole call: its arguments arrive complete, as one object.
        self._close_stream(out, trusted=True)
        key = self._start_call(fc, signature, self._args_text(fc, where), out)
        out.append(BlockEnd(key))

    def _args_text(self, fc: FunctionCall, where: str) -> str:
        if not fc.args:
            return "{}"
        text = bytes(fc.args).decode()
        stripped = text.strip()
        if stripped == "null":
            return "{}"
        if not stripped.startswith("{"):
            raise MalformedChunkError(
                f"malformed chunk: {where}.functionCall.args must be an object"
            )
        return text

    def _start_call(
        self, fc: FunctionCall, signature: str | None, args: str, out: list[Delta]
    ) -> Hashable:
        key = ("call", self._calls)
        self._calls += 1
        call_id = fc.id or self._synthetic_id()
        self._ids.add(call_id)
        out.append(ToolCallDelta(key, call_id, fc.name, args))
        if signature:
            out.append(BlockSignature(key, signature))
        return key

    def _synthetic_id(self) -> str:
        # Gemini API calls carry no id; tool results need one. Unique within the
        # message, and across a conversation through the response id.
        if self._id_base is None:
            base = _ID_SAFE.sub("", self._response_id or "")[:16]
            self._id_base = base or secrets.token_hex(6)
        while True:
            call_id = f"{SYNTHETIC_ID_PREFIX}{self._id_base}_{self._n_synth}"
            self._n_synth += 1
            if call_id not in self._ids:
                return call_id

    def _stream_args(self, fc: FunctionCall, where: str, out: list[Delta]) -> None:
        stream = self._stream
        assert stream is not None
        args = fc.partialArgs or []
        delta = stream.apply(args, f"{where}.functionCall")
        if delta:
            out.append(ToolCallDelta(stream.key, arguments=delta))
        if fc.willContinue is not True and all(a.willContinue is not True for a in args):
            self._close_stream(out, trusted=True)

    def _close_stream(self, out: list[Delta], *, trusted: bool) -> None:
        stream = self._stream
        if stream is None:
            return
        self._stream = None
        if trusted:
            out.append(ToolCallArguments(stream.key, stream.text()))
            out.append(BlockEnd(stream.key))
        elif stream.diverged:
            # Cut by MAX_TOKENS: keep what arrived, unclosed; it is never trusted.
            out.append(ToolCallArguments(stream.key, stream.partial_text()))


_TELLS = ("candidates", "usageMetadata", "promptFeedback")


def recognizes(payload: bytes) -> bool:
    """A Gemini body: its first SSE payload is a ``GenerateContentResponse``
    (``candidates``, ``usageMetadata`` or ``promptFeedback``), with no ``type``."""
    obj = first_sse_json(payload)
    return isinstance(obj, dict) and "type" not in obj and any(k in obj for k in _TELLS)

"""OpenAI Chat Completions: the streamed chunks → normalized deltas.

Reference: https://platform.openai.com/docs/api-reference/chat-streaming
"""

from __future__ import annotations

import msgspec

from ..._redact import head
from ..._wire.deltas import (
    BlockSignature,
    CitationDelta,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from ..._wire.sse import Frame
from ..._wire.sse._frames import Run, frames_of, run_values
from ...errors import Excerpt, MalformedChunkError
from ...types import Citation
from .._codec import first_sse_json
from .._common import Count, decode_json, decoder_for, filtered_categories, in_band_error
from ._compat import ChatCompat
from .spec import CHUNK_OBJECT, DONE, FAILED_FINISH_REASONS, FINISH_REASONS

__all__ = ["ChatDecoder", "recognizes"]


# --------------------------------------------------------------------------- inbound
# Typed schemas for the fields we use only: unknown fields are ignored, so
# ``obfuscation``, ``x_groq.*``, ``sla_metrics``… never break a stream.


class _Fn(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


# Counts and indexes are ``Count``s (non-negative integers): a negative tool-call
# index would key a call no one can finish, a negative count corrupt usage and cost.
class _ToolCallPart(msgspec.Struct, gc=False):
    index: Count | None = None
    id: str | None = None
    function: _Fn | None = None


class _ContentPart(msgspec.Struct, gc=False):
    # Mistral sends content as a list of typed parts, thinking nested as parts;
    # Databricks' reasoning part nests ``summary_text`` parts in ``summary``.
    type: str = ""
    text: str | None = None
    thinking: list[_ContentPart] | str | None = None
    summary: list[_ContentPart] | None = None


class _ReasoningDetail(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: Count | None = None


class _CompletionDetails(msgspec.Struct, gc=False):
    reasoning_tokens: Count | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    total_tokens: Count | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    prompt_cache_hit_tokens: Count | None = None  # DeepSeek


class _Delta(msgspec.Struct, gc=False):
    content: str | list[_ContentPart] | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_text: str | None = None
    reasoning_details: list[_ReasoningDetail] | None = None
    tool_calls: list[_ToolCallPart] | None = None
    # url_citation annotations (OpenAI search models, OpenRouter web search), each
    # kept as its exact JSON text.
    annotations: list[msgspec.Raw] | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None
    usage: _Usage | None = None  # Moonshot puts usage on the choice
    # Azure OpenAI's per-choice filter verdict; kept raw (decoded only when the
    # filter stopped the response, to name the categories).
    content_filter_results: msgspec.Raw = msgspec.Raw()


class _Error(msgspec.Struct, gc=False):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    status_code: int | None = None


class _XGroq(msgspec.Struct, gc=False):
    usage: _Usage | None = None


class _Body(msgspec.Struct, gc=False):
    """A chunk without ``id`` and ``model``: what is read once the response id is known
    (every chunk repeats both; decoding two strings per chunk that are never read
    again was a quarter of the typed decode). Unread, they are ignored like any
    unknown field."""

    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: _Error | str | None = None
    x_groq: _XGroq | None = None
    # Perplexity: the sources of the answer, on every chunk (docs.perplexity.ai, "Chat
    # Completions": ``citations`` URLs, ``search_results`` with title and URL).
    citations: list[msgspec.Raw] | None = None
    search_results: list[msgspec.Raw] | None = None


class _Chunk(_Body, gc=False):
    id: str | None = None
    model: str | None = None  # the model that answered (AssistantMessage.response_model)


class _ErrorPayload(msgspec.Struct, gc=False):
    error: _Error | str | None = None
    message: str | None = None
    # llama.cpp's ``error:`` line carries the error object itself: code, message, type.
    type: str | None = None
    code: str | int | None = None


class _UrlCitation(msgspec.Struct, gc=False):
    url: str | None = None
    title: str | None = None
    content: str | None = None
    start_index: Count | None = None
    end_index: Count | None = None


class _Annotation(msgspec.Struct, gc=False):
    type: str = ""
    url_citation: _UrlCitation | None = None


class _SearchResult(msgspec.Struct, gc=False):
    url: str | None = None
    title: str | None = None


_chunk_decoder = decoder_for(_Chunk)
_decode_chunk = _chunk_decoder.decode
_body_decoder = decoder_for(_Body)
_decode_body = _body_decoder.decode
_body_lines = _body_decoder.decode_lines
# The assembler keys of tool calls 0..15, made once (a tuple per fragment otherwise).
_TOOL_KEYS = tuple(("tool", i) for i in range(16))
_error_decoder = decoder_for(_ErrorPayload)
_annotation_decoder = decoder_for(_Annotation)
_search_result_decoder = decoder_for(_SearchResult)

# The hot path compares bytes: the sentinel encoded once.
_DONE = DONE.encode()

_TEXT = "text"
_THINKING = "thinking"


def _usage_delta(u: _Usage) -> UsageUpdate:
    prompt = u.prompt_tokens or 0
    cached = 0
    if u.prompt_tokens_details is not None and u.prompt_tokens_details.cached_tokens:
        cached = u.prompt_tokens_details.cached_tokens
    elif u.prompt_cache_hit_tokens:
        cached = u.prompt_cache_hit_tokens
    # OpenAI's ``completion_tokens`` includes ``reasoning_tokens``; xAI's does not
    # (its ``total_tokens`` is prompt + completion + reasoning). ``total_tokens``
    # tells the two apart, so reasoning is counted exactly once either way.
    output = u.completion_tokens or 0
    details = u.completion_tokens_details
    reasoning = (details.reasoning_tokens or 0) if details is not None else 0
    if reasoning and u.total_tokens is not None and u.total_tokens == prompt + output + reasoning:
        output += reasoning
    return UsageUpdate(
        input=max(prompt - cached, 0),
        output=output,
        cache_read=cached,
        cache_write=0,
    )


def _raise_error(err: _Error | str | None, fallback: str | None = None) -> None:
    if isinstance(err, str):
        raise in_band_error(err)
    if err is None:
        raise in_band_error(fallback or "the server sent an error event")
    status = err.status_code
    if isinstance(err.code, int) and 400 <= err.code < 600:
        status = status or err.code
    code = err.code if isinstance(err.code, str) else None
    raise in_band_error(err.message or fallback or "", type_=err.type, code=code, status=status)


class ChatDecoder:
    """Per-response decoder: SSE events → normalized deltas."""

    __slots__ = ("_compat", "_finish", "_meta", "_notes", "_saw_tool", "_sources",
                 "_thinking_field")  # fmt: skip

    def __init__(self, compat: ChatCompat) -> None:
        self._compat = compat
        self._finish: str | None = None
        self._meta = False
        self._saw_tool = False
        self._thinking_field: str | None = None
        self._notes: set[bytes] | None = None  # annotations already cited (repeats skipped)
        self._sources = 0  # Perplexity sources already cited (each chunk repeats them)

    def decode(self, frame: Frame) -> list[Delta]:
        data = frame.data
        if frame.event == "message" and data[:1] == b"{":
            # The hot path: an ordinary chunk (not an error event, keep-alive or [DONE]).
            meta = self._meta
            try:
                chunk = _decode_body(data) if meta else _decode_chunk(data)
            except (msgspec.ValidationError, msgspec.DecodeError):
                # Raises MalformedChunkError with the path.
                self._checked(data)
                raise  # pragma: no cover - decode_json raised already
            return self._chunk(chunk)
        if frame.event == "error":
            # Groq sends ``event: error`` with a JSON error object; a server that
            # sends plain text there still reported an error, not a malformed chunk.
            if not data.lstrip().startswith(b"{"):
                text = data.decode().strip()  # the framing checked the UTF-8
                if not text:
                    raise in_band_error("the server sent an error event")
                # Quoted whole on the error: the live path redacts keys before the cut.
                err = in_band_error(head(text, 500))
                err.excerpt = Excerpt("", text, "", 500, quote=False)
                raise err
            payload = decode_json(data, _error_decoder, "error event")
            if payload.error is None and payload.message is not None:
                payload.error = _Error(payload.message, payload.type, payload.code)
            _raise_error(payload.error, payload.message)
        if frame.event != "message" or not data or data.isspace():
            # Chat streams use unnamed events only; other event types and empty
            # keep-alive payloads carry nothing we use (DESIGN §3 rule 5).
            return []
        if data == _DONE:
            return self._terminal()
        return self._chunk(self._checked(data))

    # The pipeline may hand decode_batch a ``Run`` (frames joined, one decode_lines).
    takes_runs = True

    def decode_batch(self, frames: list[Frame], out: list[Delta]) -> None:
        """:meth:`decode` of each frame of one read, appended to ``out`` (one call per
        read: the pipeline's batched hand-off). The commonest chunk, a text or tool-call
        fragment and nothing else, is mapped here without the per-chunk calls; every
        other frame goes through :meth:`decode`. A frame that fails adds nothing to
        ``out`` (nothing is appended before the last check). A :class:`Run` is decoded
        in one ``decode_lines`` call; when that fails, or yields another number of
        chunks than the run has frames, its frames are decoded one by one."""
        if not self._meta or type(self) is not ChatDecoder:
            # Until the response id is known (the first chunks), and for a subclass
            # that changes what a frame decodes to.
            for frame in frames:
                if frame.__class__ is Run:
                    self.decode_batch(frames_of(frame), out)
                else:
                    out += self.decode(frame)
            return
        decode, append = self.decode, out.append
        chunks: list[_Body] | tuple[_Body] | None
        for frame in frames:
            data = frame.data
            if frame.__class__ is Run:
                chunks = run_values(frame, _body_lines)
                if chunks is None:
                    self.decode_batch(frames_of(frame), out)
                    continue
            elif frame.event != "message" or data[:1] != b"{":
                out += decode(frame)
                continue
            else:
                try:
                    chunks = (_decode_body(data),)
                except (msgspec.ValidationError, msgspec.DecodeError):
                    self._checked(data)  # raises MalformedChunkError with the path
                    raise  # pragma: no cover - _checked raised already
            for chunk in chunks:
                choices = chunk.choices
                if (
                    choices is not None
                    and len(choices) == 1
                    and chunk.usage is None
                    and chunk.error is None
                    and chunk.x_groq is None
                    and chunk.citations is None
                    and chunk.search_results is None
                ):
                    c = choices[0]
                    d = c.delta
                    if (
                        d is not None
                        and c.index == 0
                        and c.finish_reason is None
                        and c.usage is None
                        and d.reasoning_content is None
                        and d.reasoning is None
                        and d.reasoning_text is None
                        and d.reasoning_details is None
                        and d.refusal is None
                        and d.annotations is None
                    ):
                        content = d.content
                        if content.__class__ is str:
                            if content:
                                append(TextDelta(_TEXT, content))
                            if d.tool_calls:
                                self._tool_calls(d.tool_calls, out)
                            continue
                        if content is None:
                            calls = d.tool_calls
                            if calls:
                                tc = calls[0]
                                fn = tc.function
                                i = tc.index
                                if (
                                    len(calls) == 1
                                    and tc.id is None
                                    and fn is not None
                                    and fn.name is None
                                    and i is not None
                                    and i < 16
                                ):
                                    # More arguments for a call: _tool_calls inline.
                                    self._saw_tool = True
                                    append(ToolCallDelta(_TOOL_KEYS[i], None, None,
                                                         fn.arguments or ""))  # fmt: skip
                                else:
                                    self._tool_calls(calls, out)
                            continue
                out += self._chunk(chunk)

    def _checked(self, data: bytes) -> _Body:
        """The chunk decoded by ``decode_json`` (a failure names the field path)."""
        if self._meta:
            return decode_json(data, _body_decoder)
        return decode_json(data, _chunk_decoder)

    def _chunk(self, chunk: _Body) -> list[Delta]:
        if chunk.error is not None:
            _raise_error(chunk.error)
        out: list[Delta] = []
        if not self._meta and isinstance(chunk, _Chunk) and chunk.id:
            self._meta = True
            out.append(ResponseMeta(response_id=chunk.id, model=chunk.model))
        choices = chunk.choices
        if choices:
            # One choice per stream (DESIGN §2a): n > 1 is refused, not merged.
            if len(choices) > 1 or choices[0].index != 0:
                bad = next((i for i, c in enumerate(choices) if c.index != 0), 1)
                raise MalformedChunkError(
                    f"choices[{bad}].index must be 0, got {choices[bad].index}: modelwire "
                    "reads one choice per stream; do not request n > 1"
                )
            choice = choices[0]
            delta = choice.delta
            if delta is not None:
                self._delta(delta, out)
            if choice.finish_reason:
                self._finish = choice.finish_reason
                out.append(self._finish_delta(choice.finish_reason, choice.content_filter_results))
            if choice.usage is not None:
                out.append(_usage_delta(choice.usage))
        usage = chunk.usage
        if usage is None and chunk.x_groq is not None:
            usage = chunk.x_groq.usage
        if usage is not None:
            out.append(_usage_delta(usage))
        if chunk.citations is not None or chunk.search_results is not None:
            self._perplexity(chunk, out)
        return out

    def _perplexity(self, chunk: _Body, out: list[Delta]) -> None:
        # The same list on every chunk, growing at most: cite the new entries only.
        # ``search_results`` (title and URL) when sent, else the bare ``citations`` URLs.
        sources = chunk.search_results or chunk.citations or []
        for n in range(self._sources, len(sources)):
            raw = bytes(sources[n])
            where = f"{'search_results' if chunk.search_results else 'citations'}[{n}]"
            if chunk.search_results:
                r = decode_json(raw, _search_result_decoder, "chunk", f"{where}.")
                cite = Citation(kind="url", url=r.url, title=r.title, raw=raw.decode())
            else:
                url = msgspec.json.decode(raw)
                if not isinstance(url, str):
                    raise MalformedChunkError(f"malformed chunk: {where} must be a string")
                cite = Citation(kind="url", url=url, raw=raw.decode())
            out.append(CitationDelta(_TEXT, cite))
        self._sources = max(self._sources, len(sources))

    def _annotations(self, notes: list[msgspec.Raw], out: list[Delta]) -> None:
        seen = self._notes
        if seen is None:
            seen = self._notes = set()
        for n, raw in enumerate(notes):
            data = bytes(raw)
            if data in seen:
                continue  # OpenRouter may repeat them on a later chunk
            seen.add(data)
            a = decode_json(
                data, _annotation_decoder, "chunk", f"choices[0].delta.annotations[{n}]."
            )
            u = a.url_citation
            if a.type == "url_citation" and u is not None:
                cite = Citation(kind="url", url=u.url, title=u.title, cited_text=u.content,
                                start=u.start_index, end=u.end_index, raw=data.decode())  # fmt: skip
            else:
                cite = Citation(kind="other", raw=data.decode())
            out.append(CitationDelta(_TEXT, cite))

    def _delta(self, d: _Delta, out: list[Delta]) -> None:
        if (
            d.reasoning_content is None
            and d.reasoning is None
            and d.reasoning_text is None
            and d.reasoning_details is None
            and d.refusal is None
            and d.annotations is None
        ):
            # The hot path: plain text and/or tool-call fragments, nothing else.
            content = d.content
            if content.__class__ is str:
                if content:
                    out.append(TextDelta(_TEXT, content))
            elif content is not None:
                self._full_delta(d, out)
                return
            if d.tool_calls:
                self._tool_calls(d.tool_calls, out)
            return
        self._full_delta(d, out)

    def _full_delta(self, d: _Delta, out: list[Delta]) -> None:
        # Thinking: one source per chunk, never two (OpenRouter sends both
        # ``reasoning`` and ``reasoning_details`` with the same text).
        field = "reasoning_content"
        thinking = d.reasoning_content
        if not thinking:
            field, thinking = "reasoning", d.reasoning
        if not thinking:
            field, thinking = "reasoning_text", d.reasoning_text
        if not thinking and d.reasoning_details:
            field = "reasoning_details"
            thinking = "".join(
                r.text for r in d.reasoning_details if r.type == "reasoning.text" and r.text
            )
        content = d.content
        if isinstance(content, list):
            text_parts: list[str] = []
            summary: list[str] = []
            for part in content:
                if part.type == "thinking":
                    if not thinking:
                        field = "content"
                        t = part.thinking
                        if isinstance(t, str):
                            thinking = t
                        elif t:
                            thinking = "".join(p.text or "" for p in t)
                elif part.type == "reasoning":
                    # Databricks (https://docs.databricks.com/aws/en/machine-learning/
                    # model-serving/score-reason-models): {"type": "reasoning", "summary":
                    # [{"type": "summary_text", "text": …, "signature": …}]}; the
                    # summary text is the thinking, never the answer.
                    summary.extend(p.text for p in part.summary or () if
                                   p.type == "summary_text" and p.text)  # fmt: skip
                elif part.text:
                    text_parts.append(part.text)
            if summary and not thinking:
                field, thinking = "content", "".join(summary)
            content = "".join(text_parts)
        if thinking:
            out.append(ThinkingDelta(_THINKING, thinking))
            if field != self._thinking_field:
                # Remember which field the reasoning came in, so a replay to the
                # same model can send it back in that field (see ``_assistant``).
                self._thinking_field = field
                out.append(BlockSignature(_THINKING, field))
        if content:
            out.append(TextDelta(_TEXT, content))
        if d.refusal:
            # A refusal is what the model said: it goes to the text block.
            out.append(TextDelta(_TEXT, d.refusal))
        if d.tool_calls:
            self._tool_calls(d.tool_calls, out)
        if d.annotations:
            self._annotations(d.annotations, out)

    def _tool_calls(self, calls: list[_ToolCallPart], out: list[Delta]) -> None:
        self._saw_tool = True
        for pos, tc in enumerate(calls):
            fn = tc.function
            index = tc.index if tc.index is not None else pos
            key = _TOOL_KEYS[index] if 0 <= index < len(_TOOL_KEYS) else ("tool", index)
            if fn is None:
                out.append(ToolCallDelta(key, tc.id or None, None, ""))
            else:
                out.append(ToolCallDelta(key, tc.id or None, fn.name or None, fn.arguments or ""))

    def _finish_delta(self, reason: str, filters: msgspec.Raw | None = None) -> Finish:
        failed = FAILED_FINISH_REASONS.get(reason)
        if failed is not None:
            text = failed[1]
            if filters:  # an empty Raw: the field was absent
                try:
                    cats = filtered_categories(msgspec.json.decode(filters))
                except msgspec.DecodeError:  # pragma: no cover - Raw is valid JSON
                    cats = []
                if cats:
                    text += f"; filtered: {', '.join(cats)}"
            return Finish("error", reason, failed[0], text)
        # Unknown reasons are a normal end (forward compatible); the raw value is
        # kept in ``provider_stop_reason``.
        return Finish(FINISH_REASONS.get(reason, "stop"), reason)

    def _terminal(self) -> list[Delta]:
        # Called at ``[DONE]`` only: for servers known to omit ``finish_reason``
        # (Snowflake Cortex), ``[DONE]`` is the one sign the answer is complete.
        out: list[Delta] = []
        if self._finish is None and self._compat.infer_finish_reason:
            out.append(Finish("tool_use" if self._saw_tool else "stop", None))
        out.append(EndOfStream())
        return out

    def end(self) -> list[Delta]:
        # "One finish is formed at [DONE] or end of input" (DESIGN §3 rule 4): a body
        # that ends after finish_reason without [DONE] is complete; the assembler
        # reports truncated_stream when no finish reason arrived at all. Nothing is
        # inferred here: without finish_reason *and* [DONE] there is no sign at all
        # that the response is whole.
        return [EndOfStream()]


def recognizes(payload: bytes) -> bool:
    """A Chat Completions body: its first SSE payload is a chunk object (``choices``,
    or ``object: "chat.completion.chunk"``), without the ``type`` other APIs tag
    their events with."""
    obj = first_sse_json(payload)
    return (
        isinstance(obj, dict)
        and "type" not in obj
        and ("choices" in obj or obj.get("object") == CHUNK_OBJECT)
    )

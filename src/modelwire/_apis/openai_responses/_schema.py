"""Typed msgspec schemas of the ``openai-responses`` stream events (the fields
the decoder uses only) and their cached decoders.

The decoder (``_decode``) reads the stream through them. Reference:
https://platform.openai.com/docs/api-reference/responses-streaming.
"""

from __future__ import annotations

import msgspec

from .._common import Count, decoder_for

# Typed schemas for the fields used only: unknown fields and unknown event types are
# ignored, so obfuscation, logprobs, annotations and new events never break a stream.


class _ItemHead(msgspec.Struct, gc=False):
    # What every output item shares: its type and (nearly always) its id. Also
    # checks a stored reasoning item before it is replayed (``_encode``).
    type: str
    id: str | None = None


class _Envelope(msgspec.Struct, gc=False):
    type: str


class _InputDetails(msgspec.Struct, gc=False):
    cached_tokens: Count | None = None
    cache_write_tokens: Count | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: Count = 0
    output_tokens: Count = 0
    input_tokens_details: _InputDetails | None = None


class _Error(msgspec.Struct, gc=False):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


class _Incomplete(msgspec.Struct, gc=False):
    reason: str | None = None


class _Response(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None
    # The output items, each as its exact JSON text (the whole response, at its end).
    output: list[msgspec.Raw] | None = None


class _ResponseEvent(msgspec.Struct, gc=False):
    response: _Response


class _ItemEvent(msgspec.Struct, gc=False):
    item: msgspec.Raw
    output_index: Count | None = None


class _Part(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    refusal: str | None = None
    # output_text annotations (citations), each kept as its exact JSON text.
    annotations: list[msgspec.Raw] | None = None


class _TextItem(msgspec.Struct, gc=False):
    # A message (content: output_text/refusal parts) or a reasoning item
    # (summary: summary_text parts; content: reasoning_text parts).
    phase: str | None = None
    content: list[_Part] | None = None
    summary: list[_Part] | None = None


class _CallItem(msgspec.Struct, gc=False):
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _DeltaEvent(msgspec.Struct, gc=False):
    # Every *.delta event: text, refusal, summary, reasoning text, arguments.
    delta: str
    output_index: Count | None = None
    item_id: str | None = None
    summary_index: Count | None = None
    content_index: Count | None = None


class _TextDeltaEvent(msgspec.Struct, gc=False):
    # response.output_text.delta, the event of nearly every stream: what its mapping
    # reads when ``output_index`` is given (``item_id`` is decoded only without it).
    delta: str
    output_index: Count | None = None


class _ArgsDoneEvent(msgspec.Struct, gc=False):
    arguments: str
    output_index: Count | None = None
    item_id: str | None = None


class _ErrorEvent(msgspec.Struct, gc=False):
    # OpenAI documents code/message/param at the top level; recordings also show
    # them nested in an "error" object (vercel/ai's openai-error fixture). A
    # llama.cpp ``error:`` line has no event type: its ``type`` is the error's.
    message: str | None = None
    code: str | int | None = None
    error: _Error | None = None
    type: str | None = None


class _AnnotationEvent(msgspec.Struct, gc=False):
    # response.output_text.annotation.added
    annotation: msgspec.Raw
    output_index: Count | None = None
    item_id: str | None = None
    content_index: Count = 0


class _InputDoneEvent(msgspec.Struct, gc=False):
    input: str
    output_index: int | None = None
    item_id: str | None = None


_envelope = decoder_for(_Envelope)
_item_head_decoder = decoder_for(_ItemHead)
_response_event = decoder_for(_ResponseEvent)
_item_event = decoder_for(_ItemEvent)
_text_item = decoder_for(_TextItem)
_call_item = decoder_for(_CallItem)
_delta_event = decoder_for(_DeltaEvent)
_text_delta_event = decoder_for(_TextDeltaEvent)
_args_done_event = decoder_for(_ArgsDoneEvent)
_input_done_event = decoder_for(_InputDoneEvent)
_error_event = decoder_for(_ErrorEvent)
_annotation_event = decoder_for(_AnnotationEvent)

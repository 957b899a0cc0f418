"""Bedrock ConverseStream events → normalized deltas.

Reference: the ConverseStream API reference
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html,
"Response Syntax") and the ``ConverseStreamOutput`` union of botocore's
``bedrock-runtime`` service model. Each AWS event-stream message is one frame
(:class:`~modelwire._framing.eventstream.EventStreamDecoder`): ``frame.event`` is the
``:event-type`` header, ``frame.data`` the JSON payload::

    messageStart        {"role": "assistant"}
    contentBlockStart   {"contentBlockIndex", "start": {"toolUse": {"toolUseId", "name"}}}
    contentBlockDelta   {"contentBlockIndex", "delta": {"text"} | {"toolUse": {"input"}}
                         | {"reasoningContent": {"text"} | {"signature"} | {"redactedContent"}}}
    contentBlockStop    {"contentBlockIndex"}
    messageStop         {"stopReason", "additionalModelResponseFields"}
    metadata            {"usage": {"inputTokens", "outputTokens", "totalTokens",
                         "cacheReadInputTokens", "cacheWriteInputTokens"},
                         "metrics": {"latencyMs"}}

Text and reasoning blocks have no ``contentBlockStart`` (only tool use does): the
first delta of an index opens its block. ``metadata`` follows ``messageStop``, so
the stream ends at ``metadata`` (or at the end of the body after ``messageStop``);
a body without ``messageStop`` is ``truncated_stream``. Exceptions arrive in band as
``:message-type: exception`` messages (the framing names them
``exception:<type>``) with ``{"message": …}`` and become typed errors.

``inputTokens`` excludes the cache reads and writes, which Bedrock counts
separately (as Anthropic does), so it maps to ``Usage.input`` directly.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..._deltas import (
    BlockEnd,
    BlockSignature,
    BlockStart,
    Delta,
    EndOfStream,
    Finish,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from ..._sse import Frame
from ...errors import MalformedChunkError, ProviderStreamError, StreamError, TruncatedStreamError
from .._common import Count, decode_json, decoder_for, in_band_error

__all__ = ["EXCEPTION_STATUS", "BedrockDecoder", "exception_error"]


class _ToolUseStart(msgspec.Struct, gc=False):
    toolUseId: str
    name: str


class _Start(msgspec.Struct, gc=False):
    toolUse: _ToolUseStart | None = None


class _BlockStart(msgspec.Struct, gc=False):
    contentBlockIndex: Count
    start: _Start


class _ToolUseDelta(msgspec.Struct, gc=False):
    input: str


class _Reasoning(msgspec.Struct, gc=False):
    text: str | None = None
    signature: str | None = None
    redactedContent: str | None = None  # a blob: base64 in JSON


class _Delta(msgspec.Struct, gc=False):
    text: str | None = None
    toolUse: _ToolUseDelta | None = None
    reasoningContent: _Reasoning | None = None


class _BlockDelta(msgspec.Struct, gc=False):
    contentBlockIndex: Count
    delta: _Delta


class _BlockStop(msgspec.Struct, gc=False):
    contentBlockIndex: Count


class _MessageStop(msgspec.Struct, gc=False):
    stopReason: str


class _Usage(msgspec.Struct, gc=False):
    inputTokens: Count | None = None
    outputTokens: Count | None = None
    totalTokens: Count | None = None
    cacheReadInputTokens: Count | None = None
    cacheWriteInputTokens: Count | None = None


class _Metadata(msgspec.Struct, gc=False):
    usage: _Usage | None = None


class _Exception(msgspec.Struct, gc=False):
    message: str | None = None
    Message: str | None = None  # some AWS services capitalise it


_start = decoder_for(_BlockStart)
_delta = decoder_for(_BlockDelta)
_stop = decoder_for(_BlockStop)
_message_stop = decoder_for(_MessageStop)
_metadata = decoder_for(_Metadata)
_exception = decoder_for(_Exception)

#: ``stopReason`` → ``stop_reason`` (StopReason in the API reference).
_STOP: dict[str, Literal["stop", "length", "tool_use"]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_use",
    "max_tokens": "length",
}
#: Stop reasons that mean the answer was withheld, and the error kind they end with.
_FAILED = {
    "guardrail_intervened": ("content_filter", "a Bedrock guardrail intervened"),
    "content_filtered": ("content_filter", "Bedrock filtered the content"),
    "model_context_window_exceeded": (
        "context_overflow",
        "the conversation no longer fits the model's context window; shorten it",
    ),
}

#: The HTTP status AWS gives each ConverseStream exception (the service model's
#: ``httpStatusCode``): what decides its kind, as for an HTTP error.
EXCEPTION_STATUS: dict[str, int | None] = {
    "throttlingException": 429,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "modelTimeoutException": 408,
    "validationException": 400,
    "accessDeniedException": 403,
    "resourceNotFoundException": 404,
    "modelNotReadyException": 429,
    "modelStreamErrorException": None,  # the model failed mid-stream: provider_stream
}


def exception_error(exception_type: str, message: str) -> StreamError:
    """The typed error for an in-band exception (``throttlingException`` → rate_limit…)."""
    status = EXCEPTION_STATUS.get(exception_type)
    if status == 408:
        return in_band_error(message, type_=exception_type, status=500)
    return in_band_error(message, type_=exception_type, status=status)


class BedrockDecoder:
    """Per-response decoder: ConverseStream event-stream frames → deltas."""

    __slots__ = ("_finished", "_redacted")

    def __init__(self) -> None:
        self._finished = False
        self._redacted: set[int] = set()

    def decode(self, frame: Frame) -> list[Delta]:
        name = frame.event
        data = frame.data
        if name == "contentBlockDelta":
            return self._delta(decode_json(data, _delta, "contentBlockDelta"))
        if name == "contentBlockStart":
            start = decode_json(data, _start, "contentBlockStart")
            use = start.start.toolUse
            if use is None:
                return []  # a start of a kind this version does not know (forward compatible)
            if not use.toolUseId or not use.name:
                raise MalformedChunkError(
                    "malformed contentBlockStart: start.toolUse.toolUseId and "
                    "start.toolUse.name must not be empty"
                )
            return [ToolCallDelta(start.contentBlockIndex, use.toolUseId, use.name, "")]
        if name == "contentBlockStop":
            return [BlockEnd(decode_json(data, _stop, "contentBlockStop").contentBlockIndex)]
        if name == "messageStop":
            stop = decode_json(data, _message_stop, "messageStop")
            self._finished = True
            return [self._finish(stop.stopReason)]
        if name == "metadata":
            usage = decode_json(data, _metadata, "metadata").usage
            out: list[Delta] = []
            if usage is not None:
                out.append(UsageUpdate(input=usage.inputTokens, output=usage.outputTokens,
                                       cache_read=usage.cacheReadInputTokens,
                                       cache_write=usage.cacheWriteInputTokens))  # fmt: skip
            if self._finished:
                out.append(EndOfStream())  # metadata is the last event after messageStop
            return out
        if name.startswith("exception:"):
            exc = decode_json(data, _exception, "exception") if data.strip() else _Exception()
            kind = name.partition(":")[2]
            return self._raise(exception_error(kind, exc.message or exc.Message or kind))
        if name.startswith("error:"):
            text = data.decode()  # the framing checked the UTF-8
            raise ProviderStreamError(f"Bedrock stream error {name.partition(':')[2]}: {text}")
        return []  # messageStart and unknown events (forward compatible)

    @staticmethod
    def _raise(error: StreamError) -> list[Delta]:
        raise error

    def _delta(self, chunk: _BlockDelta) -> list[Delta]:
        i = chunk.contentBlockIndex
        d = chunk.delta
        if d.text is not None:
            return [TextDelta(i, d.text)]
        if d.toolUse is not None:
            return [ToolCallDelta(i, arguments=d.toolUse.input)]
        r = d.reasoningContent
        if r is None:
            return []  # citations and other delta kinds: not content modelwire carries
        if r.text is not None:
            return [ThinkingDelta(i, r.text)]
        if r.signature is not None:
            return [BlockSignature(i, r.signature, append=True)]
        if r.redactedContent is not None:
            # Encrypted reasoning: kept whole so it can be sent back to the same model.
            if i in self._redacted:
                return [BlockSignature(i, r.redactedContent, append=True)]
            self._redacted.add(i)
            return [BlockStart(i, "thinking", signature=r.redactedContent, redacted=True)]
        return []

    @staticmethod
    def _finish(reason: str) -> Finish:
        failed = _FAILED.get(reason)
        if failed is not None:
            return Finish("error", reason, failed[0], f"{failed[1]} (stopReason {reason!r})")
        # An unknown reason is a normal end (forward compatible); the raw value is kept.
        return Finish(_STOP.get(reason, "stop"), reason)

    def end(self) -> list[Delta]:
        if not self._finished:
            raise TruncatedStreamError(
                "the Bedrock stream ended without a messageStop event (the server stopped "
                "before finishing the answer); retry the request"
            )
        return [EndOfStream()]

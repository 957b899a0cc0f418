"""The typed shape of a Gemini ``GenerateContentResponse`` chunk, as the decoder reads it.

Reference: https://ai.google.dev/api/generate-content (``GenerateContentResponse``,
``Candidate``, ``Content``, ``Part``, ``FunctionCall``, ``Blob``, ``UsageMetadata``,
``PromptFeedback``) and ``google.rpc.Status`` for an error in the stream. Only the
fields the decoder uses are typed: unknown fields (``safetyRatings``,
``trafficType``…) are ignored, so new ones never break a stream; parts of a kind
modelwire keeps verbatim are :class:`msgspec.Raw`.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from ._streamed import PartialArg

__all__ = ["Blob", "Body", "Candidate", "Chunk", "Content", "Error", "FunctionCall", "Part",
           "PromptFeedback", "Usage"]  # fmt: skip

Count = Annotated[int, msgspec.Meta(ge=0)]


class FunctionCall(msgspec.Struct, gc=False):
    id: str | None = None
    name: str | None = None
    args: msgspec.Raw = msgspec.Raw()  # kept verbatim: it becomes raw_arguments
    partialArgs: list[PartialArg] | None = None
    willContinue: bool | None = None


class Part(msgspec.Struct, gc=False):
    text: str | None = None
    thought: bool | None = None
    thoughtSignature: str | None = None
    functionCall: FunctionCall | None = None
    # Provider-run code and its result: kept verbatim (they are replayed).
    executableCode: msgspec.Raw = msgspec.Raw()
    codeExecutionResult: msgspec.Raw = msgspec.Raw()
    # An image the model generated (read by ``_image``, with its path on error).
    inlineData: msgspec.Raw = msgspec.Raw()
    # Part kinds modelwire does not surface; only their presence matters.
    fileData: msgspec.Raw = msgspec.Raw()
    functionResponse: msgspec.Raw = msgspec.Raw()
    toolCall: msgspec.Raw = msgspec.Raw()
    toolResponse: msgspec.Raw = msgspec.Raw()


class Blob(msgspec.Struct, gc=False):
    """Blob: ``mimeType`` and base64 ``data`` (an ``inlineData`` part)."""

    mimeType: str
    data: str


class Content(msgspec.Struct, gc=False):
    parts: list[Part] = msgspec.field(default_factory=list)


class Candidate(msgspec.Struct, gc=False):
    content: Content | None = None
    finishReason: str | None = None
    finishMessage: str | None = None
    index: int = 0
    # Read only when present (the last chunk, mostly): kept raw until then.
    groundingMetadata: msgspec.Raw = msgspec.Raw()
    urlContextMetadata: msgspec.Raw = msgspec.Raw()
    citationMetadata: msgspec.Raw = msgspec.Raw()


class PromptFeedback(msgspec.Struct, gc=False):
    blockReason: str | None = None


class Usage(msgspec.Struct, gc=False):
    promptTokenCount: Count | None = None
    cachedContentTokenCount: Count | None = None
    candidatesTokenCount: Count | None = None
    thoughtsTokenCount: Count | None = None
    toolUsePromptTokenCount: Count | None = None


class Error(msgspec.Struct, gc=False):
    code: int | None = None
    message: str | None = None
    status: str | None = None


class Body(msgspec.Struct, gc=False):
    """A chunk without ``responseId`` and ``modelVersion``: what is read once the response
    id is known (every chunk repeats both; they are not read again, so they are ignored
    like any unknown field instead of decoded per chunk)."""

    candidates: list[Candidate] | None = None
    promptFeedback: PromptFeedback | None = None
    usageMetadata: Usage | None = None
    error: Error | None = None


class Chunk(Body, gc=False):
    responseId: str | None = None
    modelVersion: str | None = None

"""What an extender needs to add a wire API: the one public module for it.

A wire API is a small codec (:class:`WireCodec`: name, endpoint path, request
encoding, framing, decoder factory, ``recognizes``, and ``capabilities(model)``: what a
model of the API supports, as :class:`Capabilities`) with optional client facets
(:class:`HandoffFacet` for tool-call id rules, :class:`CountFacet` for a
token-counting endpoint, :class:`EmbedFacet` for an embedding endpoint, whose answer
is an :class:`EmbedAnswer`), and — to be served by the mock server or a gateway — its
server side, a :class:`WireServer`: a :class:`StreamRenderer` that turns modelwire's
events into the API's bytes, the non-streamed body, and the API's routing facts. Both
are registered with one call, :func:`register_wire_api` (which also takes a stream
function that produces events itself). The decoder turns each :class:`Frame` (an
event type and the payload bytes, whatever the framing) into the normalized deltas
below, decoding payloads with :func:`decode_json` (typed, with field paths in its
errors). docs/adding-a-wire-api.md walks through a complete API built from these
names only.

A *provider* reuses any wire API with its own URL, auth, body and request-time
credentials: subclass :class:`ProviderRules`, override the hooks you need, and
install it with :func:`register_provider`; the client applies the rules to the
request any wire API built, the built-in ones and those registered at run time
alike. :class:`AzureOpenAIRules` are provider ``azure-openai``'s, to register again with
an :class:`~modelwire.cloud.azure.AzureAuth` of your own.
"""

from __future__ import annotations

from ._apis import MODEL_SLOT, register_wire_api
from ._apis._codec import (
    CountFacet,
    Counting,
    Embedding,
    EmbedFacet,
    HandoffFacet,
    IdRule,
    IdRules,
    WireCodec,
    WireDecoder,
    first_line_json,
    first_sse_json,
    sse_framing,
)
from ._apis._common import (
    Count,
    bearer_auth,
    check_context_values,
    check_reasoning,
    check_tool_choice,
    decode_json,
    decoder_for,
    http_request,
    in_band_error,
)
from ._apis._embed import EmbedAnswer
from ._apis._server.reply import (
    ErrorReply,
    arguments_object,
    arguments_text,
    compact_json,
    declared_tools,
    model_in_body,
    openai_error,
    role_tool_results,
    text_of,
)
from ._apis._server.request import GatewayRequest, StreamRenderer
from ._apis._server.wire import WireServer
from ._providers import ProviderRules, register_provider
from ._providers.azure_openai import AzureOpenAIRules
from ._wire.deltas import (
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
from ._wire.framing import EventStreamDecoder, Framing, NDJSONDecoder
from ._wire.request import HTTPRequest, RequestOptions, check_extra_body
from ._wire.sse import Frame, SSEFraming
from .types import Capabilities

__all__ = [  # noqa: RUF022 - plain sorted() order, as tests/test_public_api.py checks
    "AzureOpenAIRules",
    "BlockComplete",
    "BlockEnd",
    "BlockSignature",
    "BlockStart",
    "Capabilities",
    "CitationDelta",
    "Count",
    "CountFacet",
    "Counting",
    "Delta",
    "EmbedAnswer",
    "EmbedFacet",
    "Embedding",
    "EndOfStream",
    "ErrorReply",
    "EventStreamDecoder",
    "Finish",
    "Frame",
    "Framing",
    "GatewayRequest",
    "HTTPRequest",
    "HandoffFacet",
    "IdRule",
    "IdRules",
    "MODEL_SLOT",
    "NDJSONDecoder",
    "ProviderRules",
    "RequestOptions",
    "ResponseMeta",
    "SSEFraming",
    "StreamRenderer",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallArguments",
    "ToolCallDelta",
    "UsageUpdate",
    "WireCodec",
    "WireDecoder",
    "WireServer",
    "arguments_object",
    "arguments_text",
    "bearer_auth",
    "check_context_values",
    "check_extra_body",
    "check_reasoning",
    "check_tool_choice",
    "compact_json",
    "declared_tools",
    "decode_json",
    "decoder_for",
    "first_line_json",
    "first_sse_json",
    "http_request",
    "in_band_error",
    "model_in_body",
    "openai_error",
    "register_provider",
    "register_wire_api",
    "role_tool_results",
    "sse_framing",
    "text_of",
]

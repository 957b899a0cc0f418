"""Anthropic Messages (``api="anthropic-messages"``): ``POST {base_url}/messages``,
headers ``x-api-key`` and ``anthropic-version: 2023-06-01``, Server-Sent Events.

References (Anthropic API docs, platform.claude.com/docs):

* request: ``/en/api/messages/create``;
* streaming: ``/en/docs/build-with-claude/streaming`` (``message_start``,
  ``content_block_start/delta/stop``, ``message_delta``, ``message_stop``,
  ``ping``, ``error``; "new event types may be added, handle unknown ones
  gracefully");
* extended and adaptive thinking: ``/en/docs/build-with-claude/extended-thinking``,
  ``/en/docs/build-with-claude/adaptive-thinking``, ``/en/docs/build-with-claude/effort``;
* prompt caching: ``/en/docs/build-with-claude/prompt-caching``;
* stop reasons: ``/en/docs/build-with-claude/handling-stop-reasons``;
* errors: ``/en/api/errors``.

Compat flags (``Model(compat={...})``, see :class:`AnthropicCompat`) cover
servers and models that differ: the thinking mode, effort and budget tables,
the interleaved-thinking beta, and bearer authentication for proxies.

The tables (stop reasons both ways, event types, id prefixes, capabilities) are in
:mod:`.spec`; the request (messages, tools, tool choice, thinking, compat flags) in
:mod:`.encode`; the stream in :mod:`.decode`; the server's side in :mod:`.render`
and the gateway's reading of a request in :mod:`.parse`. The headers (version,
betas, key) are set here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._wire.request import HTTPRequest, RequestOptions
from ...types import Capabilities, Context, Model
from .._codec import Counting, IdRules, sse_framing
from .._common import SAFE_ID_RULE, check_context_values, http_request
from . import _count, spec
from . import batch as _batch
from .decode import AnthropicDecoder, recognizes
from .encode import (
    ADAPTIVE_EFFORTS,
    RESERVED,
    THINKING_BUDGETS,
    AnthropicCompat,
    build_body,
    claude_version,
    detect_compat,
    encode_messages,
    uses_adaptive_thinking,
    uses_files,
)

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = [
    "ADAPTIVE_EFFORTS",
    "ANTHROPIC_VERSION",
    "API",
    "FILES_BETA",
    "INTERLEAVED_THINKING_BETA",
    "RESERVED",
    "THINKING_BUDGETS",
    "AnthropicCompat",
    "AnthropicDecoder",
    "AnthropicMessagesAPI",
    "build_body",
    "detect_compat",
    "encode_messages",
    "uses_adaptive_thinking",
]

#: The ``anthropic-version`` header value (the only stable version of the API).
ANTHROPIC_VERSION = "2023-06-01"
#: Beta that lets Claude 4 models think between tool calls when thinking has a
#: budget (extended-thinking docs, "Interleaved thinking"); adaptive thinking
#: interleaves by itself and needs no header.
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
#: Beta a ``document`` block with a ``file`` source needs (Files API docs).
FILES_BETA = "files-api-2025-04-14"


class AnthropicMessagesAPI:
    """The ``anthropic-messages`` wire API."""

    name = "anthropic-messages"
    endpoint = "/messages"
    handoff = IdRules(lambda model: SAFE_ID_RULE)
    counting = Counting(_count.count_request, _count.parse_count)
    batching = _batch.BATCHING  # the provider's batch API (modelwire.batching)

    def capabilities(self, model: Model) -> Capabilities:
        return spec.capabilities(model)

    def path(self, model_id: str) -> str:
        return self.endpoint

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        """The JSON body (pure); ``ConfigurationError`` for impossible options."""
        return build_body(model, context, options)

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        compat = detect_compat(model)
        body = self.build_body(model, context, options)
        beta: list[str] = []
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled" and context.tools:
            interleaved = compat.interleaved_thinking
            if interleaved is None:
                version = claude_version(model.id)
                interleaved = version is not None and version >= (4, 0)
            if interleaved:
                beta.append(INTERLEAVED_THINKING_BETA)
        if uses_files(context):
            beta.append(FILES_BETA)
        for tool in body.get("tools", ()):
            needs = spec.SERVER_TOOL_BETAS.get(tool.get("type"))
            if needs is not None and needs not in beta:
                beta.append(needs)
        betas = {"anthropic-beta": ",".join(beta)} if beta else {}
        bearer = compat.auth == "bearer"
        return http_request(
            model,
            options,
            url=model.url_root + self.endpoint,
            body=body,
            defaults={
                "content-type": "application/json",
                "accept": "text/event-stream",
                "anthropic-version": ANTHROPIC_VERSION,
                **betas,
            },
            auth=(lambda key: {"authorization": f"Bearer {key}"})
            if bearer
            else (lambda key: {"x-api-key": key}),
            replaces=("x-api-key",) if bearer else (),
            lower=True,
            combine=("anthropic-beta",),
        )

    def framing(self, max_event_bytes: int) -> Framing:
        return sse_framing(max_event_bytes)

    def new_decoder(self, model: Model | None) -> AnthropicDecoder:
        return AnthropicDecoder()

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = AnthropicMessagesAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec

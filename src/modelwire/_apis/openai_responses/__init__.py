"""OpenAI Responses API, and servers compatible with it (OpenRouter, LM Studio, DeepSeek…).

Reference: https://platform.openai.com/docs/api-reference/responses/create (request),
https://platform.openai.com/docs/api-reference/responses-streaming (stream events),
https://platform.openai.com/docs/guides/reasoning (stateless reasoning replay with
``store: false`` and ``include: ["reasoning.encrypted_content"]``).

Outbound, the conversation becomes ``instructions`` plus an ``input`` array of items;
assistant history is replayed as the output items it came from, structure kept.
Inbound, every stream event is dispatched on its JSON ``type`` (OpenRouter sends no
``event:`` lines) and blocks are keyed by ``output_index`` (the item id when a server
omits it), so the content index is the item's first appearance.

What modelwire stores in the provider-neutral types (replayed only to the same
provider, API and model — ``_encode._replay_signatures``):

* ``ThinkingContent.signature`` — the whole ``reasoning`` output item exactly as
  received in ``response.output_item.done`` (its JSON text: ``id``, ``summary``,
  ``encrypted_content``…). It is sent back byte for byte. ``thinking`` holds the
  summary parts (or the raw ``reasoning_text`` parts) joined with a blank line.
* ``TextContent.signature`` — the ``message`` item's id (``msg_…``) or, when the item
  carried a ``phase``, the compact JSON ``{"id":"msg_…","phase":"commentary"}``
  (the model wants ``phase`` back, per the ``phase`` field docs).
* ``ToolCall.id`` — the ``call_id`` (what ``function_call_output`` answers; it stays a
  plain provider id, safe to hand to any other API); ``ToolCall.signature`` — the
  ``function_call`` item id (``fc_…``), which OpenAI pairs with the reasoning item
  before it.
* Items the client executes (``shell_call`` in a local environment,
  ``local_shell_call``, ``apply_patch_call``,
  ``custom_tool_call``, ``mcp_approval_request``, ``tool_search_call`` with
  ``execution: "client"``) are ToolCalls too, named and given arguments as
  :data:`CLIENT_ITEMS` says; their ``signature`` is the whole item as received. To
  the same model the item is replayed byte for byte and the tool result becomes
  the matching output item (``shell_call_output`` with the result's stdout, or
  stderr and exit code 1 for an error result, ``local_shell_call_output``,
  ``apply_patch_call_output``
  with status ``failed`` for an error result, ``custom_tool_call_output``,
  ``mcp_approval_response`` — the result says ``approve``/``deny``, true/false or
  ``{"approve": …, "reason": …}``; an error result denies —, ``tool_search_output``
  with the result's JSON array of tools). To another model it is a plain
  ``function_call``.
* Items OpenAI runs itself (web search, file search, code interpreter, image
  generation, MCP calls and tool lists, server tool search) are
  :class:`~modelwire.types.ServerToolCall` + :class:`~modelwire.types.ServerToolResult`
  blocks (a generated image's result an :class:`~modelwire.types.ImageContent`), an
  item type not modelled a :class:`~modelwire.types.ProviderItem`; the item
  as received is replayed byte for byte to the same model (``_server``). Items the
  terminal event's ``response.output`` holds but no ``output_item.done`` ended are
  kept too (``ResponsesDecoder._backfill``).
  ``output_text`` annotations are the text's citations, replayed the same way.

Compat flags (``Model(compat={...})``, unknown keys refused) are the fields of
:class:`ResponsesCompat`. ``_encode`` holds the outbound half, ``_decode`` the inbound,
``_client`` the client-executed items of both directions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._wire.request import HTTPRequest, RequestOptions, check_extra_body
from ...types import Capabilities, Context, Model
from .._codec import Counting, IdRules, first_sse_json, sse_framing
from .._common import (
    SAFE_ID_RULE,
    bearer_auth,
    check_context_values,
    check_reasoning,
    check_tool_choice,
    http_request,
    server_tool_objects,
)
from . import _count, spec
from . import batch as _batch
from ._background import BACKGROUND
from ._client import CLIENT_ITEMS
from ._output import add_output
from .decode import ResponsesDecoder
from .encode import RESERVED, ResponsesCompat, _tool, _tool_choice, detect_compat, encode_input

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = [
    "API",
    "CLIENT_ITEMS",
    "RESERVED",
    "OpenAIResponsesAPI",
    "ResponsesCompat",
    "ResponsesDecoder",
    "detect_compat",
    "encode_input",
]


def recognizes(payload: bytes) -> bool:
    """A Responses body: its first SSE payload's ``type`` starts with ``response.``."""
    obj = first_sse_json(payload)
    t = obj.get("type") if isinstance(obj, dict) else None
    return isinstance(t, str) and t.startswith("response.")


class OpenAIResponsesAPI:
    """The ``openai-responses`` wire API."""

    name = spec.API_NAME
    endpoint = "/responses"
    handoff = IdRules(lambda model: SAFE_ID_RULE)
    counting = Counting(_count.count_request, _count.parse_count)
    batching = _batch.BATCHING  # the provider's batch API (modelwire.batching)
    background = BACKGROUND  # background=True, resume_stream, cancel_response

    def capabilities(self, model: Model) -> Capabilities:
        return spec.CAPABILITIES

    def path(self, model_id: str) -> str:
        return self.endpoint

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        """The request body as a dict (reasoning items inside as ``msgspec.Raw``)."""
        compat = detect_compat(model)
        check_extra_body(options.extra_body, RESERVED)
        body: dict[str, Any] = {"model": model.id}
        if context.system_prompt and compat.system_role == "instructions":
            body["instructions"] = context.system_prompt
        body["input"] = encode_input(model, context, compat)
        body["stream"] = True
        if options.background:
            # A background response must be stored (OpenAI: "background requires
            # store=true"): that is what lets GET /responses/{id} stream it again.
            body["background"] = True
            body["store"] = True
        elif compat.store is not None:
            body["store"] = compat.store
        encrypted = compat.encrypted_reasoning
        if encrypted is None:
            encrypted = model.reasoning or options.reasoning is not None
        if encrypted:
            body["include"] = ["reasoning.encrypted_content"]
        if options.max_tokens is not None:
            body["max_output_tokens"] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        tools = context.tools or ()
        check_tool_choice(options.tool_choice, context)
        if tools:
            body["tools"] = [_tool(t.name, t.description, t.parameters, compat,
                                   defer=t.defer_loading) for t in tools]  # fmt: skip
        if options.server_tools:
            body.setdefault("tools", []).extend(
                server_tool_objects(options.server_tools, spec.SERVER_TOOLS, self.name)
            )
        if any(t.defer_loading for t in tools):
            # Deferred functions are found by the hosted tool_search, which goes in the
            # same tools array ("Tool search" guide,
            # https://developers.openai.com/api/docs/guides/tools-tool-search).
            body["tools"].append({"type": "tool_search"})
        choice = _tool_choice(options.tool_choice, {t.name for t in tools})
        if choice is not None:
            body["tool_choice"] = choice
        if options.parallel_tool_calls is not None and tools:
            body["parallel_tool_calls"] = options.parallel_tool_calls
        check_reasoning(model, options.reasoning)
        if options.reasoning is not None:
            effort = (compat.reasoning_effort_map or {}).get(options.reasoning, options.reasoning)
            reasoning: dict[str, Any] = {"effort": effort}
            if compat.reasoning_summary is not None:
                reasoning["summary"] = compat.reasoning_summary
            body["reasoning"] = reasoning
        if options.session_id and options.cache and compat.prompt_cache_key:
            body["prompt_cache_key"] = options.session_id
        add_output(body, options.output)  # text.format (structured output)
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.endpoint,
            body=self.build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "text/event-stream"},
            auth=bearer_auth,
        )

    def new_decoder(self, model: Model | None) -> ResponsesDecoder:
        return ResponsesDecoder()

    def framing(self, max_event_bytes: int) -> Framing:
        return sse_framing(max_event_bytes)

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = OpenAIResponsesAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec

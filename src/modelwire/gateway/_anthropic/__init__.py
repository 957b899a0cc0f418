"""The gateway's Anthropic Messages front-end (``POST /v1/messages``).

A client of the Messages API (the ``anthropic`` SDK, Claude Code, pydantic-ai's
``AnthropicModel``…) talks to any backend: its request is parsed into a
:class:`~modelwire.gateway._frontend.GatewayRequest` (the inverse of modelwire's
``anthropic-messages`` encoder) and the answer rendered as the API's stream or
``message`` object. References: https://docs.anthropic.com/en/api/messages,
``/en/docs/build-with-claude/streaming``, ``/en/api/errors``.

Request fields (also in ``docs/gateway-anthropic.md``):

====================================  ==============================================
field                                 becomes
====================================  ==============================================
``model``                             ``GatewayRequest.model`` (the routed name)
``messages``                          ``Context.messages`` (a ``system``
                                      message among them joins
                                      ``Context.system_prompt``): user text, images
                                      (base64), documents (base64, text, url,
                                      file), ``tool_result`` (text, images,
                                      documents) → ``ToolResultMessage``;
                                      assistant text (citations kept), thinking
                                      and redacted thinking (sealed origins
                                      unsealed), ``tool_use`` (input text kept as
                                      ``raw_arguments``), server-tool and other
                                      blocks kept whole
``system``                            ``Context.system_prompt`` (blocks joined by
                                      a newline)
``tools``                             ``Context.tools`` (client tools)
``tool_choice``                       ``tool_choice`` auto / required (``any``) /
                                      none / ``{"name"}``;
                                      ``disable_parallel_tool_use`` →
                                      ``parallel_tool_calls=False``
``max_tokens``                        ``max_tokens`` (required)
``temperature``                       ``temperature``
``thinking``, ``output_config.effort``  ``reasoning``: a budget → the largest
                                      level it reaches (1024 minimal, 2048 low,
                                      8192 medium, 16384 high, 32000 xhigh);
                                      adaptive → its effort (``max`` → xhigh,
                                      none → high)
``output_config.format``,             ``output`` (the JSON schema)
``output_format``
``stream``                            ``GatewayRequest.stream``
``cache_control`` (any block)         ``cache``: modelwire marks the system prompt
                                      and the last user block
``metadata``                          ignored (abuse-tracking tag only)
``context_management``                sent unchanged to an Anthropic backend; for
                                      others left out when it clears nothing
                                      (``clear_thinking_20251015``, ``keep: "all"``),
                                      else refused (400)
anything else (``stop_sequences``,    ``passthrough``: sent unchanged to an
``top_k``, ``top_p``,                 Anthropic backend, refused (400) for others
``service_tier``, ``container``,
``mcp_servers``…)
server tools in ``tools``,            refused (400 naming the field)
image url/file sources, document
``context``/``citations``, search
results
====================================  ==============================================

Header ``anthropic-version`` is not read; ``anthropic-beta`` goes on to an Anthropic
backend only (``GatewayRequest.forward_headers``), joined with the betas modelwire's
encoder sets.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..._apis._server.request import GatewayRequest, RequestError
from ..._apis.anthropic_messages._error_shape import error_response
from ..._apis.anthropic_messages.parse import API_NAME, parse
from ..._apis.anthropic_messages.render import Renderer, message_body
from ..._apis.anthropic_messages.spec import ID_PREFIX
from ...types import AssistantMessage

__all__ = ["FRONTEND", "AnthropicFrontend"]


class AnthropicFrontend:
    """The Anthropic Messages front-end (:class:`~modelwire.gateway._frontend.Frontend`)."""

    api = API_NAME
    paths = ("/v1/messages", "/messages")
    id_prefix = ID_PREFIX

    def parse(self, body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
        """The request; :class:`RequestError` (400) naming the field at fault."""
        return parse(body, headers)

    def renderer(self, request: GatewayRequest, response_id: str) -> Renderer:
        """A renderer for one streamed answer."""
        return Renderer(request, response_id)

    def message(
        self, request: GatewayRequest, message: AssistantMessage, response_id: str
    ) -> bytes:
        """The ``message`` object of a non-streamed answer."""
        return message_body(request, message, response_id)

    def error(self, error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body of an error in the API's shape."""
        return error_response(error)


FRONTEND = AnthropicFrontend()

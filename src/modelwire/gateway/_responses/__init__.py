"""The OpenAI Responses front-end of the gateway (``POST /v1/responses``).

Reference: https://platform.openai.com/docs/api-reference/responses/create (request),
https://platform.openai.com/docs/api-reference/responses-streaming (stream events),
https://platform.openai.com/docs/api-reference/responses/object (the Response object).
Sans-IO: :mod:`._parse` decodes a request, :mod:`._render` writes the stream,
:mod:`._items` the output items and Response object both share, :mod:`._errors` the
error bodies.

Request fields (also in ``docs/gateway-responses.md``):

======================== ===================================================================
field                    what the gateway does
======================== ===================================================================
model                    the gateway model name (required)
input                    the conversation (required): a string, or items — ``message``
                         (user text/images/files/audio; assistant text with annotations;
                         system/developer text, anywhere), ``reasoning``, ``function_call``
                         (``arguments`` kept as raw text), ``function_call_output`` (text,
                         images, files), provider-run tool items
instructions             the system prompt (joined before the system/developer text)
tools                    function tools → tools; a ``namespace`` tool's function tools too,
                         under their own names (``GatewayRequest.namespaces``: their calls
                         are rendered with the ``namespace``); any other tool type
                         (``web_search``…) → 400 naming ``tools[N].type``
tool_choice              auto / none / required / a function → ``tool_choice``; other → 400
parallel_tool_calls      → ``parallel_tool_calls``
max_output_tokens        → ``max_tokens``
temperature              → ``temperature``
reasoning                ``effort`` → ``reasoning`` (``none``: no level); ``summary`` ignored
text                     ``format`` json_schema → ``output`` (the schema); text: nothing;
                         ``json_object`` or ``verbosity`` → passed through (the whole field)
include                  ``reasoning.encrypted_content``: honoured (always returned where a
                         signature must come back); any other value → passed through
prompt_cache_key         → ``session_id``
stream                   streamed (SSE) or one Response object
store, user, metadata,   ignored (the gateway stores nothing; metadata and user are echoed)
safety_identifier,
stream_options,
client_metadata
background               ``true`` → 400 (answers come in the request); false ignored
previous_response_id,    400: the gateway keeps no state — send the items themselves
conversation
top_p, truncation,       passed through unchanged to a Responses backend, 400 for any
service_tier, any other  other backend (``GatewayRequest.passthrough``)
======================== ===================================================================

Normalisation on parse: a user message of one text part reads as a plain string; an
``input_file`` by id or URL gets its MIME type from its name (PDF when unknown); the
``filename`` modelwire's encoder makes up (``document.pdf``) reads as no title.

Signatures: an assistant item from a Responses backend keeps the provider's ids and
reasoning item as they are; from another API the thinking signature is sealed in the
reasoning item's ``encrypted_content``, a text or call signature (a thought
signature) in the item's ``id`` (:mod:`modelwire._apis._server.origin`), and unsealing
gives back the origin, so the next request replays them to the model that made them.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..._apis._server.request import GatewayRequest, RequestError, StreamRenderer
from ..._apis.openai_responses._error_shape import error as _error
from ..._apis.openai_responses._output_items import API
from ..._apis.openai_responses.parse import parse as _parse
from ..._apis.openai_responses.render import ResponsesRenderer, message_body
from ..._apis.openai_responses.spec import RESPONSE_ID_PREFIX
from ...types import AssistantMessage

__all__ = ["FRONTEND", "ResponsesFrontend", "ResponsesRenderer"]


class ResponsesFrontend:
    """The ``openai-responses`` front-end (:class:`~modelwire.gateway._frontend.Frontend`)."""

    api = API
    paths = ("/v1/responses", "/responses")
    id_prefix = RESPONSE_ID_PREFIX

    def parse(self, body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
        return _parse(body, headers)

    def renderer(self, request: GatewayRequest, response_id: str) -> StreamRenderer:
        return ResponsesRenderer(request, response_id)

    def message(
        self, request: GatewayRequest, message: AssistantMessage, response_id: str
    ) -> bytes:
        return message_body(request, message, response_id)

    def error(self, error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
        return _error(error)


FRONTEND = ResponsesFrontend()

"""Cohere's v2 chat API (``api="cohere-chat"``): ``POST {base_url}/chat``, where
``base_url`` ends in the version (``https://api.cohere.com/v2``), ``Authorization:
Bearer <key>``, Server-Sent Events.

References: https://docs.cohere.com/reference/chat-stream (request, events),
https://docs.cohere.com/reference/chat (the whole response) and
https://docs.cohere.com/reference/errors. The tables (finish reasons both ways, event
names, tool choices, thinking budgets) are in :mod:`.spec`; the request in
:mod:`.encode`; the stream in :mod:`.decode`; the mock server's side in :mod:`.render`.

What maps where: thinking content (reasoning models) is thinking; the tool plan is
the text said before the calls (replayed as ``tool_plan``); citations are
:class:`~modelwire.types.Citation` (one per source, ``raw`` the whole Cohere
object, replayed with the turn); ``billed_units`` is the usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._wire.request import HTTPRequest, RequestOptions
from ...types import Capabilities, Context, Model
from .._codec import IdRules, sse_framing
from .._common import SAFE_ID_RULE, bearer_auth, check_context_values, http_request
from ._embed import EMBEDDING
from .decode import CohereDecoder, recognizes
from .encode import RESERVED, build_body, encode_messages
from .spec import API_NAME, CAPABILITIES, ENDPOINT

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = [
    "API",
    "RESERVED",
    "CohereChatAPI",
    "CohereDecoder",
    "build_body",
    "encode_messages",
]


class CohereChatAPI:
    """The ``cohere-chat`` wire API."""

    name = API_NAME
    endpoint = ENDPOINT
    # Cohere's ids are ``<tool name>_<12 characters>``; which others it takes is not
    # documented, so another API's ids are rewritten to letters, digits, _ and -.
    handoff = IdRules(lambda model: SAFE_ID_RULE)
    # POST /v1/tokenize counts one text, not a conversation: counts are estimated.
    counting = None
    embedding = EMBEDDING  # POST /v2/embed (._embed)

    def capabilities(self, model: Model) -> Capabilities:
        return CAPABILITIES

    def path(self, model_id: str) -> str:
        return self.endpoint

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.endpoint,
            body=build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "text/event-stream"},
            auth=bearer_auth,
        )

    def framing(self, max_event_bytes: int) -> Framing:
        return sse_framing(max_event_bytes)

    def new_decoder(self, model: Model | None) -> CohereDecoder:
        return CohereDecoder()

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = CohereChatAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec

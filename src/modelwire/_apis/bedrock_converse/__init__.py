"""Amazon Bedrock's Converse stream (``api="bedrock-converse"``): ``POST
{base_url}/model/{modelId}/converse-stream``, the AWS event stream
(``application/vnd.amazon.eventstream``).

Reference: the Bedrock Runtime API reference, ConverseStream
(https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html)
and Converse ("Request Syntax"), and the ``bedrock-runtime`` service model in botocore.
``base_url`` is the runtime endpoint, ``https://bedrock-runtime.{region}.amazonaws.com``
(DESIGN §2b); the model id (``anthropic.claude-sonnet-4-…-v1:0``, an inference profile
``us.anthropic.…`` or an ARN) is percent-encoded into the path. The registry finds this
package by the API's name (``bedrock-converse`` → ``modelwire._apis.bedrock_converse``).

The tables (stop reasons both ways, event names, exceptions, content type, path
suffixes) are in :mod:`.spec`; the request (messages, system, tools, tool choice,
thinking, cache points) in :mod:`.encode`; the stream in :mod:`.decode`; the server's
side in :mod:`.render`. Auth: a Bedrock API key is ``Authorization: Bearer …``;
without one the ``amazon-bedrock`` provider signs the exact bytes with SigV4
(:mod:`modelwire._providers.amazon_bedrock`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._url import path_segment
from ..._wire.request import HTTPRequest, RequestOptions
from ...types import Capabilities, Context, Model
from .._codec import Counting, IdRules
from .._common import SAFE_ID_RULE, bearer_auth, check_context_values, http_request
from . import _count, spec
from ._embed import EMBEDDING
from .decode import BedrockDecoder, recognizes
from .encode import RESERVED, THINKING_BUDGETS, BedrockCompat, build_body, encode_messages

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = [
    "API",
    "RESERVED",
    "THINKING_BUDGETS",
    "BedrockCompat",
    "BedrockConverseAPI",
    "BedrockDecoder",
    "build_body",
    "encode_messages",
]


class BedrockConverseAPI:
    """The ``bedrock-converse`` wire API."""

    name = "bedrock-converse"
    # ToolUseBlock.toolUseId: [a-zA-Z0-9_-]+, 1 to 64 characters.
    handoff = IdRules(lambda model: SAFE_ID_RULE)
    counting = Counting(_count.count_request, _count.parse_count)
    embedding = EMBEDDING  # InvokeModel for Titan and Cohere embedding models (._embed)

    def capabilities(self, model: Model) -> Capabilities:
        return spec.CAPABILITIES

    def path(self, model_id: str) -> str:
        # The id may hold ':' and '/' (versions, inference-profile ARNs): the API
        # reference says to URL-encode it, so it stays one segment.
        return f"/model/{path_segment(model_id, 'the Bedrock model id (Model.id)')}{spec.STREAM_SUFFIX}"

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.path(model.id),
            body=build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": spec.CONTENT_TYPE},
            # A Bedrock API key (or a gateway's token) is a bearer token; SigV4 is added
            # by the amazon-bedrock provider's authorizer when there is no key.
            auth=bearer_auth,
        )

    def framing(self, max_event_bytes: int) -> Framing:
        from ..._wire.framing.eventstream import EventStreamDecoder

        return EventStreamDecoder(max_event_bytes=max_event_bytes)

    def new_decoder(self, model: Model | None) -> BedrockDecoder:
        return BedrockDecoder()

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = BedrockConverseAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec

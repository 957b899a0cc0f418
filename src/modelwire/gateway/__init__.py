"""The gateway: one OpenAI- and Anthropic-compatible HTTP endpoint in front of every
provider (``modelwire serve --config gateway.toml``, or :func:`app` for any ASGI server).

Clients speak OpenAI Chat Completions, OpenAI Responses or Anthropic Messages; each
request is decoded into a :class:`~modelwire.Context`, routed by model name to a
configured backend of any wire API (a model, a catalog entry or a
:class:`~modelwire.Fallback`), and the answer is rendered live in the client's API.
Clients authenticate with gateway keys stored as sha256; provider keys stay in the
gateway's environment. See ``docs/gateway.md``.

Importing this package does not import uvicorn or redis: they are needed only to
serve (``pip install 'modelwire[gateway]'``) and to share limits through Redis.
"""

from __future__ import annotations

from .._apis._server.request import GatewayRequest, RequestError, StreamRenderer
from ._app import Gateway
from ._config import GatewayConfig, GatewaySettings, KeyConfig, ModelRoute, load_config
from ._frontend import Frontend
from ._keys import hash_key, new_key
from ._server import GatewayServer, app, serve
from ._store import LimitStore, MemoryStore, RedisStore, Refusal

__all__ = [
    "Frontend",
    "Gateway",
    "GatewayConfig",
    "GatewayRequest",
    "GatewayServer",
    "GatewaySettings",
    "KeyConfig",
    "LimitStore",
    "MemoryStore",
    "ModelRoute",
    "RedisStore",
    "Refusal",
    "RequestError",
    "StreamRenderer",
    "app",
    "hash_key",
    "load_config",
    "new_key",
    "serve",
]

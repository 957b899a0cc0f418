"""The gateway's ``POST /v1/embeddings``: OpenAI's embeddings API in front of every
backend that embeds (:func:`modelwire.embed`).

platform.openai.com/docs/api-reference/embeddings/create: ``{"model", "input": str |
[str], "dimensions", "encoding_format": "float" | "base64", "user"}`` →
``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
"model", "usage": {"prompt_tokens", "total_tokens"}}``. Input given as token ids is
refused (400): a backend of another API has no use for OpenAI's tokens.

The request goes through the gateway's own steps — the key from the headers, the
body's limit and timeout, the model routed by the name the client asks for (a
``Fallback`` embeds with its first model: vectors of two models are not
interchangeable), the key's limits and budget, the backend's key, client and
timeout — and the backend's failure comes back in OpenAI's error shape, scrubbed of
secrets and backend addresses.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from .._apis._server.request import GatewayRequest, RequestError
from ..errors import ConfigurationError, MissingAPIKeyError, ModelwireError, StreamError
from ..types import Context, Model
from ._asgi import JSON, MethodError, plain_error, read_body, respond, utf8_error
from ._backend import Scrub, as_gateway_fault, backend_options
from ._keys import key_for

if TYPE_CHECKING:
    from ._asgi import Receive, Scope, Send
    from ._config import KeyConfig
    from ._observe import Exchange

__all__ = ["EMBEDDING_PATHS", "serve_embeddings"]

#: The paths served (with and without the version segment, as ``/v1/models``).
EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")
_FIELDS = frozenset({"model", "input", "dimensions", "encoding_format", "user"})


def _parse(body: bytes) -> tuple[str, list[str], int | None, str]:
    try:
        obj = json.loads(body)
    except ValueError:
        raise RequestError("the body is not JSON") from None
    if not isinstance(obj, dict):
        raise RequestError("the body must be a JSON object")
    unknown = sorted(set(obj) - _FIELDS)
    if unknown:
        raise RequestError(f"{unknown[0]}: not a field of the embeddings API "
                           f"({', '.join(sorted(_FIELDS))})", param=unknown[0])  # fmt: skip
    model = obj.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("model must be a non-empty string", param="model")
    raw = obj.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts:
        raise RequestError("input must be a string or a non-empty array of strings",
                           param="input")  # fmt: skip
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            why = "token ids are not accepted, send text" if isinstance(t, int | list) else (
                "must be a string")  # fmt: skip
            raise RequestError(f"input[{i}]: {why}", param=f"input[{i}]")
    dims = obj.get("dimensions")
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 1):
        raise RequestError("dimensions must be a positive integer", param="dimensions")
    encoding = obj.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise RequestError("encoding_format must be 'float' or 'base64'", param="encoding_format")
    return model, texts, dims, encoding


def _vector(v: Any, encoding: str) -> Any:
    if encoding == "float":
        return v.tolist()
    raw = v.tobytes() if sys.byteorder == "little" else _swapped(v)
    return base64.b64encode(raw).decode("ascii")


def _swapped(v: Any) -> bytes:
    w = type(v)(v.typecode, v)
    w.byteswap()
    return bytes(w.tobytes())


async def serve_embeddings(
    gw: Any, scope: Scope, headers: Mapping[str, str], receive: Receive, send: Send,
    ex: Exchange,
) -> None:  # fmt: skip
    """Answer one request to :data:`EMBEDDING_PATHS` for ``gw`` (the
    :class:`~modelwire.gateway.Gateway`; ``ex`` is logged by the caller)."""
    fe = gw._frontend_for("/v1/chat/completions")  # OpenAI's error shape
    held: list[tuple[KeyConfig, str]] = []
    try:
        await _serve(gw, scope, headers, receive, send, ex, held)
    except RequestError as exc:
        if fe is None:
            await plain_error(send, ex, exc.status, "invalid_request_error", exc.message)
        else:
            await gw._error(send, ex, fe, exc, retry_after=getattr(exc, "retry_after", None))
    except ModelwireError as exc:
        assert fe is not None
        await gw._error(send, ex, fe, exc)
    except Exception:
        # A fault of the gateway: logged with its traceback; the client gets a 500
        # (when nothing was sent yet), never the text — as for the other routes.
        import logging

        logging.getLogger("modelwire.gateway").exception("the gateway failed on embeddings")
        if ex.status == 0:
            await plain_error(send, ex, 500, "server_error",
                              "the gateway failed on this request (its log says why)")  # fmt: skip
    finally:
        for key, ticket in held:  # not settled: released, nothing charged
            await gw._settle(key, None, [(key, ticket)])


async def _serve(
    gw: Any, scope: Scope, headers: Mapping[str, str], receive: Receive, send: Send,
    ex: Exchange, held: list[tuple[KeyConfig, str]],
) -> None:  # fmt: skip
    from .._client._embed import embed

    if scope["method"] != "POST":
        raise MethodError(f"{scope['path']} takes POST", "POST")
    key = key_for(gw.config.keys, scope["headers"], headers)
    ex.key = key.name
    try:
        async with asyncio.timeout(gw.body_timeout):
            body = await read_body(receive, headers, gw.config.gateway.max_body_bytes)
    except TimeoutError:
        raise RequestError(f"the request body did not arrive within {gw.body_timeout:g} s",
                           status=408) from None  # fmt: skip
    bad_text = utf8_error(body)
    if bad_text is not None:
        raise bad_text
    name, texts, dims, encoding = _parse(body)
    ex.model = name
    req = GatewayRequest(model=name, context=Context(), options={}, stream=False)
    route = gw._route(req, key)
    await gw._admit(key, route, req, held)
    target = route.target if isinstance(route.target, Model) else route.target.models[0]
    ex.target = target
    options = backend_options(route, req, "", gw.config.models, gw.config.gateway.timeout,
                              gw._http_client)  # fmt: skip
    scrub = Scrub(gw.config.models, name, headers)
    try:
        got = await embed(target, texts, dimensions=dims, **options)
    except MissingAPIKeyError as exc:
        variable = f" ({exc.env_var})" if exc.env_var else ""
        raise RequestError(f"the gateway has no API key for model {name!r}: its environment "
                           f"variable{variable} is not set", status=500, kind="server") from None  # fmt: skip
    except ConfigurationError as exc:
        raise RequestError(scrub.text(exc.message)) from None
    except StreamError as exc:
        shown = type(exc)(scrub.text(exc.message), status=exc.status,
                          retry_after=exc.retry_after, code=exc.code)  # fmt: skip
        fault = as_gateway_fault(shown, name)
        raise fault from None
    await gw._settle(key, got.usage, held)
    data = [{"object": "embedding", "index": i, "embedding": _vector(v, encoding)}
            for i, v in enumerate(got.vectors)]  # fmt: skip
    tokens = got.usage.input
    answer = {"object": "list", "data": data, "model": name,
              "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}  # fmt: skip
    await respond(send, ex, 200, JSON, msgspec.json.encode(answer))

"""The gateway's ASGI application (https://asgi.readthedocs.io/en/latest/specs/www.html).

Raw ASGI, no framework: the app does little but route one POST to a front-end and
copy bytes, and a framework's request/response objects would only add latency to
every streamed chunk. One request:

1. the front-end is picked by path (a trailing ``/`` ignored; another method: 405 +
   ``allow``; headers past their limits: 431), the gateway key authenticated from the
   headers before any byte of the body is read (:mod:`._keys`; 401, or 400 for a
   credential header sent twice), the body read (``max_body_bytes``: 413 past it; 408
   if it takes longer than ``body_timeout``) and parsed by the front-end (400 naming
   the field; text that is not UTF-8 too);
2. ``request.model`` is routed to its ``[models]`` entry — unknown, or not allowed to
   the key, is the same 404 — its limits and budget must allow it (:mod:`._store`;
   429 + ``retry-after``, 403 once the budget is spent, 429 while requests in flight
   may spend it), and fields passed through must reach a backend of the client's own
   API (400 naming the field);
3. ``modelwire.stream`` runs against the backend with the key read from the model's
   environment variable now (a missing one: 500 naming the variable);
4. streamed: once the backend has answered (its 2xx head), a 200
   ``text/event-stream`` starts and every event is rendered as it comes, a failure in
   the stream; a failure before that answer is the front-end's error status and body.
   Not streamed: the final message, or its error;
5. ``http.disconnect`` from the client aborts the backend stream at once (its
   connection is closed; the request is logged as 499);
6. the answer's tokens and cost are charged to the key, and the request is logged
   (``[gateway] log``) and traced (``[gateway] otel``) with the key's name — never
   the key.

Every error body is the front-end's (its API's own error shape); routes no
front-end serves answer in the OpenAI shape.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from .._apis._server.request import GatewayRequest, RequestError
from .._client import stream
from ..errors import ConfigurationError, MissingAPIKeyError, ModelwireError
from ..types import AssistantMessage, Model, Usage
from ._asgi import (
    JSON,
    SSE,
    Receive,
    Scope,
    Send,
    head_error,
    plain_error,
    read_body,
    respond,
    utf8_error,
    watch_disconnect,
)
from ._asgi import MethodError as _MethodError
from ._backend import (
    Scrub,
    adopted,
    backend_capabilities,
    backend_options,
    backend_secrets,
)
from ._backend import as_gateway_fault as _as_gateway_fault
from ._config import GatewayConfig, KeyConfig, ModelRoute
from ._embeddings import EMBEDDING_PATHS, serve_embeddings
from ._frontend import FRONTEND_MODULES, Frontend, default_frontends
from ._keys import key_for
from ._observe import Exchange, Tracing
from ._store import LimitStore, StoreUnavailable, open_store, worst_case_cost

if TYPE_CHECKING:
    from ._requestlog import RequestLog

__all__ = ["FRONTEND_MODULES", "Gateway", "default_frontends"]


class _LimitError(RequestError):
    """429: a key's rate limit; ``retry_after`` seconds until it admits again."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message, status=429, kind="rate_limit")
        self.retry_after = retry_after


class Gateway:
    """The ASGI app. ``frontends``: the client APIs served (default
    :func:`default_frontends`); ``store``: limits and budgets (default from
    ``[gateway] redis``); ``tracer_provider``: for ``[gateway] otel`` (default the
    global one); ``http_client``: the client of backend calls (default: a pooled one
    the app opens and closes, :meth:`_http_client`); ``body_timeout``: seconds a client
    has to send its whole request body (408 after: a body shorter than its
    ``content-length`` would otherwise hold the request open for ever)."""

    def __init__(
        self,
        config: GatewayConfig,
        *,
        frontends: Iterable[Frontend] | None = None,
        store: LimitStore | None = None,
        tracer_provider: Any = None,
        http_client: Any = None,
        body_timeout: float = 60.0,
    ) -> None:
        self.config = config
        self.body_timeout = body_timeout
        self.frontends = tuple(default_frontends() if frontends is None else frontends)
        self._routes: dict[str, Frontend] = {}
        # What each configured model's backend supports, laid together for a fallback
        # (a capability any of its models has): computed once, read by the renderers.
        self._backends = {
            name: backend_capabilities(route) for name, route in config.models.items()
        }
        for fe in self.frontends:
            for p in fe.paths:
                self._routes[p] = fe
        self.store = store if store is not None else open_store(config.gateway.redis)
        self._client = http_client
        self._own_client = http_client is None
        self._tasks: set[asyncio.Task[None]] = set()
        self._log: RequestLog | None = None
        if config.gateway.log is not None:
            from ._requestlog import RequestLog

            self._log = RequestLog(config.gateway.log)
        self._tracing = (
            Tracing(tracer_provider, lambda: backend_secrets(config.models))
            if config.gateway.otel else None
        )  # fmt: skip

    def __repr__(self) -> str:
        names = ", ".join(self.config.models)
        return f"Gateway(models=[{names}], keys={len(self.config.keys)})"

    # ------------------------------------------------------------------ ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Wait for pending log writes; close the backend client and the store."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        client, self._client = self._client, None
        if client is not None and self._own_client:
            from .._http import close_async_client

            await close_async_client(client)
        await self.store.close()

    def _http_client(self) -> Any:
        if self._client is None:
            from .._http import httptools_installed, pooled_async_client
            from .._http._proxy import env_proxy_url

            # modelwire's own HTTP/1.1 client on httptools (the gateway extra installs
            # it): measured in bench_gateway, 0.7 ms less added time to the first byte
            # and a fifth less CPU per streamed delta than aiohttp's. It goes through
            # no proxy: with one set in the environment, aiohttp (which does), else
            # httpx.
            proxied = env_proxy_url("https", None) or env_proxy_url("http", None)
            kind = "httptools" if httptools_installed() and not proxied else "auto"
            self._client = pooled_async_client(self.config.gateway.max_connections, kind)
        return self._client

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        if len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"  # /v1/chat/completions/ is the same endpoint
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        ex = Exchange(path)
        span = self._tracing.start(scope["method"], path) if self._tracing else None
        try:
            refused = head_error(scope["headers"])
            if refused is not None:
                shape = self._frontend_for(path)
                if shape is None:
                    await plain_error(send, ex, 431, "invalid_request_error", refused.message)
                else:
                    await self._error(send, ex, shape, refused)
                return
            if path in ("/v1/models", "/models"):
                await self._list_models(scope, headers, send, ex)
                return
            if path in EMBEDDING_PATHS:  # OpenAI's embeddings, any backend (._embeddings)
                await serve_embeddings(self, scope, headers, receive, send, ex)
                return
            fe = self._routes.get(path)
            if fe is None:
                served = ", ".join(sorted(self._routes)) or "none"
                await plain_error(send, ex, 404, "not_found_error",
                                   f"no route POST {path}; the gateway serves: {served}")  # fmt: skip
                return
            ex.frontend = fe.api
            try:
                await self._request(fe, scope, headers, receive, send, ex)
            except Exception:
                # A fault of the gateway or a front-end: logged with its traceback; the
                # client gets the API's 500 (when nothing was sent yet), never the text.
                _logger().exception("the gateway failed on POST %s", path)
                if ex.status == 0:
                    await self._error(send, ex, fe, RequestError(
                        "the gateway failed on this request (its log says why)",
                        status=500, kind="server"))  # fmt: skip
        finally:
            if span is not None and self._tracing is not None:
                self._tracing.end(span, ex)
            self._record(ex)

    # ------------------------------------------------------------------ one request

    async def _request(
        self, fe: Frontend, scope: Scope, headers: Mapping[str, str],
        receive: Receive, send: Send, ex: Exchange,
    ) -> None:  # fmt: skip
        held: list[tuple[KeyConfig, str]] = []  # its budget reservation, until settled
        try:
            await self._one(fe, scope, headers, receive, send, ex, held)
        finally:
            for key, ticket in held:
                # Ended before the backend was called, or by a fault: the reservation
                # is released, nothing charged.
                try:
                    await self.store.settle(key, 0, 0.0, ticket=ticket)
                except StoreUnavailable:
                    pass  # Redis drops it after the store's hold_seconds

    async def _one(
        self, fe: Frontend, scope: Scope, headers: Mapping[str, str],
        receive: Receive, send: Send, ex: Exchange, held: list[tuple[KeyConfig, str]],
    ) -> None:  # fmt: skip
        try:
            if scope["method"] != "POST":
                raise _MethodError(f"{scope['path']} takes POST", "POST")
            # The key first, from the headers alone: a client without one gets its 401
            # before the gateway reads (and holds) any byte of its body.
            key = key_for(self.config.keys, scope["headers"], headers)
            ex.key = key.name
            try:
                # asyncio.timeout, not wait_for: no task of its own (on Python 3.11).
                async with asyncio.timeout(self.body_timeout):
                    body = await read_body(receive, headers, self.config.gateway.max_body_bytes)
            except TimeoutError:
                raise RequestError(
                    f"the request body did not arrive within {self.body_timeout:g} s (is its "
                    "content-length larger than the body sent?)", status=408,
                ) from None  # fmt: skip
            bad_text = utf8_error(body)
            if bad_text is not None:
                raise bad_text
            req = fe.parse(body, headers)
            ex.model = req.model
            route = self._route(req, key)
            req = msgspec.structs.replace(req, backend=self._backends[route.name])
            await self._admit(key, route, req, held)
            target = adopted(route, req)
            options = backend_options(
                route,
                req,
                fe.api,
                self.config.models,
                self.config.gateway.timeout,
                self._http_client,
            )
        except RequestError as exc:
            wait = exc.retry_after if isinstance(exc, _LimitError) else None
            await self._error(send, ex, fe, exc, retry_after=wait)
            return
        ex.scrub = Scrub(self.config.models, req.model, headers)
        try:
            s = stream(route.target, target, **options)
        except MissingAPIKeyError as exc:
            variable = f" ({exc.env_var})" if exc.env_var else ""
            await self._error(send, ex, fe, RequestError(
                f"the gateway has no API key for model {route.name!r}: its environment "
                f"variable{variable} is not set", status=500, kind="server"))  # fmt: skip
            return
        except ConfigurationError as exc:
            # What the backend cannot take (an image for a text model, a reasoning
            # level for a model without): the client's request, named.
            await self._error(send, ex, fe, RequestError(ex.scrub.text(exc.message)))
            return
        ex.target = route.target if isinstance(route.target, Model) else route.target.models[0]
        ex.context = target
        rid = fe.id_prefix + os.urandom(16).hex()  # as uuid4().hex, without the UUID
        state = {"done": False}
        watcher = asyncio.create_task(watch_disconnect(receive, s, state))
        try:
            if req.stream:
                await self._stream(fe, req, s, rid, send, ex, state)
            else:
                message = await s.result()
                ex.message = message
                if not state.get("gone"):
                    await self._answer(fe, req, message, rid, send, ex)
        finally:
            state["done"] = True
            watcher.cancel()
            if state.get("gone"):
                ex.status = 499  # logged as the client's leaving (nginx's code), not the 200 begun
            if ex.message is None:
                await s.aclose()  # not ended (an exception here): abort, close the connection
                # The backend bills what it used before the abort: the aborted
                # message's usage (often the prompt, counted at the stream's start).
                await self._settle(key, await _aborted_usage(s), held)
            else:
                # Ended: the stream reads the rest of the body on its own, briefly, so
                # the backend connection goes back to the pool (aclose() would cut
                # that short).
                await self._settle(key, ex.message.usage, held)

    async def _stream(
        self, fe: Frontend, req: GatewayRequest, s: Any, rid: str, send: Send,
        ex: Exchange, state: dict[str, bool],
    ) -> None:  # fmt: skip
        # Built while the backend has not answered yet, not between its first content
        # and the client's.
        renderer = fe.renderer(req, rid)
        pending = []
        first = None
        async for event in s:
            if event.type == "start":
                pending.append(event)
                if ex.status == 0 and await s._await_answer():
                    # The backend answered: the client reads the head while the model
                    # thinks (docs/gateway.md, "Backend failures"); what fails from
                    # here on is told in the stream, as the providers themselves do.
                    ex.status = 200
                    await send({"type": "http.response.start", "status": 200, "headers": SSE})
                continue
            first = event
            break
        if ex.status == 0 and (
            first is None or (first.type == "error" and not _refused(first.message))
        ):
            message = first.message if first is not None else await s.result()
            ex.message = message
            if not state.get("gone"):
                await self._answer(fe, req, message, rid, send, ex)
            return
        if first is None:  # the head is sent and the stream was over: end the body
            ex.message = await s.result()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        ex.saw(first.type)
        if ex.status == 0:
            ex.status = 200
            await send({"type": "http.response.start", "status": 200, "headers": SSE})
        pending.append(ex.answered_event(first) if first.type == "error" else first)
        out = b"".join(renderer.feed(e) for e in pending)
        if first.type in ("done", "error"):
            ex.message = first.message
        else:
            if out:
                await send({"type": "http.response.body", "body": out, "more_body": True})
            # One write per backend read: the events a read carried are rendered
            # together (s.ready counts those not taken yet), so the client is woken
            # once per read rather than once per event.
            pieces: list[bytes] = []
            async for event in s:
                ex.saw(event.type)
                if event.type in ("done", "error"):
                    ex.message = event.message
                    if event.type == "error" and state.get("gone"):
                        return  # aborted because the client left: nobody to write to
                    pieces.append(renderer.feed(ex.answered_event(event)
                                                if event.type == "error" else event))  # fmt: skip
                    break
                pieces.append(renderer.feed(event))
                if not s.ready:
                    chunk = b"".join(pieces)
                    pieces.clear()
                    if chunk:
                        await send({"type": "http.response.body", "body": chunk,
                                    "more_body": True})  # fmt: skip
            out = b"".join(pieces)
        await send({"type": "http.response.body", "body": out, "more_body": False})

    async def _answer(
        self, fe: Frontend, req: GatewayRequest, message: AssistantMessage, rid: str,
        send: Send, ex: Exchange,
    ) -> None:  # fmt: skip
        if message.error is not None and not _refused(message):
            message = ex.answered(message)  # no secret, backend URL or host
            try:
                message.raise_for_error()
            except ModelwireError as exc:
                await self._error(send, ex, fe, _as_gateway_fault(exc, req.model))
            return
        body = fe.message(req, message, rid)
        await respond(send, ex, 200, JSON, body)

    async def _error(
        self, send: Send, ex: Exchange, fe: Frontend, exc: BaseException,
        *, retry_after: float | None = None,
    ) -> None:  # fmt: skip
        status, extra, body = fe.error(exc)
        headers = list(JSON)
        for k, v in extra.items():
            headers.append((k.lower().encode("latin-1"), str(v).encode("latin-1")))
        if isinstance(exc, _MethodError):
            headers.append((b"allow", exc.allow.encode()))  # RFC 9110 §15.5.6
        if retry_after is not None and "retry-after" not in {k.lower() for k in extra}:
            # Delay-seconds are whole seconds (RFC 9110 §10.2.3): rounded up.
            headers.append((b"retry-after", str(max(1, int(-(-retry_after // 1)))).encode()))
        await respond(send, ex, status, headers, body)

    def _route(self, req: GatewayRequest, key: KeyConfig) -> ModelRoute:
        route = self.config.models.get(req.model)
        if route is None or not key.allows(req.model):
            # One answer for both: a key learns no model name it may not use (as
            # /v1/models lists only its own).
            raise RequestError(
                f"the model {req.model!r} is not served here; GET /v1/models lists the "
                "models this key may use", status=404, kind="not_found", param="model",
            )  # fmt: skip
        return route

    async def _admit(
        self, key: KeyConfig, route: ModelRoute, req: GatewayRequest,
        held: list[tuple[KeyConfig, str]],
    ) -> None:  # fmt: skip
        if (key.requests_per_minute is None and key.tokens_per_minute is None
                and key.budget_usd is None):  # fmt: skip
            return
        reserve, ticket = 0.0, None
        if key.budget_usd is not None:
            # A cost is known only once the answer ends: the request reserves the most
            # it may cost, checked and booked in one step with the spend and the other
            # reservations (._store), and settled with its real cost when it ends.
            reserve = worst_case_cost(route.target, req.options.get("max_tokens"))
            ticket = os.urandom(16).hex()
            held.append((key, ticket))  # released if this task ends before it settles
        try:
            refusal = await self.store.admit(key, reserve=reserve, ticket=ticket)
        except StoreUnavailable as exc:
            held.clear()
            raise RequestError(str(exc), status=503, kind="overloaded") from None
        if refusal is None:
            return
        held.clear()
        if refusal.kind == "budget":
            raise RequestError(refusal.message, status=403, kind="permission")
        raise _LimitError(refusal.message, refusal.retry_after)

    async def _settle(
        self, key: KeyConfig, usage: Usage | None, held: list[tuple[KeyConfig, str]]
    ) -> None:
        ticket = held.pop()[1] if held else None
        if key.tokens_per_minute is None and ticket is None:
            return
        tokens, cost = (usage.total_tokens, usage.cost.total) if usage is not None else (0, 0.0)
        try:
            await self.store.settle(key, tokens, cost, ticket=ticket)
        except StoreUnavailable:
            pass  # the answer is sent; the next admit reports the store

    # ------------------------------------------------------------------ /v1/models

    async def _list_models(
        self, scope: Scope, headers: Mapping[str, str], send: Send, ex: Exchange
    ) -> None:
        method = scope["method"]
        # The Anthropic SDK sends anthropic-version on every request: its list shape.
        anthropic = "anthropic-version" in headers
        fe = self._frontend_for("/v1/messages" if anthropic else "/v1/chat/completions")
        try:
            if method != "GET":
                raise _MethodError("/v1/models takes GET", "GET")
            key = key_for(self.config.keys, scope["headers"], headers)
        except RequestError as exc:
            if fe is None:
                await plain_error(send, ex, exc.status, _OPENAI_TYPES.get(exc.kind, "invalid_request_error"), exc.message)  # fmt: skip
            else:
                await self._error(send, ex, fe, exc)
            return
        ex.key = key.name
        names = [n for n in self.config.models if key.allows(n)]
        if anthropic:
            data = [{"type": "model", "id": n, "display_name": n,
                     "created_at": "1970-01-01T00:00:00Z"} for n in names]  # fmt: skip
            obj: dict[str, Any] = {
                "data": data,
                "has_more": False,
                "first_id": names[0] if names else None,
                "last_id": names[-1] if names else None,
            }
        else:
            listed = [{"id": n, "object": "model", "created": 0, "owned_by": "modelwire"}
                      for n in names]  # fmt: skip
            obj = {"object": "list", "data": listed}
        await respond(send, ex, 200, JSON, json.dumps(obj).encode())

    def _frontend_for(self, path: str) -> Frontend | None:
        """The front-end serving ``path`` (else any: its error shape is the best known)."""
        fe = self._routes.get(path)
        if fe is not None:
            return fe
        return self.frontends[0] if self.frontends else None

    # ------------------------------------------------------------------ log + trace

    def _record(self, ex: Exchange) -> None:
        if self._log is None:
            return
        log = self._log
        task = asyncio.get_running_loop().create_task(asyncio.to_thread(log.append, ex))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


# --------------------------------------------------------------------------- I/O helpers


def _logger() -> Any:
    import logging

    return logging.getLogger("modelwire.gateway")


#: The headers a gateway key comes in (lower case, as servers give ASGI its names).

_OPENAI_TYPES = {"authentication": "authentication_error", "permission": "permission_error",
                 "not_found": "not_found_error", "rate_limit": "rate_limit_error"}  # fmt: skip


async def _aborted_usage(s: Any) -> Usage | None:
    """The usage of an aborted stream's message (after ``aclose``), if it has one."""
    try:
        return (await s.result()).usage  # type: ignore[no-any-return]
    except Exception:
        return None


def _refused(message: AssistantMessage) -> bool:
    """A content filter's stop: each client API says it as an answer's stop reason
    (Chat ``content_filter``, Responses ``incomplete``, Anthropic ``refusal``), not
    as an error status."""
    return message.error is not None and message.error.kind == "content_filter"

"""Running the gateway: :func:`serve` (blocking, what ``modelwire serve`` calls) and
:class:`GatewayServer` (a background thread on a free loopback port, for tests).

Both run uvicorn (https://www.uvicorn.org/), imported only here, when serving: the
``gateway`` extra (``pip install 'modelwire[gateway]'``) is needed to serve, not to
import :mod:`modelwire.gateway` or build its ASGI app.

uvicorn's httptools protocol reads a request head of any size (llhttp has no limit
and the head is kept whole until it ends), so the gateway serves with a subclass
(:func:`_protocol`) that bounds it (431, RFC 6585 §5; a request line: 414, RFC 9112
§3) and bounds what it reads of a body it answered without (a 401 sent before the
body: :data:`._asgi.DRAIN_BYTES`). Without httptools, uvicorn's h11 protocol bounds
the head itself (``h11_max_incomplete_event_size``; a 400 past it).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from ..errors import ConfigurationError
from ._app import Gateway
from ._asgi import DRAIN_BYTES, MAX_FIELD_LINE, MAX_HEAD
from ._config import GatewayConfig, load_config

__all__ = ["GatewayServer", "app", "serve"]

_EXTRA = "the gateway needs uvicorn: pip install 'modelwire[gateway]'"


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise ConfigurationError(_EXTRA) from None
    return uvicorn


#: Seconds a refused connection is read (and discarded) before it is closed, so the
#: client reads the refusal rather than a reset (RFC 9112 §9.6, "lingering close").
LINGER_SECONDS = 2.0


def _options() -> dict[str, Any]:
    """uvicorn settings both ways of serving share."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        http: Any = "h11"
    else:
        http = _protocol()
    return {"http": http, "h11_max_incomplete_event_size": MAX_HEAD, "lifespan": "on",
            "access_log": False, "server_header": False, "proxy_headers": False}  # fmt: skip


class _HeadTooLarge(Exception):
    """Raised from a parser callback: stops httptools at the head past its limit."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@functools.cache
def _protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the head and the discarded body bounded."""
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GatewayHttpProtocol(HttpToolsProtocol):
        # The current request's head: its field lines as the parser gives them
        # (_fields), and the bytes read while it had not ended (_head) — a callback sees
        # a field line only once it ends, and httptools holds an unfinished one whole.
        _in_head = False
        _fields = 0
        _head = 0
        _heads = 0  # requests begun on this connection
        _discarded = 0
        _refused = False
        _refusal: _HeadTooLarge | None = None
        _linger: asyncio.TimerHandle | None = None

        def data_received(self, data: bytes) -> None:
            # uvicorn's, with the head counted and refused past its limit.
            if self._refused:  # lingering: read and drop, up to a bound
                self._discarded += len(data)
                if self._discarded > DRAIN_BYTES:
                    self.transport.close()
                return
            heads = self._heads
            self._unset_keepalive_if_required()
            try:
                self.parser.feed_data(data)
            except httptools.HttpParserUpgrade:
                if self._should_upgrade():
                    self.handle_websocket_upgrade()
                else:
                    self._unsupported_upgrade_warning()
            except httptools.HttpParserError:
                if self._refusal is not None:  # raised by a callback below
                    self._refuse(self._refusal.status, self._refusal.message)
                else:
                    self.logger.warning("Invalid HTTP request received.")
                    self.send_400_response("Invalid HTTP request received.")
                return
            if self._in_head and not self._refused and heads == self._heads:
                # Still in the head begun before this read: all of it is head.
                self._head += len(data)
                if self._head > MAX_HEAD:
                    self._refuse(431, f"the request's headers are longer than the "
                                 f"gateway's limit of {MAX_HEAD} bytes")  # fmt: skip

        def _stop(self, status: int, message: str) -> None:
            self._refusal = _HeadTooLarge(status, message)
            raise self._refusal

        def on_message_begin(self) -> None:
            self._in_head = True
            self._fields = self._head = 0
            self._heads += 1
            self._discarded = 0
            super().on_message_begin()

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            if len(self.url) > MAX_HEAD:
                self._stop(414, f"the request's target is longer than the gateway's limit "
                           f"of {MAX_HEAD} bytes")  # fmt: skip

        def on_header(self, name: bytes, value: bytes) -> None:
            size = len(name) + len(value) + 4
            if size > MAX_FIELD_LINE:
                self._stop(431, f"the request's {name.decode('latin-1')!r} header is "
                           f"longer than the gateway's limit of {MAX_FIELD_LINE} bytes")  # fmt: skip
            self._fields += size
            if self._fields + len(self.url) > MAX_HEAD:
                self._stop(431, f"the request's headers are longer than the gateway's "
                           f"limit of {MAX_HEAD} bytes")  # fmt: skip
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._in_head = False
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            cycle = self.cycle
            if cycle is not None and cycle.response_complete:
                # Answered before its body (a 401, a 413): dropped, up to a bound.
                self._discarded += len(body)
                if self._discarded > DRAIN_BYTES:
                    self.transport.close()
                return
            super().on_body(body)

        def _refuse(self, status: int, message: str) -> None:
            self._refused = True
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:
                # A pipelined head while the answer before it is still going out: no
                # answer can come before that one ends, so read no more and close
                # once it has.
                cycle.keep_alive = False
                self.flow.pause_reading()
                return
            reason = {414: b"URI Too Long", 431: b"Request Header Fields Too Large"}[status]
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                         "param": None, "code": None}}).encode()  # fmt: skip
            self.transport.write(
                b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s"
                % (status, reason, len(body), body)
            )
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._linger = self.loop.call_later(LINGER_SECONDS, self.transport.close)

        def eof_received(self) -> None:
            if self._refused:
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._linger is not None:
                self._linger.cancel()
            super().connection_lost(exc)

    return GatewayHttpProtocol


def app(
    config: GatewayConfig | Mapping[str, Any] | str | os.PathLike[str],
    **options: Any,
) -> Gateway:
    """The gateway as an ASGI app, for uvicorn or any ASGI server.

    Args:
        config: A :class:`GatewayConfig`, a dict of its tables, or a TOML file path.
        **options: :class:`Gateway`'s keyword arguments.

    Returns:
        The ASGI app.

    Raises:
        ConfigurationError: The configuration is invalid.

    Example:
        ```python
        import uvicorn
        from modelwire.gateway import app

        uvicorn.run(app("gateway.toml"), host="127.0.0.1", port=8000)
        ```
    """
    return Gateway(load_config(config), **options)


def _app(config: Gateway | GatewayConfig | Mapping[str, Any] | str | os.PathLike[str],
         options: Mapping[str, Any]) -> Gateway:  # fmt: skip
    return config if isinstance(config, Gateway) else app(config, **options)


def serve(
    config: Gateway | GatewayConfig | Mapping[str, Any] | str | os.PathLike[str],
    host: str | None = None,
    port: int | None = None,
    **options: Any,
) -> None:
    """Serve the gateway until interrupted (Ctrl-C, SIGTERM). ``host``/``port``
    default to the config's ``[gateway]`` table (127.0.0.1:8000).

    What ``modelwire serve`` runs, with uvicorn (the ``gateway`` extra).

    Args:
        config: A :class:`Gateway`, a :class:`GatewayConfig`, a dict of its tables,
            or a TOML file path.
        host: The address to listen on.
        port: The port to listen on.
        **options: :func:`~modelwire.gateway.app`'s options.

    Raises:
        ConfigurationError: The configuration is invalid, or uvicorn is not
            installed.

    Example:
        ```python
        from modelwire.gateway import serve

        serve("gateway.toml", port=8000)  # what `modelwire serve --config gateway.toml` runs
        ```
    """
    uvicorn = _uvicorn()
    gw = _app(config, options)
    settings = gw.config.gateway
    # The gateway reads no client address or scheme: uvicorn's X-Forwarded-* middleware
    # (proxy_headers) would only add a step to every request.
    uvicorn.run(gw, host=host or settings.host, port=settings.port if port is None else port,
                log_level="info", **_options())  # fmt: skip


class GatewayServer:
    """The gateway on ``127.0.0.1`` at a free port, in a background thread::

        with GatewayServer(config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=KEY)

    ``config``: a :class:`GatewayConfig`, a dict of its tables, a TOML path or a
    :class:`Gateway`; ``options`` go to :func:`~modelwire.gateway.app`.

    For tests of clients against the gateway (their SDKs, their keys), with backends
    on a :class:`~modelwire.testing.MockServer`.

    Args:
        config: The configuration, or a ready :class:`Gateway`.
        host: The loopback address to listen on.
        **options: :func:`~modelwire.gateway.app`'s options.

    Raises:
        ConfigurationError: The configuration is invalid (and, from :meth:`start`,
            uvicorn is not installed).

    Example:
        ```python
        import httpx

        from modelwire.gateway import GatewayServer, hash_key
        from modelwire.testing import MockServer

        with MockServer(["Hello from the backend"]) as backend:
            config = {
                "models": {"smart": {"api": "openai-chat", "id": "m", "base_url": backend.base_url}},
                "keys": {"team-a": {"key_sha256": hash_key("sk-team-a"), "models": ["smart"]}},
            }
            with GatewayServer(config) as gateway:
                r = httpx.post(
                    gateway.base_url + "/v1/chat/completions",
                    headers={"Authorization": "Bearer sk-team-a"},
                    json={"model": "smart", "messages": [{"role": "user", "content": "Hi"}]},
                )
        print(r.json()["choices"][0]["message"]["content"])  # Hello from the backend
        ```
    """

    def __init__(
        self,
        config: Gateway | GatewayConfig | Mapping[str, Any] | str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        **options: Any,
    ) -> None:
        self.app = _app(config, options)
        self.host = host
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        """The port the running server listens on."""
        assert self._socket is not None, "the server is not started"
        return int(self._socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (clients add ``/v1``)."""
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    def start(self) -> GatewayServer:
        """Serve on a free port in a background thread (``with`` calls it); returns self."""
        uvicorn = _uvicorn()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say
        # they are TCP (base_events._set_nodelay), and an accepted connection
        # inherits the listener's proto. Without it each streamed chunk after the
        # first waits for the client's delayed ACK (~40 ms; Nagle, RFC 896).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
        self._socket = sock
        config = uvicorn.Config(self.app, log_level="warning", **_options())
        server = self._server = uvicorn.Server(config)
        # uvicorn installs signal handlers only in the main thread; this one is not.
        started = threading.Event()

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException as exc:  # reported by start()
                self._error = exc
            finally:
                started.set()

        self._thread = threading.Thread(target=run, name="modelwire-gateway", daemon=True)
        self._thread.start()
        while not server.started and not started.wait(0.01):
            pass
        if not server.started:
            self.stop()
            raise RuntimeError(f"the gateway did not start: {self._error!r}")
        return self

    def stop(self) -> None:
        """Stop serving (requests in flight end first) and wait for the thread."""
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=30)
        self._thread = None
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> GatewayServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

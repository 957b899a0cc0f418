"""Running the gateway: :func:`serve` (blocking, what ``modelwire serve`` calls) and
:class:`GatewayServer` (a background thread on a free loopback port, for tests).

Both run uvicorn (https://www.uvicorn.org/), imported only here, when serving: the
``gateway`` extra (``pip install 'modelwire[gateway]'``) is needed to serve, not to
import :mod:`modelwire.gateway` or build its ASGI app.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from ..errors import ConfigurationError
from ._app import Gateway, app
from ._config import GatewayConfig

__all__ = ["GatewayServer", "serve"]

_EXTRA = "the gateway needs uvicorn: pip install 'modelwire[gateway]'"


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError:
        raise ConfigurationError(_EXTRA) from None
    return uvicorn


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
    default to the config's ``[gateway]`` table (127.0.0.1:8000)."""
    uvicorn = _uvicorn()
    gw = _app(config, options)
    settings = gw.config.gateway
    # The gateway reads no client address or scheme: uvicorn's X-Forwarded-* middleware
    # (proxy_headers) would only add a step to every request.
    uvicorn.run(
        gw, host=host or settings.host, port=settings.port if port is None else port,
        lifespan="on", access_log=False, log_level="info", server_header=False,
        proxy_headers=False,
    )  # fmt: skip


class GatewayServer:
    """The gateway on ``127.0.0.1`` at a free port, in a background thread::

        with GatewayServer(config) as gw:
            client = openai.OpenAI(base_url=gw.base_url + "/v1", api_key=KEY)

    ``config``: a :class:`GatewayConfig`, a dict of its tables, a TOML path or a
    :class:`Gateway`; ``options`` go to :func:`~modelwire.gateway.app`."""

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
        assert self._socket is not None, "the server is not started"
        return int(self._socket.getsockname()[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (clients add ``/v1``)."""
        host = self.host if ":" not in self.host else f"[{self.host}]"
        return f"http://{host}:{self.port}"

    def start(self) -> GatewayServer:
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
        config = uvicorn.Config(self.app, lifespan="on", access_log=False, log_level="warning",
                                server_header=False, proxy_headers=False)  # fmt: skip
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

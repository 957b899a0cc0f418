"""What both halves of the httpx package share: the client and transport checks, the
TLS context, and httpx's exceptions mapped onto modelwire's (the one place they are)."""

from __future__ import annotations

import functools
import importlib.util
import ssl

import httpx

from .._call import Failure, Send
from .._providers._status import origin as origin  # re-exported (tests, callers)
from .._redact import redact
from .._wire.request import HTTPRequest
from ..errors import (
    ConfigurationError,
    ConnectError,
    RequestTimeoutError,
    StreamError,
    StreamInterruptedError,
)
from ._deadline import DEADLINE_BEFORE, DEADLINE_READING

__all__ = [
    "DEADLINE_BEFORE",
    "DEADLINE_READING",
    "aiohttp_installed",
    "check_client",
    "client_kind",
    "httptools_installed",
    "map_exc",
    "phases",
    "read_failure",
    "send_failure",
    "ssl_context",
]


def aiohttp_installed() -> bool:
    """Whether the aiohttp transport can be used (found, not imported)."""
    return importlib.util.find_spec("aiohttp") is not None


def httptools_installed() -> bool:
    """Whether the httptools transport can be used (found, not imported)."""
    return importlib.util.find_spec("httptools") is not None


#: Each client type's kind, decided once: an agent or a gateway passes the same
#: client on every call, and each call asks twice (checked, then run).
_KINDS: dict[type, str] = {}


def client_kind(client: object) -> str:
    """Which library's client ``client`` is: ``"httpx"`` (``httpx.AsyncClient``),
    ``"httpx-sync"`` (``httpx.Client``), ``"aiohttp"`` (``aiohttp.ClientSession``),
    ``"httptools"`` (that transport's ``Pool``), or ``""``: none of them."""
    cls = type(client)
    kind = _KINDS.get(cls)
    if kind is None:
        if len(_KINDS) >= 64:  # a program making types on the fly: bounded
            _KINDS.clear()
        kind = _KINDS[cls] = _kind_of(client)
    return kind


def _kind_of(client: object) -> str:
    if isinstance(client, httpx.AsyncClient):
        return "httpx"
    if isinstance(client, httpx.Client):
        return "httpx-sync"
    module = type(client).__module__
    # aiohttp and the httptools transport are imported only for their own objects.
    if module.startswith("aiohttp"):
        from ._aiohttp import is_session

        return "aiohttp" if is_session(client) else ""
    if module.startswith("modelwire._http._httptools"):
        from ._httptools import is_pool

        return "httptools" if is_pool(client) else ""
    return ""


#: What a ``transport`` takes as ``http_client``, for the error that refuses another.
_HINT = {
    "httpx": "pass an httpx.AsyncClient",
    "aiohttp": "pass an aiohttp.ClientSession",
    "httptools": "pass no http_client",
}


def check_client(client: object, *, sync: bool, transport: str = "auto") -> None:
    """Refuse an ``http_client`` or ``transport`` that cannot work, before any request:
    ``stream()`` and ``complete()`` take an ``httpx.AsyncClient``, an
    ``aiohttp.ClientSession`` or the httptools transport's ``Pool``, their sync twins
    an ``httpx.Client`` (the one waits on the event loop, the other blocks);
    ``transport="aiohttp"`` and ``"httptools"`` need their library and the event loop;
    a client of one transport cannot be run by another."""
    if transport in ("aiohttp", "httptools"):
        if sync:
            raise ConfigurationError(
                f'transport="{transport}" is for stream()/complete(); the sync twins use '
                'httpx (transport="httpx" or "auto")'
            )
        if transport == "aiohttp" and not aiohttp_installed():
            raise ConfigurationError(
                "transport=\"aiohttp\" needs aiohttp: pip install 'modelwire[aiohttp]'"
            )
        if transport == "httptools" and not httptools_installed():
            raise ConfigurationError(
                'transport="httptools" needs httptools: pip install httptools (the '
                "gateway extra installs it: pip install 'modelwire[gateway]')"
            )
    if client is None:
        return
    kind = client_kind(client)
    if sync:
        if kind != "httpx-sync":
            raise ConfigurationError("http_client for stream_sync() must be an httpx.Client")
        return
    if kind == "httpx":
        if transport in ("aiohttp", "httptools"):
            raise ConfigurationError(
                f'transport="{transport}" cannot use an httpx.AsyncClient as http_client '
                f"({_HINT[transport]}, or no transport)"
            )
    elif kind == "aiohttp":
        if transport in ("httpx", "httptools"):
            raise ConfigurationError(
                f'transport="{transport}" cannot use an aiohttp.ClientSession as http_client '
                f"({_HINT[transport]}, or no transport)"
            )
    elif kind == "httptools":
        if transport in ("httpx", "aiohttp"):
            raise ConfigurationError(
                f'transport="{transport}" cannot use the httptools transport\'s Pool as '
                f"http_client ({_HINT[transport]}, or no transport)"
            )
    else:
        raise ConfigurationError(
            "http_client for stream()/complete() must be an httpx.AsyncClient "
            "or an aiohttp.ClientSession"
        )


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The TLS context of every client modelwire opens itself, httpx's or aiohttp's:
    one trust decision (certifi's bundle, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``)."""
    # Building a context loads the CA bundle (about 0.1 s); without this cache
    # every call that brings no ``http_client`` would pay it again. One context
    # is safe to share between clients and threads.
    return httpx.create_ssl_context()


def map_exc(
    exc: Exception, secrets: tuple[str, ...], *, started: bool, url: str = ""
) -> StreamError:
    text = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secrets)
    # Naming the server a connection failed to reach says what to fix (a local
    # server not running, a wrong base_url); only its origin, never a query string.
    to = f" to {origin(url)}" if url else ""
    if isinstance(exc, httpx.TimeoutException):
        if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
            return RequestTimeoutError(f"connect timeout expired connecting{to} ({text})")
        return RequestTimeoutError(f"idle timeout expired ({text})")
    if isinstance(exc, httpx.ConnectError) and not started:
        return ConnectError(f"could not connect{to} ({text})")
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return ConnectError(f"invalid URL ({text})")
    if isinstance(exc, httpx.HTTPError | OSError):
        if not started:
            return ConnectError(f"the connection{to} failed before a response ({text})")
        return StreamInterruptedError(
            f"the connection closed before the response body was complete ({text})"
        )
    return StreamInterruptedError(text)


def phases(i: Send) -> httpx.Timeout:
    # httpx's read timeout is per read: exactly our idle timeout. The Call has cut
    # each phase to what is left of the total deadline, so that waiting for the
    # connection or for the response headers cannot outlast ``Timeout(total=…)``.
    return httpx.Timeout(connect=i.connect, read=i.idle, write=i.connect, pool=i.connect)


def send_failure(exc: httpx.HTTPError, request: HTTPRequest) -> Failure:
    return Failure(
        map_exc(exc, request.secrets, started=False, url=request.url),
        timeout=isinstance(exc, httpx.TimeoutException),
        # An unusable URL fails the same way every time.
        final=isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL),
    )


def read_failure(exc: httpx.HTTPError, secrets: tuple[str, ...]) -> Failure:
    return Failure(map_exc(exc, secrets, started=True))

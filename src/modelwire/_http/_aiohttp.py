"""The aiohttp transport of the async driver: the one module that imports aiohttp.

:class:`modelwire._http.AsyncDriver` runs a :class:`~modelwire._call.Call` over a
*transport* that only waits: send, read, read an error body, drain, close. This is
that transport over ``aiohttp.ClientSession``, the default for ``stream()`` and
``complete()`` when aiohttp is installed (``transport="auto"``): aiohttp parses HTTP/1.1
in C (``aiohttp._http_parser``) and hands the body over per socket read, where httpx
and httpcore run h11 in pure Python and wrap every read in anyio — on the live path
that costs more than decoding the events (bench/RESULTS.md, "live path").

Everything that holds for the httpx transport holds here, decided by the same Call:
per-phase timeouts (connect, idle = aiohttp's ``sock_read``), the total deadline as a
task timeout, redirects not followed, proxies from the environment as httpx reads
them (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``), the same TLS context
(:func:`modelwire._http.ssl_context`), decoded bytes (``Content-Encoding`` is undone),
and the response closed in every path. aiohttp exceptions are mapped to
:mod:`modelwire.errors` here, in this one place.

A call without an ``http_client`` runs on the event loop's pooled session
(:func:`pooled_session`): one ``ClientSession`` per loop, so a call pays no session
and connector of its own and a finished response's connection serves the next call.

Imported on first use (an async call without an ``httpx.AsyncClient``), never by
``import modelwire``: aiohttp is an optional dependency (``modelwire[aiohttp]``).
"""

from __future__ import annotations

import asyncio
import atexit
import base64
from collections.abc import AsyncGenerator, Coroutine
from typing import TYPE_CHECKING, Any

import aiohttp
import yarl

from .._call import Drain, Failure, Head, Read, ReadError, Send
from .._providers._status import origin
from .._redact import error_text
from ..errors import ConnectError, RequestTimeoutError, StreamError, StreamInterruptedError
from ._deadline import DEADLINE_BEFORE, DEADLINE_READING, ReadDeadline
from ._proxy import env_proxy_url

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable

__all__ = ["AiohttpTransport", "capped_session", "is_session", "pooled_session"]


def is_session(client: object) -> bool:
    """Whether ``client`` is an ``aiohttp.ClientSession`` (a caller's ``http_client``)."""
    return isinstance(client, aiohttp.ClientSession)


def _env_proxy(url: yarl.URL) -> tuple[yarl.URL | None, str | None]:
    """The proxy the environment names for ``url`` (its scheme's, else ``ALL_PROXY``;
    none for a ``NO_PROXY`` host), and the ``Proxy-Authorization`` value its URL's
    credentials make (Basic, RFC 7617, UTF-8 as its §2.1 allows), as httpx sends it.

    Read here rather than by aiohttp's ``trust_env``, which also looks the host up in
    ``~/.netrc`` on every request (in a thread) and refuses a request whose
    ``Authorization`` header meets a netrc entry; httpx reads no netrc either. The
    credentials are a header, not aiohttp's ``BasicAuth`` (deprecated in 3.14: a
    warning on every proxied request).
    """
    found = env_proxy_url(url.scheme or "", url.host)
    if not found:
        return None, None
    proxy = yarl.URL(found if "://" in found else f"http://{found}")
    if proxy.user is None:
        return proxy, None
    pair = f"{proxy.user}:{proxy.password or ''}".encode()
    return proxy.with_user(None), "Basic " + base64.b64encode(pair).decode("ascii")


def _phases(i: Send) -> aiohttp.ClientTimeout:
    # ``sock_read`` bounds each wait for bytes (the headers, then every body read):
    # exactly our idle timeout. ``connect`` includes waiting for a pooled connection,
    # like httpx's pool timeout. aiohttp's own ``total`` (300 s by default) is turned
    # off: the Call owns the total deadline (``Send.remaining``, ``Read.remaining``).
    return aiohttp.ClientTimeout(
        total=None, connect=i.connect, sock_connect=i.connect, sock_read=i.idle
    )


def _map_exc(
    exc: BaseException, secrets: tuple[str, ...], *, started: bool, url: str = ""
) -> StreamError:
    text = error_text(exc, secrets)
    to = f" to {origin(url)}" if url else ""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return RequestTimeoutError(f"connect timeout expired connecting{to} ({text})")
    if isinstance(exc, aiohttp.ServerTimeoutError):
        return RequestTimeoutError(f"idle timeout expired ({text})")
    if isinstance(exc, aiohttp.ClientConnectorError) and not started:
        return ConnectError(f"could not connect{to} ({text})")
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError | ValueError):
        return ConnectError(f"invalid URL ({text})")
    if not started:
        return ConnectError(f"the connection{to} failed before a response ({text})")
    return StreamInterruptedError(
        f"the connection closed before the response body was complete ({text})"
    )


# --------------------------------------------------------------------------- pool

# One session per event loop. A session serves every call on its loop: nothing a
# call chooses lives in it — timeouts, proxy, proxy credentials and the TLS context
# go with each request, and aiohttp keys its idle connections by host, port, TLS
# context and proxy (``ConnectionKey``), so a connection is reused only by a request
# it fits. A session refers to its loop, so a weak key alone would free nothing: an
# entry leaves when its loop shuts down (``_keeper``) or, closed without that, when
# the next session is opened (``_prune``) or at exit.
_Entry = tuple[aiohttp.ClientSession, AsyncGenerator[None, None]]  # the session, its keeper
_POOL: dict[asyncio.AbstractEventLoop, _Entry] = {}


async def pooled_session() -> aiohttp.ClientSession:
    """The running loop's shared session, opened on first use.

    It is closed with its loop: ``asyncio.run`` (and ``asyncio.Runner``, pytest's
    loops) close the async generators started on a loop before closing it
    (``loop.shutdown_asyncgens``, asyncio docs "Event Loop"), and a generator started
    here closes the session then. A loop that is closed without that, or never, has
    its session closed at interpreter exit (:func:`_close_all`).
    """
    loop = asyncio.get_running_loop()
    entry = _POOL.get(loop)
    if entry is not None and not entry[0].closed:
        return entry[0]
    _prune()
    session = aiohttp.ClientSession(
        # No cap on connections: a call without a client never waited for another
        # call's connection, and does not now (aiohttp's default limit is 100).
        connector=aiohttp.TCPConnector(limit=0),
        # Calls share nothing else: a cookie one response sets is not sent by the
        # next call, as with a client of its own (httpx's per-call client).
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=None),
    )
    keeper = _keeper(loop, session)
    await anext(keeper)  # started on this loop: ``shutdown_asyncgens`` will close it
    _POOL[loop] = (session, keeper)
    return session


def capped_session(max_connections: int) -> aiohttp.ClientSession:
    """A session of the caller's own, at most ``max_connections`` open at once, sharing
    nothing else between calls (as :func:`pooled_session`); its owner closes it."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=max_connections),
        cookie_jar=aiohttp.DummyCookieJar(),
        timeout=aiohttp.ClientTimeout(total=None),
    )


async def _keeper(
    loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession
) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        entry = _POOL.get(loop)
        if entry is not None and entry[0] is session:
            del _POOL[loop]
        if not session.closed:
            await session.close()
            # The sockets close in a callback of the loop (``connection_lost``):
            # one turn lets it run before the loop closes.
            await asyncio.sleep(0)


def _finish(coro: Coroutine[Any, Any, Any]) -> None:
    # Runs a coroutine that cannot wait any more (its loop is closed or it has
    # nothing left to wait for) to its end, without a loop.
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()


def _forget(loop: asyncio.AbstractEventLoop) -> None:
    """Drop a closed loop's session: its connector marks itself closed without the
    loop (aiohttp closes nothing on a closed loop), so neither warns as unclosed."""
    session, keeper = _POOL.pop(loop)
    _finish(session.close())
    _finish(keeper.aclose())  # ``session.closed`` now: nothing left to wait for


def _prune() -> None:
    for loop in [lp for lp in _POOL if lp.is_closed()]:
        _forget(loop)


@atexit.register
def _close_all() -> None:
    for loop in list(_POOL):
        if loop.is_closed():
            _forget(loop)
        elif not loop.is_running():
            loop.run_until_complete(_POOL[loop][1].aclose())


# --------------------------------------------------------------------------- transport


class AiohttpTransport:
    """The waiting half of :class:`modelwire._http.AsyncDriver` over aiohttp: one
    response at a time, on the caller's session or on the loop's pooled one."""

    __slots__ = ("_content", "_deadline", "_idle", "_pooled", "_response", "_secrets",
                 "_session", "_ssl")  # fmt: skip

    def __init__(
        self, session: aiohttp.ClientSession | None, ssl: Callable[[], ssl.SSLContext]
    ) -> None:
        self._session = session
        self._pooled = session is None
        self._response: aiohttp.ClientResponse | None = None
        self._content: aiohttp.StreamReader | None = None
        self._secrets: tuple[str, ...] = ()
        self._ssl = ssl
        self._deadline = ReadDeadline()  # the total and idle timeouts of the body's reads
        self._idle: float | None = None

    async def send(self, i: Send) -> Head | Failure:
        if self._response is not None:
            # Another attempt after a failure the Call read from the body (an in-band
            # error, a fallback to the next model): that response is done with.
            response, self._response, self._content = self._response, None, None
            _done(response)
        self._deadline.cancel()
        session = self._session
        if session is None:
            session = self._session = await pooled_session()
        r = i.request
        self._secrets = r.secrets
        # The total deadline, when the call has one (none by default: then no timer).
        deadline = asyncio.timeout(i.remaining) if i.remaining is not None else None
        try:
            # ``encoded=True``: the URL goes out exactly as the wire API built it
            # (already percent-encoded), as httpx sends it.
            url = yarl.URL(r.url, encoded=True)
            proxy, authorization = _env_proxy(url)
            headers, proxy_headers = r.headers, None
            if authorization is not None:
                self._secrets = (*r.secrets, authorization.split(" ", 1)[1])
                if url.scheme == "https":  # the tunnel's CONNECT carries it (RFC 9110 §9.3.6)
                    proxy_headers = {"Proxy-Authorization": authorization}
                else:  # the request itself goes to the proxy, in absolute form
                    headers = {**headers, "Proxy-Authorization": authorization}
            post = session.request(
                r.method, url, headers=headers, data=r.body or None, timeout=_phases(i),
                allow_redirects=False,  # as httpx: a redirect is the caller's to follow
                proxy=proxy, proxy_headers=proxy_headers,
                # The shared context (loading its CA bundle costs ~0.1 s), only for
                # https; a caller's session keeps its own choice.
                ssl=self._ssl() if url.scheme == "https" and self._pooled else True,
            )  # fmt: skip
            if deadline is None:
                response = await post
            else:
                async with deadline:
                    response = await post
        except (aiohttp.ClientError, ValueError, OSError) as exc:
            # (``TimeoutError`` is an ``OSError``: the deadline's own is told apart.)
            if deadline is not None and deadline.expired():
                return Failure(RequestTimeoutError(DEADLINE_BEFORE), deadline=True)
            unusable = isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError) or (
                isinstance(exc, ValueError) and not isinstance(exc, aiohttp.ClientError)
            )
            return Failure(
                _map_exc(exc, r.secrets, started=False, url=r.url),
                timeout=isinstance(exc, aiohttp.ServerTimeoutError),
                final=unusable,  # an unusable URL fails the same way every time
            )
        self._response, self._content = response, response.content
        # The body's idle timeout is the ReadDeadline's, one timer per response:
        # aiohttp's ``sock_read`` re-arms a timer on every socket read, which at one
        # delta per read costs a tenth of the client's CPU (bench/icount.py
        # live-delta). Its timer armed by the head's last bytes still bounds the wait
        # for the first body bytes; the next socket read drops it.
        connection = response.connection
        if connection is not None and connection.protocol is not None:
            connection.protocol.read_timeout = None
        self._idle = i.idle
        return Head(response.status, response.headers)

    async def read_error(self, i: ReadError) -> bytes:
        response, content = self._response, self._content
        assert response is not None and content is not None
        buf = bytearray()
        try:
            async with asyncio.timeout(i.remaining):
                while len(buf) < i.limit:
                    chunk = await content.readany()
                    if not chunk:
                        break
                    buf += chunk
        except aiohttp.ClientError:
            pass
        except TimeoutError:
            buf.clear()
        finally:
            self._response = self._content = None
            _done(response)
        return bytes(buf[: i.limit])

    async def read(self, i: Read) -> bytes | Failure | None:
        content = self._content
        assert content is not None
        if i.remaining is None and self._idle is None:
            try:
                chunk = await content.readany()
            except aiohttp.ClientError as exc:
                return Failure(_map_exc(exc, self._secrets, started=True))
            # ``readany`` returns what one socket read brought (decoded), b"" at the end.
            return chunk or None
        # The total deadline and the idle timeout: one timer for the whole body
        # (``ReadDeadline``), not one ``asyncio.timeout`` per read.
        deadline = self._deadline
        if not deadline.enter(i.remaining, self._idle):
            return Failure(RequestTimeoutError(DEADLINE_READING), deadline=True)
        try:
            chunk = await content.readany()
        except aiohttp.ClientError as exc:
            return Failure(_map_exc(exc, self._secrets, started=True))
        except asyncio.CancelledError:
            if deadline.fired():
                if deadline.expired:
                    return Failure(RequestTimeoutError(DEADLINE_READING), deadline=True)
                return Failure(RequestTimeoutError(
                    f"idle timeout expired (no bytes for {self._idle:g} s)"))  # fmt: skip
            raise
        finally:
            deadline.exit()
        return chunk or None

    async def drain(self, i: Drain) -> None:
        content = self._content
        if content is None:
            return
        n = 0
        try:
            async with asyncio.timeout(i.seconds):
                while n <= i.max_bytes:
                    chunk = await content.readany()
                    if not chunk:
                        break
                    n += len(chunk)
        except (TimeoutError, aiohttp.ClientError, RuntimeError):
            # RuntimeError("Connection closed."): the caller's session closed under
            # the drain (aiohttp's StreamReader). Best effort, as the httpx twin's:
            # the connection is closed instead of reused.
            pass

    async def close(self) -> None:
        self._deadline.cancel()
        response, self._response, self._content = self._response, None, None
        if response is not None:
            _done(response)


def _done(response: aiohttp.ClientResponse) -> None:
    # A body read to its end returns its connection to the pool; any other — an
    # abort, a cut, a drain that gave up — is closed at once (its rest would be
    # read by the next request on that connection).
    if response.content.at_eof():
        response.release()
    else:
        response.close()

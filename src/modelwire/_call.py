"""One model call as a sans-IO state machine: every decision, no waiting.

A :class:`Call` owns the control flow of one streaming request — authorize, send,
retry with backoff, the total deadline, the status → typed error step, reading the
body into the :class:`~modelwire._pipeline.Pipeline`, draining the rest of the body
after the terminal event, closing in every path, redacting secrets, abort — and
says what to do next as an *intent* (:class:`Authorize`, :class:`Send`,
:class:`ReadError`, :class:`Sleep`, :class:`Read`, :class:`Emit`, :class:`Drain`,
:class:`Close`). A driver performs the intent and hands the outcome back with
:meth:`Call.send`; the async driver (``modelwire._http.drive_async``) awaits, the
sync one (``modelwire._http.SyncDriver``) blocks, and that is their only
difference (h11's sans-IO style: the protocol decides, the caller does the I/O).

Retry decisions stay with :class:`~modelwire._retry.RetryPolicy` (``next_wait``);
the clock and the jitter are parameters, so a test drives a whole call — retries,
deadlines, drain, abort — with a fake transport and a fake clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from ._http_status import origin, request_id, status_error
from ._redact import head, redact
from ._retry import RetryPolicy
from .errors import ProviderStreamError, RequestTimeoutError, StreamError

if TYPE_CHECKING:
    from ._options import HTTPRequest, Timeout
    from ._pipeline import Pipeline
    from .events import Event

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "ERROR_BODY_LIMIT",
    "Authorize",
    "Call",
    "Close",
    "Drain",
    "Emit",
    "Failure",
    "Head",
    "Intent",
    "Read",
    "ReadError",
    "Send",
    "Sleep",
]

#: After the terminal event the rest of the body is read for at most this many bytes
#: and seconds, so the connection can go back to the pool (DESIGN §2a "HTTP").
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 0.25
#: How much of an error response's body is read to build its message.
ERROR_BODY_LIMIT = 64 * 1024
#: How much of a non-event-stream 200 body its error quotes.
_EXCERPT_CHARS = 200


# --------------------------------------------------------------------------- intents


class Authorize(msgspec.Struct, frozen=True, gc=False):
    """Run the request's authorizer (``modelwire._http_auth``); answer with the
    authorized :class:`~modelwire._options.HTTPRequest` or a :class:`Failure`."""

    request: HTTPRequest


class Send(msgspec.Struct, frozen=True, gc=False):
    """Send ``request`` (streaming); answer with :class:`Head` or :class:`Failure`.

    ``connect`` and ``idle`` are the per-phase timeouts (``None``: unlimited), already
    cut to what is left of the total deadline; ``remaining`` bounds the whole send.
    """

    request: HTTPRequest
    connect: float | None
    idle: float | None
    remaining: float | None


class ReadError(msgspec.Struct, frozen=True, gc=False):
    """Read up to ``limit`` bytes of the response that is not the stream (within
    ``remaining`` seconds), then close it; answer with the bytes."""

    limit: int
    remaining: float | None


class Sleep(msgspec.Struct, frozen=True, gc=False):
    """Wait ``seconds`` before the next attempt; answer with ``None``."""

    seconds: float


class Read(msgspec.Struct, frozen=True, gc=False):
    """Read the next chunk of the body (within ``remaining`` seconds of the total
    deadline); answer with the bytes, ``None`` at the end of the body, or a
    :class:`Failure`."""

    remaining: float | None


class Emit(msgspec.Struct, frozen=True, gc=False):
    """Deliver ``events`` to the consumer; answer with ``None``."""

    events: list[Event]


class Drain(msgspec.Struct, frozen=True, gc=False):
    """Read and drop the rest of the body, at most ``max_bytes`` within ``seconds``;
    errors are ignored; answer with ``None``."""

    max_bytes: int
    seconds: float


class Close(msgspec.Struct, frozen=True, gc=False):
    """Close the response and a client the driver opened itself; the call is over."""


Intent: TypeAlias = Authorize | Send | ReadError | Sleep | Read | Emit | Drain | Close


# --------------------------------------------------------------------------- results


class Head(msgspec.Struct, frozen=True, gc=False):
    """A response's status line and headers (any mapping; ``httpx.Headers`` reads
    them in any case, as HTTP requires — a fake transport passes lowercase names)."""

    status: int
    headers: Mapping[str, str]


class Failure(msgspec.Struct, frozen=True, gc=False):
    """A transport failure, already typed by the driver (``modelwire._http``).

    ``deadline``: the driver's bound of the total deadline fired; ``timeout``: a
    connect/idle timeout expired; ``final``: the request can never succeed (an
    unusable URL), so it is not retried.
    """

    error: StreamError
    deadline: bool = False
    timeout: bool = False
    final: bool = False


class _Aborted(Exception):
    """Thrown into the call's generator when the caller aborts."""


# --------------------------------------------------------------------------- call


class Call:
    """One call: ``first()`` gives the first intent, ``send(result)`` the next one,
    until :class:`Close` (after which the call is over).

    ``aborted`` says whether the caller aborted (a failure then ends the stream as
    ``aborted``, not as the failure it caused); :meth:`abort` ends it at once.
    ``clock`` (monotonic seconds) and ``rng`` go to the
    :class:`~modelwire._retry.RetryPolicy`.
    """

    __slots__ = (
        "_aborted",
        "_closing",
        "_gen",
        "_policy",
        "ended",
        "pipeline",
        "request",
        "timeout",
    )

    def __init__(
        self,
        pipeline: Pipeline,
        request: HTTPRequest,
        *,
        timeout: Timeout,
        max_retries: int,
        aborted: Callable[[], bool] = lambda: False,
        clock: Callable[[], float] = time.monotonic,
        rng: Callable[[], float] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.request = request
        self.timeout = timeout
        self._policy = RetryPolicy(timeout, max_retries, clock=clock, rng=rng)
        #: True once the terminal event has been emitted.
        self.ended = False
        self._closing = False
        self._aborted = False
        self._gen = self._run(aborted)

    def first(self) -> Intent:
        return next(self._gen)

    def send(self, result: Any) -> Intent:
        return self._gen.send(result)

    def abort(self) -> Intent:
        """The caller aborted (a cancelled task, a closed sync stream): the next
        intents are the aborted terminal (unless one was already emitted) and Close."""
        if self._closing:
            return Close()
        if self._aborted:  # already on the way out: its Emit, then Close
            return self._gen.send(None)
        self._aborted = True
        return self._gen.throw(_Aborted())

    def abort_events(self) -> list[Event]:
        """The aborted terminal built from what was received (``[]`` once ended)."""
        return self.pipeline.abort()

    def fail_events(self, exc: BaseException) -> list[Event]:
        """The terminal for an unexpected failure of the driver, redacted."""
        p = self.pipeline
        if isinstance(exc, StreamError):
            return p.fail(exc)
        from .errors import StreamInterruptedError

        return p.fail(StreamInterruptedError(redact(f"the stream failed: {exc!r}", p.secrets)))

    # ------------------------------------------------------------------ the flow

    def _emit(self, events: list[Event]) -> Emit:
        if self.pipeline.done:
            self.ended = True
        return Emit(events)

    def _run(self, aborted: Callable[[], bool]) -> Generator[Intent, Any, None]:
        p = self.pipeline
        try:
            yield self._emit(p.start())
            yield from self._body(aborted)
        except _Aborted:
            events = p.abort()
            if events:
                yield self._emit(events)
        self._closing = True
        yield Close()

    def _body(self, aborted: Callable[[], bool]) -> Generator[Intent, Any, None]:
        p = self.pipeline
        got = yield Authorize(self.request)
        if isinstance(got, Failure):
            yield self._emit(p.fail(got.error))
            return
        request: HTTPRequest = got
        p.add_secrets(request.secrets)
        head = yield from self._open(request)
        if isinstance(head, StreamError):
            yield self._emit(p.fail(head))
            return
        rid = request_id(head.headers)
        if rid:
            p.request_id = redact(rid, p.secrets)
        if aborted():
            yield self._emit(p.abort())
            return
        policy = self._policy
        while True:
            if policy.expired():
                err: StreamError = RequestTimeoutError("total timeout expired while reading")
                yield self._emit(p.fail(err))
                return
            chunk = yield Read(policy.remaining())
            if chunk is None:
                yield self._emit(p.end())
                return
            if isinstance(chunk, Failure):
                if aborted():
                    yield self._emit(p.abort())
                    return
                err = chunk.error
                if chunk.deadline or policy.expired():
                    # The read was cut to the deadline (or the sync timer shut the socket).
                    err = RequestTimeoutError("total timeout expired while reading")
                yield self._emit(p.fail(err))
                return
            events = p.feed(chunk)
            if events:
                yield self._emit(events)
            if p.done:
                # Ended before the body did: read the rest briefly (bounded) so the
                # connection can be reused.
                yield Drain(DRAIN_BYTES, DRAIN_SECONDS)
                return

    def _open(self, request: HTTPRequest) -> Generator[Intent, Any, Head | StreamError]:
        """Send with retries before the first byte; the 2xx event-stream head, or the
        error that ends the call. Every retry decision is the policy's."""
        policy, t = self._policy, self.timeout
        trace = self.pipeline.trace
        while True:
            if policy.expired():
                return policy.total_timeout("before the response")
            connect = policy.bound(t.connect)
            got = yield Send(request, connect, policy.bound(t.idle), policy.remaining())
            err: StreamError
            if isinstance(got, Failure):
                left = policy.remaining()
                if got.deadline or (got.timeout and left is not None and left < 0.01):
                    # The phase timeout was cut to the deadline: the whole call's
                    # budget, not the connect/idle one, is what ran out.
                    return policy.total_timeout("before the response")
                if got.final:
                    return got.error
                err = got.error
            else:
                wrong = _unexpected_type(request, got)
                if got.status < 300 and wrong is None:
                    head: Head = got
                    if trace is not None:
                        # Once per call, after the status line: never on the per-read path.
                        trace.response(head.status, _items(head.headers))
                    return head
                body = yield ReadError(ERROR_BODY_LIMIT, policy.remaining())
                if got.status < 300:
                    return _wrong_type_error(request, got, wrong or "", body)
                err = status_error(got.status, body, got.headers, request.secrets)
            try:
                wait = policy.next_wait(err)
            except StreamError as final:
                return final
            if trace is not None:
                trace.retry(policy.attempts, err.status, err.kind, wait)
            yield Sleep(wait)


def _items(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    multi = getattr(headers, "multi_items", None)  # httpx.Headers keeps repeated names
    return list(multi()) if callable(multi) else list(headers.items())


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def _accept(request: HTTPRequest) -> str:
    return next((v for k, v in request.headers.items() if k.lower() == "accept"), "")


def _unexpected_type(request: HTTPRequest, head: Head) -> str | None:
    """The response's content type when it is not the one the request asked for
    (``Accept: text/event-stream`` for every wire API): an HTML or JSON page from
    a proxy or gateway, sent with ``200``, is not the stream."""
    wanted = _media_type(_accept(request).split(",", 1)[0])
    got = head.headers.get("content-type")
    if not wanted or "*" in wanted or got is None:
        return None
    return None if _media_type(got) == wanted else got


def _wrong_type_error(
    request: HTTPRequest, head_: Head, content_type: str, body: bytes
) -> ProviderStreamError:
    # Redacted before the cut (redact.head), so the cut never leaves a piece of a key.
    excerpt = head(
        " ".join(body.decode("utf-8", "replace").split()), _EXCERPT_CHARS, request.secrets
    )
    message = (
        f"HTTP {head_.status} with content type {content_type!r} instead of "
        f"{_media_type(_accept(request))!r}: {origin(request.url)} answered with a page, "
        f"not the stream (a proxy, gateway or wrong base_url?); the body begins: "
        f"{excerpt or '(empty)'!r}"
    )
    return ProviderStreamError(redact(message, request.secrets), status=head_.status)

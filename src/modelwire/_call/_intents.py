"""The intents a :class:`~modelwire._call.Call` yields and the results a driver
answers with: what to do next, and what happened (h11's events, for one model call)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

from ..errors import StreamError

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest
    from ..events import Event

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "ERROR_BODY_LIMIT",
    "Authorize",
    "Close",
    "Drain",
    "Emit",
    "Failure",
    "Head",
    "Intent",
    "Phase",
    "Read",
    "ReadError",
    "Send",
    "Sleep",
]

#: Where a :class:`Call` is, as ``Call.phase`` (each names what the intent it last
#: gave waits for):
#:
#: ``"start"``       nothing asked yet (the ``start`` event);
#: ``"authorize"``   the request-time credential step (:class:`Authorize`);
#: ``"send"``        a response head (:class:`Send`);
#: ``"read_error"``  the body of a refused head, to type its error (:class:`ReadError`);
#: ``"wait"``        a pause before sending: backoff, ``Retry-After``, pacing (:class:`Sleep`);
#: ``"read"``        the accepted response's body (:class:`Read`);
#: ``"drain"``       the rest of the body after the terminal event (:class:`Drain`);
#: ``"closed"``      nothing: :class:`Close` was given, the call is over.
Phase: TypeAlias = Literal[
    "start", "authorize", "send", "read_error", "wait", "read", "drain", "closed"
]

#: After the terminal event the rest of the body is read for at most this many bytes
#: and seconds, so the connection can go back to the pool (DESIGN §2a "HTTP").
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 0.25
#: How much of an error response's body is read to build its message.
ERROR_BODY_LIMIT = 64 * 1024


# --------------------------------------------------------------------------- intents


class Authorize(msgspec.Struct, frozen=True, gc=False):
    """Run the request's authorizer (``modelwire._http._auth``); answer with the
    authorized :class:`~modelwire._client._options.HTTPRequest` or a :class:`Failure`."""

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


class Aborted(Exception):
    """Thrown into the call's generator when the caller aborts."""

"""One model call as a sans-IO state machine: every decision, no waiting.

A :class:`Call` owns the control flow of one streaming request — authorize, send,
retry with backoff, the total deadline, the status → typed error step, reading the
body into the :class:`~modelwire._wire.pipeline.Pipeline`, draining the rest of the body
after the terminal event, closing in every path, redacting secrets, abort — and
says what to do next as an *intent* (:class:`Authorize`, :class:`Send`,
:class:`ReadError`, :class:`Sleep`, :class:`Read`, :class:`Emit`, :class:`Drain`,
:class:`Close`). A driver performs the intent and hands the outcome back with
:meth:`Call.send`; the async driver (``modelwire._http.AsyncDriver``) awaits, the
sync one (``modelwire._http.SyncDriver``) blocks, and that is their only
difference (h11's sans-IO style: the protocol decides, the caller does the I/O).

Retry decisions stay with :class:`~modelwire._call._retry.RetryPolicy` (``next_wait``);
the clock and the jitter are parameters, so a test drives a whole call — retries,
deadlines, drain, abort — with a fake transport and a fake clock.
"""

from __future__ import annotations

from ._flow import FIRST_PIECE, Call, Switch
from ._intents import (
    DRAIN_BYTES,
    DRAIN_SECONDS,
    ERROR_BODY_LIMIT,
    Authorize,
    Close,
    Drain,
    Emit,
    Failure,
    Head,
    Intent,
    Read,
    ReadError,
    Send,
    Sleep,
)
from ._leg import Leg

__all__ = [
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "ERROR_BODY_LIMIT",
    "FIRST_PIECE",
    "Authorize",
    "Call",
    "Close",
    "Drain",
    "Emit",
    "Failure",
    "Head",
    "Intent",
    "Leg",
    "Read",
    "ReadError",
    "Send",
    "Sleep",
    "Switch",
]

"""The flow of one call: its legs (one per model), every attempt on each, and the
decisions between them — retry, fall back, restart, deliver (see :mod:`modelwire._call`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .._providers._status import request_id
from .._redact import redact
from .._wire.assemble._terminal import aborted_from, failed_from
from ..errors import (
    ErrorInfo,
    ProviderError,
    RequestTimeoutError,
    StreamError,
    from_info,
)
from ..events import DoneEvent, ErrorEvent, RestartEvent, StartEvent
from ._head import header_items, http_status_error, unexpected_type, wrong_type_error
from ._intents import (
    DRAIN_BYTES,
    DRAIN_SECONDS,
    ERROR_BODY_LIMIT,
    Aborted,
    Authorize,
    Close,
    Drain,
    Emit,
    Failure,
    Head,
    Intent,
    Phase,
    Read,
    ReadError,
    Send,
    Sleep,
)
from ._leg import Leg, Resume, resume_plan
from ._retry import RetryPolicy

if TYPE_CHECKING:
    from .._wire.pipeline import Pipeline
    from .._wire.request import HTTPRequest, Timeout
    from ..events import Event
    from ..types import AssistantMessage, Model
    from ._breaker import Circuit
    from ._limits import Pacer

__all__ = ["FIRST_PIECE", "Call", "Leg", "Switch"]

#: The first piece of a read fed alone while the body has given no event yet (then
#: twice as much, and so on, until an event comes): an OpenAI Chat role chunk and its
#: first content fit in it.
FIRST_PIECE = 512


# --------------------------------------------------------------------------- call


class Switch(msgspec.Struct, frozen=True, gc=False):
    """When a call moves on to its next leg (:class:`~modelwire.Fallback`): a failure of
    a kind in ``kinds`` or marked retryable; after content only with
    ``after_content="restart"`` (an explicit ``restart`` event first)."""

    kinds: frozenset[str]
    after_content: str = "error"


class Call:
    """One call: ``first()`` gives the first intent, ``send(result)`` the next one,
    until :class:`Close` (after which the call is over); :attr:`phase` says where it is.

    ``aborted`` says whether the caller aborted (a failure then ends the stream as
    ``aborted``, not as the failure it caused); :meth:`abort` ends it at once.
    ``clock`` (monotonic seconds) and ``rng`` go to the
    :class:`~modelwire._call._retry.RetryPolicy`.

    ``new_pipeline``, ``circuit``, ``pacer``, ``tokens``, ``model`` and ``not_found_hint``
    describe the first leg (see :class:`Leg`); ``fallback`` adds the legs tried after it
    when a failure matches ``switch``.
    """

    __slots__ = ("_abort_final", "_aborted", "_after_emit", "_body", "_clock", "_delivered",
                 "_fed", "_first", "_gen", "_leg_circuit", "_legs", "_policy", "_rest", "_rng",
                 "_switch", "ended", "phase", "pipeline", "request", "timeout")  # fmt: skip

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
        new_pipeline: Callable[[], Pipeline] | None = None,
        model: Model | None = None,
        prefail: StreamError | None = None,
        circuit: Circuit | None = None,
        pacer: Pacer | None = None,
        tokens: int = 0,
        fallback: Sequence[Leg] = (),
        switch: Switch | None = None,
        not_found_hint: Callable[[], str | None] | None = None,
        resume: Resume | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.request = request
        self.timeout = timeout
        self._clock = clock
        self._rng = rng
        self._policy = RetryPolicy(timeout, max_retries, clock=clock, rng=rng)
        first = Leg(request, timeout=timeout, max_retries=max_retries, new_pipeline=new_pipeline,
                    model=model, prefail=prefail, circuit=circuit, pacer=pacer,
                    tokens=tokens, not_found_hint=not_found_hint, resume=resume)  # fmt: skip
        self._legs: tuple[Leg, ...] = (first, *fallback)
        self._switch = switch
        #: Where the call is (:data:`Phase`); set at each transition, only by the flow.
        self.phase: Phase = "start"
        #: True once the terminal event has been emitted.
        self.ended = False
        self._aborted = False
        # Whether the current attempt delivered an event past ``start`` (content).
        self._delivered = False
        # The breaker circuit the current leg holds (released if the caller aborts).
        self._leg_circuit: Circuit | None = None
        # The body's read loop, run by :meth:`_step` while ``_body`` is set (see there).
        self._body: Pipeline | None = None
        self._first = False  # the body has given no event yet (see _feed)
        self._rest = b""  # what is left of a first read fed in pieces
        self._abort_final: list[Event] = []  # the aborted terminal when that rest ended it
        self._after_emit = False
        self._fed: list[Event] = []
        self._gen = self._run(aborted)

    @property
    def answered(self) -> bool:
        """Whether a response is being read: its head was accepted (2xx, the stream
        asked for), its body is next or under way."""
        return self._body is not None

    def first(self) -> Intent:
        return next(self._gen)

    def send(self, result: Any) -> Intent:
        if self._body is not None:
            return self._step(result)
        return self._gen.send(result)

    def _step(self, result: Any) -> Intent:
        """One turn of the body's read loop (``_attempt``) without resuming the flow's
        generator: a chunk fed, its events emitted, the next read. At one event per
        network read the generator's four nested frames, resumed twice per read, cost
        as much as decoding the event. The flow's generator waits at its ``Read`` all
        the while; whatever else happens (the end of the body, a failure, the terminal
        event, the deadline) is handed to it there, so it alone decides those."""
        policy = self._policy
        if self._after_emit:  # the answer to an Emit: the rest of a first read, or a read
            self._after_emit = False
            rest, self._rest = self._rest, b""
            if rest:
                intent = self._feed(rest)
                if intent is not None:
                    return intent
        elif result is None or isinstance(result, Failure):
            self._body = None
            return self._gen.send(result)
        else:
            intent = self._feed(result)
            if intent is not None:
                return intent
        if policy.expired():
            self._body = None
            return self._gen.send(_EXPIRED)
        return Read(policy.remaining())

    def _feed(self, data: bytes) -> Intent | None:
        """``data`` fed: its events emitted, or the flow told the pipeline is done.

        Until the body has given an event, a read (often the head with many events,
        or a role-only first read followed by a burst) is fed in pieces of
        ``FIRST_PIECE`` bytes, doubling, until one gives an event: the first content
        goes out without waiting for the rest of the read to be decoded (fed after
        the Emit; the decoders take any split). Not when traced: a trace records
        each network read as it came."""
        p = self._body
        assert p is not None
        if self._first and p.trace is None and len(data) > FIRST_PIECE:
            at, size = 0, FIRST_PIECE
            events: list[Event] = []
            while not events and at < len(data) and not p.done:
                events = p.feed(data[at : at + size])
                at, size = at + size, size * 2
            self._rest = data[at:]
        else:
            events = p.feed(data)
        if events:
            self._first = False
        if p.done:  # (what a read holds after the terminal event is not decoded)
            self._body, self._rest, self._fed = None, b"", events
            return self._gen.send(_FED)
        if events:
            self._after_emit = True
            return self._emit(events)
        return None

    def abort(self) -> Intent:
        """The caller aborted (a cancelled task, a closed sync stream): the next
        intents are the aborted terminal (unless one was already emitted) and Close."""
        self._take_rest_aborted()
        self._body = None  # the flow's generator takes it from its Read
        self._after_emit = False
        if self.phase == "closed":
            return Close()
        if self._aborted:  # already on the way out: its Emit, then Close
            return self._gen.send(None)
        self._aborted = True
        return self._gen.throw(Aborted())

    def _take_rest(self) -> AssistantMessage | None:
        """The rest of a first read fed in pieces, when the call ends (aborted, or its
        driver failed) before it is fed: it was received, so the terminal's message
        holds it, as it would hold a read fed whole (DESIGN: "everything received so
        far"). The final message when that rest ended the answer, else ``None``."""
        rest, self._rest = self._rest, b""
        p = self.pipeline
        if not rest or p.done:
            return None
        events = p.feed(rest)
        if p.done and events and isinstance(events[-1], DoneEvent | ErrorEvent):
            return events[-1].message
        return None

    def _take_rest_aborted(self) -> None:
        final = self._take_rest()
        if final is not None:
            self._abort_final = [aborted_from(final)]

    def abort_events(self) -> list[Event]:
        """The aborted terminal built from what was received (``[]`` once ended)."""
        self._take_rest_aborted()
        return self.pipeline.abort() or self._abort_final

    def fail_events(self, exc: BaseException) -> list[Event]:
        """The terminal for an unexpected failure of the driver, redacted."""
        final = self._take_rest()
        p = self.pipeline
        err: StreamError
        if isinstance(exc, StreamError):
            err = exc
        else:
            from ..errors import StreamInterruptedError

            err = StreamInterruptedError(redact(f"the stream failed: {exc!r}", p.secrets))
        events = p.fail(err)
        if not events and final is not None:  # the rest ended the answer: failed with it
            return [failed_from(final, err.redacted(p.secrets) if p.secrets else err)]
        return events

    # ------------------------------------------------------------------ the flow

    def _emit(self, events: list[Event]) -> Emit:
        if self.pipeline.done:
            self.ended = True
        elif not self._delivered:
            self._delivered = any(type(e) is not StartEvent for e in events)
        return Emit(events)

    def _run(self, aborted: Callable[[], bool]) -> Generator[Intent, Any, None]:
        p = self.pipeline
        try:
            yield self._emit(p.start())
            yield from self._legs_run(aborted)
        except Aborted:
            self._release()
            events, self._abort_final = self.pipeline.abort() or self._abort_final, []
            if events:
                yield self._emit(events)
        self.phase = "closed"
        yield Close()

    def _legs_run(self, aborted: Callable[[], bool]) -> Generator[Intent, Any, None]:
        legs, switch = self._legs, self._switch
        for i, leg in enumerate(legs):
            if i:
                self._start_leg(leg)
            self._leg_circuit = None
            withheld = yield from self._leg(leg, aborted)
            if withheld is None:
                return  # delivered: the call is over
            nxt = legs[i + 1] if i + 1 < len(legs) else None
            info = _error_of(withheld)
            restart = False
            if (
                nxt is None
                or switch is None
                or aborted()
                or info is None
                or not (info.retryable or info.kind in switch.kinds)
            ):
                yield self._emit(withheld)
                return
            if self._delivered or _has_content(withheld):
                if switch.after_content != "restart":
                    yield self._emit(withheld)
                    return
                restart = True
            t = self.pipeline.trace
            if t is not None and leg.model is not None and nxt.model is not None:
                t.fallback(i + 1, leg.model, info.kind, info.message, nxt.model, restart=restart)
            if restart:
                failed = withheld[-1]
                assert isinstance(failed, ErrorEvent)
                content = [e for e in withheld[:-1] if type(e) is not StartEvent]
                if content:
                    yield Emit(content)
                yield Emit([RestartEvent(message=failed.message, _partial=failed.message)])

    def _start_leg(self, leg: Leg) -> None:
        """The next model: a fresh response (its ``start`` is not delivered again, the
        consumer has one) and its own retries under the call's one total deadline."""
        assert leg.new_pipeline is not None
        p = leg.new_pipeline()
        p.start()
        deadline = self._policy.deadline
        self.pipeline, self.request, self.timeout = p, leg.request, leg.timeout
        self._policy = RetryPolicy(leg.timeout, leg.max_retries, clock=self._clock, rng=self._rng)
        if deadline is not None:
            self._policy.deadline = deadline
        self._delivered = False

    def _leg(
        self, leg: Leg, aborted: Callable[[], bool]
    ) -> Generator[Intent, Any, list[Event] | None]:
        """Every attempt on one model. ``None`` once its terminal was delivered; else the
        withheld events of a failure for :meth:`_legs_run` to decide on."""
        if leg.prefail is not None:
            return self.pipeline.fail(leg.prefail)
        circuit = leg.circuit
        if circuit is not None:
            refused = circuit.admit()
            if refused is not None:
                return self.pipeline.fail(refused)  # fails fast: nothing is sent
            self._leg_circuit = circuit
        while True:
            withheld = yield from self._attempt(leg, aborted)
            info = None if withheld is None else _error_of(withheld)
            if withheld is not None and info is not None and not aborted():
                wait = self._in_band_retry(withheld, info)
                if wait is not None:
                    t = self.pipeline.trace
                    if t is not None:
                        t.retry(self._policy.attempts, None, info.kind, wait)
                    # A fresh response first: an abort during the wait ends from it.
                    self._restart_attempt(leg)
                    self.phase = "wait"
                    yield Sleep(wait)
                    continue
            if withheld is not None:
                self._verdict(leg, info)
            return withheld

    def _in_band_retry(self, withheld: list[Event], info: ErrorInfo) -> float | None:
        """The wait before sending again after an in-band error (an ``overloaded_error``
        event after the ``200``) that came before any content; ``None``: not retried
        (content came first, not retryable, retries or deadline used up). The same
        policy as a status error decides (DESIGN §2a: retries before content only)."""
        if self.phase != "read" or self._delivered or _has_content(withheld):
            return None
        err = from_info(info)
        if not isinstance(err, ProviderError):
            return None  # a cut or malformed stream is not the provider saying "again"
        try:
            return self._policy.next_wait(err)
        except StreamError:
            return None

    def _restart_attempt(self, leg: Leg) -> None:
        # Same model, same policy (attempts and deadline go on): a fresh response.
        if leg.new_pipeline is None:
            return
        p = leg.new_pipeline()
        p.start()
        self.pipeline = p
        self._delivered = False

    def _verdict(self, leg: Leg, info: ErrorInfo | None) -> None:
        """Tell the model's breaker and pacer how the call went (before the consumer
        sees its end, so the next call finds the circuit already updated)."""
        circuit = self._leg_circuit
        self._leg_circuit = None
        message = self.pipeline.message
        if leg.pacer is not None and message is not None and leg.tokens:
            u = message.usage
            leg.pacer.settle(leg.tokens, u.input + u.output + u.cache_read + u.cache_write)
        if circuit is None:
            return
        if info is not None and info.retryable and info.kind not in _NOT_THE_MODEL:
            circuit.failure(info.retry_after)
        else:
            circuit.success()  # an answer, or a refusal the provider was up to give

    def _release(self) -> None:
        """The call ends without a verdict (the caller aborted): a probe slot is freed."""
        circuit, self._leg_circuit = self._leg_circuit, None
        if circuit is not None:
            circuit.release()

    def _withhold(self, events: list[Event]) -> bool:
        """Whether a terminal batch is kept back for a decision: a failure (not an abort)
        that a retry or another leg might still answer."""
        last = events[-1] if events else None
        return isinstance(last, ErrorEvent) and last.reason == "error"

    def _attempt(
        self, leg: Leg, aborted: Callable[[], bool]
    ) -> Generator[Intent, Any, list[Event] | None]:
        p = self.pipeline
        self.phase = "authorize"
        got = yield Authorize(self.request)
        if isinstance(got, Failure):
            return p.fail(got.error)
        request: HTTPRequest = got
        sent = request
        while True:
            resumed = yield from self._read_body(leg, aborted, sent, request)
            if not isinstance(resumed, tuple):
                return resumed
            request = resumed[0]

    def _read_body(
        self, leg: Leg, aborted: Callable[[], bool], sent: HTTPRequest, request: HTTPRequest
    ) -> Generator[Intent, Any, list[Event] | tuple[HTTPRequest] | None]:
        """One request of an attempt, its body read; ``(request,)``: a background
        response broke and is picked up again with ``request`` (:meth:`_resume`)."""
        p = self.pipeline
        policy = self._policy
        p.add_secrets(request.secrets)
        head = yield from self._open(request, leg)
        if isinstance(head, StreamError):
            return p.fail(head)
        self.phase = "read"  # (an in-band error is retried from here only)
        rid = request_id(head.headers)
        if rid:
            p.request_id = redact(rid, p.secrets)
        if aborted():
            self._release()
            yield self._emit(p.abort())
            return None
        if policy.expired():
            return p.fail(RequestTimeoutError("total timeout expired while reading"))
        # The read loop itself is :meth:`_step`'s: it feeds every chunk and emits its
        # events, and hands back here, at this Read, whatever ends the attempt.
        self._body, self._first, self._rest = p, True, b""
        got = yield Read(policy.remaining())
        if got is _EXPIRED:
            return p.fail(RequestTimeoutError("total timeout expired while reading"))
        if got is None or (
            isinstance(got, Failure) and not (aborted() or got.deadline or policy.expired())
        ):
            again = yield from self._resume(leg, sent, got)
            if again is not None:
                return (again,)
        if got is None:  # the end of the body
            events = p.end()
            if self._withhold(events):
                return events
            self._verdict(leg, None)
            yield self._emit(events)
            return None
        if isinstance(got, Failure):
            if aborted():
                self._release()
                yield self._emit(p.abort())
                return None
            err = got.error
            if got.deadline or policy.expired():
                # The read was cut to the deadline (or the sync timer shut the socket).
                err = RequestTimeoutError("total timeout expired while reading")
            return p.fail(err)
        assert got is _FED  # a chunk ``_step`` fed, after which the pipeline is done
        events, self._fed = self._fed, []
        if self._withhold(events):
            return events
        self._verdict(leg, None)
        yield self._emit(events)
        # Ended before the body did: read the rest briefly (bounded) so the
        # connection can be reused.
        self.phase = "drain"
        yield Drain(DRAIN_BYTES, DRAIN_SECONDS)
        return None

    def _resume(
        self, leg: Leg, sent: HTTPRequest, got: Failure | None
    ) -> Generator[Intent, Any, HTTPRequest | None]:
        """A background response broke before its terminal event: the request that
        picks it up after the last event delivered, once the wait is over (``None``:
        the break ends the call as it would otherwise; :func:`resume_plan`)."""
        planned = resume_plan(leg, self.pipeline, self._policy, sent, got)
        if planned is None:
            return None
        self.phase = "wait"
        yield Sleep(planned[0])
        return planned[1]

    def _open(self, request: HTTPRequest, leg: Leg) -> Generator[Intent, Any, Head | StreamError]:
        """Send with retries before the first byte; the 2xx event-stream head, or the
        error that ends the call. Every retry decision is the policy's."""
        policy, t = self._policy, self.timeout
        trace = self.pipeline.trace
        pacer, tokens = leg.pacer, leg.tokens
        while True:
            if pacer is not None:
                # Client-side limits (and a provider's pause): wait for this send's slot.
                wait = pacer.reserve(tokens)
                tokens = 0  # the prompt's tokens are booked once, not per retry
                while wait > 0:
                    left = policy.remaining()
                    if left is not None and wait >= left:
                        return policy.total_timeout("waiting for the rate limit")
                    self.phase = "wait"
                    yield Sleep(wait)
                    wait = pacer.paused()
            if policy.expired():
                return policy.total_timeout("before the response")
            connect = policy.bound(t.connect)
            self.phase = "send"
            got = yield Send(request, connect, policy.bound(t.idle), policy.remaining())
            err: StreamError
            if isinstance(got, Failure):
                left = policy.remaining()
                if got.deadline or (got.timeout and left is not None and left < 0.01):
                    # The phase timeout was cut to the deadline: the whole call's
                    # budget, not the connect/idle one, is what ran out.
                    return policy.total_timeout("before the response")
                if got.final:  # never succeeds as sent: retried by no one (batch, fallback)
                    got.error.retryable = False
                    return got.error
                err = got.error
            else:
                wrong = unexpected_type(request, got)
                if got.status < 300 and wrong is None:
                    head: Head = got
                    if trace is not None:
                        # Once per call, after the status line: never on the per-read path.
                        trace.response(head.status, header_items(head.headers))
                    return head
                self.phase = "read_error"
                body = yield ReadError(ERROR_BODY_LIMIT, policy.remaining())
                if got.status < 300:
                    return wrong_type_error(request, got, wrong or "", body)
                # The hint is about the endpoint a response is created at, not a stored
                # response's (a pick-up's GET): there a 404 is an unknown id.
                hint = None
                if got.status == 404 and request.method == "POST" and leg.not_found_hint:
                    hint = leg.not_found_hint()
                err = http_status_error(request, got, body, hint)
                if err.retry_after is not None and leg.model is not None:
                    # One call's Retry-After pauses every paced call to this provider.
                    from ._limits import pause_provider

                    pause_provider(leg.model.provider, err.retry_after)
            try:
                wait = policy.next_wait(err)
            except StreamError as final:
                return final
            if trace is not None:
                trace.retry(policy.attempts, err.status, err.kind, wait)
            self.phase = "wait"
            yield Sleep(wait)


#: What :meth:`Call._step` hands the flow's generator at its ``Read``: the deadline
#: passed; the chunk was fed and the pipeline is done (its events in ``Call._fed``).
_EXPIRED = object()
_FED = object()

#: Failures that say nothing about the model's health (the caller's own deadline).
_NOT_THE_MODEL = frozenset({"timeout"})


def _error_of(events: list[Event]) -> ErrorInfo | None:
    last = events[-1] if events else None
    if isinstance(last, ErrorEvent) and last.reason == "error":
        return last.message.error
    return None


def _has_content(events: list[Event]) -> bool:
    last = events[-1] if events else None
    return isinstance(last, ErrorEvent) and bool(last.message.content)

"""The sans-IO inbound pipeline: bytes → frames → deltas → model events.

The wire API chooses its framing (``WireCodec.framing``: SSE, NDJSON, the AWS
binary event stream — :mod:`modelwire._framing`); every framing yields the same
:class:`~modelwire._sse.Frame` (event type and payload bytes), so nothing here
depends on which one it is.

Shared by the live HTTP path and :func:`replay`, so a recorded stream and a
live one run the same code (DESIGN §1). ``feed``/``end``/``fail`` never raise a
stream failure: they end the stream with an ``error`` event instead. Until the
decoder recognises a first payload, a body that another registered API recognizes
(and this one does not) ends the stream with a ``malformed_chunk`` naming that API
(:mod:`modelwire._apis._sniff`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ._apis import get_api
from ._apis._sniff import SNIFF_BYTES, wrong_api_error
from ._assemble import Assembler, CompletionPolicy, ToolChoice
from ._sse import DEFAULT_MAX_EVENT_BYTES
from .errors import AbortedError, MalformedChunkError, StreamError, TruncatedStreamError
from .events import Replay

if TYPE_CHECKING:
    from ._deltas import Delta
    from ._framing import Framing
    from ._sse import Frame
    from .events import Event
    from .trace import ErrorLayer, TraceObserver, Tracer
    from .types import AssistantMessage, Model

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "Pipeline", "replay"]


class Pipeline:
    """One response's decoding state. ``done`` turns true with the terminal event.

    With ``trace`` (a :class:`~modelwire.trace.TraceObserver`) every step is also
    reported as a trace record (:mod:`modelwire.trace`); ``self.trace`` is then the
    :class:`~modelwire.trace.Tracer`. Without it, the only cost is one test per read.
    """

    __slots__ = ("_decode", "_head", "_sniffing", "api", "assembler", "decoder", "secrets", "sse",
                 "trace")  # fmt: skip

    def __init__(
        self,
        api: str,
        *,
        model: Model | None = None,
        tool_choice: ToolChoice = None,
        tools_declared: bool | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        trace: TraceObserver | None = None,
        secrets: tuple[str, ...] = (),
        clock: bool = False,
        policy: CompletionPolicy | None = None,
    ) -> None:
        wire = get_api(api)
        self.api = api
        self.decoder = wire.new_decoder(model)
        # Until the decoder recognises a payload, check it is not another API's
        # (``apis._sniff``, asked with the first bytes of the body); then decode directly.
        self._sniffing = True
        self._head = bytearray()
        self._decode: Callable[[Frame], list[Delta]] = self._first_decode
        # ``sse`` is the framing decoder (the name predates non-SSE framings; the
        # trace calls its records "sse" for every framing).
        self.sse: Framing = wire.framing(max_event_bytes)
        self.assembler = Assembler(
            api=api,
            provider=model.provider if model else "",
            model=model.id if model else "",
            tool_choice=tool_choice,
            tools_declared=tools_declared,
            prices=model.cost if model else None,
            policy=policy,
        )
        # API keys to redact from error texts: a server may quote the key in an
        # in-band error or in a payload that a malformed-chunk message cites.
        self.secrets = secrets
        self.trace: Tracer | None = None
        if trace is not None:
            from .trace import Tracer

            self.trace = Tracer(trace, secrets=secrets, clock=clock)

    def add_secrets(self, secrets: tuple[str, ...]) -> None:
        """Redact these too from here on: credentials a provider's authorizer added
        when the request was sent (an OAuth token, a SigV4 signature)."""
        new = tuple(s for s in secrets if s and s not in self.secrets)
        if not new:
            return
        self.secrets = (*self.secrets, *new)
        if self.trace is not None:
            self.trace.add_secrets(new)

    def _first_decode(self, event: Frame) -> list[Delta]:
        if not self._sniffing:
            return self._decode(event)  # recognised earlier in this read
        try:
            deltas: list[Delta] = self.decoder.decode(event)
        except MalformedChunkError as exc:
            err = wrong_api_error(self.api, bytes(self._head), exc.message)
            if err is not None:
                self._sniffing = False  # diagnosed: the caller's error handling adds nothing
                raise err from None
            raise
        err = wrong_api_error(self.api, bytes(self._head))
        if deltas:
            # Recognised (a foreign payload may still decode to something, e.g. an
            # ``id`` read as a response id): asked once more, then decode directly.
            self._sniffing = False
            self._head = bytearray()
            self._decode = self.decoder.decode
            if err is not None:
                raise err
            return deltas
        if err is not None:
            self._sniffing = False
            raise err
        return deltas

    def _sniff(self, data: bytes) -> None:
        # The first bytes of the body, kept (bounded) for wrong-API detection.
        room = SNIFF_BYTES - len(self._head)
        if room > 0:
            self._head += data[:room]

    def _diagnose(self, exc: StreamError) -> StreamError:
        """A framing error or a truncated body before any recognised payload: another
        API's body? (A Bedrock event stream read as SSE, NDJSON read as SSE…)"""
        if not self._sniffing or isinstance(exc, AbortedError) or not self._head:
            return exc
        return wrong_api_error(self.api, bytes(self._head), exc.message) or exc

    @property
    def done(self) -> bool:
        return self.assembler.done

    @property
    def message(self) -> AssistantMessage | None:
        return self.assembler.message

    def start(self) -> list[Event]:
        out: list[Event] = []
        if self.trace is not None:
            self._start_traced(out)
            return out
        self.assembler.start(out)
        return out

    def feed(self, data: bytes) -> list[Event]:
        """Decode one network read; returns the events it completed."""
        if self.trace is not None:
            return self._feed_traced(data)
        out: list[Event] = []
        asm = self.assembler
        if asm.done:
            return out
        asm.start(out)
        if self._sniffing:
            self._sniff(data)
        try:
            events = self.sse.feed(data)
            decode = self._decode
            for ev in events:
                asm.feed(decode(ev), out)
                if asm.done:
                    break
        except StreamError as exc:
            asm.fail(self._redact(self._diagnose(exc)), out)
        except Exception as exc:  # a decoder bug must still end the stream typed
            asm.fail(self._redact(MalformedChunkError(f"could not decode a chunk: {exc!r}")), out)
        return out

    def end(self) -> list[Event]:
        """The body is complete: flush, require the terminal signal, finish."""
        if self.trace is not None:
            return self._end_traced()
        out: list[Event] = []
        asm = self.assembler
        if asm.done:
            return out
        asm.start(out)
        try:
            decode = self._decode
            for ev in self.sse.end():
                asm.feed(decode(ev), out)
                if asm.done:
                    return out
            asm.feed(self.decoder.end(), out)
            if not asm.done:
                raise TruncatedStreamError("the stream ended without its terminal event")
        except StreamError as exc:
            asm.fail(self._redact(self._diagnose(exc)), out)
        except Exception as exc:
            asm.fail(self._redact(MalformedChunkError(f"could not decode a chunk: {exc!r}")), out)
        return out

    def fail(self, exc: StreamError, at: ErrorLayer = "http") -> list[Event]:
        """End the stream with ``exc`` (from the HTTP layer unless ``at`` says otherwise)."""
        out: list[Event] = []
        t = self.trace
        if t is not None:
            if not self.assembler.done:
                self._start_traced(out)
                where: ErrorLayer = "caller" if isinstance(exc, AbortedError) else at
                self._fail_traced(exc, where, t.last, None, out)
            return out
        self.assembler.fail(self._redact(exc), out)
        return out

    def _redact(self, exc: StreamError) -> StreamError:
        # A quoted payload is redacted whole before its excerpt is cut (StreamError.redact).
        if self.secrets:
            exc.redact(self.secrets)
        return exc

    def abort(self, reason: str = "the stream was aborted by the caller") -> list[Event]:
        return self.fail(AbortedError(reason), "caller")

    # ------------------------------------------------------------------ traced
    # The same steps as feed/end, one delta at a time so each event is linked to
    # the delta that produced it (``Assembler.feed`` applies deltas in order and
    # stops at the terminal event, so feeding them singly is equivalent).

    def _start_traced(self, out: list[Event]) -> None:
        n = len(out)
        self.assembler.start(out)
        if len(out) > n:
            assert self.trace is not None
            self.trace.events(out[n:], self.trace.origin)

    def _feed_traced(self, data: bytes) -> list[Event]:
        t = self.trace
        assert t is not None
        out: list[Event] = []
        rid = t.read(data)
        if self.assembler.done:
            return out
        self._start_traced(out)
        if self._sniffing:
            self._sniff(data)
        try:
            events = self.sse.feed(data)
        except Exception as exc:
            self._fail_traced(exc, "sse", rid, None, out)
            return out
        self._events_traced(events, rid, out)
        return out

    def _end_traced(self) -> list[Event]:
        t = self.trace
        assert t is not None
        out: list[Event] = []
        eof = t.eof()
        asm = self.assembler
        if asm.done:
            return out
        self._start_traced(out)
        try:
            events = self.sse.end()
        except Exception as exc:
            self._fail_traced(exc, "sse", eof, None, out)
            return out
        self._events_traced(events, eof, out)
        if asm.done:
            return out
        try:
            deltas = self.decoder.end()
        except Exception as exc:
            self._fail_traced(exc, "decode", eof, None, out)
            return out
        self._deltas_traced(deltas, eof, out)
        if not asm.done:
            err = TruncatedStreamError("the stream ended without its terminal event")
            self._fail_traced(err, "decode", eof, None, out)
        return out

    def _events_traced(self, events: list[Frame], parent: str, out: list[Event]) -> None:
        t = self.trace
        assert t is not None
        decode = self._decode
        # Frames carry no SSE id/retry: the framing's state after this read stands in.
        sse_id = getattr(self.sse, "last_event_id", "")
        retry = getattr(self.sse, "retry", None)
        for ev in events:
            sid = t.sse(ev, parent, sse_id, retry)
            try:
                deltas = decode(ev)
            except Exception as exc:
                self._fail_traced(exc, "decode", sid, ev.data.decode(), out)
                return
            self._deltas_traced(deltas, sid, out)
            if self.assembler.done:
                return

    def _deltas_traced(self, deltas: list[Delta], parent: str, out: list[Event]) -> None:
        t = self.trace
        assert t is not None
        asm = self.assembler
        for d in deltas:
            n = len(out)
            try:
                asm.feed((d,), out)
            except Exception as exc:
                did = t.delta(d, parent, out[n:])
                self._fail_traced(exc, "assemble", did, None, out)
                return
            t.delta(d, parent, out[n:])
            if asm.done:
                return

    def _fail_traced(
        self,
        exc: BaseException,
        at: ErrorLayer,
        parent: str | None,
        payload: str | None,
        out: list[Event],
    ) -> None:
        t = self.trace
        assert t is not None
        if isinstance(exc, StreamError):
            err = (
                exc
                if at == "decode" and isinstance(exc, MalformedChunkError)
                else (self._diagnose(exc))
            )
        else:  # a decoder bug must still end the stream typed
            err = MalformedChunkError(f"could not decode a chunk: {exc!r}")
        err = self._redact(err)
        eid = t.error(err, at, parent, payload)
        n = len(out)
        self.assembler.fail(err, out)
        t.events(out[n:], eid)


def replay(
    api: str,
    chunks: Iterable[bytes] | bytes,
    model: Model | None = None,
    *,
    trace: TraceObserver | None = None,
) -> Replay:
    """Decode a recorded response body offline: bytes → the full list of events,
    a :class:`~modelwire.events.Replay` (a ``list``) whose ``.message`` is the final
    message, typed.

    ``chunks`` is an iterable of byte strings (split anywhere) or one bytes
    object. ``message.api`` is ``api``; provider and model come from ``model``
    when given, else ``""``. Failures end the list with an ``error`` event.
    ``trace`` receives one record per read (chunk), SSE event, delta, event and
    the final message (:mod:`modelwire.trace`).
    """
    if trace is not None:
        from .trace import check_observer

        check_observer(trace)
    p = Pipeline(api, model=model, trace=trace)
    if isinstance(chunks, bytes | bytearray | memoryview):
        chunks = (bytes(chunks),)
    out = p.start()
    for chunk in chunks:
        if not isinstance(chunk, bytes | bytearray | memoryview):
            from .errors import ConfigurationError

            raise ConfigurationError(
                f"replay() takes bytes chunks, got {type(chunk).__name__}"
                " (open the file in binary mode)"
            )
        out.extend(p.feed(bytes(chunk)))
        if p.done:
            return Replay(out)
    out.extend(p.end())
    return Replay(out)

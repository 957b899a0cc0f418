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

import copy
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

    With ``trace`` (a :class:`~modelwire.trace.TraceObserver`) the one loop also
    notifies the :class:`~modelwire.trace.Tracer` (``self.trace``) at every step:
    read, frame, delta, events, an error with the layer it arose in. Without it,
    the only cost is one test per read.
    """

    __slots__ = ("_decode", "_decode_batch", "_head", "_joined", "_sniffing", "api", "assembler",
                 "decoder",
                 "request_id",
                 "secrets", "sse",
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
        # A decoder may take a read's frames in one call (``decode_batch(frames, out)``,
        # appending what ``decode`` would give for each, in order; a frame that fails
        # adds nothing): the per-frame call and list disappear from the hot loop.
        self._decode_batch: Callable[[list[Frame], list[Delta]], None] | None = getattr(
            self.decoder, "decode_batch", None
        )
        # Once the body is recognised, a decoder that takes runs (``takes_runs``) gets the
        # whole blocks of a read as one ``Run`` when the framing can join them
        # (``join_runs``): one decode for the read instead of one per frame. Not traced:
        # the trace records each frame.
        self._joined = False
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
        #: The provider's request id from the response head (set by the Call): every
        #: failure after the ``200`` carries it, as a status error does.
        self.request_id: str | None = None
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
            join = getattr(self.sse, "join_runs", None)
            if (
                join is not None
                and self.trace is None
                and getattr(self.decoder, "takes_runs", False)
            ):
                join()
                self._joined = True
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
        self._start(out)
        return out

    def _start(self, out: list[Event]) -> None:
        n = len(out)
        self.assembler.start(out)
        t = self.trace
        if t is not None and len(out) > n:
            t.events(out[n:], t.origin)

    # One loop for the untraced and the traced stream. With an observer the decode
    # and assemble steps are wrapped (``_decode_traced``, ``_assemble_traced``) once
    # per read, so without one the loop pays nothing per frame or per delta.

    def feed(self, data: bytes) -> list[Event]:
        """Decode one network read; returns the events it completed."""
        out: list[Event] = []
        asm = self.assembler
        t = self.trace
        if t is not None:
            t.fault = ("sse", t.read(data), None)
        if asm.done:
            return out
        if self._sniffing:
            self._sniff(data)
        try:
            if t is None:
                asm.start(out)
                frames = self.sse.feed(data)
                if (len(frames) > 1 or self._joined) and not self._sniffing:
                    self._batch(frames, out)
                else:
                    decode = self._decode
                    for ev in frames:
                        asm.feed(decode(ev), out)
                        if asm.done:
                            break
            else:
                self._start(out)
                for ev in self.sse.feed(data):
                    self._assemble_traced(self._decode_traced(ev), out)
                    if asm.done:
                        break
        except Exception as exc:
            self._failed(exc, out, diagnose=True)
        return out

    def _batch(self, frames: list[Frame], out: list[Event]) -> None:
        """The frames of one read: decoded into one list of deltas, assembled in one
        call (one hand-off per network read, not per frame). The assembler stops at the
        terminal delta; a frame after it that fails to decode is ignored, as the
        per-frame loop never decoded it."""
        deltas: list[Delta] = []
        try:
            batch = self._decode_batch
            if batch is not None:
                batch(frames, deltas)
            else:
                decode = self._decode
                for ev in frames:
                    deltas += decode(ev)
        except Exception:
            self.assembler.feed(deltas, out)
            if self.assembler.done:
                return
            raise
        self.assembler.feed(deltas, out)

    def end(self) -> list[Event]:
        """The body is complete: flush, require the terminal signal, finish."""
        out: list[Event] = []
        asm = self.assembler
        t = self.trace
        if t is not None:
            t.fault = ("sse", t.eof(), None)
        if asm.done:
            return out
        try:
            if t is None:
                asm.start(out)
                decode, assemble = self._decode, asm.feed
            else:
                self._start(out)
                decode, assemble = self._decode_traced, self._assemble_traced
            for ev in self.sse.end():
                assemble(decode(ev), out)
                if asm.done:
                    return out
            if t is not None:
                t.delta_parent = "eof"
                t.fault = ("decode", "eof", None)
            deltas = self.decoder.end()
            assemble(deltas, out)
            if not asm.done:
                if t is not None:
                    t.fault = ("decode", "eof", None)
                raise TruncatedStreamError("the stream ended without its terminal event")
        except Exception as exc:
            self._failed(exc, out, diagnose=True)
        return out

    def fail(self, exc: StreamError, at: ErrorLayer = "http") -> list[Event]:
        """End the stream with ``exc`` (from the HTTP layer unless ``at`` says otherwise)."""
        out: list[Event] = []
        if self.assembler.done:
            return out
        t = self.trace
        if t is not None:
            self._start(out)
            t.fault = ("caller" if isinstance(exc, AbortedError) else at, t.last, None)
        self._failed(exc, out)
        return out

    def abort(self, reason: str = "the stream was aborted by the caller") -> list[Event]:
        return self.fail(AbortedError(reason), "caller")

    def _failed(self, exc: BaseException, out: list[Event], *, diagnose: bool = False) -> None:
        # ``feed``/``end``/``fail`` never raise a stream failure: a decoder bug too
        # ends the stream typed. The error is a redacted copy (a server may quote
        # the key in an in-band error or in a payload a malformed-chunk message cites).
        # A failure of the body itself (``diagnose``: framing, decoding, truncation)
        # may mean it is another API's; one the transport or the caller reports not.
        if isinstance(exc, StreamError):
            err = self._diagnose(exc) if diagnose else exc
        else:
            err = MalformedChunkError(f"could not decode a chunk: {exc!r}")
        if self.secrets:
            err = err.redacted(self.secrets)
        if err.request_id is None and self.request_id is not None:
            err = copy.copy(err)
            err.request_id = self.request_id
        t = self.trace
        if t is None:
            self.assembler.fail(err, out)
            return
        at, parent, payload = t.fault
        eid = t.error(err, at, parent, payload)
        n = len(out)
        self.assembler.fail(err, out)
        t.events(out[n:], eid)

    # ------------------------------------------------------------------ trace hooks

    def _decode_traced(self, ev: Frame) -> list[Delta]:
        t = self.trace
        assert t is not None
        # Frames carry no SSE id/retry: the framing's state after this read stands in.
        sid = t.sse(ev, t.fault[1], getattr(self.sse, "last_event_id", ""),
                    getattr(self.sse, "retry", None))  # fmt: skip
        read = t.fault
        t.fault = ("decode", sid, ev.data.decode())
        deltas = self._decode(ev)
        t.delta_parent = sid
        t.fault = read
        return deltas

    def _assemble_traced(self, deltas: Iterable[Delta], out: list[Event]) -> None:
        # One delta at a time so each event is linked to the delta that produced it
        # (``Assembler.feed`` applies deltas in order and stops at the terminal
        # event, so feeding them singly is equivalent).
        t = self.trace
        assert t is not None
        asm = self.assembler
        parent = t.delta_parent
        for d in deltas:
            n = len(out)
            try:
                asm.feed((d,), out)
            except Exception:
                t.fault = ("assemble", t.delta(d, parent, out[n:]), None)
                raise
            t.delta(d, parent, out[n:])
            if asm.done:
                return


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

"""The sans-IO inbound pipeline: bytes → frames → deltas → model events.

The wire API chooses its framing (``WireCodec.framing``: SSE, NDJSON, the AWS
binary event stream — :mod:`modelwire._wire.framing`); every framing yields the same
:class:`~modelwire._wire.sse.Frame` (event type and payload bytes), so nothing here
depends on which one it is.

Shared by the live HTTP path and ``mw.replay``, so a recorded stream and a live one
run the same code (DESIGN §1). ``feed``/``end``/``fail`` never raise a stream failure:
they end the stream with an ``error`` event instead. The pipeline is handed its wire
API's codec (it looks nothing up by name) and, optionally, a ``sniff`` function: until
the decoder recognises a first payload, a body that ``sniff`` says is another API's
ends the stream with the ``malformed_chunk`` it returns (the client passes
:func:`modelwire._apis._sniff.wrong_api_error`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from ..errors import AbortedError, MalformedChunkError, StreamError, TruncatedStreamError
from .assemble import Assembler, CompletionPolicy, ToolChoice
from .sse import DEFAULT_MAX_EVENT_BYTES

if TYPE_CHECKING:
    from ..events import Event
    from ..types import AssistantMessage, Model
    from .deltas import Delta
    from .framing import Framing
    from .sse import Frame
    from .trace import ErrorLayer, TraceObserver, Tracer

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "SNIFF_BYTES",
    "Decoding",
    "Pipeline",
    "Sniff",
    "WireDecoder",
]

#: How much of a body's start is kept for ``sniff`` (a first payload fits).
SNIFF_BYTES = 64 * 1024


class WireDecoder(Protocol):
    """A fresh per-response decoder: one frame in, normalized deltas out.

    ``decode`` validates one frame's payload (``frame.data``: bytes, decoded with
    msgspec straight from them, e.g. by :func:`~modelwire._apis._common.decode_json`)
    and returns deltas (:mod:`modelwire._wire.deltas`), raising a ``StreamError``
    subclass for bad input (a ``MalformedChunkError`` naming the field path); ``end``
    is called when the body is complete and returns ``[EndOfStream()]`` or raises
    ``TruncatedStreamError`` when the API's terminal signal is missing.
    """

    def decode(self, frame: Frame) -> list[Delta]:
        """The deltas of one frame (often none); a ``StreamError`` for bad input.

        Args:
            frame: The frame: its event name and payload bytes.
        """
        ...

    def end(self) -> list[Delta]:
        """The body is complete: ``[EndOfStream()]``, or ``TruncatedStreamError``."""
        ...


class Decoding(Protocol):
    """What the pipeline needs of a wire API: its name, framing and decoder (every
    :class:`~modelwire._apis.WireCodec` is one)."""

    @property
    def name(self) -> str: ...

    def framing(self, max_event_bytes: int) -> Framing: ...

    def new_decoder(self, model: Model | None) -> WireDecoder: ...


class Sniff(Protocol):
    """``sniff(api, head, cause)``: the error saying a body whose first bytes are
    ``head`` is another API's (``cause``: the decoder's own message), or ``None``."""

    def __call__(
        self, api: str, head: bytes, cause: str | None = None, /
    ) -> MalformedChunkError | None: ...


def _no_sniff(api: str, head: bytes, cause: str | None = None, /) -> None:
    return None


class Pipeline:
    """One response's decoding state. ``done`` turns true with the terminal event.

    With ``trace`` (a :class:`~modelwire.trace.TraceObserver`) the one loop also
    notifies the :class:`~modelwire.trace.Tracer` (``self.trace``) at every step:
    read, frame, delta, events, an error with the layer it arose in. Without it,
    the only cost is one test per read.
    """

    __slots__ = ("_decode", "_decode_batch", "_framing", "_head", "_joined", "_sniff_fn",
                 "_sniffing", "api",
                 "assembler", "decoder",
                 "request_id",
                 "secrets", "sse",
                 "trace")  # fmt: skip

    def __init__(
        self,
        wire: Decoding,
        *,
        api: str | None = None,
        sniff: Sniff | None = None,
        model: Model | None = None,
        tool_choice: ToolChoice = None,
        tools_declared: bool | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        trace: TraceObserver | None = None,
        secrets: tuple[str, ...] = (),
        clock: bool = False,
        policy: CompletionPolicy | None = None,
    ) -> None:
        # The name the caller knows the API by (a codec may be registered under more
        # than one): the messages' ``api``.
        self.api = api = api or wire.name
        self.decoder = wire.new_decoder(model)
        # Until the decoder recognises a payload, check it is not another API's
        # (``sniff``, asked with the first bytes of the body); then decode directly.
        self._sniff_fn: Sniff = sniff or _no_sniff
        self._sniffing = sniff is not None
        self._head = bytearray()
        self._decode: Callable[[Frame], list[Delta]] = (
            self._first_decode if sniff is not None else self.decoder.decode
        )
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
        self._framing = partial(wire.framing, max_event_bytes)
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
            err = self._sniff_fn(self.api, bytes(self._head), exc.message)
            if err is not None:
                self._sniffing = False  # diagnosed: the caller's error handling adds nothing
                raise err from None
            raise
        err = self._sniff_fn(self.api, bytes(self._head))
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

    def reframe(self) -> None:
        """A new body continues this response (a background response picked up
        again): the framing starts afresh, dropping a half-received event; the
        decoder and the assembler keep their state."""
        self.sse = self._framing()
        self._joined = False

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
        return self._sniff_fn(self.api, bytes(self._head), exc.message) or exc

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

"""The sans-IO inbound pipeline: bytes → SSE events → deltas → model events.

Shared by the live HTTP path and :func:`replay`, so a recorded stream and a
live one run the same code (DESIGN §1). ``feed``/``end``/``fail`` never raise a
stream failure: they end the stream with an ``error`` event instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .apis import get_api
from .assemble import Assembler, ToolChoice
from .errors import AbortedError, MalformedChunkError, StreamError, TruncatedStreamError
from .sse import SSEDecoder

if TYPE_CHECKING:
    from .events import Event
    from .types import AssistantMessage, Model

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "Pipeline", "replay"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024


class Pipeline:
    """One response's decoding state. ``done`` turns true with the terminal event."""

    __slots__ = ("assembler", "decoder", "observer", "secrets", "sse")

    def __init__(
        self,
        api: str,
        *,
        model: Model | None = None,
        tool_choice: ToolChoice = None,
        tools_declared: bool | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        observer: Any = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        wire = get_api(api)
        self.decoder = wire.new_decoder(model)
        self.sse = SSEDecoder(max_event_bytes=max_event_bytes)
        self.assembler = Assembler(
            api=api,
            provider=model.provider if model else "",
            model=model.id if model else "",
            tool_choice=tool_choice,
            tools_declared=tools_declared,
            prices=model.cost if model else None,
        )
        self.observer = observer
        # API keys to redact from error texts: a server may quote the key in an
        # in-band error or in a payload that a malformed-chunk message cites.
        self.secrets = secrets

    @property
    def done(self) -> bool:
        return self.assembler.done

    @property
    def message(self) -> AssistantMessage | None:
        return self.assembler.message

    def start(self) -> list[Event]:
        out: list[Event] = []
        self.assembler.start(out)
        return out

    def feed(self, data: bytes) -> list[Event]:
        """Decode one network read; returns the events it completed."""
        out: list[Event] = []
        asm = self.assembler
        if asm.done:
            return out
        asm.start(out)
        try:
            events = self.sse.feed(data)
            decode = self.decoder.decode
            for ev in events:
                asm.feed(decode(ev), out)
                if asm.done:
                    break
        except StreamError as exc:
            asm.fail(self._redact(exc), out)
        except Exception as exc:  # a decoder bug must still end the stream typed
            asm.fail(self._redact(MalformedChunkError(f"could not decode a chunk: {exc!r}")), out)
        return out

    def end(self) -> list[Event]:
        """The body is complete: flush, require the terminal signal, finish."""
        out: list[Event] = []
        asm = self.assembler
        if asm.done:
            return out
        asm.start(out)
        try:
            decode = self.decoder.decode
            for ev in self.sse.end():
                asm.feed(decode(ev), out)
                if asm.done:
                    return out
            asm.feed(self.decoder.end(), out)
            if not asm.done:
                raise TruncatedStreamError("the stream ended without its terminal event")
        except StreamError as exc:
            asm.fail(self._redact(exc), out)
        except Exception as exc:
            asm.fail(self._redact(MalformedChunkError(f"could not decode a chunk: {exc!r}")), out)
        return out

    def fail(self, exc: StreamError) -> list[Event]:
        out: list[Event] = []
        self.assembler.fail(self._redact(exc), out)
        return out

    def _redact(self, exc: StreamError) -> StreamError:
        if not self.secrets:
            return exc
        # Only the live path has secrets, and it has imported httpx already.
        from .http import redact

        text = redact(exc.message, self.secrets)
        if text != exc.message:
            exc.message = text
            exc.args = (text,)
        return exc

    def abort(self, reason: str = "the stream was aborted by the caller") -> list[Event]:
        return self.fail(AbortedError(reason))


def replay(api: str, chunks: Iterable[bytes] | bytes, model: Model | None = None) -> list[Event]:
    """Decode a recorded response body offline: bytes → the full list of events.

    ``chunks`` is an iterable of byte strings (split anywhere) or one bytes
    object. ``message.api`` is ``api``; provider and model come from ``model``
    when given, else ``""``. Failures end the list with an ``error`` event.
    """
    p = Pipeline(api, model=model)
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
            return out
    out.extend(p.end())
    return out

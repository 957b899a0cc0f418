"""Streams from scripted replies with no HTTP at all, and custom-API adapters.

:class:`ScriptedModel` is the offline twin of :class:`MockServer`: its
``model`` uses the ``scripted`` api (registered with ``register_wire_api`` on
first use), and every call to ``mw.stream``/``mw.complete``, their sync twins or
an agent takes the next scripted reply. The reply is turned into normalized deltas
(:mod:`modelwire._wire.deltas`) and run through the same shared
:class:`~modelwire._wire.assemble.Assembler` as a live stream, so events, partial
snapshots, the tool-call rules and the completion policy by ``tool_choice``
are exactly those of a real provider — only the wire format is skipped.

:func:`text_api` adapts the simplest custom provider — an async generator of
text pieces — into a stream function for ``modelwire.ext.register_wire_api``.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, TypeAlias

from .._apis._common import as_tool_call
from .._apis._server.reply import arguments_text
from .._wire.assemble import Assembler
from .._wire.deltas import (
    BlockComplete,
    BlockEnd,
    BlockSignature,
    BlockStart,
    CitationDelta,
    Delta,
    EndOfStream,
    Finish,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from .._wire.request import RequestOptions
from ..errors import ConfigurationError, ProviderStreamError, StreamError, error_class_for_kind
from ..events import Event
from ..types import (
    AssistantMessage,
    Context,
    ErrorInfo,
    ImageContent,
    Model,
    ModelCost,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
)
from ._normal import Script, ScriptedReply, normalize, split_text

__all__ = [
    "SCRIPTED_API",
    "ScriptedModel",
    "StreamFunction",
    "TextGenerator",
    "deltas_for",
    "events_from_deltas",
    "register_text_api",
    "reply_deltas",
    "split_failure",
    "text_api",
]

#: The api name of every :class:`ScriptedModel`.
SCRIPTED_API = "scripted"

#: What ``register_wire_api`` accepts besides a wire API object: an async generator
#: function, or a sync one (which ``mw.stream_sync`` runs directly).
StreamFunction: TypeAlias = Callable[
    [Model, Context, RequestOptions], AsyncIterator[Event] | Iterator[Event]
]
#: The simplest custom provider: ``(model, context) -> async iterator of text``.
TextGenerator: TypeAlias = Callable[[Model, Context], AsyncIterator[str]]

# Strong references: ``ScriptedModel([...]).model`` alone must keep working.
_models: dict[str, ScriptedModel] = {}
_serial = itertools.count(1)
_registered = False
_register_lock = threading.Lock()


def deltas_for(script: Script, *, piece_chars: int = 8) -> list[Delta]:
    """The normalized deltas a provider stream for ``script`` would decode to.

    An ``AssistantMessage`` with ``stop_reason="error"`` ends with a ``Finish``
    carrying its ``error.kind`` and ``error.message``, so the stream ends with
    that typed error after the content (a scripted provider failure).

    For a decoder's tests: what a wire API's decoder should produce for a body
    :func:`~modelwire.testing.render` made from the same script.

    Args:
        script: Text, a ``ToolCall``, content blocks or an ``AssistantMessage``.
        piece_chars: Characters per text delta.

    Returns:
        The deltas, ending with ``Finish`` and ``EndOfStream``.

    Raises:
        ConfigurationError: A script of a type that is not a reply.
    """
    script, failure = split_failure(script)
    return reply_deltas(normalize(script), piece_chars=piece_chars, failure=failure)


def split_failure(script: Script) -> tuple[Script, ErrorInfo | None]:
    """A failed message (``stop_reason="error"``) as its content, and the error the
    stream ends with after that content; any other script as it is, and ``None``."""
    if not (isinstance(script, AssistantMessage) and script.stop_reason == "error"):
        return script, None
    failure = script.error or ErrorInfo(
        kind=ProviderStreamError.kind, message="the scripted reply failed"
    )
    content = AssistantMessage(
        content=script.content, api=script.api, provider=script.provider,
        model=script.model, usage=script.usage, stop_reason="stop",
        response_id=script.response_id,
    )  # fmt: skip
    return content, failure


def reply_deltas(
    reply: ScriptedReply, *, piece_chars: int = 8, failure: ErrorInfo | None = None
) -> list[Delta]:
    """The deltas of a reply in normal form: each block in pieces of ``piece_chars``
    characters, then usage and the finish (``failure``: the stream fails after the
    content with that error)."""
    split_text("", piece_chars)  # a bad piece size is refused even for an empty reply
    out: list[Delta] = []
    for i, block in enumerate(reply.content):
        if isinstance(block, TextContent):
            key: tuple[str, int] = ("text", i)
            out.append(BlockStart(key, "text", signature=block.signature))
            # Citations first, as Anthropic streams them ahead of the text they support.
            out += [CitationDelta(key, c) for c in block.citations]
            out += [TextDelta(key, p) for p in split_text(block.text, piece_chars)]
        elif isinstance(block, ServerToolCall | ServerToolResult | ProviderItem | ImageContent):
            out.append(BlockComplete(("block", i), block))  # whole: nothing to stream
            continue
        elif isinstance(block, ThinkingContent):
            key = ("thinking", i)
            out.append(
                BlockStart(key, "thinking", signature=block.signature, redacted=block.redacted)
            )
            out += [ThinkingDelta(key, p) for p in split_text(block.thinking, piece_chars)]
        else:
            block = as_tool_call(block, "a scripted reply")
            key = ("tool", i)
            text = arguments_text(block)
            out.append(ToolCallDelta(key, block.id, block.name, ""))
            out += [ToolCallDelta(key, None, None, p) for p in split_text(text, piece_chars)]
            if block.signature:  # Gemini's thought signature on a call, kept with it
                out.append(BlockSignature(key, block.signature))
            if reply.stop_reason == "length":
                # Left open: the assembler closes it at the end without trusting
                # its arguments, as for a provider cut off mid-call (rule 3).
                continue
        out.append(BlockEnd(key))
    u = reply.usage
    out.append(UsageUpdate(u.input, u.output, u.cache_read, u.cache_write))
    if failure is not None:
        out.append(Finish("error", "error", failure.kind, failure.message))
    else:
        out.append(Finish(reply.stop_reason, reply.provider_stop_reason))
    out.append(EndOfStream())
    return out


def events_from_deltas(
    deltas: Iterable[Delta],
    model: Model,
    context: Context | None = None,
    options: RequestOptions | None = None,
) -> list[Event]:
    """Run ``deltas`` through a fresh shared assembler: ``start`` … one terminal event.

    ``context`` and ``options`` enable the completion policy (declared tools,
    ``tool_choice``) exactly as for a live stream. A protocol violation ends
    the list with an ``error`` event, never an exception.

    Args:
        deltas: Normalized deltas, e.g. from :func:`deltas_for` or a decoder.
        model: The model the message is attributed to (api, provider, id, prices).
        context: The request's context (its declared tools).
        options: The request's options (its ``tool_choice``).

    Returns:
        The events, as a stream would yield them.

    Example:
        ```python
        from modelwire.testing import ScriptedModel, deltas_for, events_from_deltas

        events = events_from_deltas(deltas_for("Hi"), ScriptedModel().model)
        print([event.type for event in events])
        # ['start', 'text_start', 'text_delta', 'text_end', 'done']
        ```
    """
    asm = Assembler(
        api=model.api,
        provider=model.provider,
        model=model.id,
        tool_choice=options.tool_choice if options is not None else None,
        tools_declared=bool(context.tools) if context is not None else None,
        prices=model.cost,
    )
    out: list[Event] = []
    asm.start(out)
    try:
        asm.feed(deltas, out)
        if not asm.done:
            asm.feed([EndOfStream()], out)
    except StreamError as exc:
        asm.fail(exc, out)
    return out


class ScriptedModel:
    """A model that answers from a script, offline.

    ``replies`` are scripts (``str``, ``ToolCall``, content blocks, an
    ``AssistantMessage``) or callables ``(context) -> script`` deciding when
    the call arrives; each call takes the next one (the last repeats when
    ``repeat_last``). When none is left the stream ends with an error.
    ``contexts`` records every context received, for assertions. ``delay``
    seconds pass between events, to watch a stream render.

    ``auto=True``: once the replies run out (or with none), each call gets the
    automatic reply (:func:`~modelwire.testing.auto_reply`) — one call to each
    declared tool with arguments valid against its schema, then, with the tool
    results back, a text answer — as pydantic-ai's ``TestModel`` does.

    It serves the async and the sync path alike — ``mw.stream``/``mw.complete``,
    ``mw.stream_sync``/``mw.complete_sync``, ``Agent.run``/``Agent.run_sync`` —
    with the same replies, faults and recorded contexts::

        sm = ScriptedModel(["Hello!", "Again."])
        message = await mw.complete(sm.model, mw.Context(messages=[...]))
        again = mw.complete_sync(sm.model, mw.Context(messages=[...]))

    Use it for tests of code above the wire (an agent's loop, tools, prompts) where
    HTTP is beside the point; :class:`~modelwire.testing.MockServer` when the
    provider's bytes matter. Pass ``sm.model`` wherever a model goes.

    Args:
        replies: The scripts or callables, one per call, in order.
        id: The model id.
        provider: The model's provider name (no key is looked up).
        cost: Prices, for tests of usage cost (default: free).
        repeat_last: Keep answering with the last reply once it is reached.
        piece_chars: Characters per text delta.
        delay: Seconds between events.
        auto: Once the replies run out, answer with the automatic reply.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import ScriptedModel, tool_call


        @mw.tool
        def add(a: int, b: int) -> int:
            "Add two numbers."
            return a + b


        sm = ScriptedModel([tool_call("add", {"a": 2, "b": 3}), "5"])
        run = mw.Agent(sm.model, [add]).run_sync("2 + 3?")
        print(run.text, len(sm.contexts))  # 5 2
        print(sm.contexts[1].messages[-1].content[0].text)  # 5: the tool result it got
        ```
    """

    def __init__(
        self,
        replies: Iterable[Script | Callable[[Context], Script]] = (),
        *,
        id: str = "scripted-model",
        provider: str = "scripted",
        cost: ModelCost | None = None,
        repeat_last: bool = False,
        piece_chars: int = 8,
        delay: float = 0.0,
        auto: bool = False,
    ) -> None:
        _ensure_registered()
        self.auto = auto
        self._replies: list[Any] = list(replies)
        self._lock = threading.Lock()
        self.repeat_last = repeat_last
        self.piece_chars = piece_chars
        self.delay = delay
        self.contexts: list[Context] = []
        token = f"m{next(_serial)}"
        # The base URL identifies this instance to the registered stream function.
        self.model = Model(
            id=id,
            api=SCRIPTED_API,
            provider=provider,
            base_url=f"http://scripted.invalid/{token}",
            cost=cost or ModelCost(),
        )
        _models[self.model.base_url] = self

    def add(self, *replies: Script | Callable[[Context], Script]) -> None:
        """Queue more replies, after those not yet played.

        Args:
            *replies: Scripts or callables ``(context) -> script``.
        """
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies are still unplayed."""
        with self._lock:
            return len(self._replies)

    def _next(self, context: Context) -> Script | None:
        with self._lock:
            self.contexts.append(context)
            if not self._replies:
                if self.auto:
                    from ._auto import auto_for_context

                    return auto_for_context(context)
                return None
            item = self._replies[0] if self.repeat_last and len(self._replies) == 1 else (
                self._replies.pop(0)
            )  # fmt: skip
        return item(context) if callable(item) else item  # type: ignore[no-any-return]

    def events(self, context: Context, options: RequestOptions | None = None) -> list[Event]:
        """The events of the next reply for ``context`` (consumes it).

        What a call to ``sm.model`` streams; call it to get a reply's events without
        a call. A missing or bad script gives a stream ending in an ``error`` event.

        Args:
            context: The context the reply answers (recorded in ``contexts``).
            options: The call's options (``tool_choice``… for the completion rules).

        Returns:
            The events, ``start`` … one terminal event.
        """
        try:
            script = self._next(context)
        except ConfigurationError as exc:  # the automatic reply cannot serve this schema
            script = None
            return events_from_deltas(
                [Finish("error", None, "provider_stream", f"bad script: {exc}"), EndOfStream()],
                self.model, context, options,
            )  # fmt: skip
        if script is None:
            deltas: list[Delta] = [
                Finish("error", None, ProviderStreamError.kind,
                       "ScriptedModel has no reply left for this call"),
                EndOfStream(),
            ]  # fmt: skip
        else:
            try:
                deltas = deltas_for(script, piece_chars=self.piece_chars)
            except ConfigurationError as exc:
                deltas = [Finish("error", None, "provider_stream", f"bad script: {exc}"),
                          EndOfStream()]  # fmt: skip
        return events_from_deltas(deltas, self.model, context, options)


def _scripted(model: Model) -> ScriptedModel:
    sm = _models.get(model.base_url)
    if sm is None:
        raise ConfigurationError(
            f"no ScriptedModel behind {model.base_url!r}: use ScriptedModel(...).model"
        )
    return sm


# The two twins differ only in waiting: the events (and the reply they consume, the
# recorded context) come from the one ``ScriptedModel.events``.
async def _scripted_stream(
    model: Model, context: Context, options: RequestOptions
) -> AsyncIterator[Event]:
    sm = _scripted(model)
    for event in sm.events(context, options):
        if sm.delay:
            await asyncio.sleep(sm.delay)
        yield event


def _scripted_stream_sync(
    model: Model, context: Context, options: RequestOptions
) -> Iterator[Event]:
    sm = _scripted(model)
    for event in sm.events(context, options):
        if sm.delay:
            time.sleep(sm.delay)
        yield event


def _ensure_registered() -> None:
    global _registered
    with _register_lock:
        if not _registered:
            from .._apis import register_stream_function

            register_stream_function(SCRIPTED_API, _scripted_stream, sync=_scripted_stream_sync)
            _registered = True


def text_api(fn: TextGenerator) -> StreamFunction:
    """Adapt ``fn(model, context) -> async iterator of str`` into a stream function.

    Each piece becomes a text delta; the end of the generator finishes the
    response with ``stop``. A ``StreamError`` the generator raises ends the
    stream with that error; any other exception with ``provider_stream``
    (content received so far is kept). Register it with
    ``register_wire_api(text_api(fn), name)`` or :func:`register_text_api`.

    The simplest custom provider: a local model, a rule-based stub, another
    library's client. The stream function is async, so use ``mw.stream`` /
    ``mw.complete`` (the sync twins refuse it).

    Args:
        fn: An async generator function ``(model, context)`` yielding text pieces.

    Returns:
        The stream function.
    """

    async def stream_fn(
        model: Model, context: Context, options: RequestOptions
    ) -> AsyncIterator[Event]:
        asm = Assembler(api=model.api, provider=model.provider, model=model.id,
                        prices=model.cost)  # fmt: skip
        out: list[Event] = []
        asm.start(out)
        for e in out:
            yield e
        try:
            async for piece in fn(model, context):
                if not isinstance(piece, str):
                    raise ProviderStreamError(
                        f"the text generator yielded {type(piece).__name__}, not str"
                    )
                out = []
                asm.feed([TextDelta("text", piece)], out)
                for e in out:
                    yield e
            out = []
            asm.feed([BlockEnd("text"), Finish("stop", None), EndOfStream()], out)
        except StreamError as exc:
            out = []
            asm.fail(exc, out)
        except Exception as exc:
            out = []
            asm.fail(error_class_for_kind("provider_stream")(f"the provider failed: {exc!r}"), out)
        for e in out:
            yield e

    return stream_fn


def register_text_api(name: str, fn: TextGenerator) -> None:
    """``register_wire_api(text_api(fn), name)``: then ``Model(api=name, ...)`` streams
    whatever ``fn`` yields.

    Args:
        name: The API name models use (``Model.api``).
        fn: An async generator function ``(model, context)`` yielding text pieces.

    Raises:
        ConfigurationError: ``name`` is not a valid API name (see
            :func:`~modelwire.ext.register_wire_api`).

    Example:
        ```python
        import asyncio

        import modelwire as mw
        from modelwire.testing import register_text_api


        async def shout(model, context):
            for word in context.messages[-1].content.split():
                yield word.upper() + " "


        register_text_api("shout", shout)
        model = mw.Model(id="shout", api="shout", provider="local", base_url="http://unused.invalid")
        print(asyncio.run(mw.complete(model, "hello there")).text)  # HELLO THERE
        ```
    """
    from .._apis import register_wire_api

    register_wire_api(text_api(fn), name)

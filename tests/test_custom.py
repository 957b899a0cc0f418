"""Custom stream functions (``register_wire_api(fn, name)``) on both paths.

A sync generator function serves ``stream_sync``/``complete_sync`` directly and the
async path from a worker thread; an async one serves the async path and is refused
by the sync path with a ``ConfigurationError`` saying what to do. Either way: ``start``
first, exactly one terminal event, and aborted / failed terminals keep the content
delivered so far.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import modelwire as mw
from modelwire._wire.assemble import Assembler
from modelwire._wire.deltas import BlockEnd, EndOfStream, Finish, TextDelta
from modelwire._wire.request import RequestOptions
from modelwire.events import Event
from modelwire.ext import register_wire_api

CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


def _model(api: str) -> mw.Model:
    return mw.Model(id="m", api=api, provider="custom", base_url="http://custom.invalid")


def _events(model: mw.Model, *deltas: Any, start: bool = True) -> list[Event]:
    asm = Assembler(api=model.api, provider=model.provider, model=model.id)
    out: list[Event] = []
    if start:
        asm.start(out)
    asm.feed(list(deltas), out)
    return out


def _hello(model: mw.Model) -> list[Event]:
    return _events(model, TextDelta("t", "hel"), TextDelta("t", "lo"), BlockEnd("t"),
                   Finish("stop"), EndOfStream())  # fmt: skip


def test_a_sync_function_serves_the_sync_path() -> None:
    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        yield from _hello(model)

    register_wire_api(fn, "sync-hello")
    events = list(mw.stream_sync(_model("sync-hello"), CTX))
    assert [e.type for e in events] == [
        "start", "text_start", "text_delta", "text_delta", "text_end", "done"
    ]  # fmt: skip
    msg = mw.complete_sync(_model("sync-hello"), CTX)
    assert (msg.text, msg.stop_reason, msg.api) == ("hello", "stop", "sync-hello")


def test_the_sync_path_adds_start_and_stops_at_the_terminal() -> None:
    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        events = _events(model, TextDelta("t", "x"), Finish("stop"), EndOfStream(), start=False)
        yield from events
        yield from events  # anything after the terminal event is never delivered

    register_wire_api(fn, "sync-no-start")
    types = [e.type for e in mw.stream_sync(_model("sync-no-start"), CTX)]
    assert types[0] == "start" and types.count("start") == 1
    assert types[-1] == "done" and types.count("done") == 1


def test_a_failing_sync_function_keeps_its_content() -> None:
    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        yield from _events(model, TextDelta("t", "half"))
        raise RuntimeError("backend went away")

    register_wire_api(fn, "sync-fail")
    msg = mw.complete_sync(_model("sync-fail"), CTX)
    assert (msg.stop_reason, msg.text) == ("error", "half")
    assert msg.error is not None and msg.error.kind == "provider_stream"
    assert "backend went away" in msg.error.message


def test_a_sync_function_without_a_terminal_fails_typed() -> None:
    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        yield from _events(model, TextDelta("t", "cut"))

    register_wire_api(fn, "sync-open-ended")
    events = list(mw.stream_sync(_model("sync-open-ended"), CTX))
    assert [e.type for e in events].count("error") == 1 and events[-1].type == "error"
    msg = events[-1].message
    assert msg.text == "cut" and msg.error is not None
    assert msg.error.kind == "provider_stream" and "without a done or error" in msg.error.message


def test_abort_keeps_the_content_of_a_sync_function() -> None:
    resumed = []

    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        yield from _events(model, TextDelta("t", "kept so far"))
        resumed.append(1)  # pragma: no cover - the stream is aborted before this
        yield from _events(model, Finish("stop"), EndOfStream(), start=False)

    register_wire_api(fn, "sync-abort")
    s = mw.stream_sync(_model("sync-abort"), CTX)
    seen = []
    for e in s:
        seen.append(e.type)
        if e.type == "text_delta":
            s.abort()
    msg = s.result()
    assert seen[-1] == "error" and seen.count("error") == 1
    assert (msg.stop_reason, msg.text) == ("aborted", "kept so far")
    assert resumed == []


def test_an_async_function_on_the_sync_path_says_what_to_do() -> None:
    async def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> AsyncIterator[Event]:
        for e in _hello(model):  # pragma: no cover - never run on the sync path
            yield e

    register_wire_api(fn, "async-only")
    with pytest.raises(mw.ConfigurationError, match=r"async stream function.*mw\.stream\(\)"):
        mw.stream_sync(_model("async-only"), CTX)
    with pytest.raises(mw.ConfigurationError, match="sync generator function"):
        mw.complete_sync(_model("async-only"), CTX)


@pytest.mark.anyio
async def test_a_sync_function_on_the_async_path_never_blocks_the_loop() -> None:
    # The function waits for something only the running loop can do: run in the
    # loop's thread it would wait out its whole timeout and fail the check.
    go = threading.Event()
    waited: list[bool] = []

    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        waited.append(go.wait(10))
        yield from _hello(model)

    register_wire_api(fn, "sync-on-async")
    loop = asyncio.get_running_loop()
    loop.call_later(0.01, go.set)
    msg = await mw.complete(_model("sync-on-async"), CTX)
    assert waited == [True]
    assert (msg.text, msg.stop_reason) == ("hello", "stop")


@pytest.mark.anyio
async def test_a_failing_sync_function_on_the_async_path_keeps_its_content() -> None:
    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Event]:
        yield from _events(model, TextDelta("t", "half"))
        raise RuntimeError("backend went away")

    register_wire_api(fn, "sync-fail-async")
    msg = await mw.complete(_model("sync-fail-async"), CTX)
    assert (msg.stop_reason, msg.text) == ("error", "half")
    assert msg.error is not None and "backend went away" in msg.error.message


def test_a_stream_function_yielding_junk_fails_typed() -> None:
    def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> Iterator[Any]:
        yield from _events(model, TextDelta("t", "ok"))
        yield {"type": "text_delta"}

    register_wire_api(fn, "sync-junk")
    msg = mw.complete_sync(_model("sync-junk"), CTX)
    assert (msg.stop_reason, msg.text) == ("error", "ok")
    assert msg.error is not None and "yielded dict, not a modelwire event" in msg.error.message

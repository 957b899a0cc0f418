"""The stream object contract (DESIGN §2, §2a), independent of HTTP."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

import modelwire as mw
from eventlist import final
from modelwire._client._streams import AssistantMessageStream, StreamChannel
from modelwire._wire.assemble import Assembler
from modelwire._wire.deltas import EndOfStream, Finish, TextDelta
from modelwire._wire.request import RequestOptions
from modelwire.events import Event
from modelwire.ext import register_wire_api

CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


def _model(api: str) -> mw.Model:
    return mw.Model(id="m", api=api, provider="custom", base_url="http://127.0.0.1:9/v1")


def _producer(n: int, *, fail_at: int | None = None, gate: asyncio.Event | None = None) -> Any:
    async def produce(s: StreamChannel) -> None:
        asm = Assembler(api="custom", provider="p", model="m")
        s.abort_events = lambda: _ev(asm.abort)
        s.fail_events = lambda exc: _ev(
            lambda out: asm.fail(mw.errors.ProviderStreamError(str(exc)), out)
        )
        out: list[Event] = []
        asm.start(out)
        await s.put(out)
        for i in range(n):
            if fail_at == i:
                raise RuntimeError("producer crashed")
            if gate is not None and i == 2:
                await gate.wait()
            out = []
            asm.feed([TextDelta("t", f"{i},")], out)
            await s.put(out)
        out = []
        asm.feed([Finish("stop", "stop"), EndOfStream()], out)
        await s.put(out)

    return produce


def _ev(fn: Any) -> list[Event]:
    out: list[Event] = []
    fn(out)
    return out


@pytest.mark.anyio
async def test_start_first_one_terminal_last_and_result_is_terminal_message() -> None:
    s = AssistantMessageStream(_producer(5))
    events = [e async for e in s]
    assert events[0].type == "start"
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    msg = await s.result()
    assert msg is events[-1].message
    assert msg.text == "0,1,2,3,4,"
    assert [e async for e in s] == []  # exhausted


@pytest.mark.anyio
async def test_result_without_iterating_and_never_hangs_when_producer_dies() -> None:
    s = AssistantMessageStream(_producer(5, fail_at=3))
    msg = await asyncio.wait_for(s.result(), 5)
    assert msg.stop_reason == "error"
    assert msg.text == "0,1,2,"  # content received so far is kept
    assert msg.error is not None and "producer crashed" in msg.error.message


@pytest.mark.anyio
async def test_aclose_mid_stream_yields_aborted_with_content() -> None:
    gate = asyncio.Event()
    s = AssistantMessageStream(_producer(5, gate=gate))
    seen = []
    async for e in s:
        seen.append(e)
        if e.type == "text_delta" and e.delta == "1,":
            break
    await s.aclose()
    msg = await s.result()
    assert msg.stop_reason == "aborted"
    assert msg.error is not None and msg.error.kind == "aborted"
    assert msg.text.startswith("0,1,")


@pytest.mark.anyio
async def test_abort_from_another_thread_next_item_is_aborted() -> None:
    gate = asyncio.Event()
    s = AssistantMessageStream(_producer(5, gate=gate))
    first = await s.__anext__()
    assert first.type == "start"
    t = threading.Thread(target=s.abort)
    t.start()
    t.join()
    nxt = await asyncio.wait_for(s.__anext__(), 5)
    assert nxt.type == "error" and nxt.reason == "aborted"
    with pytest.raises(StopAsyncIteration):
        await s.__anext__()


@pytest.mark.anyio
async def test_abort_before_iteration() -> None:
    s = AssistantMessageStream(_producer(3))
    s.abort()
    events = [e async for e in s]
    assert [e.type for e in events] == ["error"]
    assert final(events).stop_reason == "aborted"


@pytest.mark.anyio
async def test_context_manager_closes() -> None:
    gate = asyncio.Event()
    async with AssistantMessageStream(_producer(5, gate=gate)) as s:
        await s.__anext__()
    msg = await s.result()
    assert msg.stop_reason == "aborted"


@pytest.mark.anyio
async def test_consumer_task_cancellation_stops_producer() -> None:
    gate = asyncio.Event()
    s = AssistantMessageStream(_producer(5, gate=gate))

    async def consume() -> None:
        async for _ in s:
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    msg = await asyncio.wait_for(s.result(), 5)
    assert msg.stop_reason == "aborted"
    assert s._task is not None and s._task.done()


@pytest.mark.anyio
async def test_register_custom_stream_function() -> None:
    async def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> AsyncIterator[Event]:
        asm = Assembler(api=model.api, provider=model.provider, model=model.id)
        out: list[Event] = []
        asm.feed([TextDelta("t", "hello"), Finish("stop"), EndOfStream()], out)
        for e in out:
            yield e

    register_wire_api(fn, "custom-test")
    msg = await mw.complete(_model("custom-test"), CTX)
    assert msg.text == "hello"
    events = [e async for e in mw.stream(_model("custom-test"), CTX)]
    assert events[0].type == "start" and events[-1].type == "done"


def test_stream_raises_configuration_errors_at_once() -> None:
    m = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(mw.ConfigurationError, match="tool_choice"):
        mw.stream(m, CTX, tool_choice="sometimes")
    with pytest.raises(mw.ConfigurationError, match="extra_body may not override"):
        mw.stream(m, CTX, extra_body={"model": "x"})
    with pytest.raises(mw.ConfigurationError, match="unknown api"):
        mw.stream(_model("nope"), CTX)
    with pytest.raises(mw.ConfigurationError, match="max_tokens"):
        mw.stream(m, CTX, max_tokens=0)
    with pytest.raises(mw.ConfigurationError, match="reasoning"):
        mw.stream(m, CTX, reasoning="extreme")
    with pytest.raises(mw.ConfigurationError, match="Context"):
        mw.stream(m, 42)  # type: ignore[arg-type]
    openai = mw.Model(
        id="m", api="openai-chat", provider="openai", base_url="https://api.openai.com/v1"
    )
    with pytest.raises(mw.MissingAPIKeyError, match="OPENAI_API_KEY"):
        mw.stream(openai, CTX)


# --------------------------------------------------------------------------- dropped and aborted streams


@pytest.mark.anyio
async def test_a_dropped_stream_stops_its_producer_at_once() -> None:
    # The producer task holds the stream's channel, never the stream: dropping the
    # last reference (with the GC off: reference counting alone) cancels it. Before,
    # the task held the stream, so nothing ran until the idle timeout.
    closed = asyncio.Event()

    async def produce(ch: Any) -> None:
        asm = Assembler(api="custom", provider="p", model="m")
        out: list[Event] = []
        asm.start(out)
        asm.feed([TextDelta("t", "x")], out)
        await ch.put(out)
        try:
            await asyncio.sleep(60)  # a stalled connection
        finally:
            closed.set()  # where the HTTP producer closes its response

    import gc

    gc.disable()
    try:
        s = AssistantMessageStream(produce)
        async for e in s:
            if e.type == "text_delta":
                break
        del s
        await asyncio.wait_for(closed.wait(), 1)
    finally:
        gc.enable()


def test_a_dropped_sync_stream_closes_its_producer_at_once() -> None:
    from modelwire._client._streams import SyncAssistantMessageStream

    closed = threading.Event()

    def produce(ch: Any) -> Any:
        asm = Assembler(api="custom", provider="p", model="m")
        out: list[Event] = []
        asm.start(out)
        asm.feed([TextDelta("t", "x")], out)
        try:
            yield out
            yield []  # never reached: the consumer drops the stream
        finally:
            closed.set()

    import gc

    gc.disable()
    try:
        s = SyncAssistantMessageStream(produce)
        for e in s:
            if e.type == "text_delta":
                break
        del s
        assert closed.is_set()
    finally:
        gc.enable()


async def _abort_after_text(model: mw.Model) -> tuple[list[str], mw.AssistantMessage]:
    s = mw.stream(model, CTX)
    seen: list[str] = []
    async for e in s:
        seen.append(e.type)
        if e.type == "text_delta":
            s.abort()
    return seen, await s.result()


@pytest.mark.anyio
async def test_abort_keeps_the_content_of_a_custom_stream_function() -> None:
    # Before: the aborted message was built by an assembler that saw none of the
    # function's events, so its text was empty although a text_delta was delivered.
    async def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> AsyncIterator[Event]:
        asm = Assembler(api=model.api, provider=model.provider, model=model.id)
        out: list[Event] = []
        asm.start(out)
        asm.feed([TextDelta("t", "kept so far")], out)
        for e in out:
            yield e
        await asyncio.sleep(60)

    register_wire_api(fn, "custom-abort")
    seen, msg = await _abort_after_text(_model("custom-abort"))
    assert seen[-1] == "error"
    assert (msg.stop_reason, msg.text) == ("aborted", "kept so far")
    assert msg.error is not None and msg.error.kind == "aborted"
    assert msg.api == "custom-abort"


@pytest.mark.anyio
async def test_a_failing_custom_stream_function_keeps_its_content() -> None:
    async def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> AsyncIterator[Event]:
        asm = Assembler(api=model.api, provider=model.provider, model=model.id)
        out: list[Event] = []
        asm.start(out)
        asm.feed([TextDelta("t", "half")], out)
        for e in out:
            yield e
        raise RuntimeError("backend went away")

    register_wire_api(fn, "custom-fail")
    msg = await mw.complete(_model("custom-fail"), CTX)
    assert (msg.stop_reason, msg.text) == ("error", "half")
    assert msg.error is not None and msg.error.kind == "provider_stream"
    assert "backend went away" in msg.error.message


@pytest.mark.anyio
async def test_abort_keeps_the_content_of_a_text_api() -> None:
    async def gen(model: mw.Model, ctx: mw.Context) -> AsyncIterator[str]:
        yield "first piece"
        await asyncio.sleep(60)
        yield "never"

    mw.testing.register_text_api("text-abort", gen)
    seen, msg = await _abort_after_text(_model("text-abort"))
    assert (seen[-1], msg.stop_reason, msg.text) == ("error", "aborted", "first piece")


@pytest.mark.anyio
async def test_abort_keeps_the_content_of_a_scripted_model() -> None:
    sm = mw.testing.ScriptedModel(["Hello there, world"], piece_chars=6, delay=0.01)
    seen, msg = await _abort_after_text(sm.model)
    assert (seen[-1], msg.stop_reason, msg.text) == ("error", "aborted", "Hello ")
    assert msg.provider == "scripted"


@pytest.mark.anyio
async def test_abort_before_iterating_sends_nothing_and_yields_only_the_terminal() -> None:
    calls = []

    async def fn(model: mw.Model, ctx: mw.Context, options: RequestOptions) -> AsyncIterator[Event]:
        calls.append(1)
        yield  # type: ignore[misc]

    register_wire_api(fn, "custom-never")
    s = mw.stream(_model("custom-never"), CTX)
    s.abort()
    events = [e async for e in s]
    assert [(e.type, e.reason) for e in events if isinstance(e, mw.ErrorEvent)] == [
        ("error", "aborted")
    ]
    assert len(events) == 1
    assert calls == []

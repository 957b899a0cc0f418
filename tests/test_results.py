"""Typed results: ``replay()`` returns a list of events whose final
message is typed, and every message keeps the model the provider says answered
(``AssistantMessage.response_model``) beside the requested ``model``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import modelwire as mw
from modelwire.events import Replay
from recorded import recorded_streams

FIXTURES = recorded_streams()

CHAT_BODY = (
    b'data: {"id":"c1","model":"gpt-4o-2024-08-06","choices":[{"index":0,'
    b'"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","model":"gpt-4o-2024-08-06","choices":[{"index":0,'
    b'"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def test_replay_is_the_list_of_events_with_a_typed_final_message() -> None:
    events = mw.replay("openai-chat", [CHAT_BODY[:17], CHAT_BODY[17:]])
    assert isinstance(events, Replay)
    assert isinstance(events, list)
    assert [e.type for e in events] == [
        "start", "text_start", "text_delta", "text_end", "done",
    ]  # fmt: skip
    assert events == list(events)  # DESIGN §2: a list of events, as before
    assert events.terminal is events[-1]
    assert isinstance(events.terminal, mw.DoneEvent)
    assert events.message is events.terminal.message
    assert events.message.text == "hi"
    assert events.message.stop_reason == "stop"


def test_a_failed_replay_types_its_error_terminal_too() -> None:
    events = mw.replay("openai-chat", CHAT_BODY[: CHAT_BODY.index(b"data: [DONE]") - 60])
    assert isinstance(events.terminal, mw.ErrorEvent)
    assert events.message.stop_reason == "error"
    assert events.message.error is not None
    assert events.message.error.kind == "truncated_stream"
    assert events.message.text == "hi"


def test_the_terminal_is_fixed_when_built() -> None:
    events = mw.replay("openai-chat", CHAT_BODY)
    final = events.message
    events.pop()
    assert events.message is final
    with pytest.raises(ValueError, match="terminal"):
        Replay(list(events))


def test_response_model_is_kept_and_model_stays_the_requested_id() -> None:
    model = mw.Model(id="gpt-4o", api="openai-chat", provider="local",
                     base_url="http://127.0.0.1:9/v1")  # fmt: skip
    msg = mw.replay("openai-chat", CHAT_BODY, model).message
    assert msg.model == "gpt-4o"
    assert msg.response_model == "gpt-4o-2024-08-06"
    assert mw.replay("openai-chat", CHAT_BODY).message.model == ""
    # Round-trips like every other field; an old message without it reads as None.
    assert mw.from_json(mw.to_json(msg), mw.AssistantMessage) == msg
    old = json.loads(mw.to_json(msg))
    del old["response_model"]
    assert mw.from_json(json.dumps(old), mw.AssistantMessage).response_model is None


def test_every_snapshot_carries_the_answering_model_once_it_is_known() -> None:
    events = mw.replay("openai-chat", CHAT_BODY)
    assert [e.partial.response_model for e in events[1:]] == ["gpt-4o-2024-08-06"] * 4


def _payloads(body: bytes) -> list[dict[str, Any]]:
    out = []
    for line in body.decode("utf-8").splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            try:
                value = json.loads(data)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def _announced_model(api: str, body: bytes) -> str | None:
    """The model each API's stream names, read straight from the payloads: OpenAI
    Chat's first chunk with an id, Anthropic's ``message_start``, Gemini's first
    chunk with a ``responseId``, Responses' first event with a ``response``."""
    for p in _payloads(body):
        if api == "openai-chat" and p.get("id"):
            return p.get("model") or None
        if api == "anthropic-messages" and p.get("type") == "message_start":
            return p["message"].get("model") or None
        if api == "google-generative-ai" and p.get("responseId"):
            return p.get("modelVersion") or None
        if api == "openai-responses" and isinstance(p.get("response"), dict):
            return p["response"].get("model") or None
    return None


FOLDERS = {
    "openai-chat": "openai-chat",
    "anthropic-messages": "anthropic",
    "google-generative-ai": "google",
    "openai-responses": "openai-responses",
}
RECORDED = [
    pytest.param(api, path, id=f"{folder}/{path.name}")
    for api, folder in FOLDERS.items()
    for path in sorted((FIXTURES / folder).glob("*.sse"))
]


@pytest.mark.parametrize(("api", "path"), RECORDED)
def test_response_model_is_the_model_each_recorded_stream_names(api: str, path: Path) -> None:
    body = FIXTURES.joinpath(path).read_bytes()
    expected = _announced_model(api, body)
    msg = mw.replay(api, body).message
    if expected is None:
        assert msg.response_model is None
    else:
        assert msg.response_model == expected


def test_some_recorded_stream_of_each_api_names_its_model() -> None:
    # Guards the test above against an oracle that finds nothing.
    for api, folder in FOLDERS.items():
        names = {_announced_model(api, p.read_bytes()) for p in (FIXTURES / folder).glob("*.sse")}
        assert names - {None}, api


def test_the_final_message_is_typed_for_callers(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    code = tmp_path / "caller.py"
    code.write_text(
        "import modelwire as mw\n"
        "events = mw.replay('openai-chat', b'')\n"
        "message: mw.AssistantMessage = events.message\n"
        "answered: str | None = message.response_model\n"
        "first: mw.Event = events[0]\n"
        "n: int = events.message\n"
    )
    out, _, status = mypy_api.run(
        [str(code), "--strict", "--no-incremental", "--cache-dir=/dev/null", "--no-error-summary"]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1
    assert [int(line.split(":")[1]) for line in errors] == [6], out


def test_tags_narrow_unions_and_constructors_take_lists_for_callers(tmp_path: Path) -> None:
    # event.type / block.type / message.role are Literal tags, so a type checker
    # narrows a union by them; the message types take lists as the runtime does.
    mypy_api = pytest.importorskip("mypy.api")
    code = tmp_path / "caller.py"
    code.write_text(
        "import modelwire as mw\n"
        "ctx = mw.Context(messages=[mw.UserMessage(content='hi')], tools=[])\n"
        "events = mw.replay('openai-chat', b'')\n"
        "deltas: list[str] = [e.delta for e in events if e.type == 'text_delta']\n"
        "texts = [b.text for b in events.message.content if b.type == 'text']\n"
        "last = ctx.messages[-1]\n"
        "if last.role == 'user':\n"
        "    content: str | tuple[mw.types.UserContent, ...] = last.content\n"
        "r = mw.ToolResultMessage(tool_call_id='c', tool_name='t', content='ok')\n"
        "a = mw.AssistantMessage(content=[mw.TextContent(text='x')], api='', provider='', model='')\n"
        "wrong = [e.delta for e in events if e.type == 'done']\n"
    )
    out, _, status = mypy_api.run(
        [str(code), "--strict", "--no-incremental", "--cache-dir=/dev/null", "--no-error-summary"]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1
    assert [int(line.split(":")[1]) for line in errors] == [11], out


def test_tags_are_literal_at_runtime_too() -> None:
    assert mw.TextDeltaEvent.type == "text_delta"
    assert mw.TextContent.type == "text"
    assert mw.AssistantMessage.role == "assistant"
    ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=[])
    assert ctx.messages == (mw.UserMessage(content="hi", timestamp=ctx.messages[0].timestamp),)
    assert ctx.tools == ()


def test_structs_stay_frozen_values() -> None:
    msg = mw.replay("openai-chat", CHAT_BODY).message
    with pytest.raises(AttributeError):
        msg.response_model = "x"  # type: ignore[misc]
    assert msgspec.structs.replace(msg, response_model=None).response_model is None

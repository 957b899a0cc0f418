"""The server side of ``ollama-chat``: modelwire's events → Ollama's ``/api/chat`` NDJSON
stream, and a final message → the one object ``"stream": false`` gets
(``ollama_chat.render``).

Shapes are checked against Ollama's reference,
https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat completion":
one JSON object per line, the last with ``done: true``, ``done_reason`` and the counts;
tool calls as ``{"function": {"name", "arguments": {…}}}`` with the arguments an
object; "Errors": ``{"error": "…"}``), and against the hand-written streams of
tests/data/ollama (see its SOURCES.md), which the renderer must write back from their
own events.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from eventlist import final, plain
from modelwire._apis._server.request import GatewayRequest
from modelwire._apis.ollama_chat import spec
from modelwire._apis.ollama_chat.render import SERVER, Renderer, message_body
from modelwire.events import Event, RestartEvent
from modelwire.testing import deltas_for, events_from_deltas

API = "ollama-chat"
DATA = Path(__file__).parent / "data" / "ollama"
ORIGIN = mw.Model(id="m", api=API, provider="mock", base_url="http://127.0.0.1")
OTHER = mw.Model(id="m", api="anthropic-messages", provider="mock", base_url="http://127.0.0.1")
REQUEST = GatewayRequest(model="qwen3", context=mw.Context(), options={}, stream=True)
USAGE = mw.Usage(input=12, output=7)
# Go's RFC 3339 with nanoseconds, as Ollama writes created_at (api/types.go).
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z")


def msg(*content: Any, stop: Any = "stop", api: str = API, **kw: Any) -> mw.AssistantMessage:
    return mw.AssistantMessage(content=list(content), api=api, provider="p", model="m",
                               stop_reason=stop, usage=kw.pop("usage", USAGE), **kw)  # fmt: skip


def events_of(script: Any, pc: int = 4, origin: mw.Model = ORIGIN) -> list[Event]:
    return events_from_deltas(deltas_for(script, piece_chars=pc), origin)


def render(script: Any, pc: int = 4, origin: mw.Model = ORIGIN) -> bytes:
    r = Renderer(REQUEST, "")
    return b"".join(r.feed(e) for e in events_of(script, pc, origin))


def lines(body: bytes) -> list[dict[str, Any]]:
    assert body.endswith(b"\n")
    return [json.loads(line) for line in body.decode().split("\n")[:-1]]


def content_of(m: mw.AssistantMessage) -> list[Any]:
    """What a client reads back: Ollama has no call ids (the decoder makes them up),
    signatures or citations, and no block boundaries (texts in a row are one text)."""
    out: list[Any] = []
    for b in m.content:
        if isinstance(b, mw.TextContent | mw.ThinkingContent):
            kind, text = (("text", b.text) if isinstance(b, mw.TextContent)
                          else ("thinking", b.thinking))  # fmt: skip
            if out and out[-1][0] == kind:
                out[-1] = (kind, out[-1][1] + text)
            elif text:
                out.append((kind, text))
        elif isinstance(b, mw.ToolCall):
            out.append(("call", b.name, b.arguments))
    return out


SCRIPTS: dict[str, Any] = {
    "text": msg(mw.TextContent(text='Bonjour ! Je suis là 🙂 "q" \\ \n')),
    "texts": msg(mw.TextContent(text="one "), mw.TextContent(text="two")),
    "thinking": msg(
        mw.ThinkingContent(thinking="2 - 5 is -3.", signature="sig-7f3a"),
        mw.TextContent(text="-3."),
    ),
    "parallel calls": msg(
        mw.TextContent(text="I will read both."),
        mw.ToolCall(id="read_1", name="read", arguments={"path": "a"}),
        mw.ToolCall(
            id="read_2",
            name="read",
            arguments={"path": "é\n", "n": [1, 2.5, None]},
            raw_arguments='{\n  "path": "é\\n", "n": [1, 2.5, null]\n}',
        ),
        stop="tool_use",
    ),
    "call without arguments": msg(mw.ToolCall(id="c", name="now", arguments={}), stop="tool_use"),
    "length": msg(mw.TextContent(text="The ocean,"), stop="length"),
    "empty": msg(),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_rendered_stream_replays_to_the_script(name: str) -> None:
    script = SCRIPTS[name]
    for pc in (1, 5, 100):
        body = render(script, pc=pc)
        whole = mw.replay(API, body)
        got = final(whole)
        assert content_of(got) == content_of(script)
        assert got.stop_reason == script.stop_reason
        assert (got.usage.input, got.usage.output) == (12, 7)
        # The same events whatever the reads' sizes.
        pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
        assert plain(mw.replay(API, pieces)) == plain(whole)


def test_each_feed_is_whole_lines_each_a_json_object() -> None:
    r = Renderer(REQUEST, "")
    stamps: list[str] = []
    for event in events_of(SCRIPTS["parallel calls"], pc=3):
        out = r.feed(event)
        if not out:
            continue
        for line in lines(out):  # whole lines: every output ends with \n
            assert line["model"] == "qwen3"  # the name the client asked for
            assert STAMP.fullmatch(line["created_at"])
            stamps.append(line["created_at"])
    # created_at grows line by line: the decoder's call ids hash the first one.
    assert stamps == sorted(set(stamps))


def test_lines_have_the_documented_shape() -> None:
    got = lines(render(SCRIPTS["parallel calls"], pc=100))
    assert got[0] == {"model": "qwen3", "created_at": got[0]["created_at"],
                      "message": {"role": "assistant", "content": "I will read both."},
                      "done": False}  # fmt: skip
    # One call per line, whole; the arguments an object (as raw_arguments has them,
    # key order kept), and no id: Ollama matches results by name and order.
    assert [line["message"]["tool_calls"] for line in got[1:3]] == [
        [{"function": {"name": "read", "arguments": {"path": "a"}}}],
        [{"function": {"name": "read", "arguments": {"path": "é\n", "n": [1, 2.5, None]}}}],
    ]
    assert all(line["message"]["content"] == "" for line in got[1:3])
    last = got[-1]
    assert last["message"] == {"role": "assistant", "content": ""}
    # A turn that calls tools ends with "stop": Ollama has no reason of its own for it.
    assert last["done"] is True and last["done_reason"] == "stop"
    assert (last["prompt_eval_count"], last["eval_count"]) == (12, 7)
    assert list(last) == ["model", "created_at", "message", "done", "done_reason",
                          "total_duration", "load_duration", "prompt_eval_count",
                          "prompt_eval_duration", "eval_count", "eval_duration"]  # fmt: skip


def test_thinking_goes_in_message_thinking_without_its_signature() -> None:
    body = render(SCRIPTS["thinking"], pc=100)
    got = lines(body)
    assert got[0]["message"] == {"role": "assistant", "content": "", "thinking": "2 - 5 is -3."}
    assert b"sig-7f3a" not in body  # Ollama has no thinking signatures


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (msg(mw.TextContent(text="x"), stop="length"), "length"),
        (msg(mw.TextContent(text="x"), stop="length", api="anthropic-messages"), "length"),
        (
            msg(
                mw.TextContent(text="x"), api="anthropic-messages", provider_stop_reason="end_turn"
            ),
            "stop",
        ),
        (msg(mw.ToolCall(id="c", name="f", arguments={}), stop="tool_use"), "stop"),
    ],
)
def test_done_reason_comes_from_the_spec_table(message: mw.AssistantMessage, reason: str) -> None:
    assert lines(render(message))[-1]["done_reason"] == reason
    assert reason in spec.DONE_REASONS


def test_cache_reads_and_writes_count_as_prompt_tokens() -> None:
    usage = mw.Usage(input=5, output=3, cache_read=20, cache_write=2)
    last = lines(render(msg(mw.TextContent(text="hi"), usage=usage)))[-1]
    assert (last["prompt_eval_count"], last["eval_count"]) == (27, 3)


def test_another_apis_blocks_text_provider_run_tools_and_drops_what_has_no_form() -> None:
    search = mw.ServerToolCall(id="s1", name="web_search", input={"query": "q"},
                               provider_type="server_tool_use")  # fmt: skip
    item = mw.ProviderItem(api="anthropic-messages", provider_type="x", data="{}")
    cite = mw.Citation(kind="url", url="https://e.example", cited_text="c")
    script = msg(search, item, mw.TextContent(text="Answer.", citations=(cite,)),
                 api="anthropic-messages")  # fmt: skip
    got = final(mw.replay(API, render(script, pc=100, origin=OTHER)))
    # Ollama runs no tools: the call reads as the handoff's text; the item and the
    # citation have no Ollama form.
    assert got.text.endswith("\nAnswer.") and "web_search" in got.text
    assert [type(b).__name__ for b in got.content] == ["TextContent"]


def test_an_error_event_is_an_error_line() -> None:
    failed = msg(mw.TextContent(text="Partial"), stop="error",
                 error=mw.ErrorInfo(kind="provider_stream", message="the GPU fell over"))  # fmt: skip
    body = render(failed)
    assert lines(body)[-1] == {"error": "the GPU fell over"}  # api.md, "Errors"
    got = final(mw.replay(API, body))
    assert got.stop_reason == "error" and got.error is not None
    assert got.error.message == "the GPU fell over"
    assert got.error.kind == SERVER.in_band_kind
    assert got.text == "Partial"


def test_a_restart_writes_nothing_and_the_lines_go_on() -> None:
    r = Renderer(REQUEST, "")
    first = b"".join(r.feed(e) for e in events_of(SCRIPTS["text"])[:-1])
    assert r.feed(RestartEvent(message=msg(stop="error"))) == b""
    rest = b"".join(r.feed(e) for e in events_of(SCRIPTS["texts"]))
    assert final(mw.replay(API, first + rest)).text.endswith("one two")


def _merged(content: list[Any]) -> list[Any]:
    """A whole answer has one ``thinking``, one ``content``, then its calls."""
    thinking = "".join(c[1] for c in content if c[0] == "thinking")
    text = "".join(c[1] for c in content if c[0] == "text")
    return ([("thinking", thinking)] if thinking else []) + (
        [("text", text)] if text else []) + [c for c in content if c[0] == "call"]  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_message_body_is_the_whole_answer_in_one_object(name: str) -> None:
    script = SCRIPTS[name]
    body = message_body(REQUEST, script, "ignored")
    obj = json.loads(body)
    assert b"\n" not in body and obj["model"] == "qwen3" and obj["done"] is True
    assert STAMP.fullmatch(obj["created_at"])
    assert obj["done_reason"] == ("length" if script.stop_reason == "length" else "stop")
    assert (obj["prompt_eval_count"], obj["eval_count"]) == (12, 7)
    assert set(obj["message"]) <= {"role", "content", "thinking", "tool_calls"}
    # The object is a stream's last line with the whole message: it replays as one.
    got = final(mw.replay(API, body + b"\n"))
    assert content_of(got) == _merged(content_of(script))
    assert got.stop_reason == script.stop_reason


def test_message_body_fields() -> None:
    obj = json.loads(message_body(REQUEST, msg(
        mw.ThinkingContent(thinking="a"), mw.TextContent(text="b"), mw.ThinkingContent(
            thinking="", signature="enc", redacted=True),
        mw.ToolCall(id="c", name="f", arguments={"k": 1}), stop="tool_use"), ""))  # fmt: skip
    assert obj["message"] == {"role": "assistant", "content": "b", "thinking": "a",
                              "tool_calls": [{"function": {"name": "f", "arguments": {"k": 1}}}]}  # fmt: skip
    empty = json.loads(message_body(REQUEST, msg(), ""))
    assert empty["message"] == {"role": "assistant", "content": ""}


_VOLATILE = {"created_at", "total_duration", "load_duration", "prompt_eval_duration",
             "eval_duration"}  # fmt: skip


def _comparable(line: dict[str, Any]) -> dict[str, Any]:
    """A line without what modelwire does not keep: times, and the ids and indexes
    newer servers give calls (the renderer writes the documented call shape)."""
    out = {k: v for k, v in line.items() if k not in _VOLATILE}
    for call in out.get("message", {}).get("tool_calls", ()):
        call.pop("id", None)
        call["function"].pop("index", None)
    return out


@pytest.mark.parametrize("path", sorted(DATA.glob("*.ndjson")), ids=lambda p: p.name)
def test_a_recorded_stream_is_written_back_from_its_own_events(path: Path) -> None:
    src = path.read_bytes()
    events = mw.replay(API, src, ORIGIN)
    message = final(events)
    request = GatewayRequest(model=message.response_model or "", context=mw.Context(),
                             options={}, stream=True)  # fmt: skip
    r = Renderer(request, "")
    got = lines(b"".join(r.feed(e) for e in events))
    want = lines(src if src.endswith(b"\n") else src + b"\n")
    if message.error is not None and message.error.kind == "truncated_stream":
        # No done line was sent: a server that saw the cut says so in an error line.
        assert got[-1] == {"error": message.error.message}
        got = got[:-1]
    assert [_comparable(x) for x in got] == [_comparable(x) for x in want]


def test_server_facts() -> None:
    assert SERVER.content_type == "application/x-ndjson"
    assert SERVER.version_segment == ""  # base_url is the server root
    assert SERVER.streams("/api/chat", {"model": "m"})  # stream defaults to true
    assert not SERVER.streams("/api/chat", {"stream": False})
    assert SERVER.error_body(404, "model 'x' not found", None).body == {
        "error": "model 'x' not found"}  # fmt: skip
    assert SERVER.render_models is not None and SERVER.models_path == "/api/tags"
    assert [m["name"] for m in SERVER.render_models(["a", "b"])["models"]] == ["a", "b"]

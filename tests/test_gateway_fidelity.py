"""Translation fidelity: the official SDKs (openai for Chat Completions and Responses,
anthropic for Messages) against one GatewayServer, backends of every wire API served
by a MockServer, streamed and not. Each answer the SDK assembles is compared with what
modelwire itself decodes from the backend's bytes: parallel tool calls, usage with
cache reads/writes, stop reasons, unicode, empty answers, mid-stream failures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic import types as at
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types import CompletionUsage, chat, responses

import modelwire as mw
from modelwire._apis._common import block_as_text
from modelwire._apis.openai_chat.render import message_body
from modelwire.gateway import GatewayServer, hash_key
from modelwire.gateway._frontend import GatewayRequest
from modelwire.testing import APIS, MockServer, Reply, render
from modelwire.types import Context, ErrorInfo

KEY = "sk-gw-fidelity-0123456789"
FRONTS = ("chat", "responses", "anthropic")
TOOL_NAMES = ("ls", "cat", "grep")
#: APIs whose wire form has no call ids: modelwire makes one up per call.
MADE_UP_IDS = {"google-generative-ai", "ollama-chat"}
#: APIs whose wire form carries arguments as a JSON value, not text.
VALUE_ARGUMENTS = {"anthropic-messages", "bedrock-converse", "google-generative-ai",
                   "ollama-chat"}  # fmt: skip


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    models: dict[str, Any] = {
        api: {"api": api, "id": f"mock-{api}", "base_url": backend.model(api).base_url}
        for api in APIS
    }
    cfg = {"models": models, "keys": {"team": {"key_sha256": hash_key(KEY), "models": ["*"]}}}
    with GatewayServer(cfg) as gw:
        yield gw


@pytest.fixture(autouse=True)
def fresh(backend: MockServer) -> Iterator[None]:
    yield
    with backend._lock:
        backend._replies.clear()


@pytest.fixture(scope="module")
def oai(gateway: GatewayServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=KEY, max_retries=0) as c:
        yield c


@pytest.fixture(scope="module")
def ant(gateway: GatewayServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=gateway.base_url, api_key=KEY, max_retries=0) as c:
        yield c


TOOLS_CHAT: list[Any] = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in TOOL_NAMES
]
TOOLS_RESP: list[Any] = [
    {"type": "function", "name": n, "parameters": {"type": "object"}} for n in TOOL_NAMES
]
TOOLS_ANT: list[Any] = [{"name": n, "input_schema": {"type": "object"}} for n in TOOL_NAMES]


class Seen:
    """What a client got, in one shape for the three APIs."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: list[tuple[str, str, str]] = []  # id, name, raw arguments
        self.stop = ""
        self.usage: dict[str, int] = {}
        self.thinking: list[str] = []
        self.body: Any = None


def ask(front: str, api: str, stream: bool, oai: openai.OpenAI, ant: anthropic.Anthropic,
        prompt: str = "go") -> Seen:  # fmt: skip
    seen = Seen()
    if front == "chat":
        kw: dict[str, Any] = {"model": api, "tools": TOOLS_CHAT,
                              "messages": [{"role": "user", "content": prompt}]}  # fmt: skip
        if stream:
            state = ChatCompletionStreamState()
            for chunk in oai.chat.completions.create(
                **kw, stream=True, stream_options={"include_usage": True}
            ):
                state.handle_chunk(chunk)
            # (get_final_completion raises on a length stop: it parses the content)
            done: Any = state.current_completion_snapshot
        else:
            done = oai.chat.completions.create(**kw)
        seen.body = done
        m = done.choices[0].message
        seen.text = m.content or ""
        seen.calls = [(c.id, c.function.name, c.function.arguments) for c in m.tool_calls or ()]
        seen.stop = done.choices[0].finish_reason
        u = done.usage
        d = u.prompt_tokens_details
        seen.usage = {"prompt": u.prompt_tokens, "output": u.completion_tokens,
                      "total": u.total_tokens, "cached": d.cached_tokens if d else 0}  # fmt: skip
        extra = m.model_extra or {}
        if extra.get("reasoning_content"):
            seen.thinking = [extra["reasoning_content"]]
    elif front == "responses":
        kw = {"model": api, "tools": TOOLS_RESP, "input": prompt}
        if stream:
            with oai.responses.stream(**kw) as s:
                ends = [e for e in s if e.type in ("response.completed", "response.incomplete")]
                # (get_final_response takes response.completed only)
                r: Any = ends[-1].response
            assert len(ends) == 1
        else:
            r = oai.responses.create(**kw)
        seen.body = r
        seen.text = r.output_text
        seen.calls = [(i.call_id, i.name, i.arguments) for i in r.output
                      if i.type == "function_call"]  # fmt: skip
        seen.stop = r.status + (f":{r.incomplete_details.reason}" if r.incomplete_details else "")
        u = r.usage
        seen.usage = {"prompt": u.input_tokens, "output": u.output_tokens,
                      "total": u.total_tokens,
                      "cached": u.input_tokens_details.cached_tokens}  # fmt: skip
        seen.thinking = ["".join(s.text for s in i.summary) for i in r.output
                         if i.type == "reasoning"]  # fmt: skip
    else:
        kw = {"model": api, "tools": TOOLS_ANT, "max_tokens": 100,
              "messages": [{"role": "user", "content": prompt}]}  # fmt: skip
        if stream:
            with ant.messages.stream(**kw) as st:
                list(st)
                msg: Any = st.get_final_message()
        else:
            msg = ant.messages.create(**kw)
        seen.body = msg
        seen.text = "".join(b.text for b in msg.content if b.type == "text")
        seen.calls = [(b.id, b.name, json.dumps(b.input)) for b in msg.content
                      if b.type == "tool_use"]  # fmt: skip
        seen.stop = msg.stop_reason or ""
        u = msg.usage
        seen.usage = {"input": u.input_tokens, "output": u.output_tokens,
                      "cache_read": u.cache_read_input_tokens or 0,
                      "cache_write": u.cache_creation_input_tokens or 0}  # fmt: skip
        seen.thinking = [b.thinking for b in msg.content if b.type == "thinking"]
    return seen


def said_by(api: str, script: Any) -> mw.AssistantMessage:
    return mw.replay(api, render(script, api)).message


def expected_usage(front: str, u: mw.Usage) -> dict[str, int]:
    if front == "anthropic":
        return {"input": u.input, "output": u.output, "cache_read": u.cache_read,
                "cache_write": u.cache_write}  # fmt: skip
    prompt = u.input + u.cache_read + u.cache_write
    return {"prompt": prompt, "output": u.output, "total": prompt + u.output,
            "cached": u.cache_read}  # fmt: skip


MATRIX = [(f, a, s) for f in FRONTS for a in APIS for s in (False, True)]
IDS = [f"{f}-{a}-{'stream' if s else 'whole'}" for f, a, s in MATRIX]


def three_calls() -> mw.AssistantMessage:
    raws = ['{"dir":  "."}', '{"path": "a\\u00e9 ü.txt"}', '{"pattern" : "x{2}", "n": 1.50}']
    return mw.AssistantMessage(
        content=[mw.ToolCall(id=f"call_{i}", name=n, arguments=json.loads(r), raw_arguments=r)
                 for i, (n, r) in enumerate(zip(TOOL_NAMES, raws, strict=True))],
        api="", provider="", model="", stop_reason="tool_use",
        usage=mw.Usage(input=40, output=12, cache_read=30, cache_write=7),
    )  # fmt: skip


@pytest.mark.parametrize(("front", "api", "stream"), MATRIX, ids=IDS)
def test_three_parallel_calls_and_usage(front: str, api: str, stream: bool, backend: MockServer,
                                        oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:  # fmt: skip
    script = three_calls()
    said = said_by(api, script)
    backend.add(script)
    seen = ask(front, api, stream, oai, ant)
    assert [c[1] for c in seen.calls] == list(TOOL_NAMES)
    if api not in MADE_UP_IDS:
        assert [c[0] for c in seen.calls] == [c.id for c in said.tool_calls]
    assert len({c[0] for c in seen.calls}) == 3
    if front == "anthropic":
        assert [json.loads(c[2]) for c in seen.calls] == [c.arguments for c in said.tool_calls]
    else:
        assert [c[2] for c in seen.calls] == [c.raw_arguments for c in said.tool_calls]
    assert seen.stop == {"chat": "tool_calls", "responses": "completed",
                         "anthropic": "tool_use"}[front]  # fmt: skip
    assert seen.usage == expected_usage(front, said.usage)


def _interleaved(api: str, body: bytes) -> bytes:
    """``body`` with the three calls' events dealt round-robin (each call's own order
    kept, the rest in place), as a backend streaming parallel calls sends them."""
    events = [e for e in body.split(b"\n\n") if e.strip()]
    key = "index" if api == "openai-chat" else "output_index"

    def call_of(event: bytes) -> int | None:
        payload = event.split(b"data: ", 1)[1]
        if payload == b"[DONE]":
            return None
        data = json.loads(payload)
        if api == "openai-chat":
            calls = (data.get("choices") or [{}])[0].get("delta", {}).get("tool_calls")
            return calls[0][key] if calls else None
        item = data.get("item", {})
        if data["type"].startswith("response.function_call") or item.get("type") == (
            "function_call"
        ):
            return int(data[key])
        return None

    first = next(i for i, e in enumerate(events) if call_of(e) is not None)
    last = max(i for i, e in enumerate(events) if call_of(e) is not None)
    lanes: dict[int, list[bytes]] = {}
    for e in events[first : last + 1]:
        lane = call_of(e)
        assert lane is not None  # the calls come together, after any other block
        lanes.setdefault(lane, []).append(e)
    dealt: list[bytes] = []
    while any(lanes.values()):
        for queue in lanes.values():
            if queue:
                dealt.append(queue.pop(0))
    assert dealt != events[first : last + 1]
    return b"".join(e + b"\n\n" for e in [*events[:first], *dealt, *events[last + 1 :]])


INTERLEAVING = ("openai-chat", "openai-responses")
MATRIX_I = [(f, a, s) for f in FRONTS for a in INTERLEAVING for s in (False, True)]


@pytest.mark.parametrize(("front", "api", "stream"), MATRIX_I,
                         ids=[f"{f}-{a}-{'stream' if s else 'whole'}" for f, a, s in MATRIX_I])  # fmt: skip
def test_interleaved_argument_deltas_stay_three_calls(
    front: str, api: str, stream: bool, backend: MockServer, oai: openai.OpenAI,
    ant: anthropic.Anthropic,
) -> None:  # fmt: skip
    script = three_calls()
    body = _interleaved(api, render(script, api, piece_chars=5))
    said = mw.replay(api, [body]).message
    assert [c.raw_arguments for c in said.tool_calls] == [
        c.raw_arguments for c in script.tool_calls
    ]
    backend.add(Reply(body=body))
    seen = ask(front, api, stream, oai, ant)
    assert [c[0] for c in seen.calls] == [c.id for c in said.tool_calls]
    assert [c[1] for c in seen.calls] == list(TOOL_NAMES)
    if front == "anthropic":
        assert [json.loads(c[2]) for c in seen.calls] == [c.arguments for c in said.tool_calls]
    else:
        assert [c[2] for c in seen.calls] == [c.raw_arguments for c in said.tool_calls]


UNICODE = "世界 👩‍👩‍👧 ok\u2028next\u2029 \U0001f600é"
STOPS = {  # modelwire stop → each API's own value (Responses: status[:reason])
    "stop": {"chat": "stop", "responses": "completed", "anthropic": "end_turn"},
    "length": {"chat": "length", "responses": "incomplete:max_output_tokens",
               "anthropic": "max_tokens"},
}  # fmt: skip


@pytest.mark.parametrize(("front", "api", "stream"), MATRIX, ids=IDS)
def test_unicode_text_byte_split_and_length_stop(front: str, api: str, stream: bool,
                                                 backend: MockServer, oai: openai.OpenAI,
                                                 ant: anthropic.Anthropic) -> None:  # fmt: skip
    script = mw.AssistantMessage(
        content=[mw.TextContent(text=UNICODE)], api="", provider="", model="",
        stop_reason="length", usage=mw.Usage(input=5, output=9, cache_read=2),
    )  # fmt: skip
    body = render(script, api, piece_chars=1)
    said = mw.replay(api, [body]).message
    assert said.text == UNICODE
    backend.add(Reply(body=body, chunk_size=1))  # every byte its own read: emoji cut
    seen = ask(front, api, stream, oai, ant)
    assert seen.text == UNICODE
    assert seen.calls == []
    assert seen.stop == STOPS["length"][front]
    assert seen.usage == expected_usage(front, said.usage)


@pytest.mark.parametrize(("front", "api", "stream"), MATRIX, ids=IDS)
def test_an_answer_with_no_content(front: str, api: str, stream: bool, backend: MockServer,
                                   oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:  # fmt: skip
    script = mw.AssistantMessage(content=[], api="", provider="", model="", stop_reason="stop",
                                 usage=mw.Usage(input=3))  # fmt: skip
    said = said_by(api, script)
    backend.add(script)
    seen = ask(front, api, stream, oai, ant)
    assert seen.text == said.text == ""
    assert seen.calls == [] and seen.thinking == []
    assert seen.stop == STOPS["stop"][front]
    assert seen.usage == expected_usage(front, said.usage)


def _text_script(text: str) -> mw.AssistantMessage:
    return mw.AssistantMessage(content=[mw.TextContent(text=text)], api="", provider="",
                               model="", stop_reason="stop")  # fmt: skip


#: An in-band error after some text, in each API that has one.
IN_BAND = {
    "anthropic-messages": b'event: error\ndata: {"type":"error","error":'
                          b'{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    "openai-chat": b'data: {"error":{"message":"Overloaded","type":"server_error"}}\n\n',
    "openai-responses": b'event: error\ndata: {"type":"error","code":"server_error",'
                        b'"message":"Overloaded","param":null,"sequence_number":9}\n\n',
}  # fmt: skip


def _failing_body(api: str, how: str) -> Reply:
    body = render(_text_script("The first part of an answer that breaks."), api)
    if how == "cut":
        return Reply(body=body, cut_after=len(body) * 2 // 3)
    events = [e for e in body.split(b"\n\n") if e.strip()]
    return Reply(body=b"".join(e + b"\n\n" for e in events[:4]) + IN_BAND[api])


FAILURES = [(f, a, h) for f in FRONTS for a in APIS for h in ("cut", "in-band")
            if h == "cut" or a in IN_BAND]  # fmt: skip


@pytest.mark.parametrize(("front", "api", "how"), FAILURES,
                         ids=[f"{f}-{a}-{h}" for f, a, h in FAILURES])  # fmt: skip
def test_a_broken_backend_stream_is_a_client_error(
    front: str, api: str, how: str, backend: MockServer, oai: openai.OpenAI,
    ant: anthropic.Anthropic,
) -> None:  # fmt: skip
    backend.add(_failing_body(api, how))
    if front == "responses":
        # The SDK yields a failure as its event (it raises for none of them): the last
        # event says the response failed, and no response.completed came.
        with oai.responses.stream(model=api, input="go") as s:
            events = list(s)
        assert events[-1].type == "response.failed", [e.type for e in events]
        assert events[-1].response.error is not None
        assert not any(e.type in ("response.completed", "response.incomplete") for e in events)
    else:
        with pytest.raises((openai.APIError, anthropic.APIError)):
            ask(front, api, True, oai, ant)
    backend.add(_failing_body(api, how))
    with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as status:
        ask(front, api, False, oai, ant)
    failed = status.value
    assert isinstance(failed, openai.APIStatusError | anthropic.APIStatusError)
    assert failed.status_code >= 500


def _stopped_body(api: str, reason: str) -> bytes:
    """A text answer the backend ends with its own ``reason`` (a content filter's
    or a pause), written over the stop the mock renders."""
    body = render(_text_script("partial"), api)
    swaps = {
        "openai-chat": (b'"finish_reason":"stop"', b'"finish_reason":"%s"'),
        "anthropic-messages": (b'"stop_reason":"end_turn"', b'"stop_reason":"%s"'),
        "google-generative-ai": (b'"finishReason":"STOP"', b'"finishReason":"%s"'),
    }
    old, new = swaps[api]
    assert old in body
    return body.replace(old, new % reason.encode())


FILTERED = {"openai-chat": "content_filter", "anthropic-messages": "refusal",
            "google-generative-ai": "SAFETY"}  # fmt: skip
FILTER_MATRIX = [(f, a) for f in FRONTS for a in FILTERED]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize(("front", "api"), FILTER_MATRIX,
                         ids=[f"{f}-{a}" for f, a in FILTER_MATRIX])  # fmt: skip
def test_a_content_filter_stop_is_the_apis_own_stop(
    front: str, api: str, stream: bool, backend: MockServer, oai: openai.OpenAI,
    ant: anthropic.Anthropic,
) -> None:  # fmt: skip
    body = _stopped_body(api, FILTERED[api])
    said = mw.replay(api, [body]).message
    assert said.error is not None and said.error.kind == "content_filter"
    backend.add(Reply(body=body))
    seen = ask(front, api, stream, oai, ant)
    assert seen.text == said.text == "partial"
    assert seen.stop == {"chat": "content_filter", "responses": "incomplete:content_filter",
                         "anthropic": "refusal"}[front]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("front", FRONTS)
def test_pause_turn_from_an_anthropic_backend(
    front: str, stream: bool, backend: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:  # fmt: skip
    body = _stopped_body("anthropic-messages", "pause_turn")
    backend.add(Reply(body=body))
    seen = ask(front, "anthropic-messages", stream, oai, ant)
    assert seen.text == "partial"
    # Same API: the provider's own reason; another: a stop (the turn may be resumed).
    assert seen.stop == {"chat": "stop", "responses": "completed", "anthropic": "pause_turn"}[front]


def test_a_filtered_message_body_says_content_filter() -> None:
    """The Chat body of a message a content filter stopped: its text and
    ``finish_reason: "content_filter"`` (what the app sends once it renders such a
    message as an answer rather than an error)."""

    message = mw.AssistantMessage(
        content=[mw.TextContent(text="partial")], api="openai-chat", provider="p", model="m",
        stop_reason="error", error=ErrorInfo(kind="content_filter", message="filtered"),
    )  # fmt: skip
    req = GatewayRequest(model="m", context=Context(messages=[]), options={}, stream=False)
    done = chat.ChatCompletion.model_validate_json(message_body(req, message, "c1"))
    assert done.choices[0].finish_reason == "content_filter"
    assert done.choices[0].message.content == "partial"


def _sse(name: str, data: Any) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


SEARCH_INPUT = {"query": "weather paris"}
SOURCE = {"url": "https://example.com/w", "title": "Weather"}


def _anthropic_search() -> bytes:
    """An Anthropic web search: the server tool's call and result, then text citing it."""
    cite = {"type": "web_search_result_location", **SOURCE, "cited_text": "sunny 20C",
            "encrypted_index": "EI"}  # fmt: skip
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
              "content": [{"type": "web_search_result", **SOURCE, "encrypted_content": "EC",
                           "page_age": None}]}  # fmt: skip
    start: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
             "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": 5, "output_tokens": 1}}  # fmt: skip
    return "".join([
        _sse("message_start", {"type": "message_start", "message": start}),
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(SEARCH_INPUT)}}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _sse("content_block_start", {"type": "content_block_start", "index": 1,
                                     "content_block": result}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
        _sse("content_block_start", {"type": "content_block_start", "index": 2,
                                     "content_block": {"type": "text", "text": ""}}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 2,
                                     "delta": {"type": "citations_delta", "citation": cite}}),
        _sse("content_block_delta", {"type": "content_block_delta", "index": 2,
                                     "delta": {"type": "text_delta", "text": "It is sunny."}}),
        _sse("content_block_stop", {"type": "content_block_stop", "index": 2}),
        _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                               "usage": {"output_tokens": 9}}),
        _sse("message_stop", {"type": "message_stop"}),
    ]).encode()  # fmt: skip


def _responses_search() -> bytes:
    """A Responses web search: its ``web_search_call`` item, then a message with a
    ``url_citation`` annotation over the cited words."""
    text = "Paris: it is sunny."
    note = {"type": "url_citation", **SOURCE, "start_index": 7, "end_index": 18}
    call = {"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": SEARCH_INPUT["query"]}}  # fmt: skip
    msg = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": [note]}]}  # fmt: skip
    resp = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress",
            "model": "gpt", "output": [], "usage": None}  # fmt: skip
    done = {**resp, "status": "completed", "output": [call, msg],
            "usage": {"input_tokens": 5, "output_tokens": 9, "total_tokens": 14,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}  # fmt: skip
    part = {"type": "output_text", "text": "", "annotations": []}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": resp}),
        ("response.output_item.added", {"output_index": 0, "item": {**call, "status": "in_progress"}}),
        ("response.output_item.done", {"output_index": 0, "item": call}),
        ("response.output_item.added", {"output_index": 1, "item": {**msg, "content": [],
                                                                   "status": "in_progress"}}),
        ("response.content_part.added", {"output_index": 1, "item_id": "msg_1",
                                         "content_index": 0, "part": part}),
        ("response.output_text.delta", {"output_index": 1, "item_id": "msg_1",
                                        "content_index": 0, "delta": text}),
        ("response.output_text.annotation.added", {"output_index": 1, "item_id": "msg_1",
                                                   "content_index": 0, "annotation_index": 0,
                                                   "annotation": note}),
        ("response.output_text.done", {"output_index": 1, "item_id": "msg_1",
                                       "content_index": 0, "text": text}),
        ("response.output_item.done", {"output_index": 1, "item": msg}),
        ("response.completed", {"response": done}),
    ]  # fmt: skip
    return "".join(
        _sse(name, {"type": name, "sequence_number": i, **data})
        for i, (name, data) in enumerate(events)
    ).encode()


SEARCHES = {"anthropic-messages": _anthropic_search, "openai-responses": _responses_search}
NATIVE = {"anthropic-messages": "anthropic", "openai-responses": "responses"}
SEARCH_MATRIX = [(f, a, s) for f in FRONTS for a in SEARCHES for s in (False, True)]


@pytest.mark.parametrize(("front", "api", "stream"), SEARCH_MATRIX,
                         ids=[f"{f}-{a}-{'stream' if s else 'whole'}"
                              for f, a, s in SEARCH_MATRIX])  # fmt: skip
def test_a_web_search_and_its_citation(
    front: str, api: str, stream: bool, backend: MockServer, oai: openai.OpenAI,
    ant: anthropic.Anthropic,
) -> None:  # fmt: skip

    body = SEARCHES[api]()
    said = mw.replay(api, [body]).message
    answer = said.content[-1]
    assert isinstance(answer, mw.TextContent) and answer.citations
    backend.add(Reply(body=body))
    seen = ask(front, api, stream, oai, ant)
    assert seen.calls == []  # a provider-run tool is never the client's to run
    assert seen.stop == STOPS["stop"][front]
    assert seen.text.endswith(answer.text)
    server = [b for b in said.content if isinstance(b, mw.ServerToolCall | mw.ServerToolResult)]
    assert server
    if front == NATIVE[api]:  # same API: the blocks as the backend sent them
        dumped = json.dumps(seen.body.model_dump(mode="json"))
        raws = [b.raw for b in server if b.raw is not None]
        assert raws
        for raw in raws:  # (a Responses item is one call holding its result)
            for key, value in json.loads(raw).items():
                if isinstance(value, str):
                    assert value in dumped, (key, value)
    else:  # the handoff's text for each, before the answer
        for b in server:
            text = block_as_text(b)
            assert text and text in seen.text
    # The citation: its URL, over the cited words (another API's: the cited block).
    if front == "anthropic":
        (cited,) = [b for b in seen.body.content if b.type == "text" and b.citations]
        assert cited.text == answer.text
        assert [c.url for c in cited.citations] == [SOURCE["url"]]
    else:
        if front == "chat":
            notes = seen.body.choices[0].message.annotations or []
            spans = [(n.url_citation.url, n.url_citation.start_index, n.url_citation.end_index)
                     for n in notes]  # fmt: skip
            content = seen.text
        else:
            (item,) = [i for i in seen.body.output if i.type == "message"
                       and i.content[0].annotations]  # fmt: skip
            spans = [(n.url, n.start_index, n.end_index) for n in item.content[0].annotations]
            content = item.content[0].text
        ((url, start, end),) = spans
        assert url == SOURCE["url"]
        if api == "openai-responses" and front == "responses":
            assert content[start:end] == "it is sunny"
        else:
            assert answer.text in content[start:end] or content[start:end] in answer.text
            assert content[start:end].strip()


def _blocks_in_turn(body: bytes) -> list[tuple[str, int]]:
    """An Anthropic stream's block events (name, index): checked to be one block at
    a time, each started, its deltas, stopped, indexes dense from 0."""
    out: list[tuple[str, int]] = []
    for event in body.split(b"\n\n"):
        if b"data: " not in event:
            continue
        data = json.loads(event.split(b"data: ", 1)[1])
        if data["type"].startswith("content_block_"):
            out.append((data["type"], data["index"]))
    open_: int | None = None
    started = 0
    for name, index in out:
        if name == "content_block_start":
            assert open_ is None, f"block {index} starts while {open_} is open: {out}"
            assert index == started, out
            open_, started = index, started + 1
        else:
            assert open_ == index, f"{name} for {index} while {open_} is open: {out}"
            if name == "content_block_stop":
                open_ = None
    assert open_ is None
    return out


def _mixed() -> mw.AssistantMessage:
    calls = three_calls()
    return mw.AssistantMessage(
        content=[mw.ThinkingContent(thinking="Three calls, then done.", signature="sig-1"),
                 mw.TextContent(text="Looking 👀 now."), *calls.content],
        api="", provider="", model="", stop_reason="tool_use", usage=calls.usage,
    )  # fmt: skip


ORDER_MATRIX = [(a, False) for a in APIS] + [(a, True) for a in INTERLEAVING]


@pytest.mark.parametrize(("api", "interleave"), ORDER_MATRIX,
                         ids=[f"{a}-{'interleaved' if i else 'in-turn'}" for a, i in ORDER_MATRIX])  # fmt: skip
def test_anthropic_blocks_come_one_at_a_time(
    api: str, interleave: bool, gateway: GatewayServer, backend: MockServer,
    ant: anthropic.Anthropic,
) -> None:  # fmt: skip

    body = render(_mixed(), api, piece_chars=4)
    if interleave:
        body = _interleaved(api, body)
    said = mw.replay(api, [body]).message
    request: dict[str, Any] = {"model": api, "max_tokens": 100, "stream": True, "tools": TOOLS_ANT,
               "messages": [{"role": "user", "content": "go"}]}  # fmt: skip
    backend.add(Reply(body=body))
    got = httpx.post(gateway.base_url + "/v1/messages", json=request, headers={"x-api-key": KEY})
    assert got.status_code == 200
    blocks = _blocks_in_turn(got.content)
    assert blocks
    backend.add(Reply(body=body))
    with ant.messages.stream(**{k: v for k, v in request.items() if k != "stream"}) as st:
        message = st.get_final_message()
    kinds = [b.type for b in message.content]
    thinking = "".join(b.thinking for b in message.content if b.type == "thinking")
    text = "".join(b.text for b in message.content if b.type == "text")
    calls = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert thinking == said.content[0].thinking  # type: ignore[union-attr]
    assert text == said.text
    assert calls == [(c.id, c.name, c.arguments) for c in said.tool_calls]
    assert kinds[-3:] == ["tool_use"] * 3
    assert message.stop_reason == "tool_use"


def _thinking_between_calls() -> mw.AssistantMessage:
    """Anthropic interleaved thinking: a thought, a call, a redacted thought, a
    thought, a call — each with its signature."""
    return mw.AssistantMessage(
        content=[
            mw.ThinkingContent(thinking="First the folder.", signature="sig-A"),
            mw.ToolCall(id="toolu_1", name="ls", arguments={"dir": "."}, raw_arguments='{"dir": "."}'),
            mw.ThinkingContent(thinking="", signature="REDACTED-B", redacted=True),
            mw.ThinkingContent(thinking="Then the file.", signature="sig-C"),
            mw.ToolCall(id="toolu_2", name="cat", arguments={"path": "a"}, raw_arguments='{"path": "a"}'),
        ],
        api="", provider="", model="", stop_reason="tool_use",
    )  # fmt: skip


def _second_turn(front: str, api: str, stream: bool, oai: openai.OpenAI,
                 ant: anthropic.Anthropic) -> None:  # fmt: skip
    """Ask, then send the answer back with both calls' results (the SDK's own dump)."""
    seen = ask(front, api, stream, oai, ant)
    ids = [c[0] for c in seen.calls]
    assert len(ids) == 2
    if front == "chat":
        m = seen.body.choices[0].message.model_dump(exclude_none=True, exclude={"parsed"})
        msgs: list[Any] = [{"role": "user", "content": "go"}, m]
        msgs += [{"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids]
        oai.chat.completions.create(model=api, messages=msgs, tools=TOOLS_CHAT)
    elif front == "responses":
        items: list[Any] = [{"role": "user", "content": "go"}]
        items += [o.model_dump(exclude_none=True) for o in seen.body.output]
        items += [{"type": "function_call_output", "call_id": i, "output": "ok"} for i in ids]
        oai.responses.create(model=api, input=items, tools=TOOLS_RESP)
    else:
        content = [b.model_dump(exclude_none=True) for b in seen.body.content]
        results = [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]
        turns: list[Any] = [{"role": "user", "content": "go"},
                            {"role": "assistant", "content": content},
                            {"role": "user", "content": results}]  # fmt: skip
        ant.messages.create(model=api, max_tokens=100, tools=TOOLS_ANT, messages=turns)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("front", ["chat", "responses", "anthropic"])
def test_interleaved_thinking_goes_back_in_order(
    front: str, stream: bool, backend: MockServer, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:  # fmt: skip
    api = "anthropic-messages"
    backend.add(_thinking_between_calls(), "done")
    _second_turn(front, api, stream, oai, ant)
    assistant = backend.last_request.json()["messages"][1]
    assert assistant["role"] == "assistant"
    got = [
        (b["type"], b.get("signature") or b.get("data") or b.get("id"))
        for b in assistant["content"]
    ]
    assert got == [("thinking", "sig-A"), ("tool_use", "toolu_1"),
                   ("redacted_thinking", "REDACTED-B"), ("thinking", "sig-C"),
                   ("tool_use", "toolu_2")]  # fmt: skip
    thoughts = [b.get("thinking") for b in assistant["content"] if b["type"] == "thinking"]
    assert thoughts == ["First the folder.", "Then the file."]


CUT = '{"path": "a very long na'


def _cut_call() -> mw.AssistantMessage:
    """A call the token limit cut: its arguments are not JSON yet."""
    return mw.AssistantMessage(
        content=[mw.TextContent(text=""),
                 mw.ToolCall(id="call_cut", name="cat", arguments={}, raw_arguments=CUT)],
        api="", provider="", model="", stop_reason="length", usage=mw.Usage(input=4, output=8),
    )  # fmt: skip


TEXT_APIS = ("openai-chat", "openai-responses")
CUT_MATRIX = [(f, a, s) for f in ("chat", "responses") for a in TEXT_APIS for s in (False, True)]


@pytest.mark.parametrize(("front", "api", "stream"), CUT_MATRIX,
                         ids=[f"{f}-{a}-{'stream' if s else 'whole'}" for f, a, s in CUT_MATRIX])  # fmt: skip
def test_a_call_cut_by_the_length_limit_keeps_its_text(
    front: str, api: str, stream: bool, backend: MockServer, oai: openai.OpenAI,
    ant: anthropic.Anthropic,
) -> None:  # fmt: skip
    said = said_by(api, _cut_call())
    assert said.stop_reason == "length"
    assert [c.raw_arguments for c in said.tool_calls] == [CUT]
    backend.add(_cut_call())
    seen = ask(front, api, stream, oai, ant)
    assert seen.calls == [("call_cut", "cat", CUT)]
    assert seen.stop == STOPS["length"][front]
    assert seen.text == ""


@pytest.mark.parametrize(("front", "api", "stream"), MATRIX, ids=IDS)
def test_thinking_text_and_calls_together(front: str, api: str, stream: bool,
                                          backend: MockServer, oai: openai.OpenAI,
                                          ant: anthropic.Anthropic) -> None:  # fmt: skip
    said = said_by(api, _mixed())
    backend.add(_mixed())
    seen = ask(front, api, stream, oai, ant)
    assert seen.text == said.text
    thought = [b.thinking for b in said.content if isinstance(b, mw.ThinkingContent)]
    if front == "responses" and api != "openai-responses":
        assert seen.thinking == thought  # a summary of each reasoning item
    elif thought:
        assert "".join(seen.thinking) == "".join(thought)
    assert [c[1] for c in seen.calls] == list(TOOL_NAMES)
    if front != "anthropic":
        assert [c[2] for c in seen.calls] == [c.raw_arguments for c in said.tool_calls]
    assert seen.usage == expected_usage(front, said.usage)


@pytest.mark.parametrize(("front", "api", "stream"), MATRIX, ids=IDS)
def test_a_url_citation_from_any_backend(front: str, api: str, stream: bool,
                                         backend: MockServer, oai: openai.OpenAI,
                                         ant: anthropic.Anthropic) -> None:  # fmt: skip
    cite = mw.Citation(kind="url", url=SOURCE["url"], title=SOURCE["title"], cited_text="sunny")
    script = [mw.TextContent(text="It is sunny.", citations=[cite])]
    said = said_by(api, script)
    urls = [c.url for b in said.content if isinstance(b, mw.TextContent) for c in b.citations]
    backend.add(script)
    seen = ask(front, api, stream, oai, ant)
    assert seen.text.startswith(said.text)
    if front == "anthropic":
        got = [c.url for b in seen.body.content if b.type == "text" for c in b.citations or ()]
        assert got == urls
    elif front == "chat":
        notes = seen.body.choices[0].message.annotations or []
        assert [n.url_citation.url for n in notes] == urls
        for n in notes:
            assert seen.text[n.url_citation.start_index : n.url_citation.end_index] == said.text
    else:
        notes = [(n, p.text) for i in seen.body.output if i.type == "message"
                 for p in i.content for n in p.annotations]  # fmt: skip
        assert [n.url for n, _ in notes] == urls
        raws = [json.loads(c.raw or "{}") for b in said.content if isinstance(b, mw.TextContent)
                for c in b.citations]  # fmt: skip
        for (n, text), raw in zip(notes, raws, strict=True):
            if api == "openai-responses":  # the backend's own annotation, as it sent it
                assert (n.start_index, n.end_index) == (raw["start_index"], raw["end_index"])
            else:  # another API's: the cited item's text
                assert text[n.start_index : n.end_index] == said.text


def _fields(model: Any, value: Any, where: str, extra: set[str]) -> list[str]:
    """What ``value`` lacks of ``model``'s required fields, or has beyond its fields
    and the ``extra`` documented extensions."""
    names = {f.alias or n: f for n, f in model.model_fields.items()}
    wrong = [f"{where}.{k} missing" for k, f in names.items() if f.is_required() and k not in value]
    return wrong + [f"{where}.{k} extra" for k in value if k not in names and k not in extra]


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("front", FRONTS)
def test_whole_bodies_have_the_sdk_models_fields(front: str, api: str, gateway: GatewayServer,
                                                 backend: MockServer) -> None:  # fmt: skip

    backend.add(_mixed())
    head = {"authorization": f"Bearer {KEY}"}
    if front == "chat":
        req: dict[str, Any] = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS_CHAT}
        path = "/v1/chat/completions"
    elif front == "responses":
        req, path = {"input": "go", "tools": TOOLS_RESP}, "/v1/responses"
    else:
        req = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS_ANT, "max_tokens": 9}
        path = "/v1/messages"
    got = httpx.post(gateway.base_url + path, json={"model": api, **req}, headers=head)
    assert got.status_code == 200, got.text
    body = got.json()
    wrong: list[str] = []
    if front == "chat":
        chat.ChatCompletion.model_validate(body)
        choice = body["choices"][0]
        wrong += _fields(chat.ChatCompletion, body, "$", set())
        wrong += _fields(chat.chat_completion.Choice, choice, "choice", set())
        # reasoning_content, reasoning_details, extra_content: docs/gateway-chat.md
        wrong += _fields(chat.ChatCompletionMessage, choice["message"], "message",
                         {"reasoning_content", "reasoning_details"})  # fmt: skip
        wrong += _fields(CompletionUsage, body["usage"], "usage", set())
        for call in choice["message"]["tool_calls"]:
            wrong += _fields(chat.ChatCompletionMessageFunctionToolCall, call, "call",
                             {"extra_content"})  # fmt: skip
    elif front == "responses":
        responses.Response.model_validate(body)
        wrong += _fields(responses.Response, body, "$", {"store"})
        wrong += _fields(responses.ResponseUsage, body["usage"], "usage", set())
        kinds = {"message": responses.ResponseOutputMessage,
                 "reasoning": responses.ResponseReasoningItem,
                 "function_call": responses.ResponseFunctionToolCall}  # fmt: skip
        for item in body["output"]:
            wrong += _fields(kinds[item["type"]], item, item["type"], set())
    else:
        at.Message.model_validate(body)
        wrong += _fields(at.Message, body, "$", set())
        wrong += _fields(at.Usage, body["usage"], "usage", set())
        blocks = {"text": at.TextBlock, "thinking": at.ThinkingBlock, "tool_use": at.ToolUseBlock}
        for block in body["content"]:
            wrong += _fields(blocks[block["type"]], block, block["type"], set())
    assert wrong == []


def _late_annotation(body: bytes) -> bytes:
    """A Chat body whose annotations chunk comes after the call's chunks (a Chat
    stream may send them at any point)."""
    events = body.split(b"\n\n")
    (k,) = [i for i, e in enumerate(events) if b'"annotations"' in e]
    note = events.pop(k)
    last_call = max(i for i, e in enumerate(events) if b'"tool_calls"' in e)
    events.insert(last_call + 1, note)
    return b"\n\n".join(events)


CITED = [(a, False) for a in APIS] + [("openai-chat", True)]


@pytest.mark.parametrize(("api", "late"), CITED,
                         ids=[f"{a}{'-late' if late else ''}" for a, late in CITED])  # fmt: skip
def test_a_cited_text_before_a_call_streams_in_turn(
    api: str, late: bool, gateway: GatewayServer, backend: MockServer
) -> None:  # fmt: skip
    cite = mw.Citation(kind="url", url=SOURCE["url"], title=SOURCE["title"], cited_text="sunny")
    script = mw.AssistantMessage(
        content=[mw.TextContent(text="It is sunny.", citations=[cite]),
                 mw.ToolCall(id="call_1", name="ls", arguments={}, raw_arguments="{}")],
        api="", provider="", model="", stop_reason="tool_use",
    )  # fmt: skip
    body = render(script, api)
    if late:
        body = _late_annotation(body)
    said = mw.replay(api, [body]).message
    backend.add(Reply(body=body))
    request = {"model": api, "max_tokens": 100, "stream": True, "tools": TOOLS_ANT,
               "messages": [{"role": "user", "content": "go"}]}  # fmt: skip
    got = httpx.post(gateway.base_url + "/v1/messages", json=request, headers={"x-api-key": KEY})
    blocks = _blocks_in_turn(got.content)
    back = mw.replay("anthropic-messages", [got.content]).message
    assert back.text == said.text
    cited = [c.url for b in back.content if isinstance(b, mw.TextContent) for c in b.citations]
    assert cited == [c.url for b in said.content if isinstance(b, mw.TextContent)
                     for c in b.citations]  # fmt: skip
    assert [c.name for c in back.tool_calls] == ["ls"]
    if api not in MADE_UP_IDS:
        assert [c.id for c in back.tool_calls] == [c.id for c in said.tool_calls]
    assert blocks[-1] == ("content_block_stop", blocks[-1][1])

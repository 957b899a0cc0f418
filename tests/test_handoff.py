"""``mw.handoff``: replaying a conversation to another (or the same) model.

Each rule of ``modelwire._client._handoffs`` has a test; the last section sends a real
Anthropic thinking + tool-call conversation (replayed from recorded streams) to
OpenAI Chat, Responses and Gemini over a loopback MockServer and checks the
request bodies the servers received.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire._client._handoffs import NO_RESULT, handoff, tool_id_rule
from modelwire.testing import MockServer
from recorded import recorded_streams

FIXTURES = recorded_streams()

CLAUDE = mw.Model(id="claude-sonnet-4-5", api="anthropic-messages", provider="anthropic",
                  base_url="https://api.anthropic.com/v1", reasoning=True, input=("text", "image"))  # fmt: skip
GPT_CHAT = mw.Model(id="gpt-4.1-mini", api="openai-chat", provider="openai",
                    base_url="https://api.openai.com/v1", input=("text", "image"))  # fmt: skip
GPT_RESP = mw.Model(id="gpt-5", api="openai-responses", provider="openai",
                    base_url="https://api.openai.com/v1", reasoning=True, input=("text", "image"))  # fmt: skip
GEMINI = mw.Model(id="gemini-2.5-flash", api="google-generative-ai", provider="google",
                  base_url="https://generativelanguage.googleapis.com/v1beta", reasoning=True,
                  input=("text", "image"))  # fmt: skip
MISTRAL = mw.Model(id="mistral-small-latest", api="openai-chat", provider="mistral",
                   base_url="https://api.mistral.ai/v1")  # fmt: skip
TEXT_ONLY = mw.Model(id="deepseek-chat", api="openai-chat", provider="deepseek",
                     base_url="https://api.deepseek.com/v1")  # fmt: skip
TARGETS = [CLAUDE, GPT_CHAT, GPT_RESP, GEMINI, MISTRAL, TEXT_ONLY]

SIG = "EqQBCkgIBhABGAIiQJ7ln1Wd+tHZsigned"
REDACTED = "EmwKAhgBEgy3va3pzGVnFgJG3Y8aDBu1ciR0TpD0kCGsVSIw"


def _claude_turn(*blocks: Any, stop: str = "tool_use", model: mw.Model = CLAUDE) -> mw.AssistantMessage:  # fmt: skip
    return mw.AssistantMessage(content=blocks, api=model.api, provider=model.provider,
                               model=model.id, stop_reason=stop, timestamp=1_700_000_000_000)  # type: ignore[arg-type]  # fmt: skip


def _call(call_id: str, name: str = "read", **kw: Any) -> mw.ToolCall:
    return mw.ToolCall(id=call_id, name=name, arguments={"path": "a.txt"},
                       raw_arguments='{"path": "a.txt"}', **kw)  # fmt: skip


def _result(call_id: str, text: str = "contents", name: str = "read") -> mw.ToolResultMessage:
    return mw.ToolResultMessage(tool_call_id=call_id, tool_name=name, content=text, timestamp=1)


def _ctx(*messages: Any, system: str | None = "be brief") -> mw.Context:
    return mw.Context(system_prompt=system, messages=messages)


def _conversation() -> mw.Context:
    return _ctx(
        mw.UserMessage(content="read a.txt", timestamp=1),
        _claude_turn(
            mw.ThinkingContent(thinking="I should read it.", signature=SIG),
            mw.ThinkingContent(thinking="", signature=REDACTED, redacted=True),
            mw.TextContent(text="Reading."),
            _call("toolu_01A09q90qw90lq917835lq9"),
        ),
        _result("toolu_01A09q90qw90lq917835lq9"),
        mw.UserMessage(content="thanks", timestamp=2),
    )


# --------------------------------------------------------------------------- rule 1 + 2


def test_same_model_keeps_signatures_redacted_and_encrypted_byte_for_byte() -> None:
    responses_item = json.dumps({"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA=="})
    ctx = _ctx(
        mw.UserMessage(content="hi", timestamp=1),
        _claude_turn(
            mw.ThinkingContent(thinking="a\ud800b", signature=SIG),
            mw.ThinkingContent(thinking="", signature=REDACTED, redacted=True),
            mw.ThinkingContent(thinking="summary", signature=responses_item),
            mw.TextContent(text="x\udfffy", signature="msg_1"),
            _call("toolu_1", signature="sig-call"),
        ),
        _result("toolu_1"),
    )
    assert handoff(ctx, CLAUDE) is ctx  # nothing to change
    out = handoff(ctx, msgspec.structs.replace(CLAUDE, input=("text",))).messages[1]
    assert out is ctx.messages[1]  # kept as it is, even for a model that changes other things


def test_other_model_gets_thinking_as_text_and_no_signatures() -> None:
    ctx = _conversation()
    for target in (GPT_CHAT, GPT_RESP, GEMINI):
        msg = handoff(ctx, target).messages[1]
        assert isinstance(msg, mw.AssistantMessage)
        kinds = [type(b).__name__ for b in msg.content]
        assert kinds == ["TextContent", "TextContent", "ToolCall"]  # redacted dropped
        first = msg.content[0]
        assert isinstance(first, mw.TextContent)
        assert first.text == "<thinking>\nI should read it.\n</thinking>"
        assert all(getattr(b, "signature", None) is None for b in msg.content)
        assert REDACTED not in mw.to_json(msg).decode("utf-8", "replace")


def test_signatures_are_removed_from_text_thinking_and_tool_calls() -> None:
    turn = _claude_turn(
        mw.TextContent(text="t", signature="msg_abc"),
        mw.ThinkingContent(thinking="why", signature="sig"),
        _call("call_1", signature="gemini-thought-signature"),
        stop="tool_use", model=GEMINI,
    )  # fmt: skip
    msg = handoff(_ctx(turn, _result("call_1")), GPT_CHAT).messages[0]
    assert isinstance(msg, mw.AssistantMessage)
    assert [getattr(b, "signature", None) for b in msg.content] == [None, None, None]
    assert msg.content[2] == mw.ToolCall(id="call_1", name="read", arguments={"path": "a.txt"},
                                         raw_arguments='{"path": "a.txt"}')  # fmt: skip


def test_empty_and_redacted_thinking_of_another_model_is_dropped() -> None:
    turn = _claude_turn(
        mw.ThinkingContent(thinking="  \n", signature="s"),
        mw.ThinkingContent(thinking="secret", signature=REDACTED, redacted=True),
        stop="stop",
    )  # fmt: skip
    ctx = _ctx(mw.UserMessage(content="q", timestamp=1), turn, mw.UserMessage(content="again"))
    out = handoff(ctx, GPT_CHAT)
    # The turn has nothing left for another model: it is not replayed at all.
    assert [m.role for m in out.messages] == ["user", "user"]
    assert handoff(ctx, CLAUDE) is ctx


def test_same_provider_other_api_or_model_is_another_model() -> None:
    turn = _claude_turn(mw.ThinkingContent(thinking="t", signature="s"), stop="stop")
    ctx = _ctx(turn)
    for other in (msgspec.structs.replace(CLAUDE, id="claude-opus-4-5"),
                  msgspec.structs.replace(CLAUDE, api="openai-chat")):  # fmt: skip
        msg = handoff(ctx, other).messages[0]
        assert isinstance(msg, mw.AssistantMessage)
        assert msg.content == (mw.TextContent(text="<thinking>\nt\n</thinking>"),)


# --------------------------------------------------------------------------- rule 3: tool ids

BAD_IDS = ["call.with.dots|and pipes", "x" * 70, "fc_68b|call_9", "toolu_01A09q90qw90lq917835lq9",
           "call_" + "y" * 50, "é-unicode-id", "a" * 39 + "b", "a" * 39 + "c"]  # fmt: skip


def _sent_ids(ctx: mw.Context) -> tuple[list[str], list[str]]:
    calls = [b.id for m in ctx.messages if isinstance(m, mw.AssistantMessage)
             for b in m.content if isinstance(b, mw.ToolCall)]  # fmt: skip
    results = [m.tool_call_id for m in ctx.messages if isinstance(m, mw.ToolResultMessage)]
    return calls, results


@pytest.mark.parametrize("target", TARGETS, ids=lambda m: f"{m.provider}-{m.api}")
def test_tool_ids_fit_the_target_and_results_follow(target: mw.Model) -> None:
    turn = _claude_turn(*[_call(i) for i in BAD_IDS], model=GPT_RESP)
    ctx = _ctx(turn, *[_result(i, text=f"result of {i}") for i in BAD_IDS])
    out = handoff(ctx, target)
    calls, results = _sent_ids(out)
    assert calls == results  # each result follows its call
    assert len(set(calls)) == len(BAD_IDS)  # distinct originals stay distinct
    rule = tool_id_rule(target)
    if rule is None:
        assert calls == BAD_IDS
    for original, sent in zip(BAD_IDS, calls, strict=True):
        if target.api == "anthropic-messages" or target.api == "openai-responses":
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", sent)
        elif target.provider == "mistral":
            assert re.fullmatch(r"[A-Za-z0-9]{9}", sent)
        elif target.api == "openai-chat":
            assert 1 <= len(sent) <= 40
        if rule is not None and rule.valid.fullmatch(original):
            assert sent == original  # ids that fit are kept
    # The results' texts still answer the right calls.
    texts = [m.text for m in out.messages if isinstance(m, mw.ToolResultMessage)]
    assert texts == [f"result of {i}" for i in BAD_IDS]


def test_rewritten_ids_never_collide_with_kept_ones() -> None:
    # "a|b" sanitises to "a_b", which another call already uses as its own id.
    turn = _claude_turn(_call("a|b"), _call("a_b"), model=GPT_RESP)
    out = handoff(_ctx(turn, _result("a|b", "one"), _result("a_b", "two")), CLAUDE)
    calls, results = _sent_ids(out)
    assert calls[1] == "a_b" and calls[0] != "a_b"
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", calls[0])
    assert results == calls


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=90), min_size=1, max_size=8, unique=True))
def test_any_ids_map_to_unique_valid_ids(ids: list[str]) -> None:
    turn = _claude_turn(*[_call(i) for i in ids], model=GEMINI)
    ctx = _ctx(turn, *[_result(i) for i in ids])
    for target in (CLAUDE, GPT_CHAT, MISTRAL, GPT_RESP):
        out = handoff(ctx, target)
        calls, results = _sent_ids(out)
        rule = tool_id_rule(target)
        assert rule is not None
        assert calls == results and len(set(calls)) == len(ids)
        assert all(rule.valid.fullmatch(c) for c in calls)
        assert handoff(out, target) == out  # idempotent


# --------------------------------------------------------------------------- rule 4: orphans


def test_unanswered_call_gets_a_synthetic_error_result_before_the_next_message() -> None:
    turn = _claude_turn(_call("toolu_a"), _call("toolu_b", name="grep"), _call("toolu_c"))
    ctx = _ctx(turn, _result("toolu_b", "found", name="grep"), mw.UserMessage(content="go on"))
    out = handoff(ctx, CLAUDE).messages
    assert [m.role for m in out] == ["assistant", "tool_result", "tool_result", "tool_result", "user"]  # fmt: skip
    real, a, c = out[1], out[2], out[3]
    assert isinstance(real, mw.ToolResultMessage) and real.text == "found"
    for synthetic, call_id in ((a, "toolu_a"), (c, "toolu_c")):
        assert isinstance(synthetic, mw.ToolResultMessage)
        assert (synthetic.tool_call_id, synthetic.tool_name) == (call_id, "read")
        assert synthetic.is_error and synthetic.text == NO_RESULT
        assert synthetic.timestamp == turn.timestamp  # deterministic


def test_unanswered_calls_before_another_assistant_message_and_at_the_end() -> None:
    first = _claude_turn(_call("toolu_1"))
    second = _claude_turn(_call("toolu_2"))
    out = handoff(_ctx(first, second), GPT_CHAT).messages
    assert [m.role for m in out] == ["assistant", "tool_result", "assistant", "tool_result"]
    assert [m.tool_call_id for m in out if isinstance(m, mw.ToolResultMessage)] == [
        "toolu_1", "toolu_2",
    ]  # fmt: skip


# --------------------------------------------------------------------------- rule 5: failures


@pytest.mark.parametrize("stop", ["error", "aborted"])
def test_failed_turns_are_not_replayed_nor_their_results(stop: str) -> None:
    ok = _claude_turn(_call("toolu_ok"))
    failed = _claude_turn(mw.TextContent(text="half"), _call("toolu_bad"), stop=stop)
    ctx = _ctx(
        mw.UserMessage(content="q", timestamp=1), ok, _result("toolu_ok"), failed,
        _result("toolu_bad"), mw.UserMessage(content="retry", timestamp=2),
    )  # fmt: skip
    out = handoff(ctx, CLAUDE).messages
    assert [m.role for m in out] == ["user", "assistant", "tool_result", "user"]
    assert all("toolu_bad" not in mw.to_json(m).decode() for m in out)
    # A failed turn ends the previous turn: its unanswered calls get results.
    ctx2 = _ctx(ok, failed, mw.UserMessage(content="retry"))
    roles = [m.role for m in handoff(ctx2, GPT_CHAT).messages]
    assert roles == ["assistant", "tool_result", "user"]


# --------------------------------------------------------------------------- rule 6: input kinds

PNG = mw.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
PDF = mw.DocumentContent(mime_type="application/pdf", data="JVBERi0=", title="Paper")
WAV = mw.AudioContent(data="UklGRg==", mime_type="audio/wav")


def test_an_image_for_a_text_only_model_is_refused_naming_model_block_and_fix() -> None:
    user = mw.UserMessage(content=(mw.TextContent(text="look"), PNG), timestamp=1)
    with pytest.raises(mw.ConfigurationError) as info:
        handoff(_ctx(user), TEXT_ONLY)
    text = str(info.value)
    assert repr(TEXT_ONLY.id) in text and "messages[0].content[1] is an image block" in text
    assert "input=['text', 'image']" in text
    # In a tool result too.
    turn = _claude_turn(_call("toolu_shot", name="screenshot"))
    shot = mw.ToolResultMessage(tool_call_id="toolu_shot", tool_name="screenshot",
                                content=(mw.TextContent(text="800x600"), PNG), timestamp=2)  # fmt: skip
    with pytest.raises(mw.ConfigurationError, match=r"messages\[1\]\.content\[1\]"):
        handoff(_ctx(turn, shot), TEXT_ONLY)
    # A model declared to accept images keeps them, object for object.
    ctx = _ctx(user, turn, shot)
    kept = handoff(ctx, GPT_CHAT).messages
    assert kept[0] is user and kept[2] is shot


@pytest.mark.parametrize(("block", "kind"), [(PDF, "document"), (WAV, "audio")])
def test_documents_and_audio_need_their_input_kind(block: mw.UserContent, kind: str) -> None:
    ctx = _ctx(mw.UserMessage(content=(block,), timestamp=1))
    with pytest.raises(mw.ConfigurationError, match=f"does not accept {kind} input"):
        handoff(ctx, GPT_CHAT)
    accepting = msgspec.structs.replace(GPT_CHAT, input=("text", kind))
    assert handoff(ctx, accepting) is ctx


# --------------------------------------------------------------------------- rule 7: surrogates


def test_lone_surrogates_are_removed_from_text_but_not_signed_content() -> None:
    lone = "a\ud800b\udfffc"
    ctx = mw.Context(
        system_prompt=f"sys {lone}",
        messages=[
            mw.UserMessage(content=lone, timestamp=1),
            mw.UserMessage(content=(mw.TextContent(text=lone),), timestamp=2),
            _claude_turn(
                mw.ThinkingContent(thinking=lone, signature=SIG),
                mw.TextContent(text=lone, signature="msg_signed"),
                mw.TextContent(text=lone),
                mw.ToolCall(
                    id="toolu_s",
                    name="w",
                    arguments={"k\ud800": [lone]},
                    raw_arguments=json.dumps({"k": lone}, ensure_ascii=False),
                ),
            ),
            mw.ToolResultMessage(tool_call_id="toolu_s", tool_name="w", content=lone, timestamp=3),
        ],
    )
    same = handoff(ctx, CLAUDE)
    turn = same.messages[2]
    assert isinstance(turn, mw.AssistantMessage)
    assert turn.content[0] == ctx.messages[2].content[0]  # signed
    assert turn.content[1] == ctx.messages[2].content[1]  # signed
    assert turn.content[2] == mw.TextContent(text="abc")
    call = turn.content[3]
    assert isinstance(call, mw.ToolCall)
    assert call.arguments == {"k": ["abc"]} and call.raw_arguments == '{"k": "abc"}'
    assert same.system_prompt == "sys abc"
    assert same.messages[0] == mw.UserMessage(content="abc", timestamp=1)
    assert same.messages[1] == mw.UserMessage(content=(mw.TextContent(text="abc"),), timestamp=2)
    assert same.messages[3].text == "abc"  # type: ignore[union-attr]
    other = handoff(ctx, GPT_CHAT).messages[2]
    assert isinstance(other, mw.AssistantMessage)
    assert other.content[0] == mw.TextContent(text="<thinking>\nabc\n</thinking>")
    assert other.content[1] == mw.TextContent(text="abc")  # no longer signed: cleaned
    for target in TARGETS:  # every request body can be encoded (no lone surrogate left)
        out = handoff(ctx, target)
        msgspec.json.encode([m for m in out.messages if not _signed(m)])


def _signed(msg: mw.Message) -> bool:
    return isinstance(msg, mw.AssistantMessage) and any(
        getattr(b, "signature", None) for b in msg.content
    )


# --------------------------------------------------------------------------- purity


def test_handoff_is_pure_deterministic_and_idempotent() -> None:
    ctx = _ctx(*_conversation().messages, _claude_turn(_call("x|y"), _call("z" * 80)))
    before = mw.to_json(ctx)
    for target in TARGETS:
        once = handoff(ctx, target)
        assert mw.to_json(ctx) == before  # the input is not changed
        assert mw.to_json(handoff(ctx, target)) == mw.to_json(once)  # deterministic
        assert handoff(once, target) == once  # idempotent


def test_mw_handoff_is_the_public_name() -> None:
    assert mw.handoff is handoff


# --------------------------------------------------------------------------- over loopback


def _recorded(fixture: str, model: mw.Model) -> mw.AssistantMessage:
    events = mw.replay(model.api, (FIXTURES / fixture).read_bytes(), model=model)
    assert events[-1].type == "done", events[-1]
    return events[-1].message


def _anthropic_conversation() -> tuple[mw.Context, mw.AssistantMessage, mw.AssistantMessage]:
    """A real Claude turn with signed thinking and a tool call, its result, a second
    real turn with redacted thinking, an aborted turn, and a dangling call."""
    claude = mw.get_model("anthropic", "claude-haiku-4-5")
    turn1 = _recorded("anthropic/claude-haiku-4-5-thinking-then-tool-use.sse", claude)
    turn2 = _recorded("anthropic/claude-sonnet-4-5-redacted-thinking.sse", claude)
    call = turn1.tool_calls[0]
    aborted = msgspec.structs.replace(turn1, stop_reason="aborted", content=(
        mw.TextContent(text="half an answer"), _call("toolu_aborted")))  # fmt: skip
    dangling = msgspec.structs.replace(turn1, content=(_call("toolu_never_answered"),))
    ctx = mw.Context(
        system_prompt="You are terse.",
        tools=[mw.ToolDefinition(name="fixed_version", description="Version",
                                 parameters={"type": "object", "properties": {}}),
               mw.ToolDefinition(name="read", description="Read a file",
                                 parameters={"type": "object",
                                             "properties": {"path": {"type": "string"}}})],
        messages=[
            mw.UserMessage(content="What version is it? Then a joke.", timestamp=1),
            turn1,
            mw.ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="v1.2.3",
                                 timestamp=2),
            turn2,
            mw.UserMessage(content="try again", timestamp=3),
            aborted,
            mw.ToolResultMessage(tool_call_id="toolu_aborted", tool_name="read", content="late",
                                 timestamp=4),
            mw.UserMessage(content="read a.txt", timestamp=5),
            dangling,
            mw.UserMessage(content="never mind", timestamp=6),
        ],
    )  # fmt: skip
    return ctx, turn1, turn2


def _secrets(turn1: mw.AssistantMessage, turn2: mw.AssistantMessage) -> list[str]:
    sigs = [b.signature for t in (turn1, turn2) for b in t.content
            if isinstance(b, mw.ThinkingContent) and b.signature]  # fmt: skip
    assert len(sigs) >= 2
    return [s[:40] for s in sigs]


def _reply(api: str) -> bytes:
    return {
        "openai-chat": (FIXTURES / "openai-chat/gpt-4o-text-with-usage-chunk.sse"),
        "openai-responses": (FIXTURES / "openai-responses/gpt-4o-text.sse"),
        "google-generative-ai": (FIXTURES / "google/gemini-2.0-flash-text.sse"),
        "anthropic-messages": (FIXTURES / "anthropic/claude-haiku-4-5-text.sse"),
    }[api].read_bytes()


async def _send(api: str, model_id: str, ctx: mw.Context) -> tuple[mw.AssistantMessage, Any]:
    # The lead wires handoff into the client; calling it here as well is harmless
    # (handoff is idempotent) and keeps this test independent of that wiring.
    with MockServer([_reply(api)]) as srv:
        model = srv.model(api, model_id, provider="openai" if "openai" in api else
                          "google" if "google" in api else "anthropic")  # fmt: skip
        model = msgspec.structs.replace(model, input=("text", "image"))
        msg = await mw.complete(model, mw.handoff(ctx, model), api_key="sk-test-key")
    assert msg.stop_reason == "stop", msg.error
    return msg, srv.requests[0]


@pytest.mark.anyio
async def test_anthropic_conversation_to_openai_chat_over_loopback() -> None:
    ctx, turn1, turn2 = _anthropic_conversation()
    call = turn1.tool_calls[0]
    _, req = await _send("openai-chat", "gpt-4.1-mini", ctx)
    body = req.json()
    for secret in _secrets(turn1, turn2):
        assert secret not in req.body.decode()
    msgs = body["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "assistant",
                                          "user", "user", "assistant", "tool", "user"]  # fmt: skip
    thinking = next(b.thinking for b in turn1.content if isinstance(b, mw.ThinkingContent))
    assert msgs[2]["content"] == f"<thinking>\n{thinking}\n</thinking>"
    assert msgs[2]["tool_calls"] == [{"id": call.id, "type": "function",
                                      "function": {"name": "fixed_version", "arguments": "{}"}}]  # fmt: skip
    assert "reasoning_content" not in msgs[2]
    assert (msgs[3]["tool_call_id"], msgs[3]["content"]) == (call.id, "v1.2.3")
    assert msgs[4]["content"] == turn2.text  # redacted thinking dropped, text kept
    assert msgs[7]["tool_calls"][0]["id"] == "toolu_never_answered"
    assert (msgs[8]["tool_call_id"], msgs[8]["content"]) == ("toolu_never_answered", NO_RESULT)
    assert "half an answer" not in req.body.decode() and "toolu_aborted" not in req.body.decode()


@pytest.mark.anyio
async def test_anthropic_conversation_to_openai_responses_over_loopback() -> None:
    ctx, turn1, turn2 = _anthropic_conversation()
    call = turn1.tool_calls[0]
    _, req = await _send("openai-responses", "gpt-5", ctx)
    raw = req.body.decode()
    for secret in _secrets(turn1, turn2):
        assert secret not in raw
    items = req.json()["input"]
    assert not [i for i in items if i.get("type") == "reasoning"]
    calls = [i for i in items if i.get("type") == "function_call"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert [(c["call_id"], c["name"]) for c in calls] == [(call.id, "fixed_version"),
                                                          ("toolu_never_answered", "read")]  # fmt: skip
    assert all("id" not in c for c in calls)  # no item ids from another provider
    assert [(o["call_id"], o["output"]) for o in outputs] == [
        (call.id, "v1.2.3"), ("toolu_never_answered", NO_RESULT),
    ]  # fmt: skip
    thinking = next(b.thinking for b in turn1.content if isinstance(b, mw.ThinkingContent))
    assert f"<thinking>\\n{thinking[:20]}" in json.dumps(items)
    assert "half an answer" not in raw and "toolu_aborted" not in raw


@pytest.mark.anyio
async def test_anthropic_conversation_to_gemini_over_loopback() -> None:
    ctx, turn1, turn2 = _anthropic_conversation()
    _, req = await _send("google-generative-ai", "gemini-2.5-flash", ctx)
    raw = req.body.decode()
    for secret in _secrets(turn1, turn2):
        assert secret not in raw
    assert "thoughtSignature" not in raw and '"thought"' not in raw
    contents = req.json()["contents"]
    parts = [p for c in contents for p in c["parts"]]
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    responses = [p["functionResponse"] for p in parts if "functionResponse" in p]
    assert [c["name"] for c in calls] == ["fixed_version", "read"]
    assert [r["name"] for r in responses] == ["fixed_version", "read"]
    assert responses[1]["response"] == {"error": NO_RESULT}
    thinking = next(b.thinking for b in turn1.content if isinstance(b, mw.ThinkingContent))
    assert {"text": f"<thinking>\n{thinking}\n</thinking>"} in parts
    assert "half an answer" not in raw and "toolu_aborted" not in raw


@pytest.mark.anyio
async def test_same_claude_model_gets_its_signatures_back_over_loopback() -> None:
    ctx, turn1, turn2 = _anthropic_conversation()
    _, req = await _send("anthropic-messages", "claude-haiku-4-5", ctx)
    blocks = [b for m in req.json()["messages"] if m["role"] == "assistant"
              for b in m["content"]]  # fmt: skip
    signed = [b for b in blocks if b["type"] == "thinking"]
    redacted = [b for b in blocks if b["type"] == "redacted_thinking"]
    want = [b for b in turn1.content if isinstance(b, mw.ThinkingContent)]
    assert [(b["thinking"], b["signature"]) for b in signed] == [(w.thinking, w.signature)
                                                                 for w in want]  # fmt: skip
    assert [b["data"] for b in redacted] == [
        b.signature for b in turn2.content if isinstance(b, mw.ThinkingContent) and b.redacted
    ]


@pytest.mark.anyio
async def test_foreign_tool_ids_reach_anthropic_and_mistral_rewritten_over_loopback() -> None:
    turn = _claude_turn(mw.TextContent(text="calling"), _call("fc_68b|call.9"),
                        _call("call_" + "q" * 70), model=GPT_RESP)  # fmt: skip
    ctx = _ctx(mw.UserMessage(content="go", timestamp=1), turn, _result("fc_68b|call.9", "one"),
               _result("call_" + "q" * 70, "two"))  # fmt: skip
    _, req = await _send("anthropic-messages", "claude-haiku-4-5", ctx)
    msgs = req.json()["messages"]
    uses = [b["id"] for m in msgs for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"]  # fmt: skip
    results = [b["tool_use_id"] for m in msgs for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]  # fmt: skip
    assert len(uses) == 2 and uses == results and len(set(uses)) == 2
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", u) for u in uses)

    with MockServer([_reply("openai-chat")]) as srv:
        model = msgspec.structs.replace(srv.model("openai-chat", "mistral-small-latest"),
                                        provider="mistral")  # fmt: skip
        await mw.complete(model, mw.handoff(ctx, model), api_key="sk-test")
    body = srv.requests[0].json()
    ids = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    answered = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert ids == answered and all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in ids)

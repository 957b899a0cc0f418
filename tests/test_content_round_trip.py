"""Every content kind survives decode → final message → replay to its own API.

For every recording under ``tests/data`` (the same list and API assignment as
``tests/test_recorded_fidelity.py``), the stream is decoded with ``mw.replay`` for a
model of the provider the folder was recorded from, and the final message is put
back into a conversation for that same model: ``[user, message, follow-up user]``.
The request body that API would send is read with ``json.loads``, and the assistant
turn in it is compared field by field with what the recording itself says, read
without modelwire (``json.loads`` of every SSE data line, NDJSON line or event-stream
payload): text and its citation objects, thinking and its signature (or redacted
data), client tool calls with their arguments as streamed, provider-run tool blocks
and opaque items as received, generated images with their MIME type.

Where an API documents that something does not go back, the test asserts that
documented behaviour instead, and says which document. A message that ended in
``error`` or ``aborted`` is never replayed (the handoff rules of every encoder):
for those recordings the assistant turn must be absent.

The list of APIs comes from the registry: an API without a recording here, or
without a checker below, fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis import builtin_api_names, get_api
from modelwire._client._options import resolve_options
from test_recorded_fidelity import DATA, OWN, _id, api_of, event_stream_messages, sse_events

#: The provider each folder's recordings come from (a folder may hold two APIs).
PROVIDERS: dict[tuple[str, str], str] = {
    ("anthropic", "anthropic-messages"): "anthropic",
    ("azure", "openai-chat"): "azure-openai",
    ("bedrock-converse", "bedrock-converse"): "amazon-bedrock",
    ("cohere-chat", "cohere-chat"): "cohere",
    ("framing", "ollama-chat"): "ollama",
    ("google", "google-generative-ai"): "google",
    ("ollama", "ollama-chat"): "ollama",
    ("openai-chat", "openai-chat"): "openai",
    ("openai-responses", "openai-responses"): "openai",
    ("vertex", "anthropic-messages"): "vertex-anthropic",
    ("vertex", "google-generative-ai"): "google-vertex",
}

#: A base URL of the shape each API's models have (DESIGN §2: it holds the version segment).
BASE_URLS: dict[str, str] = {
    "google-generative-ai": "http://127.0.0.1:9/v1beta",
    "ollama-chat": "http://127.0.0.1:9",
    "bedrock-converse": "http://127.0.0.1:9",
    "cohere-chat": "http://127.0.0.1:9",
}

BEFORE = mw.UserMessage(content="Before the recorded answer.")
AFTER = mw.UserMessage(content="After the recorded answer.")


def model_for(path: Path) -> mw.Model:
    api = api_of(path)
    key = (path.parent.name, api)
    assert key in PROVIDERS, f"{_id(path)}: name the provider {key} was recorded from in PROVIDERS"
    return mw.Model(
        id="recorded-model",
        api=api,
        provider=PROVIDERS[key],
        base_url=BASE_URLS.get(api, "http://127.0.0.1:9/v1"),
        max_tokens=4096,
    )


def replayed_body(path: Path) -> tuple[mw.AssistantMessage, dict[str, Any]]:
    """The final message of the recording and the JSON body of the next request."""
    model = model_for(path)
    message = mw.replay(model.api, path.read_bytes(), model).message
    context = mw.Context(messages=[BEFORE, message, AFTER])
    options = resolve_options(model.provider, api_key="round-trip-key")
    request = get_api(model.api).build_request(model, context, options)
    return message, json.loads(request.body)


def assert_same(got: list[Any], want: list[Any], where: str) -> None:
    """Element by element, so a failure names the block that differs."""
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        assert g == w, f"{where}: replayed block {i} differs\n got: {g}\nwant: {w}"
    assert len(got) == len(want), f"{where}: {len(got)} blocks replayed, {len(want)} recorded"


# A checker reads the recording, finds the assistant turn in the request body and
# compares them; it returns the content kinds it compared (the test's matrix).
Checker = Callable[[bytes, dict[str, Any], mw.AssistantMessage, str], set[str]]


def _turns(messages: list[dict[str, Any]], role: str = "assistant") -> list[dict[str, Any]]:
    return [m for m in messages if m.get("role") == role]


def _json_or_empty(text: str) -> Any:
    return json.loads(text) if text.strip() else {}


# --------------------------------------------------------------------------- anthropic-messages


def read_anthropic_blocks(body: bytes) -> list[dict[str, Any]]:
    """The response's content blocks, assembled from the stream as the streaming docs
    describe (https://docs.anthropic.com/en/docs/build-with-claude/streaming)."""
    blocks: dict[int, dict[str, Any]] = {}
    json_text: dict[int, str] = {}
    for _end, _name, data in sse_events(body):
        ev = json.loads(data)
        t = ev.get("type")
        if t == "message_start":
            for k, block in enumerate(ev["message"].get("content") or []):
                blocks[k] = dict(block)
        elif t == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"])
            json_text[ev["index"]] = ""
        elif t == "content_block_delta":
            i, d = ev["index"], ev["delta"]
            b = blocks[i]
            # Each delta type belongs to the block types the docs give it; a block of
            # a type added later stays as it started.
            pair = (b["type"], d["type"])
            if pair == ("text", "text_delta"):
                b["text"] = b.get("text", "") + d["text"]
            elif pair == ("thinking", "thinking_delta"):
                b["thinking"] = b.get("thinking", "") + d["thinking"]
            elif pair == ("thinking", "signature_delta"):
                b["signature"] = d["signature"]
            elif pair == ("text", "citations_delta"):
                b.setdefault("citations", []).append(d["citation"])
            elif d["type"] == "input_json_delta" and b["type"].endswith("tool_use"):
                json_text[i] += d["partial_json"]
            elif pair == ("compaction", "compaction_delta"):
                # Compaction docs: the summary arrives in pieces; the last
                # encrypted_content is the block's.
                b["content"] = (b.get("content") or "") + (d.get("content") or "")
                if "encrypted_content" in d:
                    b["encrypted_content"] = d["encrypted_content"]
        elif t == "content_block_stop":
            i = ev["index"]
            if json_text.get(i, "").strip():
                blocks[i]["input"] = json.loads(json_text[i])
        elif t in ("message_stop", "error"):
            break
    return [blocks[k] for k in sorted(blocks)]


def check_anthropic(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    turns = _turns(request["messages"])
    assert len(turns) == 1, where
    kinds: set[str] = set()
    want: list[dict[str, Any]] = []
    for b in read_anthropic_blocks(body):
        kind = b["type"]
        if kind == "text":
            if not b.get("text"):
                continue  # "text content blocks must be non-empty" (Messages API errors)
            if not b.get("citations"):
                b.pop("citations", None)  # an empty list is the same as none
            else:
                kinds.add("citations")
            kinds.add("text")
        elif kind == "thinking":
            kinds.add("thinking+signature")
        elif kind == "redacted_thinking":
            kinds.add("redacted thinking")
        elif kind == "tool_use":
            b.setdefault("input", {})
            if b.get("caller") == {"type": "direct"}:
                del b["caller"]  # a direct call: the default when no caller is given
            kinds.add("tool call")
        elif kind.endswith(("tool_use", "tool_result")):
            kinds.add("server tool")
        else:
            kinds.add(f"provider item ({kind})")
        want.append(b)
    # A tool call is replayed as the recording's own JSON object (Messages API:
    # tool_use.input is an object), thinking with its signature, redacted thinking as
    # its data, server tool blocks, citations and opaque blocks as received.
    assert_same(turns[0]["content"], want, where)
    return kinds


# --------------------------------------------------------------------------- openai-chat


def check_openai_chat(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    text, thinking, notes = "", False, False
    calls: dict[int, dict[str, Any]] = {}
    for _end, _name, data in sse_events(body):
        if data == "[DONE]":
            continue
        chunk = json.loads(data)
        for c in chunk.get("choices") or []:
            d = c.get("delta") or {}
            content = d.get("content")
            if isinstance(content, str):
                text += content
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "text":
                        text += part.get("text") or ""
                    else:
                        thinking = True  # Databricks "reasoning" / Mistral "thinking" parts
            text += d.get("refusal") or ""
            notes = notes or bool(d.get("annotations"))
            if d.get("reasoning_content") or d.get("reasoning") or d.get("reasoning_details"):
                thinking = True
            for tc in d.get("tool_calls") or []:
                slot = calls.setdefault(tc.get("index", 0), {"id": None, "name": "", "args": ""})
                fn = tc.get("function") or {}
                slot["id"] = slot["id"] or tc.get("id")
                slot["name"] = slot["name"] or fn.get("name") or ""
                slot["args"] += fn.get("arguments") or ""
    turns = _turns(request["messages"])
    assert len(turns) == 1, where
    turn = turns[0]
    kinds = {"text"} if text else set()
    assert turn.get("content") == (text or None), where
    want = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
        for _, c in sorted(calls.items())
    ]
    if want:
        kinds.add("tool call")
    # Arguments go back exactly as streamed (ToolCall.raw_arguments), not re-serialised.
    assert_same(turn.get("tool_calls") or [], want, where)
    if thinking:
        # OpenAI takes no reasoning on input (the assistant message of "Create chat
        # completion", https://platform.openai.com/docs/api-reference/chat/create, has
        # content, refusal, tool_calls, audio and name only): ChatCompat.thinking_replay
        # defaults to "drop" for such servers, so the thinking is left out, not sent
        # as text.
        assert "<thinking>" not in (turn.get("content") or ""), where
        kinds.add("thinking (dropped: documented)")
    if notes:
        # Nor annotations (same reference): the model's own text goes back as it said
        # it, its citations are not sent (and not added to the text either).
        kinds.add("citations (not sent: documented)")
    assert set(turn) <= {"role", "content", "tool_calls"}, f"{where}: {sorted(turn)}"
    return kinds


# --------------------------------------------------------------------------- openai-responses


def read_responses_items(body: bytes) -> list[dict[str, Any]]:
    """The response's output items in output order (``output_index``): each
    ``output_item.done`` item, the terminal Response object's items for any whose done
    event never came, and a function call the response was cut in (added, never done)
    with the arguments streamed so far. A message's annotations are the ones its
    ``output_text.annotation.added`` events gave, when there are any."""
    done: dict[int, dict[str, Any]] = {}
    open_calls: dict[int, dict[str, Any]] = {}
    notes: dict[str, list[Any]] = {}
    for _end, _name, data in sse_events(body):
        ev = json.loads(data)
        t = ev.get("type", "")
        if t == "response.output_item.added" and ev["item"].get("type") == "function_call":
            open_calls[ev["output_index"]] = dict(ev["item"])
        elif t == "response.function_call_arguments.delta":
            for call in open_calls.values():
                if call["id"] == ev["item_id"]:
                    call["arguments"] += ev["delta"]
        elif t == "response.output_text.annotation.added":
            notes.setdefault(ev["item_id"], []).append(ev["annotation"])
        elif t == "response.output_item.done":
            done[ev["output_index"]] = ev["item"]
        elif t in ("response.completed", "response.incomplete"):
            seen = {item.get("id") for item in done.values()}
            for k, item in enumerate(ev["response"].get("output") or []):
                if k not in done and item.get("id") not in seen:
                    done[k] = item
            break
        elif t in ("response.failed", "error"):
            break
    for k, call in open_calls.items():
        done.setdefault(k, call)
    items = [done[k] for k in sorted(done)]
    for item in items:
        if item["type"] == "message" and item["id"] in notes:
            item["_annotations"] = notes[item["id"]]
    return items


class OrderDiffers(AssertionError):
    """The replayed items are the recorded ones, in another order."""


def check_openai_responses(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    items = request["input"]
    assert items[0]["role"] == "user" and items[-1]["role"] == "user", where
    got = items[1:-1]
    kinds: set[str] = set()
    want: list[dict[str, Any]] = []
    for item in read_responses_items(body):
        kind = item["type"]
        if kind == "message":
            parts = item.get("content") or []
            text = "".join(p.get("text") or p.get("refusal") or "" for p in parts)
            notes = item.pop("_annotations", [n for p in parts for n in p.get("annotations") or []])
            kinds |= {"text", *(["citations"] if notes else [])}
            # One output_text part per message item: the text of its parts joined (a
            # refusal part is text the model said), and every annotation as received.
            replay: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "id": item["id"],
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": notes}],
            }
            if "phase" in item:
                replay["phase"] = item["phase"]
            want.append(replay)
        elif kind == "function_call":
            # The arguments as streamed (ToolCall.raw_arguments, which is what is
            # replayed: DESIGN §2), also those of a call the response was cut in.
            kinds.add("tool call")
            want.append({"type": "function_call", "call_id": item["call_id"], "name": item["name"],
                         "arguments": item["arguments"], "id": item["id"]})  # fmt: skip
        else:
            # Reasoning (its encrypted_content and id), client items (shell, apply_patch,
            # custom tools…), server items (image generation with its image, MCP, tool
            # search) go back exactly as received ("Conversation state",
            # https://platform.openai.com/docs/guides/conversation-state: pass the output
            # items back as input).
            kinds.add({"reasoning": "thinking+signature", "image_generation_call": "image"}.get(
                kind, f"item ({kind})"))  # fmt: skip
            want.append(item)
    # Each item goes back once with the recorded values, then in the recorded order.
    key = [json.dumps(x, sort_keys=True) for x in want]
    assert_same(sorted(got, key=lambda x: _rank(key, x)), want, where)
    if got != want:
        raise OrderDiffers(f"{where}: items replayed as {[x.get('id') for x in got]}, "
                           f"in the response as {[x.get('id') for x in want]}")  # fmt: skip
    return kinds


def _rank(keys: list[str], item: Any) -> int:
    text = json.dumps(item, sort_keys=True)
    return keys.index(text) if text in keys else len(keys)


# --------------------------------------------------------------------------- google-generative-ai


_PATH_TOKEN = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _set_path(root: dict[str, Any], path: str, arg: dict[str, Any]) -> None:
    """Apply one ``partialArgs`` entry (``jsonPath`` and a typed value) to ``root``."""
    keys: list[str | int] = [
        m.group(1) if m.group(1) is not None else int(m.group(2))
        for m in _PATH_TOKEN.finditer(path.removeprefix("$"))
    ]
    node: Any = root
    for key, nxt in pairwise(keys):
        empty: Any = [] if isinstance(nxt, int) else {}
        if isinstance(key, int):
            while len(node) <= key:
                node.append(None)
            node[key] = node[key] if node[key] is not None else empty
        else:
            node.setdefault(key, empty)
        node = node[key]
    last = keys[-1]
    if "stringValue" in arg:
        old = node[last] if isinstance(last, int) and len(node) > last else (
            node.get(last) if isinstance(last, str) else None)  # fmt: skip
        value: Any = (old or "") + arg["stringValue"]
    elif "numberValue" in arg:
        value = arg["numberValue"]
    elif "boolValue" in arg:
        value = arg["boolValue"]
    else:
        value = None
    if isinstance(last, int):
        while len(node) <= last:
            node.append(None)
    node[last] = value


def read_google_parts(body: bytes) -> list[dict[str, Any]]:
    """The parts of the first candidate, in order; a function call streamed in
    ``partialArgs`` becomes one part with its assembled ``args``."""
    parts: list[dict[str, Any]] = []
    streamed: dict[str, Any] | None = None
    for _end, _name, data in sse_events(body):
        chunk = json.loads(data)
        for cand in chunk.get("candidates") or []:
            for part in (cand.get("content") or {}).get("parts") or []:
                call = part.get("functionCall")
                if call is not None and (
                    streamed is not None or call.get("willContinue") or "partialArgs" in call
                ):
                    if streamed is None:
                        streamed = {**part, "functionCall": {k: v for k, v in call.items()
                                                             if k in ("id", "name")}}  # fmt: skip
                        streamed["functionCall"]["args"] = {}
                        parts.append(streamed)
                    for arg in call.get("partialArgs") or []:
                        _set_path(streamed["functionCall"]["args"], arg["jsonPath"], arg)
                    if not call.get("willContinue"):
                        streamed = None
                    continue
                parts.append(part)
    if streamed is not None:
        # Cut before its last piece (a length stop): never a complete call, so its
        # arguments are {} (ToolCall.arguments, DESIGN §2a), and Gemini's args must
        # be an object, so {} is what goes back.
        streamed["functionCall"]["args"] = {}
    return parts


def _part_kind(part: dict[str, Any]) -> str:
    if "text" in part:
        return "thought" if part.get("thought") else "text"
    return next(k for k in part if k not in ("thought", "thoughtSignature"))


def check_google(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    wire = read_google_parts(body)
    got = [p for c in request["contents"] if c["role"] == "model" for p in c["parts"]]
    kinds: set[str] = set()

    def joined(parts: list[dict[str, Any]], kind: str) -> str:
        return "".join(p["text"] for p in parts if _part_kind(p) == kind)

    # Text and thought text, every character (streamed pieces become one part each run).
    for kind in ("text", "thought"):
        assert joined(got, kind) == joined(wire, kind), f"{where}: {kind}"
        if joined(wire, kind):
            kinds.add("thinking" if kind == "thought" else "text")
    # Every thoughtSignature goes back once, in a part of the kind it came in
    # (https://ai.google.dev/gemini-api/docs/thought-signatures: return the whole
    # response with its signatures).
    signed = [(_part_kind(p), p["thoughtSignature"]) for p in wire if "thoughtSignature" in p]
    assert [(_part_kind(p), p["thoughtSignature"]) for p in got if "thoughtSignature" in p] == (
        signed
    ), where
    if signed:
        kinds.add("thought signature")
    # Function calls: provider id, name and the arguments object as streamed.
    calls = [{"args": {}, **p["functionCall"]} for p in wire if "functionCall" in p]
    assert_same([p["functionCall"] for p in got if "functionCall" in p], calls, where)
    if calls:
        kinds.add("tool call")

    # Images the model generated (not the interim "thought" images: docs/image-generation,
    # thinking process), with their MIME type; code execution parts as received.
    def unsigned(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in p.items() if k != "thoughtSignature"}
            for p in parts
            if _part_kind(p) not in ("text", "thought", "functionCall") and not p.get("thought")
        ]

    others = unsigned(wire)
    assert_same(unsigned(got), others, where)
    kinds |= {"image" if "inlineData" in p else "server tool" for p in others}
    # Grounding and citations are response metadata (GenerateContentResponse
    # candidates[].groundingMetadata), which no request Part carries (Content/Part,
    # https://ai.google.dev/api/caching#Part): they are not sent back.
    if any(c.citations for c in message.content if isinstance(c, mw.TextContent)):
        kinds.add("citations (not sent: documented)")
    if any(getattr(b, "provider_type", None) == "groundingMetadata" for b in message.content):
        kinds.add("server tool (grounding: not sent: documented)")
    assert "groundingMetadata" not in json.dumps(request["contents"]), where
    return kinds


# --------------------------------------------------------------------------- bedrock-converse


def check_bedrock(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    blocks: dict[int, dict[str, Any]] = {}
    kinds: set[str] = set()
    for _end, headers, payload in event_stream_messages(body):
        if headers.get(":message-type") != "event":
            break
        ev = json.loads(payload) if payload else {}
        kind = headers[":event-type"]
        if kind == "contentBlockStart":
            start = ev["start"]
            if "toolUse" in start:
                blocks[ev["contentBlockIndex"]] = {"toolUse": {**start["toolUse"], "input": ""}}
            elif "toolResult" in start:  # the result of a tool Bedrock ran itself
                blocks[ev["contentBlockIndex"]] = {"toolResult": {**start["toolResult"],
                                                                  "content": []}}  # fmt: skip
        elif kind == "contentBlockDelta":
            b = blocks.setdefault(ev["contentBlockIndex"], {})
            d = ev["delta"]
            if "text" in d:
                b["text"] = b.get("text", "") + d["text"]
            elif "citation" in d:
                b.setdefault("citations", []).append(d["citation"])
            elif "toolUse" in d:
                b["toolUse"]["input"] += d["toolUse"]["input"]
            elif "toolResult" in d:
                b["toolResult"]["content"] += d["toolResult"]
            elif "reasoningContent" in d:
                r = d["reasoningContent"]
                if "redactedContent" in r:
                    b["reasoningContent"] = {"redactedContent": r["redactedContent"]}
                    kinds.add("redacted thinking")
                else:
                    rt = b.setdefault("reasoningContent", {}).setdefault("reasoningText", {})
                    if "text" in r:
                        rt["text"] = rt.get("text", "") + r["text"]
                    if "signature" in r:
                        rt["signature"] = r["signature"]
    want: list[dict[str, Any]] = []
    for b in (blocks[k] for k in sorted(blocks)):
        if "toolUse" in b:
            b["toolUse"]["input"] = _json_or_empty(b["toolUse"]["input"])
            server = b["toolUse"].get("type") == "server_tool_use"
            kinds.add("server tool" if server else "tool call")
        elif "toolResult" in b:
            # Bedrock's own tool call and result go back as the ContentBlocks received.
            kinds.add("server tool")
        elif "reasoningContent" in b:
            if "reasoningText" in b["reasoningContent"]:
                kinds.add("thinking+signature")
        elif "citations" in b:
            # Cited text goes back as the request's CitationsContentBlock: the text and
            # every citation as received (Converse API reference, ContentBlock).
            kinds |= {"text", "citations"}
            b = {"citationsContent": {"content": [{"text": b.get("text", "")}],
                                      "citations": b["citations"]}}  # fmt: skip
        elif "text" in b:
            if not b["text"].strip():
                continue  # Bedrock refuses blank text blocks (ContentBlock.text)
            kinds.add("text")
        want.append(b)
    turns = _turns(request["messages"])
    assert len(turns) == 1, where
    assert_same(turns[0]["content"], want, where)
    return kinds


# --------------------------------------------------------------------------- cohere-chat


def check_cohere(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    content: dict[int, dict[str, Any]] = {}
    calls: dict[int, dict[str, Any]] = {}
    plan = ""
    citations: list[Any] = []
    for _end, _name, data in sse_events(body):
        if data == "[DONE]":
            continue
        ev = json.loads(data)
        t = ev.get("type")
        msg = (ev.get("delta") or {}).get("message") or {}
        if t == "content-start":
            content[ev["index"]] = dict(msg["content"])
        elif t == "content-delta":
            part = content[ev["index"]]
            for k in ("text", "thinking"):
                if k in msg["content"]:
                    part[k] = part.get(k, "") + msg["content"][k]
        elif t == "tool-plan-delta":
            plan += msg.get("tool_plan") or ""
        elif t == "tool-call-start":
            tc = msg["tool_calls"]
            calls[ev["index"]] = {"id": tc["id"], "type": "function", "function": {
                "name": tc["function"]["name"], "arguments": tc["function"].get("arguments") or ""}}  # fmt: skip
        elif t == "tool-call-delta":
            calls[ev["index"]]["function"]["arguments"] += msg["tool_calls"]["function"][
                "arguments"
            ]
        elif t == "citation-start":
            citations.append(msg["citations"])
    thinking = [
        {"type": "thinking", "thinking": p["thinking"]}
        for p in content.values()
        if p["type"] == "thinking" and p["thinking"]
    ]
    text = "".join(p.get("text", "") for p in content.values() if p["type"] == "text")
    kinds = {"thinking"} if thinking else set()
    # The assistant message of "Chat" (https://docs.cohere.com/reference/chat): a turn
    # that calls tools carries its plan and the calls (arguments as text, as streamed);
    # otherwise content parts; thinking parts go back to Cohere as they came; the
    # citations as received.
    want: dict[str, Any] = {"role": "assistant"}
    if calls:
        kinds.add("tool call")
        if plan + text:
            want["tool_plan"] = plan + text
            kinds.add("text")
        if thinking:
            want["content"] = thinking
        want["tool_calls"] = [calls[k] for k in sorted(calls)]
    else:
        want["content"] = [*thinking, *([{"type": "text", "text": text}] if text else [])]
        kinds |= {"text"} if text else set()
    if citations:
        want["citations"] = citations
        kinds.add("citations")
    turns = _turns(request["messages"])
    assert len(turns) == 1, where
    for key in sorted(set(want) | set(turns[0])):
        assert turns[0].get(key) == want.get(key), f"{where}: {key}"
    return kinds


# --------------------------------------------------------------------------- ollama-chat


def check_ollama(
    body: bytes, request: dict[str, Any], message: mw.AssistantMessage, where: str
) -> set[str]:
    text = thinking = ""
    calls: list[dict[str, Any]] = []
    for line in body.splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        msg = obj.get("message") or {}
        text += msg.get("content") or ""
        thinking += msg.get("thinking") or ""
        for tc in msg.get("tool_calls") or []:
            fn = tc["function"]
            # Ollama matches results by tool_name and order, so call ids (and
            # function.index) are not sent back (docs/api.md, "Chat request (with
            # tools)"; ollama_chat/encode.py).
            calls.append({"function": {"name": fn["name"], "arguments": fn.get("arguments") or {}}})
    want: dict[str, Any] = {"role": "assistant", "content": text}
    kinds = {"text"} if text else set()
    if thinking:
        want["thinking"] = thinking  # docs/api.md: assistant messages take "thinking"
        kinds.add("thinking")
    if calls:
        want["tool_calls"] = calls
        kinds.add("tool call")
    turns = _turns(request["messages"])
    assert len(turns) == 1, where
    for key in sorted(set(want) | set(turns[0])):
        assert turns[0].get(key) == want.get(key), f"{where}: {key}"
    return kinds


CHECKERS: dict[str, Checker] = {
    "anthropic-messages": check_anthropic,
    "bedrock-converse": check_bedrock,
    "cohere-chat": check_cohere,
    "google-generative-ai": check_google,
    "ollama-chat": check_ollama,
    "openai-chat": check_openai_chat,
    "openai-responses": check_openai_responses,
}


def _assistant_turn_count(api: str, request: dict[str, Any]) -> int:
    if api == "openai-responses":
        return len(request["input"]) - 2  # everything between the two user messages
    if api == "google-generative-ai":
        return len([c for c in request["contents"] if c["role"] == "model"])
    return len(_turns(request["messages"]))


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("api", builtin_api_names())
def test_every_api_has_a_round_trip_case(api: str) -> None:
    """A new API fails here until it has a recording under tests/data and a checker."""
    assert api in CHECKERS, f"no content round-trip checker for {api} in CHECKERS"
    assert any(api_of(p) == api for p in OWN), f"no recording of {api} under tests/data"


#: Recordings whose round trip loses something, with the exception that shows it.
KNOWN_LOSSES: dict[str, tuple[type[AssertionError], str]] = {
    "openai-responses/interleaved-items.sse": (OrderDiffers, (
        "items streamed out of output order (output_index 4, 0, 2) go back in the order "
        "they were first added (fc_s8a, msg_s8, fc_s8b), not in the response's output "
        "order (msg_s8, fc_s8b, fc_s8a): message content keeps arrival order, not "
        "output_index")),
    "openai-responses/SYNTHETIC-mcp-list-tools-backfill.sse": (OrderDiffers, (
        "an mcp_list_tools item added first (output_index 0) whose output_item.done never "
        "came is filled in from response.completed and goes back after the message "
        "(mcpl_s7b, msg_s7, mcpl_s7a, mcpl_s7c) instead of first (mcpl_s7a, mcpl_s7b, "
        "msg_s7, mcpl_s7c)")),
}  # fmt: skip


def _case(path: Path) -> Any:
    name = str(path.relative_to(DATA))
    if name in KNOWN_LOSSES:
        raises, reason = KNOWN_LOSSES[name]
        mark = pytest.mark.xfail(strict=True, raises=raises, reason=reason)
        return pytest.param(path, id=name, marks=mark)
    return pytest.param(path, id=name)


def test_every_known_loss_names_a_recording() -> None:
    names = {str(p.relative_to(DATA)) for p in OWN}
    assert set(KNOWN_LOSSES) <= names


@pytest.mark.parametrize("path", [_case(p) for p in OWN])
def test_content_survives_the_round_trip(path: Path) -> None:
    api = api_of(path)
    where = f"{_id(path)} ({api})"
    message, request = replayed_body(path)
    if message.stop_reason in ("error", "aborted"):
        # Every encoder: "a failed turn is not replayed (handoff rules)".
        assert _assistant_turn_count(api, request) == 0, where
        return
    assert api in CHECKERS, f"no content round-trip checker for {api}"
    kinds = CHECKERS[api](path.read_bytes(), request, message, where)
    # Everything the decoder made of the stream was compared: each kind of block in
    # the message is one the recording was read for.
    for kind, covered_by in _message_kinds(message).items():
        assert any(k.startswith(covered_by) for k in kinds), f"{where}: {kind} not compared"


#: A kind of block in a message → the checked kinds that cover it.
_COVERED_BY: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "citations": ("citations",),
    "thinking": ("thinking", "redacted thinking", "thought signature"),
    "tool_call": ("tool call", "item ("),
    "server_tool_call": ("server tool", "item (", "image"),
    "server_tool_result": ("server tool", "item ("),
    "provider_item": ("provider item", "item ("),
    "image": ("image",),
}


def _message_kinds(message: mw.AssistantMessage) -> dict[str, tuple[str, ...]]:
    found: set[str] = set()
    for b in message.content:
        if isinstance(b, mw.TextContent):
            found |= {"text"} if b.text else set()
            found |= {"citations"} if b.citations else set()
        else:
            found.add(b.type)
    return {k: _COVERED_BY[k] for k in sorted(found)}

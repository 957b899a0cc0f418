"""Fidelity from recorded bytes: every built-in API decodes the streams its provider
really sent, not only what its own mock renderer writes.

The recordings come from two places: ``tests/data`` (ours, always present; every API
must have at least one there, so an API with none is a failure, not a skip) and the
shared fixture folder of real provider streams (``tests/recorded.py``; its tests skip
with one reason when it is absent). Which API a file belongs to is not written down
here: a ``tests/data/<api-name>/`` folder says it, and otherwise the registry's own
recognition does (``modelwire._apis.recognizing``, what wrong-API detection asks), which
must name exactly one API; a file no API recognizes (a stream that opens with an error)
takes the one API its folder's other files are recognized as.

Each recording is replayed through the public path (``mw.replay``) whole, byte by byte,
cut in two at every offset (sampled around every event boundary in big files) and in
random chunks (hypothesis), and must give the same events each way. The result is then
checked against an independent reading of the bytes (``json.loads`` of every SSE data
line, NDJSON line or event-stream payload, in :data:`READERS`): the answer text, every
complete tool call with its JSON arguments, the token usage the stream reports and how
it ended. Finally the recording is cut at every event boundary before its terminal event
and at a few offsets inside it: no cut is reported as success, and no tool call built
from half its JSON is ever an action.
"""

from __future__ import annotations

import json
import random
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import modelwire as mw
from aws_frames import build as build_frames
from aws_frames import specs as frame_specs
from eventlist import plain, terminal
from modelwire._apis import builtin_api_names, recognizing
from recorded import PLACEHOLDER, ROOT, recorded_streams

DATA = Path(__file__).resolve().parent / "data"
FIXTURES = recorded_streams()
#: What a recorded response body is stored as: SSE, NDJSON, AWS event stream.
SUFFIXES = (".sse", ".ndjson", ".bin")


def _streams(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES)


OWN = _streams(DATA)
RECORDED = sorted(p for p in FIXTURES.rglob("*") if p.suffix in SUFFIXES or PLACEHOLDER in p.name)
ALL = OWN + RECORDED

# Every split point of bodies up to this size; beyond it, a sample (the suite stays fast).
EVERY_SPLIT_MAX = 1200
BYTEWISE_MAX = 8_000
SAMPLED_CUTS = 24


def _id(path: Path) -> str:
    # ROOT, not FIXTURES: a helper that names FIXTURES is "recorded" for conftest, and so
    # would be every test using it, our own recordings included (skipped without the
    # shared folder); only the parameter lists below may name the shared recordings.
    for root in (DATA, ROOT):
        if path.is_relative_to(root):
            return f"{root.name}/{path.relative_to(root)}"
    return path.name


# --------------------------------------------------------------------------- which API


@cache
def _recognized(path: Path) -> tuple[str, ...]:
    return tuple(recognizing(path.read_bytes()))


@cache
def api_of(path: Path) -> str:
    """The API a recording belongs to: its folder when the folder is named after one,
    else the one API that recognizes it, else the one its folder's other files are."""
    apis = builtin_api_names()
    found = _recognized(path)
    assert len(found) <= 1, f"{_id(path)} is recognized by several APIs: {found}"
    folder = path.parent.name
    if folder in apis:
        assert found in ((), (folder,)), f"{_id(path)} is in {folder}/ but looks like {found}"
        return folder
    if found:
        return found[0]
    siblings = {a for p in _streams(path.parent) if p != path for a in _recognized(p)}
    assert len(siblings) == 1, (
        f"{_id(path)} is recognized by no API and its folder's files by {sorted(siblings)}: "
        f"put it in a folder named after its API"
    )
    return siblings.pop()


# --------------------------------------------------------------------------- the independent reading


@dataclass
class Reading:
    """What the recording says, read without modelwire: the answer text, the complete
    tool calls (``id``, name, arguments; ``None``: not compared, a call of a kind whose
    name and arguments modelwire composes from the item is only counted), the calls cut
    mid-JSON, usage as (prompt tokens including cache, output tokens), how it ended
    (``stop``, ``tool_use``, ``length``, ``filtered``, ``error``, ``other``, or ``None``:
    no terminal event) and the byte offset where each event ends."""

    text: str = ""
    calls: list[tuple[str | None, str | None, Any]] = field(default_factory=list)
    partial_calls: list[str] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    finish: str | None = None
    ends: list[int] = field(default_factory=list)
    terminal: int | None = None  # index in ``ends`` of the terminal event
    exhaustive: bool = True  # every client tool call of the stream is in ``calls``


_BLANK = re.compile(rb"(?:\r\n|\r|\n)(?:\r\n|\r|\n)")


def sse_events(body: bytes) -> list[tuple[int, str | None, str]]:
    """(end offset, event name, data) of every SSE event with data (WHATWG rules, as
    far as recorded provider streams need them)."""
    out: list[tuple[int, str | None, str]] = []
    start = 0
    for m in _BLANK.finditer(body):
        block, start = body[start : m.end()], m.end()
        # A CR alone ends a line: after CRLF, the event is complete at the next CR.
        complete = m.end() - 1 if m.group().endswith(b"\r\n") and len(m.group()) > 2 else m.end()
        name, data = None, []
        for line in re.split(r"\r\n|\r|\n", block.decode()):
            key, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        if data:
            out.append((complete, name, "\n".join(data)))
    return out


def _json_object(text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _args(text: str) -> tuple[bool, Any]:
    """(complete, arguments): complete when ``text`` is one JSON object (empty: {})."""
    if not text.strip():
        return True, {}
    value = _json_object(text)
    return value is not None, value


def read_openai_chat(body: bytes) -> Reading:
    r = Reading()
    calls: dict[int, list[Any]] = {}  # index -> [id, name, arguments text]
    for i, (end, name, data) in enumerate(sse_events(body)):
        r.ends.append(end)
        if data == "[DONE]":
            continue
        chunk = json.loads(data)
        if name == "error" or "error" in chunk:
            r.finish, r.terminal = "error", i
            break
        usage = chunk.get("usage") or (chunk.get("x_groq") or {}).get("usage")
        if usage and usage.get("prompt_tokens") is not None:
            # total - prompt: what the model produced, reasoning included (xAI counts its
            # reasoning tokens outside completion_tokens, but inside the total).
            total = usage.get("total_tokens")
            out = total - usage["prompt_tokens"] if total else usage["completion_tokens"]
            r.usage = (usage["prompt_tokens"], out)
        choices = chunk.get("choices") or []
        if any(c.get("index", 0) != 0 for c in choices):
            r.finish, r.terminal = "other", i  # one choice per stream (n > 1 is refused)
            break
        for c in choices:
            delta = c.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                r.text += content
            elif isinstance(content, list):
                r.text += "".join(p.get("text", "") for p in content if p.get("type") == "text")
            r.text += delta.get("refusal") or ""
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(tc.get("index", 0), [None, "", ""])
                fn = tc.get("function") or {}
                slot[0] = slot[0] or tc.get("id")
                slot[1] = slot[1] or fn.get("name") or ""
                slot[2] += fn.get("arguments") or ""
            reason = c.get("finish_reason")
            if reason and r.finish is None:
                r.terminal = i
                r.finish = {"stop": "stop", "tool_calls": "tool_use", "function_call": "tool_use",
                            "length": "length", "content_filter": "filtered"}.get(reason, "other")  # fmt: skip
    for cid, name, text in calls.values():
        done, value = _args(text)
        if done:
            r.calls.append((cid, name, value))
        else:
            r.partial_calls.append(name)
    return r


#: Output items the client executes (OpenAI's tools guide); other ``*_call`` items
#: (web_search_call, file_search_call, code_interpreter_call…) are run by OpenAI.
_CLIENT_ITEMS = frozenset({"custom_tool_call", "local_shell_call", "shell_call",
                           "apply_patch_call", "computer_call", "mcp_approval_request"})  # fmt: skip


def _client_item(item: dict[str, Any]) -> bool:
    """Whether the client executes an output item (a shell call: in a local environment,
    or one not given — a hosted container's is OpenAI's to run)."""
    kind = item.get("type")
    if kind == "shell_call":
        return bool((item.get("environment") or {}).get("type", "local") == "local")
    if kind == "tool_search_call":
        return item.get("execution") == "client"
    return kind in _CLIENT_ITEMS


def read_openai_responses(body: bytes) -> Reading:
    r = Reading()
    texts: dict[str, str] = {}
    open_calls: dict[str, str] = {}  # function_call items added and not yet done
    done_ids: set[str] = set()
    done_indexes: set[int] = set()

    def finish(item: dict[str, Any]) -> None:
        open_calls.pop(item.get("id", ""), None)
        done_ids.add(item.get("id", ""))
        if item.get("type") == "message":
            texts[item["id"]] = "".join(
                p.get("text") or p.get("refusal") or "" for p in item.get("content") or []
            )
        elif item.get("type") == "function_call":
            done, value = _args(item.get("arguments", ""))
            assert done, f"a function_call item done with partial JSON: {item}"
            r.calls.append((item["call_id"], item["name"], value))
        elif _client_item(item):
            r.calls.append((None, None, None))  # counted; its arguments are item fields

    for i, (end, _name, data) in enumerate(sse_events(body)):
        r.ends.append(end)
        ev = json.loads(data)
        t = ev.get("type", "")
        if t in ("response.output_text.delta", "response.refusal.delta"):
            texts[ev["item_id"]] = texts.get(ev["item_id"], "") + ev["delta"]
        elif t == "response.output_item.added" and ev["item"].get("type") == "function_call":
            open_calls[ev["item"]["id"]] = ev["item"]["name"]
        elif t == "response.output_item.done":
            if isinstance(ev.get("output_index"), int):
                done_indexes.add(ev["output_index"])
            finish(ev["item"])
        elif t in ("response.completed", "response.incomplete", "response.failed", "error"):
            r.terminal = i
            resp = ev.get("response") or {}
            if t != "response.failed":
                # The Response object is the whole response ("The response object"): an
                # item whose output_item.done never came ends here.
                for k, item in enumerate(resp.get("output") or []):
                    if item.get("id", "") not in done_ids and k not in done_indexes:
                        finish(item)
            usage = resp.get("usage")
            if usage:
                r.usage = (usage["input_tokens"], usage["output_tokens"])
            if t == "response.completed":
                r.finish = "tool_use" if r.calls else "stop"
            elif t == "response.incomplete":
                reason = (resp.get("incomplete_details") or {}).get("reason")
                r.finish = {"max_output_tokens": "length", "content_filter": "filtered"}.get(
                    reason or "", "other"
                )
            else:
                r.finish = "error"
            break
    r.text = "".join(texts.values())
    r.partial_calls = list(open_calls.values())
    return r


_ANTHROPIC_STOP = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop",
                   "tool_use": "tool_use", "max_tokens": "length", "refusal": "filtered",
                   "model_context_window_exceeded": "length"}  # fmt: skip


def read_anthropic(body: bytes) -> Reading:
    r = Reading()
    blocks: dict[int, dict[str, Any]] = {}
    input_tokens = output = 0
    for i, (end, _name, data) in enumerate(sse_events(body)):
        r.ends.append(end)
        ev = json.loads(data)
        t = ev.get("type")
        if t == "message_start":
            u = ev["message"].get("usage") or {}
            input_tokens = sum(u.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens",
                                                        "cache_read_input_tokens"))  # fmt: skip
            output = u.get("output_tokens") or 0
            # Programmatic tool calling: blocks may arrive whole in message_start.
            for k, block in enumerate(ev["message"].get("content") or []):
                blocks[k] = {**block, "json": "", "stopped": True}
            r.finish = _ANTHROPIC_STOP.get(ev["message"].get("stop_reason") or "")
        elif t == "content_block_start":
            block = dict(ev["content_block"])
            block["json"] = ""
            blocks[ev["index"]] = block
        elif t == "content_block_delta":
            d, block = ev["delta"], blocks[ev["index"]]
            if d["type"] == "text_delta":
                block["_text"] = block.get("_text", "") + d["text"]
            elif d["type"] == "input_json_delta":
                block["json"] += d["partial_json"]
        elif t == "content_block_stop":
            blocks[ev["index"]]["stopped"] = True
        elif t == "message_delta":
            u = ev.get("usage") or {}
            output = u.get("output_tokens", output)
            if u.get("input_tokens") is not None:
                input_tokens = sum(u.get(k) or 0 for k in (
                    "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))  # fmt: skip
            reason = (ev.get("delta") or {}).get("stop_reason")
            r.finish = _ANTHROPIC_STOP.get(reason or "", "other")
        elif t == "message_stop":
            r.terminal = i
            r.usage = (input_tokens, output)
            break
        elif t == "error":
            r.finish, r.terminal = "error", i
            break
    else:
        r.finish = None  # no message_stop: the stream did not end
    for block in blocks.values():
        if block["type"] == "text":
            r.text += (block.get("text") or "") + block.get("_text", "")
        elif block["type"] == "tool_use":
            text = block["json"] or (json.dumps(block["input"]) if block.get("input") else "")
            done, value = _args(text)
            if done and block.get("stopped"):
                r.calls.append((block["id"], block["name"], value))
            else:
                r.partial_calls.append(block["name"])
    return r


def read_google(body: bytes) -> Reading:
    r = Reading()
    events = sse_events(body)
    streamed: dict[str, Any] | None = None  # a functionCall whose args arrive in parts
    for i, (end, _name, data) in enumerate(events):
        r.ends.append(end)
        chunk = json.loads(data)
        if "error" in chunk:
            r.finish, r.terminal = "error", i
            break
        if chunk.get("usageMetadata"):
            u = chunk["usageMetadata"]
            r.usage = ((u.get("promptTokenCount") or 0) + (u.get("toolUsePromptTokenCount") or 0),
                       (u.get("candidatesTokenCount") or 0) + (u.get("thoughtsTokenCount") or 0))  # fmt: skip
        if (chunk.get("promptFeedback") or {}).get("blockReason"):
            r.finish, r.terminal = "filtered", i
        for cand in chunk.get("candidates") or []:
            for part in (cand.get("content") or {}).get("parts") or []:
                if "text" in part and not part.get("thought"):
                    r.text += part["text"]
                call = part.get("functionCall")
                if call is None:
                    continue
                if call.get("partialArgs") is not None or call.get("willContinue"):
                    streamed = streamed or {"id": call.get("id"), "name": call.get("name")}
                    streamed.setdefault("parts", []).extend(call.get("partialArgs") or [])
                    if not call.get("willContinue"):
                        r.calls.append((streamed["id"], streamed["name"], None))
                        streamed = None
                elif call.get("name"):
                    r.calls.append((call.get("id"), call["name"], call.get("args") or {}))
                elif streamed is not None:  # the empty functionCall {} that ends the parts
                    r.calls.append((streamed["id"], streamed["name"], None))
                    streamed = None
            reason = cand.get("finishReason")
            if reason:
                r.terminal = i
                r.finish = {"STOP": "tool_use" if r.calls else "stop", "MAX_TOKENS": "length",
                            "SAFETY": "filtered", "RECITATION": "filtered",
                            "PROHIBITED_CONTENT": "filtered", "BLOCKLIST": "filtered",
                            "SPII": "filtered"}.get(reason, "other")  # fmt: skip
    if streamed is not None:
        r.partial_calls.append(streamed["name"])
    return r


def event_stream_messages(body: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """(end offset, string headers, payload) of every complete AWS event-stream message."""
    out, at = [], 0
    while at + 12 <= len(body):
        total, hlen = struct.unpack(">II", body[at : at + 8])
        if at + total > len(body):
            break
        raw, headers, j = body[at + 12 : at + 12 + hlen], {}, 0
        while j < len(raw):
            n = raw[j]
            name = raw[j + 1 : j + 1 + n].decode()
            assert raw[j + 1 + n] == 7, "only string headers in ConverseStream recordings"
            size = int.from_bytes(raw[j + 2 + n : j + 4 + n], "big")
            headers[name] = raw[j + 4 + n : j + 4 + n + size].decode()
            j += 4 + n + size
        out.append((at + total, headers, body[at + 12 + hlen : at + total - 4]))
        at += total
    return out


def read_bedrock(body: bytes) -> Reading:
    r = Reading()
    blocks: dict[int, dict[str, Any]] = {}
    for i, (end, headers, payload) in enumerate(event_stream_messages(body)):
        r.ends.append(end)
        ev = json.loads(payload) if payload else {}
        if headers.get(":message-type") != "event":
            r.finish, r.terminal = "error", i
            break
        kind = headers[":event-type"]
        if kind == "contentBlockStart":
            use = ev["start"].get("toolUse")
            if use and use.get("type") != "server_tool_use":
                blocks[ev["contentBlockIndex"]] = {"id": use["toolUseId"], "name": use["name"],
                                                   "input": ""}  # fmt: skip
        elif kind == "contentBlockDelta":
            d = ev["delta"]
            r.text += d.get("text") or ""
            if "toolUse" in d and ev["contentBlockIndex"] in blocks:
                blocks[ev["contentBlockIndex"]]["input"] += d["toolUse"]["input"]
        elif kind == "contentBlockStop" and ev["contentBlockIndex"] in blocks:
            blocks[ev["contentBlockIndex"]]["stopped"] = True
        elif kind == "messageStop":
            r.terminal = i  # metadata follows: the body may end after messageStop
            r.finish = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_use",
                        "max_tokens": "length", "guardrail_intervened": "filtered",
                        "content_filtered": "filtered"}.get(ev["stopReason"], "other")  # fmt: skip
        elif kind == "metadata":
            u = ev["usage"]
            cached = (u.get("cacheReadInputTokens") or 0) + (u.get("cacheWriteInputTokens") or 0)
            r.usage = (u["inputTokens"] + cached, u["outputTokens"])
    for b in blocks.values():
        done, value = _args(b["input"])
        if done and b.get("stopped"):
            r.calls.append((b["id"], b["name"], value))
        else:
            r.partial_calls.append(b["name"])
    return r


def read_ollama(body: bytes) -> Reading:
    r = Reading()
    at = 0
    for line in body.splitlines(keepends=True):
        at += len(line)
        if not line.strip():
            continue
        r.ends.append(at)
        obj = json.loads(line)
        if "error" in obj:
            r.finish, r.terminal = "error", len(r.ends) - 1
            break
        msg = obj.get("message") or {}
        r.text += msg.get("content") or ""
        for tc in msg.get("tool_calls") or []:
            fn = tc["function"]
            r.calls.append((tc.get("id"), fn["name"], fn.get("arguments") or {}))
        if obj.get("done"):
            r.terminal = len(r.ends) - 1
            reason = obj.get("done_reason") or "stop"
            r.finish = {"stop": "tool_use" if r.calls else "stop", "length": "length"}.get(
                reason, "other"
            )
            r.usage = (obj.get("prompt_eval_count") or 0, obj.get("eval_count") or 0)
    return r


_COHERE_FINISH = {"COMPLETE": "stop", "STOP_SEQUENCE": "stop", "TOOL_CALL": "tool_use",
                  "MAX_TOKENS": "length", "ERROR": "error", "TIMEOUT": "error",
                  "ERROR_TOXIC": "error", "ERROR_LIMIT": "error"}  # fmt: skip


def read_cohere(body: bytes) -> Reading:
    r = Reading()
    calls: dict[int, dict[str, Any]] = {}
    for i, (end, _name, data) in enumerate(sse_events(body)):
        r.ends.append(end)
        if data == "[DONE]":
            continue
        ev = json.loads(data)
        t = ev.get("type")
        msg = (ev.get("delta") or {}).get("message") or {}
        if t == "tool-plan-delta":
            r.text += msg.get("tool_plan") or ""  # said before the calls: the answer's text
        elif t == "content-delta":
            r.text += (msg.get("content") or {}).get("text") or ""
        elif t == "tool-call-start":
            tc = msg["tool_calls"]
            calls[ev["index"]] = {"id": tc["id"], "name": tc["function"]["name"],
                                  "json": tc["function"].get("arguments") or ""}  # fmt: skip
        elif t == "tool-call-delta":
            calls[ev["index"]]["json"] += msg["tool_calls"]["function"]["arguments"]
        elif t == "tool-call-end":
            calls[ev["index"]]["stopped"] = True
        elif t == "message-end":
            d = ev["delta"]
            u = d.get("usage") or {}
            units = u.get("billed_units") or u.get("tokens") or {}
            if units:
                r.usage = (units.get("input_tokens") or 0, units.get("output_tokens") or 0)
            r.finish = _COHERE_FINISH.get(d.get("finish_reason") or "", "other")
            r.terminal = i
            break
    for c in calls.values():
        done, value = _args(c["json"])
        if done and c.get("stopped"):
            r.calls.append((c["id"], c["name"], value))
        else:
            r.partial_calls.append(c["name"])
    return r


#: The independent reading of each built-in API's wire format. A new API needs one: its
#: recordings are replayed either way, but without a reader nothing says what they hold.
READERS: dict[str, Callable[[bytes], Reading]] = {
    "anthropic-messages": read_anthropic,
    "bedrock-converse": read_bedrock,
    "cohere-chat": read_cohere,
    "google-generative-ai": read_google,
    "ollama-chat": read_ollama,
    "openai-chat": read_openai_chat,
    "openai-responses": read_openai_responses,
}


# --------------------------------------------------------------------------- helpers


@cache
def whole(path: Path) -> mw.events.Replay:
    return mw.replay(api_of(path), path.read_bytes())


def succeeded(events: list[mw.Event]) -> bool:
    end = terminal(events)
    return end.type == "done" and end.message.stop_reason in ("stop", "tool_use")


def _calls(message: mw.AssistantMessage) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.arguments) for c in message.tool_calls]


def _cut_points(path: Path, reading: Reading) -> list[int]:
    """Where to cut the recording before its terminal event: every event boundary (a
    sample in big files) and offsets inside the terminal event."""
    n = len(path.read_bytes())
    if reading.terminal is None:
        return []
    start = reading.ends[reading.terminal - 1] if reading.terminal else 0
    stop = reading.ends[reading.terminal]
    bounds = [0, *reading.ends[: reading.terminal]]
    if len(bounds) > SAMPLED_CUTS:
        rng = random.Random(path.name)
        bounds = sorted({0, bounds[-1], *rng.sample(bounds, SAMPLED_CUTS)})
    inside = {start + 1, (start + stop) // 2, stop - 1} - {start, stop}
    return sorted({b for b in bounds if b < n} | {p for p in inside if 0 < p < n})


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("api", builtin_api_names())
def test_every_api_has_its_own_recordings(api: str) -> None:
    """The shared fixtures count only when present: tests/data must hold a stream of
    every API on its own, and a reader of its format."""
    own = [p for p in OWN if api_of(p) == api]
    assert own, f"no recorded stream of {api} under tests/data (add tests/data/{api}/…)"
    assert api in READERS, f"no independent reader of {api} streams in READERS"


def test_the_bedrock_recordings_are_what_their_specs_build() -> None:
    specs = frame_specs()
    assert len(specs) >= 5
    for spec in specs:
        binary = spec.with_name(spec.name.removesuffix(".frames.json") + ".bin")
        assert binary.read_bytes() == build_frames(spec), (
            f"rebuild {binary.name}: python {__file__.rsplit('/', 1)[0]}/aws_frames.py"
        )


def _bytewise(path: Path, body: bytes) -> list[bytes]:
    """The body byte by byte; a big one in chunks of 1 to 7 bytes."""
    if len(body) <= BYTEWISE_MAX:
        return [body[i : i + 1] for i in range(len(body))]
    rng, chunks, i = random.Random(path.name), [], 0
    while i < len(body):
        step = rng.randint(1, 7)
        chunks.append(body[i : i + step])
        i += step
    return chunks


def _split_points(path: Path, api: str, body: bytes, sample: int) -> list[int]:
    """Every offset of a small body; around every event boundary of a big one (at most
    ``sample`` of them)."""
    if len(body) <= EVERY_SPLIT_MAX:
        return list(range(1, len(body)))
    ends = READERS[api](body).ends if api in READERS else []
    near = {e + d for e in ends for d in (-1, 0, 1)}
    cuts = sorted(c for c in near if 0 < c < len(body))
    if len(cuts) > sample:
        cuts = sorted(random.Random(path.name).sample(cuts, sample))
    return cuts


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_one_decoding_whatever_the_splits(path: Path) -> None:
    body, api = path.read_bytes(), api_of(path)
    expected = plain(whole(path))
    assert plain(mw.replay(api, _bytewise(path, body))) == expected
    for cut in _split_points(path, api, body, 3 * SAMPLED_CUTS):
        assert plain(mw.replay(api, [body[:cut], body[cut:]])) == expected, cut


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_chunkings_of_our_recordings(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(OWN))
    body = path.read_bytes()
    points = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=40)))
    chunks = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert plain(mw.replay(api_of(path), chunks)) == plain(whole(path))


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_nothing_is_lost(path: Path) -> None:
    api = api_of(path)
    reading = READERS[api](path.read_bytes())
    events = whole(path)
    message = terminal(events).message
    where = f"{_id(path)} ({api})"
    # The answer text, every character of it.
    assert message.text == reading.text, where
    # Every complete tool call, with its whole JSON arguments.
    got = _calls(message)
    for cid, name, args in reading.calls:
        if name is None:
            continue  # counted below
        match = [c for c in got if c[1] == name and (cid is None or c[0] == cid)]
        assert match, f"{where}: the call {name} {cid} is missing from {got}"
        if args is not None:
            assert any(c[2] == args for c in match), f"{where}: {name} arguments {match}"
    if reading.exhaustive:
        assert len(got) == len(reading.calls) + len(reading.partial_calls), where
    # A call cut mid-JSON is never parsed from a prefix, and never an action.
    for name in reading.partial_calls:
        assert message.stop_reason != "tool_use", where
        assert all(c[2] == {} for c in got if c[1] == name), f"{where}: {got}"
    # Usage, when the stream reports it.
    if reading.usage is not None and reading.finish not in (None, "error"):
        u = message.usage
        assert (u.input + u.cache_read + u.cache_write, u.output) == reading.usage, where
    # How it ended.
    end = terminal(events)
    if reading.finish in ("stop", "tool_use"):
        assert end.type == "done", (where, message.error)
        assert message.stop_reason == reading.finish, where
    elif reading.finish == "length":
        assert message.stop_reason in ("length", "error"), where
        assert end.type == "done" or message.error is not None, where
    else:  # filtered, error, other, or no terminal event at all
        assert not succeeded(events), f"{where}: a stream that says {reading.finish} succeeded"
        if reading.finish is None:
            assert message.error is not None and message.error.kind == "truncated_stream", where


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_a_cut_before_the_terminal_event_is_never_success(path: Path) -> None:
    body, api = path.read_bytes(), api_of(path)
    reading = READERS[api](body)
    complete = {(c[1], json.dumps(c[2], sort_keys=True)) for c in reading.calls}
    for cut in _cut_points(path, reading):
        events = mw.replay(api, body[:cut])
        where = f"{_id(path)} cut at {cut}/{len(body)}"
        assert not succeeded(events), where
        message = terminal(events).message
        assert message.error is not None or message.stop_reason != "stop", where
        # No action from half its JSON: every call an event closed, or the message
        # keeps, has arguments some complete call of the recording has, or none.
        closed = [e.tool_call for e in events if e.type == "tool_call_end"]
        for call in [*closed, *message.tool_calls]:
            args = json.dumps(call.arguments, sort_keys=True)
            assert (
                call.arguments == {}
                or (call.name, args) in complete
                or any(n in (None, call.name) and a is None for _, n, a in reading.calls)
            ), f"{where}: {call.name} {call.arguments}"


# --------------------------------------------------------------------------- the fast path
# ``Pipeline.feed`` has a fast path (a read's frames decoded by one ``decode_batch``
# call, or as one joined run, and assembled in one call) beside the reference path a
# traced pipeline takes (``decode`` frame by frame, one delta assembled at a time).
# The two must give the same events for every recording of every API, however it is
# read: the reference path is held here, at every reading, to the events the fast path
# gives for the whole body, and ``test_one_decoding_whatever_the_splits`` holds the fast
# path to those same events at every reading.


def _ignore(record: object) -> None:
    """A trace observer that keeps nothing: only to put the pipeline on its reference path."""


def _both_paths(api: str, reads: list[bytes]) -> tuple[list[Any], list[Any]]:
    return plain(mw.replay(api, reads)), plain(mw.replay(api, reads, trace=_ignore))


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_the_fast_path_gives_the_reference_paths_events(path: Path) -> None:
    body, api = path.read_bytes(), api_of(path)
    fast = plain(whole(path))  # untraced, the whole body in one read: the fast path
    readings = [[body], _bytewise(path, body)]
    readings += [[body[:c], body[c:]] for c in _split_points(path, api, body, SAMPLED_CUTS)]
    for reads in readings:
        reference = plain(mw.replay(api, reads, trace=_ignore))
        assert reference == fast, f"{_id(path)} ({api}) read as {[len(r) for r in reads][:8]}"


def _random_split(data: st.DataObject, paths: list[Path]) -> None:
    path = data.draw(st.sampled_from(paths))
    body = path.read_bytes()
    points = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=40)))
    reads = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    fast, reference = _both_paths(api_of(path), reads)
    assert fast == reference, (_id(path), points)


OWN_BIG = [p for p in OWN if p.stat().st_size > EVERY_SPLIT_MAX]
RECORDED_BIG = [p for p in RECORDED if p.stat().st_size > EVERY_SPLIT_MAX]


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_splits_of_our_big_recordings_take_both_paths_alike(data: st.DataObject) -> None:
    _random_split(data, OWN_BIG)


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_random_splits_of_the_big_shared_recordings_take_both_paths_alike(
    data: st.DataObject,
) -> None:
    _random_split(data, RECORDED_BIG)


def test_the_two_paths_are_two(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison means something: a read of many frames takes the fast path
    (``Pipeline._batch``) untraced and never traced, for every API."""
    from modelwire._wire.pipeline import Pipeline

    batched: list[int] = []
    real = Pipeline._batch

    def counting(self: Pipeline, frames: Any, out: list[Any]) -> None:
        batched.append(len(frames))
        real(self, frames, out)

    monkeypatch.setattr(Pipeline, "_batch", counting)
    apis = sorted({api_of(p) for p in OWN})
    assert set(builtin_api_names()) <= set(apis)
    for api in apis:
        path = max((p for p in OWN if api_of(p) == api), key=lambda p: p.stat().st_size)
        body = path.read_bytes()
        # Two reads: the first is decoded frame by frame until a payload is recognised
        # (wrong-API detection), the second holds many frames.
        reads = [body[: len(body) // 2], body[len(body) // 2 :]]
        batched.clear()
        mw.replay(api, reads, trace=_ignore)
        assert batched == [], api
        mw.replay(api, reads)
        assert batched, f"{_id(path)} never took the fast path"

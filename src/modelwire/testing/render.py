"""Render a scripted assistant reply as the exact bytes each wire API streams.

A *script* is what a test says the model should answer: a string (text), a
:class:`~modelwire.types.ToolCall`, a content block, a sequence of those, or a
whole :class:`~modelwire.types.AssistantMessage` (its ``stop_reason`` and
``usage`` are rendered too). :func:`render` turns it into the SSE body that
the provider would send, framed the way that provider frames it:

==========================  ==============================================================
``openai-chat``             ``data: <chunk>\\n\\n`` … ``data: [DONE]\\n\\n``
``openai-responses``        ``event: <type>\\ndata: <event>\\n\\n``, ends ``response.completed``
``anthropic-messages``      ``event: <type>\\ndata: <event>\\n\\n``, ends ``message_stop``
``google-generative-ai``    ``data: <GenerateContentResponse>\\r\\n\\r\\n``, last has ``finishReason``
==========================  ==============================================================

Text and tool-call arguments are cut into pieces of ``piece_chars``
characters, one wire event each, so a client sees them arrive as deltas. The
result decodes back through ``mw.replay(api, body)`` to the same content.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from ..errors import ConfigurationError
from ..types import (
    AssistantContent,
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = [
    "APIS",
    "API_ENDPOINTS",
    "Frame",
    "Script",
    "ScriptedReply",
    "api_for_path",
    "arguments_text",
    "frame",
    "normalize",
    "render",
    "render_frames",
    "split_text",
    "tool_call",
]

#: The four wire APIs a :class:`MockServer` speaks.
APIS: tuple[str, ...] = (
    "openai-chat",
    "openai-responses",
    "anthropic-messages",
    "google-generative-ai",
)

#: The endpoint each API appends to ``Model.base_url`` (DESIGN §2). Gemini's
#: ``{model}`` is the model id in the path.
API_ENDPOINTS: dict[str, str] = {
    "openai-chat": "/chat/completions",
    "openai-responses": "/responses",
    "anthropic-messages": "/messages",
    "google-generative-ai": "/models/{model}:streamGenerateContent?alt=sse",
}

Block: TypeAlias = str | TextContent | ThinkingContent | ToolCall
#: Anything :func:`render` accepts as a model reply.
Script: TypeAlias = AssistantMessage | Block | Sequence[Block]
#: ``(event name or None, payload)``: one SSE event before framing. The payload
#: is a JSON-able dict or, for the OpenAI Chat terminator, the string ``[DONE]``.
Frame: TypeAlias = tuple[str | None, "dict[str, Any] | str"]

_ids = itertools.count(1)


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None
) -> ToolCall:
    """A :class:`ToolCall` for a script; ``id`` defaults to a process-unique ``call_<n>``
    (an agent answers calls by id, so ids must not repeat within a conversation)."""
    args = dict(arguments or {})
    return ToolCall(
        id=id or f"call_{next(_ids)}",
        name=name,
        arguments=args,
        raw_arguments=_dumps(args),
    )


class ScriptedReply(msgspec.Struct, frozen=True, kw_only=True):
    """A script in normal form: blocks in order, how it ends, token counts."""

    content: tuple[AssistantContent, ...]
    """Text, thinking and tool-call blocks in the order they are streamed."""
    stop_reason: Literal["stop", "length", "tool_use"]
    """``tool_use`` when there is a tool call (unless ``length``), else ``stop``."""
    usage: Usage
    """Token counts to report (all zero unless the script gave them)."""
    response_id: str | None = None
    """The response id to send, when the script fixed one."""


def normalize(script: Script) -> ScriptedReply:
    """Bring any accepted script to :class:`ScriptedReply`.

    ``ConfigurationError`` for what a successful stream cannot say: a message
    whose ``stop_reason`` is ``error``/``aborted`` (script failures with
    ``Reply(status=…)``, ``cut_after`` or a raw ``body`` instead), or an
    unknown block type.
    """
    if isinstance(script, AssistantMessage):
        if script.stop_reason in ("error", "aborted"):
            raise ConfigurationError(
                f"cannot render a message with stop_reason {script.stop_reason!r} as a "
                "successful stream; script failures with Reply(status=...), cut_after, "
                "stall_after or a raw body"
            )
        blocks: tuple[AssistantContent, ...] = script.content
        usage = script.usage
        response_id = script.response_id
        explicit = script.stop_reason
    else:
        items: Iterable[Any] = (
            (script,)
            if isinstance(script, str | TextContent | ThinkingContent | ToolCall)
            else script
        )
        out: list[AssistantContent] = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                out.append(TextContent(text=item))
            elif isinstance(item, TextContent | ThinkingContent | ToolCall):
                out.append(item)
            else:
                raise ConfigurationError(
                    f"script[{i}] must be a str, TextContent, ThinkingContent or ToolCall, "
                    f"got {type(item).__name__}"
                )
        blocks, usage, response_id, explicit = tuple(out), Usage(), None, None
    has_calls = any(isinstance(b, ToolCall) for b in blocks)
    stop: Literal["stop", "length", "tool_use"] = (
        "length" if explicit == "length" else "tool_use" if has_calls else "stop"
    )
    return ScriptedReply(content=blocks, stop_reason=stop, usage=usage, response_id=response_id)


def split_text(text: str, size: int) -> list[str]:
    """``text`` in pieces of ``size`` characters (never splits a code point;
    an empty text gives no pieces)."""
    if size <= 0:
        raise ConfigurationError("piece_chars must be a positive integer")
    return [text[i : i + size] for i in range(0, len(text), size)]


def _dumps(value: Any) -> str:
    # Compact and unescaped, as providers send JSON.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def arguments_text(call: ToolCall) -> str:
    """The arguments text a provider would stream: ``raw_arguments`` when set."""
    return call.raw_arguments if call.raw_arguments else _dumps(call.arguments)


def _arguments_object(call: ToolCall) -> dict[str, Any]:
    # Gemini sends arguments as an object, never as text.
    if call.raw_arguments:
        try:
            value = json.loads(call.raw_arguments)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
    return dict(call.arguments)


# --------------------------------------------------------------------------- openai-chat
# https://platform.openai.com/docs/api-reference/chat-streaming/streaming


def _chat(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[Frame]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Frame:
        return (None, {
            "id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        })  # fmt: skip

    frames: list[Frame] = [chunk({"role": "assistant", "content": ""})]
    tool_index = 0
    for block in reply.content:
        if isinstance(block, TextContent):
            frames += [chunk({"content": p}) for p in split_text(block.text, pc)]
        elif isinstance(block, ThinkingContent):
            # DeepSeek's field; the adapter reads reasoning_content first.
            frames += [chunk({"reasoning_content": p}) for p in split_text(block.thinking, pc)]
        else:
            frames.append(chunk({"tool_calls": [{
                "index": tool_index, "id": block.id, "type": "function",
                "function": {"name": block.name, "arguments": ""},
            }]}))  # fmt: skip
            for p in split_text(arguments_text(block), pc):
                frames.append(
                    chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": p}}]})
                )
            tool_index += 1
    finish = {"stop": "stop", "length": "length", "tool_use": "tool_calls"}[reply.stop_reason]
    frames.append(chunk({}, finish))
    u = reply.usage
    # Chat reports no cache writes: they count as ordinary prompt tokens.
    prompt = u.input + u.cache_read + u.cache_write
    frames.append((None, {
        "id": rid, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": u.output,
                  "total_tokens": prompt + u.output,
                  "prompt_tokens_details": {"cached_tokens": u.cache_read}},
    }))  # fmt: skip
    frames.append((None, "[DONE]"))
    return frames


# --------------------------------------------------------------------------- openai-responses
# https://platform.openai.com/docs/api-reference/responses-streaming


def _reasoning_item(signature: str | None) -> dict[str, Any] | None:
    if not signature:
        return None
    try:
        item = json.loads(signature)
    except ValueError:
        return None
    return item if isinstance(item, dict) and item.get("type") == "reasoning" else None


def _responses(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[Frame]:
    seq = itertools.count()
    created = int(time.time())
    frames: list[Frame] = []

    def ev(kind: str, **fields: Any) -> None:
        frames.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    def response(status: str, output: list[Any], usage: Any, incomplete: Any = None) -> Any:
        return {"id": rid, "object": "response", "created_at": created, "status": status,
                "error": None, "incomplete_details": incomplete, "model": model,
                "output": output, "usage": usage}  # fmt: skip

    ev("response.created", response=response("in_progress", [], None))
    ev("response.in_progress", response=response("in_progress", [], None))
    output: list[Any] = []
    for oi, block in enumerate(reply.content):
        if isinstance(block, ThinkingContent):
            # modelwire keeps a Responses reasoning item as JSON in the signature.
            item = _reasoning_item(block.signature) or {}
            item_id = str(item.get("id") or f"rs_{rid}_{oi}")
            item = {**item, "id": item_id, "type": "reasoning", "summary": []}
            ev("response.output_item.added", output_index=oi, item=item)
            part = {"type": "summary_text", "text": ""}
            common = {"item_id": item_id, "output_index": oi, "summary_index": 0}
            ev("response.reasoning_summary_part.added", **common, part=part)
            for p in split_text(block.thinking, pc):
                ev("response.reasoning_summary_text.delta", **common, delta=p)
            ev("response.reasoning_summary_text.done", **common, text=block.thinking)
            done_part = {"type": "summary_text", "text": block.thinking}
            ev("response.reasoning_summary_part.done", **common, part=done_part)
            item = {**item, "summary": [done_part]}
        elif isinstance(block, TextContent):
            # The signature of a Responses text block is its message item id.
            item_id = block.signature or f"msg_{rid}_{oi}"
            item = {"id": item_id, "type": "message", "status": "in_progress",
                    "role": "assistant", "content": []}  # fmt: skip
            ev("response.output_item.added", output_index=oi, item=item)
            common = {"item_id": item_id, "output_index": oi, "content_index": 0}
            empty = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", **common, part=empty)
            for p in split_text(block.text, pc):
                ev("response.output_text.delta", **common, delta=p, logprobs=[])
            ev("response.output_text.done", **common, text=block.text, logprobs=[])
            full = {"type": "output_text", "text": block.text, "annotations": []}
            ev("response.content_part.done", **common, part=full)
            item = {**item, "status": "completed", "content": [full]}
        else:
            # ToolCall.id is the call_id; the signature keeps the item id.
            item_id = block.signature or f"fc_{rid}_{oi}"
            args = arguments_text(block)
            item = {"type": "function_call", "id": item_id, "call_id": block.id,
                    "name": block.name, "arguments": "", "status": "in_progress"}  # fmt: skip
            ev("response.output_item.added", output_index=oi, item=item)
            for p in split_text(args, pc):
                ev("response.function_call_arguments.delta", item_id=item_id,
                   output_index=oi, delta=p)  # fmt: skip
            ev("response.function_call_arguments.done", item_id=item_id, output_index=oi,
               arguments=args)  # fmt: skip
            item = {**item, "arguments": args, "status": "completed"}
        ev("response.output_item.done", output_index=oi, item=item)
        output.append(item)
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write
    usage = {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": u.cache_read},
             "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": prompt + u.output}  # fmt: skip
    if reply.stop_reason == "length":
        # A cut-off response ends ``response.incomplete`` (reason max_output_tokens).
        ev("response.incomplete", response=response(
            "incomplete", output, usage, {"reason": "max_output_tokens"}))  # fmt: skip
    else:
        ev("response.completed", response=response("completed", output, usage))
    return frames


# --------------------------------------------------------------------------- anthropic
# https://docs.anthropic.com/en/docs/build-with-claude/streaming


def _anthropic(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[Frame]:
    u = reply.usage
    usage = {"input_tokens": u.input, "cache_creation_input_tokens": u.cache_write,
             "cache_read_input_tokens": u.cache_read}  # fmt: skip
    frames: list[Frame] = [
        ("message_start", {"type": "message_start", "message": {
            "id": rid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1},
        }}),
        ("ping", {"type": "ping"}),
    ]  # fmt: skip

    def delta(index: int, body: dict[str, Any]) -> Frame:
        return ("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": body})  # fmt: skip

    for i, block in enumerate(reply.content):
        start: dict[str, Any]
        deltas: list[Frame] = []
        if isinstance(block, ThinkingContent) and block.redacted:
            start = {"type": "redacted_thinking", "data": block.signature or ""}
        elif isinstance(block, ThinkingContent):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [delta(i, {"type": "thinking_delta", "thinking": p})
                      for p in split_text(block.thinking, pc)]  # fmt: skip
            if block.signature:
                deltas.append(delta(i, {"type": "signature_delta", "signature": block.signature}))
        elif isinstance(block, TextContent):
            start = {"type": "text", "text": ""}
            deltas = [delta(i, {"type": "text_delta", "text": p})
                      for p in split_text(block.text, pc)]  # fmt: skip
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            deltas = [delta(i, {"type": "input_json_delta", "partial_json": p})
                      for p in split_text(arguments_text(block), pc)]  # fmt: skip
        frames.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": start}))  # fmt: skip
        frames += deltas
        frames.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    stop = {"stop": "end_turn", "length": "max_tokens", "tool_use": "tool_use"}[reply.stop_reason]
    frames.append(("message_delta", {"type": "message_delta",
                   "delta": {"stop_reason": stop, "stop_sequence": None},
                   "usage": {**usage, "output_tokens": u.output}}))  # fmt: skip
    frames.append(("message_stop", {"type": "message_stop"}))
    return frames


# --------------------------------------------------------------------------- google
# https://ai.google.dev/api/generate-content#method:-models.streamgeneratecontent


def _google(reply: ScriptedReply, model: str, rid: str, pc: int) -> list[Frame]:
    u = reply.usage
    prompt = u.input + u.cache_read + u.cache_write

    def frame_(parts: list[dict[str, Any]], finish: str | None = None) -> Frame:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            cand["finishReason"] = finish
        usage: dict[str, Any] = {"promptTokenCount": prompt, "totalTokenCount": prompt}
        if finish:
            usage = {"promptTokenCount": prompt, "candidatesTokenCount": u.output,
                     "totalTokenCount": prompt + u.output}  # fmt: skip
            if u.cache_read:
                usage["cachedContentTokenCount"] = u.cache_read
        return (None, {"candidates": [cand], "usageMetadata": usage, "modelVersion": model,
                       "responseId": rid})  # fmt: skip

    frames: list[Frame] = []
    for block in reply.content:
        sig = {"thoughtSignature": block.signature} if block.signature else {}
        if isinstance(block, ThinkingContent):
            pieces = split_text(block.thinking, pc)
            for k, p in enumerate(pieces):
                # Gemini puts the signature on the last part of a thought.
                extra = sig if k == len(pieces) - 1 else {}
                frames.append(frame_([{"text": p, "thought": True, **extra}]))
        elif isinstance(block, TextContent):
            pieces = split_text(block.text, pc)
            for k, p in enumerate(pieces):
                extra = sig if k == len(pieces) - 1 else {}
                frames.append(frame_([{"text": p, **extra}]))
        else:
            # Gemini sends a whole call in one part; ``id`` is optional in the API.
            call = {"name": block.name, "args": _arguments_object(block), "id": block.id}
            frames.append(frame_([{"functionCall": call, **sig}]))
    # Gemini reports STOP for tool calls too; MAX_TOKENS when cut off.
    finish = "MAX_TOKENS" if reply.stop_reason == "length" else "STOP"
    frames.append(frame_([{"text": ""}], finish))
    return frames


_RENDERERS: dict[str, Callable[[ScriptedReply, str, str, int], list[Frame]]] = {
    "openai-chat": _chat,
    "openai-responses": _responses,
    "anthropic-messages": _anthropic,
    "google-generative-ai": _google,
}

_DEFAULT_IDS = {
    "openai-chat": "chatcmpl-mock",
    "openai-responses": "resp_mock",
    "anthropic-messages": "msg_mock",
    "google-generative-ai": "mock-response",
}


def render_frames(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
) -> list[Frame]:
    """The SSE events (name, payload) for ``script`` in ``api``'s format, unframed."""
    fn = _RENDERERS.get(api)
    if fn is None:
        raise ConfigurationError(f"cannot render for api {api!r}; known: {', '.join(APIS)}")
    reply = normalize(script)
    rid = response_id or reply.response_id or _DEFAULT_IDS[api]
    return fn(reply, model, rid, piece_chars)


def frame(api: str, frames: Sequence[Frame]) -> list[bytes]:
    """Each event framed as ``api`` frames it on the wire: ``event:`` lines for
    Responses and Anthropic, ``\\r\\n\\r\\n`` separators for Gemini."""
    sep = "\r\n\r\n" if api == "google-generative-ai" else "\n\n"
    named = api in ("openai-responses", "anthropic-messages")
    out: list[bytes] = []
    for name, payload in frames:
        data = payload if isinstance(payload, str) else _dumps(payload)
        head = f"event: {name}\n" if named and name else ""
        out.append(f"{head}data: {data}{sep}".encode())
    return out


def render(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
) -> bytes:
    """The complete SSE response body ``api`` would stream for ``script``."""
    frames = render_frames(
        script, api, model=model, response_id=response_id, piece_chars=piece_chars
    )
    return b"".join(frame(api, frames))


def api_for_path(path: str) -> str | None:
    """Which API a request path belongs to (query string ignored), or ``None``."""
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith(":streamGenerateContent"):
        return "google-generative-ai"
    for api in ("openai-chat", "openai-responses", "anthropic-messages"):
        if p.endswith(API_ENDPOINTS[api]):
            return api
    return None

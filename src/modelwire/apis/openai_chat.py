"""OpenAI Chat Completions, and every server compatible with it.

Reference: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/chat-streaming. Compatible
servers differ in small ways; :class:`ChatCompat` holds those differences as
data, detected from the provider and base URL and overridable with
``Model(compat={...})`` (the table is in the README).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..deltas import (
    BlockSignature,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    UsageUpdate,
)
from ..errors import ConfigurationError, Excerpt, MalformedChunkError
from ..options import HTTPRequest, RequestOptions, check_extra_body
from ..redact import head
from ..sse import ServerSentEvent
from ..types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._common import (
    Count,
    bearer_auth,
    check_context_values,
    decode_json,
    decoder_for,
    http_request,
    in_band_error,
    join_url,
    raw_or_json_arguments,
    same_model,
)

__all__ = ["API", "ChatCompat", "OpenAIChatAPI", "detect_compat"]


# --------------------------------------------------------------------------- compat


class ChatCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one server departs from OpenAI's own Chat Completions."""

    system_role: Literal["system", "developer"] = "system"
    """Role of the system prompt message (OpenAI reasoning models want ``developer``)."""
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """Body field for the output limit."""
    stream_options: bool = True
    """Send ``stream_options: {"include_usage": true}`` (usage arrives in a last chunk)."""
    store: bool | None = None
    """Send ``store`` with this value (``None``: omit)."""
    reasoning_style: Literal["reasoning_effort", "openrouter", "enable_thinking", "zai", "none"] = (
        "reasoning_effort"
    )
    """How a reasoning level is sent: ``reasoning_effort: "low"``; OpenRouter's
    ``reasoning: {effort}``; Qwen's ``enable_thinking``; Z.ai's ``thinking: {type}``."""
    reasoning_effort_map: dict[str, str] | None = None
    """Rename levels for servers with fewer (e.g. ``{"xhigh": "high"}``)."""
    thinking_replay: Literal["drop", "text", "reasoning_content"] = "drop"
    """How assistant thinking in history is sent back: dropped, as text, or in a
    ``reasoning_content`` field (DeepSeek needs it for tool-call turns)."""
    tool_result_name: bool = True
    """Send ``name`` on tool messages (some servers reject it)."""
    empty_tools: bool = False
    """Send ``tools: []`` when no tools are declared (some servers need the key)."""
    infer_finish_reason: bool = False
    """Accept a stream that ends with ``[DONE]`` but no ``finish_reason`` (servers
    known to omit it); otherwise that is ``truncated_stream``."""


_ALLOWED_COMPAT = set(ChatCompat.__struct_fields__)


def detect_compat(model: Model) -> ChatCompat:
    """Defaults for the model's provider and base URL, then ``model.compat`` overrides."""
    url = model.base_url.lower()
    provider = model.provider.lower()
    base: dict[str, Any] = {}
    if provider == "openai" or "api.openai.com" in url:
        base["max_tokens_field"] = "max_completion_tokens"
        if model.reasoning:
            base["system_role"] = "developer"
    elif provider == "deepseek" or "deepseek.com" in url:
        base["thinking_replay"] = "reasoning_content"
        base["reasoning_style"] = "none"
    elif provider == "openrouter" or "openrouter.ai" in url:
        base["reasoning_style"] = "openrouter"
    elif provider in ("qwen", "dashscope") or "dashscope" in url:
        base["reasoning_style"] = "enable_thinking"
    elif provider == "zai" or "z.ai" in url or "bigmodel.cn" in url:
        base["reasoning_style"] = "zai"
        base["thinking_replay"] = "reasoning_content"
    elif provider == "snowflake" or "snowflakecomputing" in url:
        # Snowflake Cortex ends with [DONE] but never sends finish_reason.
        base["infer_finish_reason"] = True
    elif provider == "mistral" or "mistral.ai" in url:
        base["reasoning_style"] = "none"
        base["stream_options"] = False
    elif provider == "groq" or "groq.com" in url:
        base["reasoning_effort_map"] = {"minimal": "low", "xhigh": "high"}
    elif provider == "xai" or "x.ai" in url:
        base["reasoning_effort_map"] = {"minimal": "low", "medium": "low", "xhigh": "high"}
    if model.compat:
        unknown = set(model.compat) - _ALLOWED_COMPAT
        if unknown:
            raise ConfigurationError(
                f"unknown openai-chat compat flag(s): {', '.join(sorted(unknown))}; "
                f"known: {', '.join(sorted(_ALLOWED_COMPAT))}"
            )
        base.update(model.compat)
    try:
        return msgspec.convert(base, ChatCompat)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid openai-chat compat: {exc}") from None


# --------------------------------------------------------------------------- outbound

RESERVED = frozenset(
    {
        "model",
        "messages",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "tools",
        "tool_choice",
    }
)


def _user_content(msg: UserMessage) -> str | list[dict[str, Any]]:
    if isinstance(msg.content, str):
        return msg.content
    if all(isinstance(b, TextContent) for b in msg.content):
        return "".join(b.text for b in msg.content if isinstance(b, TextContent))
    parts: list[dict[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            parts.append({"type": "text", "text": b.text})
        else:
            parts.append(
                {"type": "image_url", "image_url": {"url": f"data:{b.mime_type};base64,{b.data}"}}
            )
    return parts


# Reasoning fields a server accepts back on an assistant message, by the name it
# streamed them under (the decoder records that name as the block's signature).
_REPLAY_FIELDS = ("reasoning_content", "reasoning", "reasoning_text")


def _thinking_field(msg: AssistantMessage, model: Model | None) -> str:
    """The field to replay thinking in: the one it arrived in when the message
    comes from this very model (handoff rule), else ``reasoning_content``."""
    if model is not None and same_model(model, msg):
        for b in msg.content:
            if isinstance(b, ThinkingContent) and b.signature in _REPLAY_FIELDS:
                return b.signature
    return "reasoning_content"


def _assistant(
    msg: AssistantMessage, compat: ChatCompat, model: Model | None = None
) -> dict[str, Any] | None:
    text = "".join(b.text for b in msg.content if isinstance(b, TextContent))
    thinking = "".join(
        b.thinking for b in msg.content if isinstance(b, ThinkingContent) and not b.redacted
    )
    calls = [b for b in msg.content if isinstance(b, ToolCall)]
    out: dict[str, Any] = {"role": "assistant"}
    if thinking and compat.thinking_replay == "text":
        text = f"<thinking>\n{thinking}\n</thinking>\n{text}" if text else thinking
    out["content"] = text if text else None
    if thinking and compat.thinking_replay == "reasoning_content":
        out[_thinking_field(msg, model)] = thinking
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": raw_or_json_arguments(c.raw_arguments, c.arguments),
                },
            }
            for c in calls
        ]
    if out["content"] is None and not calls:
        return None  # nothing a server would accept; an empty turn carries no information
    return out


def _tool_result(msg: ToolResultMessage, compat: ChatCompat) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "tool", "tool_call_id": msg.tool_call_id}
    if compat.tool_result_name:
        out["name"] = msg.tool_name
    text = msg.text
    if any(isinstance(b, ImageContent) for b in msg.content):
        text += "\n[image omitted: this API accepts no images in tool results]"
    out["content"] = text
    return out


def encode_messages(
    context: Context, compat: ChatCompat, model: Model | None = None
) -> list[dict[str, Any]]:
    """The ``messages`` array for ``context`` (pure; the context is not changed).

    ``model`` is the target: thinking it produced itself goes back in the field
    it came in."""
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": compat.system_role, "content": context.system_prompt})
    for msg in context.messages:
        if isinstance(msg, UserMessage):
            messages.append({"role": "user", "content": _user_content(msg)})
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            item = _assistant(msg, compat, model)
            if item is not None:
                messages.append(item)
        else:
            messages.append(_tool_result(msg, compat))
    return messages


def _check_tool_choice(tc: str | dict[str, Any] | None, context: Context) -> None:
    """Refuse, before any request, a tool choice no response could satisfy."""
    names = [t.name for t in context.tools or ()]
    if tc == "required" and not names:
        raise ConfigurationError('tool_choice="required" needs at least one tool in the context')
    if isinstance(tc, dict) and tc["name"] not in names:
        raise ConfigurationError(
            f"tool_choice forces {tc['name']!r}, which is not among the context's tools "
            f"({', '.join(map(repr, names)) or 'none declared'})"
        )


def _tool_choice(tc: str | dict[str, Any] | None) -> Any:
    if isinstance(tc, dict):
        return {"type": "function", "function": {"name": tc["name"]}}
    return tc


class OpenAIChatAPI:
    """The ``openai-chat`` wire API."""

    name = "openai-chat"

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        compat = detect_compat(model)
        check_extra_body(options.extra_body, RESERVED)
        _check_tool_choice(options.tool_choice, context)
        body: dict[str, Any] = {
            "model": model.id,
            "messages": encode_messages(context, compat, model),
            "stream": True,
        }
        if compat.stream_options:
            body["stream_options"] = {"include_usage": True}
        if options.max_tokens is not None:
            body[compat.max_tokens_field] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if context.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in context.tools
            ]
        elif compat.empty_tools:
            body["tools"] = []
        if options.tool_choice is not None:
            body["tool_choice"] = _tool_choice(options.tool_choice)
        if options.parallel_tool_calls is not None and context.tools:
            body["parallel_tool_calls"] = options.parallel_tool_calls
        if compat.store is not None:
            body["store"] = compat.store
        if options.reasoning is not None:
            if not model.reasoning:
                raise ConfigurationError(
                    f"model {model.id!r} does not support a reasoning level "
                    "(Model.reasoning is False); pass reasoning=None"
                )
            effort = (compat.reasoning_effort_map or {}).get(options.reasoning, options.reasoning)
            if compat.reasoning_style == "reasoning_effort":
                body["reasoning_effort"] = effort
            elif compat.reasoning_style == "openrouter":
                body["reasoning"] = {"effort": effort}
            elif compat.reasoning_style == "enable_thinking":
                body["enable_thinking"] = True
            elif compat.reasoning_style == "zai":
                body["thinking"] = {"type": "enabled"}
        if options.session_id and (
            model.provider == "openai" or "api.openai.com" in model.url_root
        ):
            body["prompt_cache_key"] = options.session_id
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=join_url(model, "/chat/completions"),
            body=self.build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "text/event-stream"},
            auth=bearer_auth,
        )

    def new_decoder(self, model: Model | None) -> ChatDecoder:
        compat = detect_compat(model) if model is not None else ChatCompat()
        return ChatDecoder(compat)


# --------------------------------------------------------------------------- inbound
# Typed schemas for the fields we use only: unknown fields are ignored, so
# ``obfuscation``, ``x_groq.*``, ``sla_metrics``… never break a stream.


class _Fn(msgspec.Struct, gc=False):
    name: str | None = None
    arguments: str | None = None


# Counts and indexes are ``Count``s (non-negative integers): a negative tool-call
# index would key a call no one can finish, a negative count corrupt usage and cost.
class _ToolCallPart(msgspec.Struct, gc=False):
    index: Count | None = None
    id: str | None = None
    function: _Fn | None = None


class _ContentPart(msgspec.Struct, gc=False):
    # Mistral sends content as a list of typed parts, thinking nested as parts.
    type: str = ""
    text: str | None = None
    thinking: list[_ContentPart] | str | None = None


class _ReasoningDetail(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None


class _PromptDetails(msgspec.Struct, gc=False):
    cached_tokens: Count | None = None


class _CompletionDetails(msgspec.Struct, gc=False):
    reasoning_tokens: Count | None = None


class _Usage(msgspec.Struct, gc=False):
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    total_tokens: Count | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    prompt_cache_hit_tokens: Count | None = None  # DeepSeek


class _Delta(msgspec.Struct, gc=False):
    content: str | list[_ContentPart] | None = None
    refusal: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_text: str | None = None
    reasoning_details: list[_ReasoningDetail] | None = None
    tool_calls: list[_ToolCallPart] | None = None


class _Choice(msgspec.Struct, gc=False):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None
    usage: _Usage | None = None  # Moonshot puts usage on the choice


class _Error(msgspec.Struct, gc=False):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None
    status_code: int | None = None


class _XGroq(msgspec.Struct, gc=False):
    usage: _Usage | None = None


class _Chunk(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None  # the model that answered (AssistantMessage.response_model)
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    error: _Error | str | None = None
    x_groq: _XGroq | None = None


class _ErrorPayload(msgspec.Struct, gc=False):
    error: _Error | str | None = None
    message: str | None = None


_chunk_decoder = decoder_for(_Chunk)
_decode_chunk = _chunk_decoder.decode
# The assembler keys of tool calls 0..15, made once (a tuple per fragment otherwise).
_TOOL_KEYS = tuple(("tool", i) for i in range(16))
_error_decoder = decoder_for(_ErrorPayload)

_FINISH: dict[str, Literal["stop", "length", "tool_use"]] = {
    "stop": "stop",
    "length": "length",
    "model_length": "length",  # Mistral: the model's context window was reached
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "eos": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
}

# Finish reasons that mean the generation failed: treating them as "stop" would
# pass a broken response off as a complete one. Mistral and OpenRouter send
# ``error``; DeepSeek ``insufficient_system_resource`` ("the inference was
# interrupted for lack of resources", api-docs.deepseek.com); vLLM ``abort``.
_FAILED_FINISH: dict[str, tuple[str, str]] = {
    "content_filter": (
        "content_filter",
        "the provider's content filter stopped the response (finish_reason content_filter)",
    ),
    "error": ("provider_stream", "the provider stopped the response with finish_reason 'error'"),
    "abort": ("provider_stream", "the server aborted the response (finish_reason 'abort')"),
    "insufficient_system_resource": (
        "overloaded",
        "the provider interrupted the response for lack of resources "
        "(finish_reason 'insufficient_system_resource')",
    ),
}

_TEXT = "text"
_THINKING = "thinking"


def _usage_delta(u: _Usage) -> UsageUpdate:
    prompt = u.prompt_tokens or 0
    cached = 0
    if u.prompt_tokens_details is not None and u.prompt_tokens_details.cached_tokens:
        cached = u.prompt_tokens_details.cached_tokens
    elif u.prompt_cache_hit_tokens:
        cached = u.prompt_cache_hit_tokens
    # OpenAI's ``completion_tokens`` includes ``reasoning_tokens``; xAI's does not
    # (its ``total_tokens`` is prompt + completion + reasoning). ``total_tokens``
    # tells the two apart, so reasoning is counted exactly once either way.
    output = u.completion_tokens or 0
    details = u.completion_tokens_details
    reasoning = (details.reasoning_tokens or 0) if details is not None else 0
    if reasoning and u.total_tokens is not None and u.total_tokens == prompt + output + reasoning:
        output += reasoning
    return UsageUpdate(
        input=max(prompt - cached, 0),
        output=output,
        cache_read=cached,
        cache_write=0,
    )


def _raise_error(err: _Error | str | None, fallback: str | None = None) -> None:
    if isinstance(err, str):
        raise in_band_error(err)
    if err is None:
        raise in_band_error(fallback or "the server sent an error event")
    status = err.status_code
    if isinstance(err.code, int) and 400 <= err.code < 600:
        status = status or err.code
    code = err.code if isinstance(err.code, str) else None
    raise in_band_error(err.message or fallback or "", type_=err.type, code=code, status=status)


class ChatDecoder:
    """Per-response decoder: SSE events → normalized deltas."""

    __slots__ = ("_compat", "_finish", "_meta", "_saw_tool", "_thinking_field")

    def __init__(self, compat: ChatCompat) -> None:
        self._compat = compat
        self._finish: str | None = None
        self._meta = False
        self._saw_tool = False
        self._thinking_field: str | None = None

    def decode(self, event: ServerSentEvent) -> list[Delta]:
        data = event.data
        if event.event == "message" and data[:1] == "{":
            # The hot path: an ordinary chunk (not an error event, keep-alive or [DONE]).
            try:
                chunk = _decode_chunk(data)
            except (msgspec.ValidationError, msgspec.DecodeError):
                decode_json(data, _chunk_decoder)  # raises MalformedChunkError with the path
                raise  # pragma: no cover - decode_json raised already
            return self._chunk(chunk)
        if event.event == "error":
            # Groq sends ``event: error`` with a JSON error object; a server that
            # sends plain text there still reported an error, not a malformed chunk.
            if not data.lstrip().startswith("{"):
                text = data.strip()
                if not text:
                    raise in_band_error("the server sent an error event")
                # Quoted whole on the error: the live path redacts keys before the cut.
                err = in_band_error(head(text, 500))
                err.excerpt = Excerpt("", text, "", 500, quote=False)
                raise err
            payload = decode_json(data, _error_decoder, "error event")
            _raise_error(payload.error, payload.message)
        if event.event != "message" or not data or data.isspace():
            # Chat streams use unnamed events only; other event types and empty
            # keep-alive payloads carry nothing we use (DESIGN §3 rule 5).
            return []
        if data == "[DONE]":
            return self._terminal()
        return self._chunk(decode_json(data, _chunk_decoder))

    def _chunk(self, chunk: _Chunk) -> list[Delta]:
        if chunk.error is not None:
            _raise_error(chunk.error)
        out: list[Delta] = []
        if not self._meta and chunk.id:
            self._meta = True
            out.append(ResponseMeta(response_id=chunk.id, model=chunk.model))
        choices = chunk.choices
        if choices:
            # One choice per stream (DESIGN §2a): n > 1 is refused, not merged.
            if len(choices) > 1 or choices[0].index != 0:
                bad = next((i for i, c in enumerate(choices) if c.index != 0), 1)
                raise MalformedChunkError(
                    f"choices[{bad}].index must be 0, got {choices[bad].index}: modelwire "
                    "reads one choice per stream; do not request n > 1"
                )
            choice = choices[0]
            delta = choice.delta
            if delta is not None:
                self._delta(delta, out)
            if choice.finish_reason:
                self._finish = choice.finish_reason
                out.append(self._finish_delta(choice.finish_reason))
            if choice.usage is not None:
                out.append(_usage_delta(choice.usage))
        usage = chunk.usage
        if usage is None and chunk.x_groq is not None:
            usage = chunk.x_groq.usage
        if usage is not None:
            out.append(_usage_delta(usage))
        return out

    def _delta(self, d: _Delta, out: list[Delta]) -> None:
        if (
            d.reasoning_content is None
            and d.reasoning is None
            and d.reasoning_text is None
            and d.reasoning_details is None
            and d.refusal is None
        ):
            # The hot path: plain text and/or tool-call fragments, nothing else.
            content = d.content
            if content.__class__ is str:
                if content:
                    out.append(TextDelta(_TEXT, content))
            elif content is not None:
                self._full_delta(d, out)
                return
            if d.tool_calls:
                self._tool_calls(d.tool_calls, out)
            return
        self._full_delta(d, out)

    def _full_delta(self, d: _Delta, out: list[Delta]) -> None:
        # Thinking: one source per chunk, never two (OpenRouter sends both
        # ``reasoning`` and ``reasoning_details`` with the same text).
        field = "reasoning_content"
        thinking = d.reasoning_content
        if not thinking:
            field, thinking = "reasoning", d.reasoning
        if not thinking:
            field, thinking = "reasoning_text", d.reasoning_text
        if not thinking and d.reasoning_details:
            field = "reasoning_details"
            thinking = "".join(
                r.text for r in d.reasoning_details if r.type == "reasoning.text" and r.text
            )
        content = d.content
        if isinstance(content, list):
            text_parts: list[str] = []
            for part in content:
                if part.type == "thinking":
                    if not thinking:
                        field = "content"
                        t = part.thinking
                        if isinstance(t, str):
                            thinking = t
                        elif t:
                            thinking = "".join(p.text or "" for p in t)
                elif part.text:
                    text_parts.append(part.text)
            content = "".join(text_parts)
        if thinking:
            out.append(ThinkingDelta(_THINKING, thinking))
            if field != self._thinking_field:
                # Remember which field the reasoning came in, so a replay to the
                # same model can send it back in that field (see ``_assistant``).
                self._thinking_field = field
                out.append(BlockSignature(_THINKING, field))
        if content:
            out.append(TextDelta(_TEXT, content))
        if d.refusal:
            # A refusal is what the model said: it goes to the text block.
            out.append(TextDelta(_TEXT, d.refusal))
        if d.tool_calls:
            self._tool_calls(d.tool_calls, out)

    def _tool_calls(self, calls: list[_ToolCallPart], out: list[Delta]) -> None:
        self._saw_tool = True
        for pos, tc in enumerate(calls):
            fn = tc.function
            index = tc.index if tc.index is not None else pos
            key = _TOOL_KEYS[index] if 0 <= index < len(_TOOL_KEYS) else ("tool", index)
            if fn is None:
                out.append(ToolCallDelta(key, tc.id or None, None, ""))
            else:
                out.append(ToolCallDelta(key, tc.id or None, fn.name or None, fn.arguments or ""))

    def _finish_delta(self, reason: str) -> Finish:
        failed = _FAILED_FINISH.get(reason)
        if failed is not None:
            return Finish("error", reason, failed[0], failed[1])
        # Unknown reasons are a normal end (forward compatible); the raw value is
        # kept in ``provider_stop_reason``.
        return Finish(_FINISH.get(reason, "stop"), reason)

    def _terminal(self) -> list[Delta]:
        # Called at ``[DONE]`` only: for servers known to omit ``finish_reason``
        # (Snowflake Cortex), ``[DONE]`` is the one sign the answer is complete.
        out: list[Delta] = []
        if self._finish is None and self._compat.infer_finish_reason:
            out.append(Finish("tool_use" if self._saw_tool else "stop", None))
        out.append(EndOfStream())
        return out

    def end(self) -> list[Delta]:
        # "One finish is formed at [DONE] or end of input" (DESIGN §3 rule 4): a body
        # that ends after finish_reason without [DONE] is complete; the assembler
        # reports truncated_stream when no finish reason arrived at all. Nothing is
        # inferred here: without finish_reason *and* [DONE] there is no sign at all
        # that the response is whole.
        return [EndOfStream()]


API = OpenAIChatAPI()

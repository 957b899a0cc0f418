"""OpenAI Responses API, and servers compatible with it (OpenRouter, LM Studio, DeepSeek…).

Reference: https://platform.openai.com/docs/api-reference/responses/create (request),
https://platform.openai.com/docs/api-reference/responses-streaming (stream events),
https://platform.openai.com/docs/guides/reasoning (stateless reasoning replay with
``store: false`` and ``include: ["reasoning.encrypted_content"]``).

Outbound, the conversation becomes ``instructions`` plus an ``input`` array of items;
assistant history is replayed as the output items it came from, structure kept.
Inbound, every stream event is dispatched on its JSON ``type`` (OpenRouter sends no
``event:`` lines) and blocks are keyed by ``output_index`` (the item id when a server
omits it), so the content index is the item's first appearance.

What modelwire stores in the provider-neutral types (replayed only to the same
provider, API and model — :func:`_replay_signatures`):

* ``ThinkingContent.signature`` — the whole ``reasoning`` output item exactly as
  received in ``response.output_item.done`` (its JSON text: ``id``, ``summary``,
  ``encrypted_content``…). It is sent back byte for byte. ``thinking`` holds the
  summary parts (or the raw ``reasoning_text`` parts) joined with a blank line.
* ``TextContent.signature`` — the ``message`` item's id (``msg_…``) or, when the item
  carried a ``phase``, the compact JSON ``{"id":"msg_…","phase":"commentary"}``
  (the model wants ``phase`` back, per the ``phase`` field docs).
* ``ToolCall.id`` — the ``call_id`` (what ``function_call_output`` answers; it stays a
  plain provider id, safe to hand to any other API); ``ToolCall.signature`` — the
  ``function_call`` item id (``fc_…``), which OpenAI pairs with the reasoning item
  before it.

Compat flags (``Model(compat={...})``, unknown keys refused) are the fields of
:class:`ResponsesCompat`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Literal

import msgspec

from ..deltas import (
    BlockEnd,
    BlockSignature,
    BlockStart,
    Delta,
    EndOfStream,
    Finish,
    ResponseMeta,
    TextDelta,
    ThinkingDelta,
    ToolCallArguments,
    ToolCallDelta,
    UsageUpdate,
)
from ..errors import (
    ConfigurationError,
    ContentFilterError,
    InvalidRequestError,
    MalformedChunkError,
    StreamError,
    TruncatedStreamError,
)
from ..options import RESERVED_BODY_KEYS, HTTPRequest, RequestOptions, check_extra_body
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
from ._common import _path_message, decoder_for, dumps, in_band_error, join_url, same_model
from ._common import raw_or_json_arguments as _raw_args

__all__ = [
    "API",
    "RESERVED",
    "OpenAIResponsesAPI",
    "ResponsesCompat",
    "ResponsesDecoder",
    "detect_compat",
    "encode_input",
]


# --------------------------------------------------------------------------- compat


class ResponsesCompat(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How one server departs from OpenAI's own Responses API."""

    system_role: Literal["instructions", "developer", "system"] = "instructions"
    """Where the system prompt goes: the ``instructions`` field, or a first input
    message with role ``developer``/``system``."""
    store: bool | None = False
    """Send ``store`` with this value (``None``: omit). ``False`` keeps the request
    stateless, so replaying the items themselves is what carries the history."""
    encrypted_reasoning: bool | None = None
    """Send ``include: ["reasoning.encrypted_content"]`` (``None``: when the model
    reasons, i.e. ``Model.reasoning`` or a reasoning level is given — OpenAI rejects
    it for models without reasoning)."""
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = "auto"
    """``reasoning.summary`` sent with a reasoning level (``None``: omit; OpenAI asks
    for organization verification before it returns summaries)."""
    reasoning_effort_map: dict[str, str] | None = None
    """Rename levels for servers with fewer (e.g. ``{"xhigh": "high"}``)."""
    prompt_cache_key: bool = True
    """Send ``prompt_cache_key`` from ``session_id`` (when ``cache`` is on)."""
    strict_tools: bool | None = False
    """``strict`` on function tools. The Responses API defaults it to true, which
    rejects any schema that is not in OpenAI's strict subset, so modelwire sends
    false unless told otherwise (``None``: omit)."""


_ALLOWED_COMPAT = frozenset(ResponsesCompat.__struct_fields__)


def detect_compat(model: Model) -> ResponsesCompat:
    """The defaults, then ``model.compat`` overrides (unknown flags are refused)."""
    if not model.compat:
        return _DEFAULT_COMPAT
    unknown = set(model.compat) - _ALLOWED_COMPAT
    if unknown:
        raise ConfigurationError(
            f"unknown openai-responses compat flag(s): {', '.join(sorted(unknown))}; "
            f"known: {', '.join(sorted(_ALLOWED_COMPAT))}"
        )
    try:
        return msgspec.convert(model.compat, ResponsesCompat)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid openai-responses compat: {exc}") from None


_DEFAULT_COMPAT = ResponsesCompat()


# --------------------------------------------------------------------------- outbound

#: Body keys ``extra_body`` may not override: the shared list plus ``instructions``.
RESERVED = RESERVED_BODY_KEYS | frozenset({"instructions"})


class _ItemHead(msgspec.Struct, gc=False):
    # The part every output item shares: its type and (nearly always) its id.
    type: str
    id: str | None = None


class _TextSig(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    phase: str | None = None


_item_head_decoder = decoder_for(_ItemHead)
_text_sig_decoder = decoder_for(_TextSig)


def _text_signature(item_id: str | None, phase: str | None) -> str | None:
    """The ``TextContent.signature`` of a message item (module docstring)."""
    if not item_id:
        return None
    if phase is None:
        return item_id
    return dumps({"id": item_id, "phase": phase}).decode()


def _parse_text_signature(sig: str, where: str) -> tuple[str, str | None]:
    if not sig.startswith("{"):
        return sig, None
    try:
        parsed = _text_sig_decoder.decode(sig)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ConfigurationError(
            f"{where} is not an OpenAI Responses message signature ({exc})"
        ) from None
    return parsed.id, parsed.phase


def _reasoning_item(sig: str, where: str) -> msgspec.Raw:
    """The stored reasoning item, checked, ready to embed byte for byte."""
    try:
        head = _item_head_decoder.decode(sig)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ConfigurationError(
            f"{where} is not an OpenAI Responses reasoning item ({exc})"
        ) from None
    if head.type != "reasoning":
        raise ConfigurationError(f"{where} is a {head.type!r} item, not a reasoning item")
    return msgspec.Raw(sig.encode())


def _handoff_thinking(block: ThinkingContent) -> str | None:
    """Thinking that cannot be replayed as a reasoning item (another model produced
    it, or it has no stored item): visible text, or nothing. One small function so
    the handoff module can replace the rule."""
    if block.redacted or not block.thinking.strip():
        return None
    return f"<thinking>\n{block.thinking}\n</thinking>"


def _image_url(block: ImageContent) -> str:
    return f"data:{block.mime_type};base64,{block.data}"


def _user_item(msg: UserMessage) -> dict[str, Any]:
    if isinstance(msg.content, str):
        parts: list[dict[str, Any]] = [{"type": "input_text", "text": msg.content}]
    else:
        parts = [
            {"type": "input_text", "text": b.text}
            if isinstance(b, TextContent)
            else {"type": "input_image", "image_url": _image_url(b), "detail": "auto"}
            for b in msg.content
        ]
    return {"type": "message", "role": "user", "content": parts}


def _assistant_items(msg: AssistantMessage, i: int, same: bool, out: list[Any]) -> None:
    # A reasoning item that could not be replayed orphans the fc_ ids OpenAI paired
    # with it ("Item 'rs_…' … provided without its required following item"), so
    # call item ids are sent only while every reasoning item before them was.
    skipped_reasoning = False
    for j, block in enumerate(msg.content):
        where = f"messages[{i}].content[{j}].signature"
        if isinstance(block, ThinkingContent):
            if same and block.signature:
                out.append(_reasoning_item(block.signature, where))
                continue
            skipped_reasoning = True
            text = _handoff_thinking(block)
            if text is not None:
                out.append({"type": "message", "role": "assistant", "content": text})
        elif isinstance(block, TextContent):
            if same and block.signature:
                item_id, phase = _parse_text_signature(block.signature, where)
                item: dict[str, Any] = {
                    "type": "message",
                    "role": "assistant",
                    "id": item_id,
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                }
                if phase is not None:
                    item["phase"] = phase
                out.append(item)
            elif block.text:
                # No item id to keep: the "easy" message form, which needs none.
                out.append({"type": "message", "role": "assistant", "content": block.text})
        else:
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": block.id,
                "name": block.name,
                "arguments": _raw_args(block.raw_arguments, block.arguments),
            }
            if same and block.signature and not skipped_reasoning:
                call["id"] = block.signature
            out.append(call)


def _tool_output(msg: ToolResultMessage) -> dict[str, Any]:
    output: str | list[dict[str, Any]]
    if any(isinstance(b, ImageContent) for b in msg.content):
        # function_call_output.output may be a list of input_text/input_image parts.
        output = [
            {"type": "input_text", "text": b.text}
            if isinstance(b, TextContent)
            else {"type": "input_image", "image_url": _image_url(b), "detail": "auto"}
            for b in msg.content
        ]
    else:
        output = msg.text
    return {"type": "function_call_output", "call_id": msg.tool_call_id, "output": output}


def encode_input(
    model: Model, context: Context, compat: ResponsesCompat | None = None
) -> list[Any]:
    """The ``input`` array for ``context`` (pure; the context is not changed).

    Reasoning items appear as ``msgspec.Raw`` values: the bytes as received.
    """
    compat = compat or detect_compat(model)
    items: list[Any] = []
    if context.system_prompt and compat.system_role != "instructions":
        items.append(
            {"type": "message", "role": compat.system_role, "content": context.system_prompt}
        )
    for i, msg in enumerate(context.messages):
        if isinstance(msg, UserMessage):
            items.append(_user_item(msg))
        elif isinstance(msg, AssistantMessage):
            if msg.stop_reason in ("error", "aborted"):
                continue  # a failed turn is not replayed (handoff rules)
            _assistant_items(msg, i, _replay_signatures(model, msg), items)
        else:
            items.append(_tool_output(msg))
    return items


def _replay_signatures(model: Model, msg: AssistantMessage) -> bool:
    """Whether the opaque data of ``msg`` (reasoning items, item ids) may go back."""
    return same_model(model, msg)


def _tool_choice(tc: str | dict[str, Any] | None, names: set[str]) -> Any:
    if tc is None:
        return None
    if not names:
        if tc in ("auto", "none"):
            return None  # nothing to choose from; OpenAI rejects tool_choice without tools
        raise ConfigurationError(f"tool_choice {tc!r} needs tools: the context declares none")
    if isinstance(tc, dict):
        if tc["name"] not in names:
            raise ConfigurationError(
                f"tool_choice names {tc['name']!r}, which is not among the context's tools "
                f"({', '.join(sorted(names))})"
            )
        return {"type": "function", "name": tc["name"]}
    return tc


class OpenAIResponsesAPI:
    """The ``openai-responses`` wire API."""

    name = "openai-responses"

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        """The request body as a dict (reasoning items inside as ``msgspec.Raw``)."""
        compat = detect_compat(model)
        check_extra_body(options.extra_body, RESERVED)
        body: dict[str, Any] = {"model": model.id}
        if context.system_prompt and compat.system_role == "instructions":
            body["instructions"] = context.system_prompt
        body["input"] = encode_input(model, context, compat)
        body["stream"] = True
        if compat.store is not None:
            body["store"] = compat.store
        reasons = model.reasoning or options.reasoning is not None
        encrypted = compat.encrypted_reasoning
        if encrypted if encrypted is not None else reasons:
            body["include"] = ["reasoning.encrypted_content"]
        if options.max_tokens is not None:
            body["max_output_tokens"] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        tools = context.tools or ()
        if tools:
            body["tools"] = [_tool(t.name, t.description, t.parameters, compat) for t in tools]
        choice = _tool_choice(options.tool_choice, {t.name for t in tools})
        if choice is not None:
            body["tool_choice"] = choice
        if options.parallel_tool_calls is not None and tools:
            body["parallel_tool_calls"] = options.parallel_tool_calls
        if options.reasoning is not None:
            if not model.reasoning:
                raise ConfigurationError(
                    f"model {model.id!r} does not support a reasoning level "
                    "(Model.reasoning is False); pass reasoning=None"
                )
            effort = (compat.reasoning_effort_map or {}).get(options.reasoning, options.reasoning)
            reasoning: dict[str, Any] = {"effort": effort}
            if compat.reasoning_summary is not None:
                reasoning["summary"] = compat.reasoning_summary
            body["reasoning"] = reasoning
        if options.session_id and options.cache and compat.prompt_cache_key:
            body["prompt_cache_key"] = options.session_id
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def build_request(
        self, model: Model, context: Context, options: RequestOptions
    ) -> HTTPRequest:
        body = self.build_body(model, context, options)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        headers.update(model.headers or {})
        headers.update(options.headers or {})
        secrets: tuple[str, ...] = ()
        if options.api_key:
            headers["Authorization"] = f"Bearer {options.api_key}"
            secrets = (options.api_key,)
        return HTTPRequest(
            url=join_url(model, "/responses"), headers=headers, body=dumps(body), secrets=secrets
        )

    def new_decoder(self, model: Model | None) -> ResponsesDecoder:
        return ResponsesDecoder()


def _tool(name: str, description: str, parameters: dict[str, Any], compat: ResponsesCompat) -> Any:
    # Responses tools are flat: no nested "function" object as in Chat Completions.
    tool: dict[str, Any] = {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": parameters,
    }
    if compat.strict_tools is not None:
        tool["strict"] = compat.strict_tools
    return tool


# --------------------------------------------------------------------------- inbound
# Typed schemas for the fields used only: unknown fields and unknown event types are
# ignored, so obfuscation, logprobs, annotations and new events never break a stream.


class _Envelope(msgspec.Struct, gc=False):
    type: str


class _InputDetails(msgspec.Struct, gc=False):
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


class _Usage(msgspec.Struct, gc=False):
    input_tokens: int = 0
    output_tokens: int = 0
    input_tokens_details: _InputDetails | None = None


class _Error(msgspec.Struct, gc=False):
    message: str | None = None
    code: str | int | None = None
    type: str | None = None


class _Incomplete(msgspec.Struct, gc=False):
    reason: str | None = None


class _Response(msgspec.Struct, gc=False):
    id: str | None = None
    model: str | None = None
    status: str | None = None
    usage: _Usage | None = None
    error: _Error | None = None
    incomplete_details: _Incomplete | None = None


class _ResponseEvent(msgspec.Struct, gc=False):
    response: _Response


class _ItemEvent(msgspec.Struct, gc=False):
    item: msgspec.Raw
    output_index: int | None = None


class _Part(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    refusal: str | None = None


class _MessageItem(msgspec.Struct, gc=False):
    phase: str | None = None
    content: list[_Part] | None = None


class _ReasoningItem(msgspec.Struct, gc=False):
    summary: list[_Part] | None = None
    content: list[_Part] | None = None


class _CallItem(msgspec.Struct, gc=False):
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None


class _DeltaEvent(msgspec.Struct, gc=False):
    delta: str
    output_index: int | None = None
    item_id: str | None = None


class _SummaryDeltaEvent(msgspec.Struct, gc=False):
    delta: str
    output_index: int | None = None
    item_id: str | None = None
    summary_index: int | None = None


class _ReasoningDeltaEvent(msgspec.Struct, gc=False):
    delta: str
    output_index: int | None = None
    item_id: str | None = None
    content_index: int | None = None


class _SummaryPartEvent(msgspec.Struct, gc=False):
    output_index: int | None = None
    item_id: str | None = None
    summary_index: int | None = None


class _ArgsDoneEvent(msgspec.Struct, gc=False):
    arguments: str
    output_index: int | None = None
    item_id: str | None = None


class _ErrorEvent(msgspec.Struct, gc=False):
    # OpenAI documents code/message/param at the top level; recordings also show
    # them nested in an "error" object (vercel/ai's openai-error fixture).
    message: str | None = None
    code: str | int | None = None
    error: _Error | None = None


_envelope = decoder_for(_Envelope)
_response_event = decoder_for(_ResponseEvent)
_item_event = decoder_for(_ItemEvent)
_message_item = decoder_for(_MessageItem)
_reasoning_item_decoder = decoder_for(_ReasoningItem)
_call_item = decoder_for(_CallItem)
_delta_event = decoder_for(_DeltaEvent)
_summary_delta_event = decoder_for(_SummaryDeltaEvent)
_reasoning_delta_event = decoder_for(_ReasoningDeltaEvent)
_summary_part_event = decoder_for(_SummaryPartEvent)
_args_done_event = decoder_for(_ArgsDoneEvent)
_error_event = decoder_for(_ErrorEvent)


def _decode(data: str | bytes, decoder: msgspec.json.Decoder[Any], what: str, prefix: str = "") -> Any:
    """Decode one payload (or a nested item, paths prefixed with ``prefix``)."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise MalformedChunkError(f"malformed {what}: {prefix}{_path_message(exc)}") from None
    except msgspec.DecodeError as exc:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
        raise MalformedChunkError(f"malformed {what}: invalid JSON ({exc}): {text[:120]!r}") from None


def _error_from_code(message: str, code: str | int | None, type_: str | None) -> StreamError:
    """Map a Responses error code (``response.error.code``) to an error class."""
    c = str(code) if code is not None else ""
    if "content_policy" in c:
        return ContentFilterError(f"{message} ({c})")
    if c == "invalid_prompt" or c.startswith(("invalid_", "image_")) or c in (
        "empty_image_file",
        "failed_to_download_image",
        "unsupported_image_media_type",
    ):
        return InvalidRequestError(f"{message} ({c})")
    return in_band_error(message, type_=type_, code=c or None)


_TEXT, _THINKING, _TOOL, _IGNORED = 0, 1, 2, 3
_PART_SEP = "\n\n"


class _ItemState:
    """What the decoder remembers of one output item."""

    __slots__ = ("closed", "kind", "part", "pieces", "signature")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.closed = False
        self.pieces: list[str] = []  # text/thinking streamed so far (done-event fill)
        self.part: tuple[str, int] | None = None  # the reasoning part last streamed
        self.signature: str | None = None


class ResponsesDecoder:
    """Per-response decoder: SSE events → normalized deltas.

    Keeps, per output item, the text streamed so far, so an item whose text
    arrives only (or partly) in ``response.output_item.done`` still gets it all,
    as function-call arguments that arrive only in ``.done`` do (LM Studio).
    """

    __slots__ = ("_handlers", "_ids", "_items", "_meta", "_saw_call", "_terminal")

    def __init__(self) -> None:
        self._items: dict[Hashable, _ItemState] = {}
        self._ids: dict[str, Hashable] = {}
        self._meta = False
        self._saw_call = False
        self._terminal = False
        self._handlers: dict[str, Callable[[str, str], list[Delta]]] = {
            "response.output_text.delta": self._text_delta,
            "response.refusal.delta": self._text_delta,
            "response.reasoning_summary_text.delta": self._summary_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.reasoning_summary_part.added": self._summary_part,
            "response.function_call_arguments.delta": self._args_delta,
            "response.function_call_arguments.done": self._args_done,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done,
            "response.created": self._meta_event,
            "response.in_progress": self._meta_event,
            "response.queued": self._meta_event,
            "response.completed": self._completed,
            "response.incomplete": self._incomplete,
            "response.failed": self._failed,
            "error": self._error,
        }

    # ------------------------------------------------------------------ dispatch

    def decode(self, event: ServerSentEvent) -> list[Delta]:
        data = event.data
        if self._terminal:
            return []
        if data == "[DONE]":
            # OpenRouter ends with [DONE] after response.completed (never reached:
            # the stream is over by then); before it, the response is incomplete.
            raise TruncatedStreamError(
                "the stream sent [DONE] before response.completed, response.incomplete "
                "or response.failed"
            )
        # Fast path: OpenAI and OpenRouter put "type" first; peek at it without a
        # second JSON pass. Anything else goes through the typed envelope.
        etype: str | None = None
        if data.startswith('{"type":"'):
            end = data.find('"', 9)
            if end > 0:
                etype = data[9:end]
                if "\\" in etype:
                    etype = None
        if etype is None:
            etype = _decode(data, _envelope, "event").type
        handler = self._handlers.get(etype)
        if handler is None:
            if event.event == "error":
                return self._error(data, "error")
            return []  # unknown or built-in-tool events (web_search_call.*…): ignored
        return handler(data, etype)

    def end(self) -> list[Delta]:
        if self._terminal:
            return []
        raise TruncatedStreamError(
            "the stream ended without response.completed, response.incomplete or "
            "response.failed (the response may be incomplete)"
        )

    # ------------------------------------------------------------------ keys

    def _key(self, output_index: int | None, item_id: str | None, etype: str) -> Hashable:
        if output_index is not None:
            return output_index
        if item_id is not None:
            return self._ids.get(item_id, item_id)
        raise MalformedChunkError(f"malformed {etype} event: output_index must be an integer")

    def _open(self, key: Hashable, kind: int, etype: str) -> _ItemState | None:
        """The state of item ``key`` for a delta of ``kind`` (``None``: ignore it)."""
        st = self._items.get(key)
        if st is None:
            # A delta before output_item.added: the block starts with it.
            st = self._items[key] = _ItemState(kind)
            return st
        if st.kind == _IGNORED:
            return None
        if st.closed:
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} already ended "
                "(response.output_item.done) but a delta arrived for it"
            )
        if st.kind != kind:
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} is not a "
                f"{('message', 'reasoning', 'function_call')[kind]} item"
            )
        return st

    # ------------------------------------------------------------------ deltas

    def _text_delta(self, data: str, etype: str) -> list[Delta]:
        ev: _DeltaEvent = _decode(data, _delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._open(key, _TEXT, etype)
        if st is None or not ev.delta:
            return []
        st.pieces.append(ev.delta)
        return [TextDelta(key, ev.delta)]

    def _thinking(self, key: Hashable, part: tuple[str, int], delta: str, etype: str) -> list[Delta]:
        st = self._open(key, _THINKING, etype)
        if st is None or not delta:
            return []
        out: list[Delta] = []
        if st.part is not None and st.part != part and st.pieces:
            # Separate summary parts with a blank line, as they read in ChatGPT.
            st.pieces.append(_PART_SEP)
            out.append(ThinkingDelta(key, _PART_SEP))
        st.part = part
        st.pieces.append(delta)
        out.append(ThinkingDelta(key, delta))
        return out

    def _summary_delta(self, data: str, etype: str) -> list[Delta]:
        ev: _SummaryDeltaEvent = _decode(data, _summary_delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        index = ev.summary_index
        if index is None:
            st = self._items.get(key)
            index = st.part[1] if st is not None and st.part is not None else 0
        return self._thinking(key, ("summary", index), ev.delta, etype)

    def _reasoning_delta(self, data: str, etype: str) -> list[Delta]:
        ev: _ReasoningDeltaEvent = _decode(data, _reasoning_delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        return self._thinking(key, ("content", ev.content_index or 0), ev.delta, etype)

    def _summary_part(self, data: str, etype: str) -> list[Delta]:
        # Only the part index matters; the separator is written with its first text.
        ev: _SummaryPartEvent = _decode(data, _summary_part_event, etype)
        st = self._items.get(self._key(ev.output_index, ev.item_id, etype))
        if st is not None and st.kind == _THINKING and st.part is None and not st.pieces:
            st.part = ("summary", ev.summary_index or 0)
        return []

    def _args_delta(self, data: str, etype: str) -> list[Delta]:
        ev: _DeltaEvent = _decode(data, _delta_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._open(key, _TOOL, etype)
        if st is None or not ev.delta:
            return []
        return [ToolCallDelta(key, None, None, ev.delta)]

    def _args_done(self, data: str, etype: str) -> list[Delta]:
        # The whole arguments text: used even when no delta came (LM Studio sends
        # function_call_arguments.done only).
        ev: _ArgsDoneEvent = _decode(data, _args_done_event, etype)
        key = self._key(ev.output_index, ev.item_id, etype)
        st = self._items.get(key)
        if st is None or st.kind != _TOOL:
            if st is not None and st.kind == _IGNORED:
                return []
            raise MalformedChunkError(
                f"malformed {etype} event: output item {key!r} is not a function_call item"
            )
        return [ToolCallArguments(key, ev.arguments)]

    # ------------------------------------------------------------------ items

    def _item_added(self, data: str, etype: str) -> list[Delta]:
        ev: _ItemEvent = _decode(data, _item_event, etype)
        kind = _decode(ev.item, _item_head_decoder, etype, "item.").type
        if kind == "message":
            m: _MessageItem = _decode(ev.item, _message_item, etype, "item.")
            key = self._item_key(ev.output_index, m.id, etype)
            return self._start(key, _TEXT, signature=_text_signature(m.id, m.phase))
        if kind == "reasoning":
            r: _ItemHeadId = _decode(ev.item, _item_id_decoder, etype, "item.")
            key = self._item_key(ev.output_index, r.id, etype)
            return self._start(key, _THINKING)
        if kind == "function_call":
            c: _CallItem = _decode(ev.item, _call_item, etype, "item.")
            key = self._item_key(ev.output_index, c.id, etype)
            out = self._start(key, _TOOL, call=c)
            if c.arguments:
                # The added item may already hold arguments; deltas extend them.
                out.append(ToolCallDelta(key, None, None, c.arguments))
            return out
        # Built-in tools (web_search_call, file_search_call, code_interpreter_call…)
        # run on the provider's side: not blocks of ours, their events are ignored.
        h: _ItemHeadId = _decode(ev.item, _item_id_decoder, etype, "item.")
        key = self._item_key(ev.output_index, h.id, etype)
        self._items.setdefault(key, _ItemState(_IGNORED))
        return []

    def _item_key(self, output_index: int | None, item_id: str | None, etype: str) -> Hashable:
        key = self._key(output_index, item_id, etype)
        if item_id is not None:
            self._ids[item_id] = key
        return key

    def _start(
        self, key: Hashable, kind: int, *, signature: str | None = None, call: _CallItem | None = None
    ) -> list[Delta]:
        st = self._items.get(key)
        if st is not None:
            if st.closed or st.kind != kind:
                raise MalformedChunkError(
                    f"malformed response.output_item.added event: output item {key!r} "
                    "was already used"
                )
            return []  # a delta came first and started it
        st = self._items[key] = _ItemState(kind)
        if kind == _TOOL:
            assert call is not None
            self._saw_call = True
            st.signature = call.id
            return [
                BlockStart(key, "tool_call", call.call_id or call.id, call.name, call.id or None)
            ]
        st.signature = signature
        return [BlockStart(key, "text" if kind == _TEXT else "thinking", signature=signature)]

    def _item_done(self, data: str, etype: str) -> list[Delta]:
        ev: _ItemEvent = _decode(data, _item_event, etype)
        raw = ev.item
        kind = _decode(raw, _item_head_decoder, etype, "item.").type
        out: list[Delta] = []
        if kind == "message":
            m: _MessageItem = _decode(raw, _message_item, etype, "item.")
            key = self._item_key(ev.output_index, m.id, etype)
            sig = _text_signature(m.id, m.phase)
            st = self._done_state(key, _TEXT, out, signature=sig)
            full = "".join(
                (p.text or "") if p.type == "output_text" else (p.refusal or "")
                for p in m.content or ()
                if p.type in ("output_text", "refusal")
            )
            self._fill(key, st, full, out, TextDelta)
            if sig is not None and sig != st.signature:
                st.signature = sig
                out.append(BlockSignature(key, sig))
        elif kind == "reasoning":
            r: _ReasoningItem = _decode(raw, _reasoning_item_decoder, etype, "item.")
            head: _ItemHeadId = _decode(raw, _item_id_decoder, etype, "item.")
            key = self._item_key(ev.output_index, head.id, etype)
            st = self._done_state(key, _THINKING, out)
            texts = [p.text for p in (*(r.summary or ()), *(r.content or ())) if p.text]
            self._fill(key, st, _PART_SEP.join(texts), out, ThinkingDelta)
            # The whole item as received: replayed byte for byte (encrypted_content).
            out.append(BlockSignature(key, bytes(raw).decode()))
        elif kind == "function_call":
            c: _CallItem = _decode(raw, _call_item, etype, "item.")
            key = self._item_key(ev.output_index, c.id, etype)
            st = self._done_state(key, _TOOL, out, call=c)
            if c.arguments is not None:
                out.append(ToolCallArguments(key, c.arguments))
        else:
            h: _ItemHeadId = _decode(raw, _item_id_decoder, etype, "item.")
            key = self._item_key(ev.output_index, h.id, etype)
            self._items.setdefault(key, _ItemState(_IGNORED))
            return out
        st.closed = True
        st.pieces = []
        out.append(BlockEnd(key))
        return out

    def _done_state(
        self,
        key: Hashable,
        kind: int,
        out: list[Delta],
        *,
        signature: str | None = None,
        call: _CallItem | None = None,
    ) -> _ItemState:
        st = self._items.get(key)
        if st is None:
            # Never added: the item arrives whole (servers that skip .added).
            out.extend(self._start(key, kind, signature=signature, call=call))
            return self._items[key]
        if st.closed or st.kind != kind:
            raise MalformedChunkError(
                f"malformed response.output_item.done event: output item {key!r} "
                + ("ended twice" if st.closed else "changed its type")
            )
        return st

    @staticmethod
    def _fill(
        key: Hashable,
        st: _ItemState,
        full: str,
        out: list[Delta],
        cls: type[TextDelta] | type[ThinkingDelta],
    ) -> None:
        """Append the part of the finished item's text that no delta carried."""
        if not full:
            return
        streamed = "".join(st.pieces)
        if len(full) > len(streamed) and full.startswith(streamed):
            out.append(cls(key, full[len(streamed) :]))
        # Otherwise the deltas already said it all, or said something else: what
        # was streamed stands (events already sent are never taken back).

    # ------------------------------------------------------------------ response

    def _meta_event(self, data: str, etype: str) -> list[Delta]:
        if self._meta:
            return []
        resp = _decode(data, _response_event, etype).response
        self._meta = True
        return [ResponseMeta(response_id=resp.id, model=resp.model)]

    def _terminal_deltas(self, resp: _Response, finish: Finish) -> list[Delta]:
        out: list[Delta] = []
        if not self._meta:
            self._meta = True
            out.append(ResponseMeta(response_id=resp.id, model=resp.model))
        out.append(finish)
        u = resp.usage
        if u is not None:
            details = u.input_tokens_details
            cached = (details.cached_tokens or 0) if details is not None else 0
            written = (details.cache_write_tokens or 0) if details is not None else 0
            # input_tokens counts cached and cache-written tokens; output_tokens
            # already includes reasoning_tokens (ResponseUsage docs): count once.
            out.append(
                UsageUpdate(
                    input=max(u.input_tokens - cached - written, 0),
                    output=u.output_tokens,
                    cache_read=cached,
                    cache_write=written,
                )
            )
        out.append(EndOfStream())
        self._terminal = True
        return out

    def _completed(self, data: str, etype: str) -> list[Delta]:
        resp = _decode(data, _response_event, etype).response
        reason: Literal["stop", "tool_use"] = "tool_use" if self._saw_call else "stop"
        return self._terminal_deltas(resp, Finish(reason, resp.status or "completed"))

    def _incomplete(self, data: str, etype: str) -> list[Delta]:
        resp = _decode(data, _response_event, etype).response
        why = resp.incomplete_details.reason if resp.incomplete_details else None
        if why == "content_filter":
            finish = Finish(
                "error",
                why,
                "content_filter",
                "the provider's content filter stopped the response "
                "(response.incomplete, reason content_filter)",
            )
        else:
            # max_output_tokens, max_messages, or a reason not known yet: the output
            # was cut short, so tool-call arguments are never trusted.
            finish = Finish("length", why or "incomplete")
        return self._terminal_deltas(resp, finish)

    def _failed(self, data: str, etype: str) -> list[Delta]:
        resp = _decode(data, _response_event, etype).response
        err = resp.error
        if err is None:
            raise in_band_error("the response failed (response.failed without an error)")
        raise _error_from_code(err.message or "the response failed", err.code, err.type)

    def _error(self, data: str, etype: str) -> list[Delta]:
        ev: _ErrorEvent = _decode(data, _error_event, "error event")
        inner = ev.error
        message = ev.message or (inner.message if inner else None) or "the server sent an error"
        code = ev.code if ev.code is not None else (inner.code if inner else None)
        raise _error_from_code(message, code, inner.type if inner else None)


API = OpenAIResponsesAPI()

"""Replaying a conversation to a model: ``mw.handoff(context, model) -> Context``.

A conversation may hold messages from other providers, APIs and models (a user
switching models mid-session, a sub-agent on another provider). What one model
produced is not always acceptable to another, so before a request is encoded the
context is rewritten for the target — purely: the input is never changed, the
result is deterministic, and applying it twice changes nothing more.

The rules (docs/providers.md, "Handoff between models"):

1. **Same provider, API and model** (:func:`~modelwire._apis._common.same_model`):
   signatures, redacted thinking and encrypted reasoning are kept byte for byte;
   the target's adapter replays them.
2. **Another model**: thinking becomes plain text, ``<thinking>…</thinking>``, in
   its place (every built-in API accepts assistant text, and the content stays
   visible to the new model; empty thinking is dropped); redacted thinking and
   encrypted reasoning are dropped (opaque to anyone else); signatures are removed
   from text, thinking and tool calls.
3. **Tool-call ids** are rewritten to what the target accepts —
   Anthropic ``^[a-zA-Z0-9_-]{1,64}$`` (Messages API reference, ``tool_use.id``);
   OpenAI Chat at most 40 characters (longer ids are refused); Mistral exactly 9
   letters and digits; OpenAI Responses ``call_id`` letters, digits, ``_`` and ``-``
   up to 64; Gemini anything — through a collision-safe two-way map, so each
   rewritten id is unique and the matching ``ToolResultMessage.tool_call_id``
   follows it. Ids that already fit are kept.
4. **A tool call without a result** (none before the next user or assistant
   message, or the end) gets a synthetic error result, "no result was provided":
   every API refuses a call that is not answered.
5. **Failed turns** (``stop_reason`` error or aborted) are not replayed, nor the
   tool results answering their calls.
6. **Input a model is not declared to accept** — an image, document or audio block
   for a model whose ``input`` lacks ``image``, ``document`` or ``audio`` — is a
   ``ConfigurationError`` naming the model, the block and how to declare the kind
   (``Model(input=...)``); nothing is replaced or dropped silently.
7. **Lone surrogates** (``\\ud800``–``\\udfff``, which cannot be encoded as
   UTF-8 and make a request body fail) are removed from text, never from signed
   content (a signed block must stay byte for byte).
8. An assistant message left with no content is dropped.
9. **Provider-run tools, citations and opaque items** go back as received to the API
   that produced them (``message.api == model.api``). To another API a
   :class:`~modelwire.types.ServerToolCall` becomes the text
   ``[web_search was run by the provider with {"query": …}]`` and a
   :class:`~modelwire.types.ServerToolResult` ``[web_search result: …]`` (its JSON,
   without the provider's ``encrypted_*`` fields, which no other model can read);
   a text block's citations become numbered sources appended to its text
   (``[1] Title <url>: "cited text"``); a :class:`~modelwire.types.ProviderItem` is
   dropped, and :func:`handoff_notes` says so (the trace's ``context`` record lists
   the notes in its ``handoff`` field).
10. **An image the model generated** goes back to its own API (its ``signature`` only
   to the same model); to another API, whose assistant turns carry no image, it becomes
   the text ``[an image (image/png) was generated]`` and :func:`handoff_notes` says so.
11. **System messages among the turns** (:class:`~modelwire.types.SystemMessage`) stay
   where they are for a model that takes them there
   (``Capabilities.mid_conversation_system``); for any other their text is appended to
   the system prompt, in order, each after a blank line (``Context.system_text``): the
   instructions reach every model, their place only where the model can keep it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from .._apis import IdRule, find_api
from .._apis._common import (
    as_tool_call,
    check_input,
    citations_as_text,
    image_as_text,
    remove_lone_surrogates,
    same_model,
    server_call_as_text,
    server_result_as_text,
)
from ..types import (
    AssistantContent,
    AssistantMessage,
    Context,
    ImageContent,
    Message,
    Model,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserContent,
    UserMessage,
)

__all__ = [
    "NO_RESULT",
    "IdRule",
    "ToolIdMap",
    "citations_as_text",
    "handoff",
    "handoff_notes",
    "remove_lone_surrogates",
    "server_call_as_text",
    "server_result_as_text",
    "thinking_as_text",
    "tool_id_rule",
]

#: Text of the synthetic error result for a tool call that was never answered.
NO_RESULT = "no result was provided"

_replace = msgspec.structs.replace
_json_encode = msgspec.json.encode


def _clean_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    # Encoding fails exactly when a lone surrogate is somewhere inside: one fast C
    # pass on the common path instead of a Python walk.
    try:
        _json_encode(arguments)
    except UnicodeEncodeError:
        return dict(_clean_value(arguments))
    except (TypeError, msgspec.EncodeError):
        pass  # not JSON-encodable: the adapter reports it, not handoff
    return arguments


def _clean_value(value: Any) -> Any:
    # Tool-call arguments parsed from JSON: strings, numbers, lists, objects. The
    # same object comes back when nothing changed.
    if isinstance(value, str):
        return remove_lone_surrogates(value)
    if isinstance(value, list):
        items = [_clean_value(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(remove_lone_surrogates(k), _clean_value(v)) for k, v in value.items()]
        same = all(
            k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True)
        )
        return value if same else dict(pairs)
    return value


def thinking_as_text(thinking: str) -> str:
    """How another model's reasoning is shown to the target (the built-in adapters
    use the same wrapping)."""
    return f"<thinking>\n{thinking}\n</thinking>"


# --------------------------------------------------------------------------- tool ids


_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def tool_id_rule(model: Model) -> IdRule | None:
    """The tool-call id rule of ``model``'s API (``None``: any id is accepted).

    Each wire API states its own in its handoff facet
    (:class:`modelwire._apis.HandoffFacet`); an API without one, or a custom stream
    function, accepts any id.
    """
    api = find_api(model.api)
    facet = api.handoff if api is not None else None
    return facet.tool_id_rule(model) if facet is not None else None


def _digest(text: str, salt: int) -> bytes:
    return hashlib.sha256(f"{salt}\x00{text}".encode("utf-8", "surrogatepass")).digest()


class ToolIdMap:
    """A collision-safe two-way map from original tool-call ids to ids the target
    accepts: ``forward`` (original → sent) and ``reverse`` (sent → original).

    Ids that already fit the rule are kept and reserved first, so a rewritten id
    never collides with a kept one; a rewritten id is derived from a hash of the
    original (deterministic), salted again until it is free.
    """

    def __init__(self, rule: IdRule | None, keep: set[str]) -> None:
        self.rule = rule
        self.forward: dict[str, str] = {}
        self.reverse: dict[str, str] = {}
        for i in keep:
            if self._fits(i):
                self.forward[i] = i
                self.reverse[i] = i

    def _fits(self, call_id: str) -> bool:
        return self.rule is None or self.rule.valid.fullmatch(call_id) is not None

    def get(self, call_id: str) -> str:
        """The id to send for ``call_id`` (assigning one on first sight)."""
        sent = self.forward.get(call_id)
        if sent is not None:
            return sent
        if self._fits(call_id) and call_id not in self.reverse:
            sent = call_id
        else:
            sent = self._derive(call_id)
        self.forward[call_id] = sent
        self.reverse[sent] = call_id
        return sent

    def _derive(self, call_id: str) -> str:
        rule = self.rule
        assert rule is not None  # every id fits when there is no rule
        if rule.exact is None:
            base = rule.bad.sub("_", call_id) if rule.bad is not None else call_id
            base = base or "call"
            if (
                len(base) <= rule.max_len
                and base not in self.reverse
                and rule.valid.fullmatch(base)
            ):
                return base
        salt = 0
        while True:
            digest = _digest(call_id, salt)
            if rule.exact is not None:
                n = int.from_bytes(digest, "big")
                chars = []
                for _ in range(rule.exact):
                    n, r = divmod(n, len(_ALNUM))
                    chars.append(_ALNUM[r])
                candidate = "".join(chars)
            else:
                tag = digest.hex()[:8]
                candidate = f"{base[: rule.max_len - len(tag) - 1]}_{tag}"
            if candidate not in self.reverse and rule.valid.fullmatch(candidate):
                return candidate
            salt += 1


# --------------------------------------------------------------------------- handoff


def _clean_text_block(
    block: TextContent, keep_signature: bool, keep_citations: bool = True
) -> TextContent:
    if keep_signature and block.signature is not None and keep_citations:
        return block  # signed: byte for byte
    text = remove_lone_surrogates(block.text)
    citations = block.citations
    if citations and not keep_citations:
        text = text + remove_lone_surrogates(citations_as_text(citations))
        citations = ()
    if text is block.text and (keep_signature or block.signature is None):
        return block
    return TextContent(
        text=text, signature=block.signature if keep_signature else None, citations=citations
    )


def _user_content(content: tuple[UserContent, ...]) -> tuple[UserContent, ...]:
    # Images, documents and audio pass: their kind is one the model takes
    # (check_input, in handoff); the target's encoder says how it carries them.
    return tuple(
        _clean_text_block(b, keep_signature=False) if isinstance(b, TextContent) else b
        for b in content
    )


def _user(msg: UserMessage) -> UserMessage:
    if isinstance(msg.content, str):
        text = remove_lone_surrogates(msg.content)
        return msg if text is msg.content else _replace(msg, content=text)
    content = _user_content(msg.content)
    changed = any(a is not b for a, b in zip(content, msg.content, strict=True))
    return _replace(msg, content=content) if changed else msg


# --------------------------------------------------------------------------- other APIs' blocks


def handoff_notes(context: Context, model: Model) -> list[str]:
    """What :func:`handoff` drops for ``model``: one note per opaque provider item
    another API sent (the trace shows them)."""
    notes = []
    for i, msg in enumerate(context.messages):
        if not isinstance(msg, AssistantMessage) or _failed(msg):
            continue
        for j, b in enumerate(msg.content):
            if isinstance(b, ProviderItem) and b.api != model.api:
                notes.append(
                    f"messages[{i}].content[{j}]: a {b.provider_type} item of {b.api} is not "
                    f"sent to {model.api} (opaque to other APIs)"
                )
            elif isinstance(b, ImageContent) and msg.api != model.api:
                notes.append(
                    f"messages[{i}].content[{j}]: an image {msg.api} generated is sent to "
                    f"{model.api} as a note, not as the image"
                )
    return notes


def _assistant(msg: AssistantMessage, model: Model, ids: ToolIdMap) -> AssistantMessage:
    same = same_model(model, msg)
    same_api = msg.api == model.api
    out: list[AssistantContent] = []
    for b in msg.content:
        if isinstance(b, TextContent):
            out.append(_clean_text_block(b, keep_signature=same, keep_citations=same_api))
        elif isinstance(b, ThinkingContent):
            if same:
                if b.signature is not None or b.redacted:
                    out.append(b)  # signed, redacted or encrypted: byte for byte
                else:
                    text = remove_lone_surrogates(b.thinking)
                    out.append(b if text is b.thinking else _replace(b, thinking=text))
            elif not b.redacted and b.thinking.strip():
                text = thinking_as_text(remove_lone_surrogates(b.thinking))
                out.append(TextContent(text=text))
            # else: redacted/encrypted or empty reasoning of another model is dropped
        elif isinstance(b, ServerToolCall):
            out.append(b if same_api else TextContent(text=server_call_as_text(b)))
        elif isinstance(b, ServerToolResult):
            out.append(b if same_api else TextContent(text=server_result_as_text(b)))
        elif isinstance(b, ProviderItem):
            if b.api == model.api:
                out.append(b)
            # else: dropped (handoff_notes says so in the trace)
        elif isinstance(b, ImageContent):
            if not same_api:
                out.append(TextContent(text=image_as_text(b)))
            elif same or b.signature is None:
                out.append(b)
            else:
                out.append(_replace(b, signature=None))  # signed for another model only
        else:
            b = as_tool_call(b, "a handoff")
            out.append(_tool_call(b, ids.get(b.id), keep_signature=same))
    content = tuple(out)
    if len(content) == len(msg.content) and all(
        a is b for a, b in zip(content, msg.content, strict=True)
    ):
        return msg
    return _replace(msg, content=content)


def _tool_call(call: ToolCall, sent_id: str, keep_signature: bool) -> ToolCall:
    if keep_signature and call.signature is not None:
        # Signed: the call is replayed as it was; only an id the target refuses changes.
        return call if sent_id == call.id else _replace(call, id=sent_id)
    raw = call.raw_arguments
    new_raw = remove_lone_surrogates(raw) if raw is not None else None
    args = _clean_arguments(call.arguments)
    if (
        sent_id == call.id
        and new_raw is raw
        and args is call.arguments
        and (keep_signature or call.signature is None)
    ):
        return call
    return ToolCall(
        id=sent_id,
        name=call.name,
        arguments=args,
        raw_arguments=new_raw,
        signature=call.signature if keep_signature else None,
    )


def _result(msg: ToolResultMessage, sent_id: str) -> ToolResultMessage:
    content = _user_content(msg.content)
    changed = any(a is not b for a, b in zip(content, msg.content, strict=True))
    if sent_id == msg.tool_call_id and not changed:
        return msg
    return _replace(msg, tool_call_id=sent_id, content=content)


def _synthetic(call: ToolCall, sent_id: str, timestamp: int) -> ToolResultMessage:
    # The assistant message's timestamp keeps handoff deterministic.
    return ToolResultMessage(
        tool_call_id=sent_id,
        tool_name=call.name,
        content=(TextContent(text=NO_RESULT),),
        is_error=True,
        timestamp=timestamp,
    )


def _failed(msg: Message) -> bool:
    return isinstance(msg, AssistantMessage) and msg.stop_reason in ("error", "aborted")


def handoff(context: Context, model: Model) -> Context:
    """``context`` rewritten so ``model`` accepts it (rules in the module docstring).

    Pure and idempotent: the input is not changed, equal inputs give equal
    outputs, and ``handoff(handoff(c, m), m) == handoff(c, m)``. A context that
    needs nothing is returned as it is.

    Every call applies it before encoding; call it yourself to see what a model
    will be sent. In short: the same model gets everything back byte for byte;
    another gets thinking as ``<thinking>`` text and no signatures, tool-call ids
    rewritten to what its API accepts, a synthetic error result for an unanswered
    call, and no failed turns.

    Args:
        context: The conversation, possibly from other providers and models.
        model: The model it will be sent to.

    Returns:
        The context as ``model`` is sent it.

    Raises:
        ConfigurationError: The context holds an image, document or audio block the
            model does not declare in ``Model.input``.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer() as server:
            claude = server.model("anthropic-messages", "claude-test")
            gpt = server.model("openai-chat", "gpt-test")
        reply = mw.AssistantMessage(
            content=[mw.ThinkingContent(thinking="2 + 2 is 4.", signature="sig"),
                     mw.TextContent(text="4")],
            api=claude.api, provider=claude.provider, model=claude.id, stop_reason="stop",
        )
        ctx = mw.Context(messages=[mw.UserMessage(content="2 + 2?"), reply])
        text = mw.handoff(ctx, gpt).messages[1].content[0].text
        print(text.replace("\\n", " "))  # <thinking> 2 + 2 is 4. </thinking>
        assert mw.handoff(ctx, claude) is ctx  # the same model: nothing to change
        ```
    """
    check_input(model, context)  # no input of a kind the model does not take (rule 6)
    context = _place_system(context, model)  # rule 11
    messages = context.messages
    users = [m for m in messages if isinstance(m, UserMessage)]
    # A first turn (user messages only): no calls, no ids to map.
    out = [_user(m) for m in users] if len(users) == len(messages) else _replay(messages, model)
    system = context.system_prompt
    new_system = remove_lone_surrogates(system) if system is not None else None
    if new_system is system and len(out) == len(messages):
        if all(a is b for a, b in zip(out, messages, strict=True)):
            return context
    return _replace(context, system_prompt=new_system, messages=tuple(out))


def _place_system(context: Context, model: Model) -> Context:
    """Rule 11: system messages folded into the system prompt for a model that does not
    take them among the turns."""
    if not any(isinstance(m, SystemMessage) for m in context.messages):
        return context
    from .._apis._profile import profile

    if profile(find_api(model.api), model).mid_conversation_system:
        return context
    turns = tuple(m for m in context.messages if not isinstance(m, SystemMessage))
    return _replace(context, system_prompt=context.system_text, messages=turns)


def _replay(messages: tuple[Message, ...], model: Model) -> list[Message]:
    """The messages of a conversation with assistant turns, rewritten for ``model``."""
    keep = {
        b.id
        for msg in messages
        if isinstance(msg, AssistantMessage) and not _failed(msg)
        for b in msg.content
        if isinstance(b, ToolCall)
    }
    ids = ToolIdMap(tool_id_rule(model), keep)
    out: list[Message] = []
    # Calls of the last replayed assistant message still waiting for a result
    # (original id → (call, timestamp)), and ids of a dropped failed turn.
    pending: dict[str, tuple[ToolCall, int]] = {}
    dropped: set[str] = set()

    def flush() -> None:
        for call, ts in pending.values():
            out.append(_synthetic(call, ids.get(call.id), ts))
        pending.clear()

    for msg in messages:
        if isinstance(msg, ToolResultMessage):
            if msg.tool_call_id in dropped:
                continue  # answers a failed turn that is not replayed
            pending.pop(msg.tool_call_id, None)
            out.append(_result(msg, ids.get(msg.tool_call_id)))
            continue
        flush()
        dropped = set()
        if isinstance(msg, UserMessage):
            out.append(_user(msg))
        elif isinstance(msg, SystemMessage):
            text = remove_lone_surrogates(msg.content)
            out.append(msg if text is msg.content else _replace(msg, content=text))
        elif _failed(msg):
            dropped = {b.id for b in msg.content if isinstance(b, ToolCall)}
        else:
            new = _assistant(msg, model, ids)
            if new.content:
                out.append(new)
            pending = {c.id: (c, msg.timestamp) for c in msg.content if isinstance(c, ToolCall)}
    flush()
    return out

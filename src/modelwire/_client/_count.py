"""Token budgets: ``mw.count_tokens`` and ``max_tokens="auto"``.

:func:`count_tokens` asks the provider where the model's profile says its API has a
counting endpoint — each API states its request and response shape as its codec's
counting facet (``codec.counting``, from ``_apis/<api>/_count.py``):

* Anthropic Messages: ``POST {base_url}/messages/count_tokens`` → ``{"input_tokens"}``
  (docs.anthropic.com, "Count message tokens");
* Gemini: ``POST {base_url}/models/{id}:countTokens`` → ``{"totalTokens"}``
  (ai.google.dev, ``models.countTokens``);
* Bedrock: ``POST {base_url}/model/{id}/count-tokens`` with ``{"input": {"converse":
  …}}`` → ``{"inputTokens"}`` (Bedrock API reference, ``CountTokens``);
* OpenAI Responses: ``POST {base_url}/responses/input_tokens`` →
  ``{"object": "response.input_tokens", "input_tokens"}``.

Every other API (OpenAI Chat and its compatible servers, Ollama, custom ones) gets
the local estimate, marked ``estimated=True``: :func:`estimate_tokens` counts text
at 4 ASCII characters per token and one token per other character (CJK scripts are
about one token per character in the common tokenizers), 4 tokens of overhead per
message and tool, and a fixed :data:`IMAGE_TOKENS` per image or document given by
reference. It is a budget, not a bill: tokenizers differ by model.

``max_tokens="auto"`` uses the local estimate (no I/O before the request): the output
limit is what the context window leaves after the prompt plus a
:data:`SAFETY_MARGIN`, capped at the model's ``max_tokens``; a prompt that leaves
nothing ends the call with ``context_overflow`` before anything is sent (and moves a
``mw.Fallback`` on to a model with a larger window).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import ContextOverflowError
from ._whole import final_message, final_message_sync

if TYPE_CHECKING:
    from .._apis import CountFacet
    from .._call import Call
    from .._wire.request import HTTPRequest
    from ..types import AssistantMessage, Context, Model
    from ._options import StreamOptions

__all__ = [
    "IMAGE_TOKENS",
    "SAFETY_MARGIN",
    "Prepare",
    "TokenCount",
    "count_tokens",
    "count_tokens_sync",
    "estimate_tokens",
    "fit_max_tokens",
]

#: Tokens assumed for an image, or a document or audio given by URL or file id (an
#: Anthropic image is about (width × height) / 750 tokens, at most about 1600).
IMAGE_TOKENS = 1600
#: ``max_tokens="auto"`` keeps this share of the estimate free (tokenizers differ).
SAFETY_MARGIN = 0.10
_PER_MESSAGE = 4


class TokenCount(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`count_tokens` found.

    Use ``input_tokens`` to budget a call before sending it (``max_tokens``, or
    whether to compact the conversation); ``estimated`` says whether the provider
    counted it or modelwire estimated it locally.
    """

    input_tokens: int
    """Prompt tokens: the system prompt, messages and tool definitions."""
    estimated: bool
    """``True``: modelwire's local estimate (:func:`estimate_tokens`), not the provider's count."""
    source: str
    """Where the number comes from: the wire API whose endpoint counted, or ``"estimate"``."""


# --------------------------------------------------------------------------- estimate


def _text(s: str | None) -> int:
    if not s:
        return 0
    n = len(s)
    ascii_n = len(s.encode("ascii", "ignore")) if not s.isascii() else n
    return math.ceil(ascii_n / 4) + (n - ascii_n)


def _b64(data: str | None) -> int:
    # Decoded bytes read as text: a rough size for documents and audio sent inline.
    return math.ceil(len(data or "") * 3 / 4 / 4)


def _block(b: Any) -> int:
    t = getattr(b, "type", None)
    if t == "text":
        return _text(b.text)
    if t == "thinking":
        return _text(b.thinking)
    if t == "tool_call":
        raw = b.raw_arguments
        if raw is None:
            raw = msgspec.json.encode(b.arguments).decode()
        return _text(b.name) + _text(raw)
    if t == "image":
        return IMAGE_TOKENS
    if t in ("document", "audio"):
        data = getattr(b, "data", None)
        return _b64(data) if data else IMAGE_TOKENS
    if t in ("server_tool_call", "server_tool_result"):
        raw = b.raw
        return _text(raw) if raw else _text(msgspec.json.encode(b).decode())
    if t == "provider_item":
        return _text(b.data)
    return _text(msgspec.json.encode(b).decode())


def estimate_tokens(context: Context) -> int:
    """The local estimate of a context's prompt tokens (see the module docs)."""
    n = _text(context.system_prompt)
    for m in context.messages:
        n += _PER_MESSAGE
        content = m.content
        if isinstance(content, str):
            n += _text(content)
        else:
            n += sum(_block(b) for b in content)
        if m.role == "tool_result":
            n += _text(m.tool_name)
    for tool in context.tools or ():
        n += _PER_MESSAGE + _text(tool.name) + _text(tool.description)
        n += _text(msgspec.json.encode(tool.parameters).decode())
    return max(n, 1)


def fit_max_tokens(model: Model, context: Context) -> tuple[int, ContextOverflowError | None]:
    """``max_tokens="auto"``: the output limit the context window leaves, or (with a
    placeholder limit of 1) the ``context_overflow`` the call ends with before any I/O."""
    estimate = estimate_tokens(context)
    need = estimate + math.ceil(estimate * SAFETY_MARGIN)
    left = model.context_window - need
    if left < 1:
        return 1, ContextOverflowError(
            f'max_tokens="auto": the prompt needs about {estimate} tokens (a local estimate, '
            f"plus {SAFETY_MARGIN:.0%} margin) and {model.provider}/{model.id}'s context window "
            f"is {model.context_window}: it cannot fit. Shorten the conversation, or give a "
            "mw.Fallback a model with a larger window"
        )
    return min(model.max_tokens, left), None


# --------------------------------------------------------------------------- endpoints


def _counter(model: Model) -> CountFacet | None:
    """The counting facet of ``model``'s wire API, where its profile says the API has a
    token-count endpoint (``None``: the count is estimated)."""
    from .._apis import find_api
    from .._apis._profile import profile

    wire = find_api(model.api)
    if wire is None or not profile(wire, model).token_count:
        return None
    return wire.counting


#: The client's request preparation (``modelwire._client._prepare``), passed in.
Prepare = Callable[..., tuple[Any, ...]]


def _plan(
    prepare: Prepare, model: Model, context: Context, options: StreamOptions
) -> tuple[Model, Context, HTTPRequest | None, Any, Any]:
    opts = {**options, "max_tokens": None}  # a count sends no output limit
    from ._handoffs import handoff

    resolved, request = prepare(model, context, opts)[:2]
    counter = _counter(model) if request is not None else None
    count_req = counter.count_request(request) if counter is not None else None
    return model, handoff(context, model), count_req, counter, resolved


def _estimated(context: Context) -> TokenCount:
    return TokenCount(input_tokens=estimate_tokens(context), estimated=True, source="estimate")


def _count_call(m: Model, counter: CountFacet, request: HTTPRequest, resolved: Any) -> Call:
    """The count as a :class:`~modelwire._call.Call`: the same authorize, send, retry,
    deadline, status and redaction steps as a model call; its whole JSON answer is read
    by the API's counting facet into the final message's ``usage.input``."""
    from .._call import Call
    from .._wire.pipeline import Pipeline
    from .._wire.whole import WholeAnswer

    answer = WholeAnswer(m.api, counter.parse_count)

    def new_pipeline() -> Pipeline:
        return Pipeline(answer, model=m, secrets=request.secrets)

    return Call(
        new_pipeline(), request, timeout=resolved.timeout, max_retries=resolved.max_retries,
        new_pipeline=new_pipeline, model=m,
    )  # fmt: skip


def _counted(m: Model, final: AssistantMessage | None) -> TokenCount:
    """The count in the call's final message; its typed error when the call failed."""
    assert final is not None  # a Call always ends with a terminal event
    final.raise_for_error()
    return TokenCount(input_tokens=final.usage.input, estimated=False, source=m.api)


async def count_tokens(
    prepare: Prepare, model: Model, context: Context, options: StreamOptions
) -> TokenCount:
    """``mw.count_tokens`` (``modelwire._client`` passes its ``prepare``)."""
    m, ctx, request, counter, resolved = _plan(prepare, model, context, options)
    if request is None:
        return _estimated(ctx)
    call = _count_call(m, counter, request, resolved)
    return _counted(m, await final_message(call, options.get("http_client"), resolved.transport))


def count_tokens_sync(
    prepare: Prepare, model: Model, context: Context, options: StreamOptions
) -> TokenCount:
    """``mw.count_tokens_sync``: :func:`count_tokens` over ``httpx.Client``."""
    m, ctx, request, counter, resolved = _plan(prepare, model, context, options)
    if request is None:
        return _estimated(ctx)
    call = _count_call(m, counter, request, resolved)
    return _counted(m, final_message_sync(call, options.get("http_client")))

"""OpenAI Responses background responses picked up and cancelled by id:
``resume_stream`` / ``resume_stream_sync`` and ``cancel_response`` / ``cancel_response_sync``.

A background response (``background=True`` on :func:`modelwire.stream`) is stored by
the provider, so it can be streamed again: ``GET /responses/{id}?stream=true&
starting_after=N`` (OpenAI API reference, "Background mode"). Each entry point and its
sync twin make the same decisions (:func:`_resumed`, :func:`_cancel_plan`); only the
driver differs, as for ``stream``/``stream_sync``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple, Unpack

import msgspec

from .._apis import background_facet
from .._call._fallback import Fallback, Plan
from ..errors import ConfigurationError, MalformedChunkError
from ..types import Context, Model
from ._streams import (
    AbortFlag,
    AssistantMessageStream,
    Pulled,
    Puller,
    SyncAssistantMessageStream,
    SyncStreamChannel,
)
from ._whole import final_message, final_message_sync

if TYPE_CHECKING:
    from .._call import Call
    from .._wire.request import HTTPRequest
    from ..events import Event
    from ..types import AssistantMessage
    from ._options import StreamOptions

__all__ = ["cancel_response", "cancel_response_sync", "resume_stream", "resume_stream_sync"]


class _Resumed(NamedTuple):
    plan: Plan
    context: Context
    begun: Any
    after: int


def _resumed(
    name: str, model: Model | str, response_id: object, after: object, options: StreamOptions
) -> _Resumed:
    """What ``resume_stream`` and its twin decide alike before any I/O: the checks, and
    the call's plan with its request replaced by the ``GET`` of the stored response."""
    from . import _begin

    if isinstance(model, Fallback):
        raise ConfigurationError(f"{name}() picks up one provider's response: give one model")
    if not isinstance(response_id, str) or not response_id:
        raise ConfigurationError(f"{name}() needs response_id, a non-empty string")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
        raise ConfigurationError(f"after must be None or a sequence number >= 0, got {after!r}")
    if "output" in options:
        raise ConfigurationError(f"{name}() takes no output= (the response is already asked)")
    opts: Any = {**options, "background": True}
    begun = _begin(name, model, Context(), opts)
    plan = begun.prepared.plan
    assert isinstance(plan, Plan)  # a model with background responses (checked by _begin)
    target = plan.targets[0]
    facet = background_facet(target.model.api)
    assert facet is not None  # checked by _begin
    request = facet.resume_request(target.request, response_id, after)
    target = msgspec.structs.replace(target, request=request)
    plan = msgspec.structs.replace(plan, targets=[target])
    return _Resumed(plan, begun.prepared.context, begun, -1 if after is None else after)


def _resumed_call(r: _Resumed, response_id: str, aborted: Any) -> Call:
    from . import _call

    b = r.begun
    return _call(r.plan, r.context, b.trace, b.completion_policy, aborted, r.after, response_id)


def resume_stream(
    model: Model | str,
    response_id: str,
    *,
    after: int | None = None,
    **options: Unpack[StreamOptions],
) -> AssistantMessageStream:
    """Pick up an OpenAI Responses background response by id: stream its events again
    (``GET /responses/{id}?stream=true&starting_after=N``). No I/O until iterated.

    The stream is the one :func:`modelwire.stream` returns: ``start``, the events,
    one terminal ``done`` or ``error``. With ``after=None`` the provider sends the
    whole response and the final message equals the original's. With ``after=N``
    only the events whose ``sequence_number`` is greater than ``N`` are sent and
    yielded, and the final message holds what they carry: an output item that
    begins after ``N`` whole; a message item already under way at ``N`` its text
    from ``N`` on; an item that ended at or before ``N`` filled in (after the
    streamed blocks) from ``response.completed``, which carries the whole output. A
    function call whose arguments were streaming at ``N`` cannot be assembled from
    the rest and ends the stream with ``tool_call_protocol``: pick up from the last
    sequence number you received, or from the start. ``response_id`` is the one
    given. A stream that breaks again is picked up again, as with ``background=True``.

    Args:
        model: An ``openai-responses`` :class:`~modelwire.Model` (or ``"provider/model-id"``).
        response_id: The response's id (``message.response_id`` of the original stream).
        after: The last sequence number already received (``None``: from the start).
        **options: :func:`modelwire.stream`'s options (``api_key``, ``headers``,
            ``timeout``, ``max_retries``, ``http_client``…); ``background`` is implied.

    Returns:
        An :class:`~modelwire.AssistantMessageStream`.

    Raises:
        ConfigurationError: Not an ``openai-responses`` model, an empty ``response_id``,
            a negative ``after``, or an invalid option, before any request.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import asyncio

        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer(["Hello there"]) as server:
            model = server.model("openai-responses")
            first = mw.complete_sync(model, "Hi", background=True)
            again = asyncio.run(mw.resume_stream(model, first.response_id).result())
            print(again.text)  # Hello there
        ```
    """
    r = _resumed("resume_stream", model, response_id, after, options)
    transport = r.plan.targets[0].options.transport
    http_client = r.begun.http_client

    def pull(s: AbortFlag) -> Puller:
        import modelwire._http as http

        call = _resumed_call(r, response_id, lambda: s.aborted)
        return http.AsyncDriver(call, http_client, transport)

    return AssistantMessageStream(Pulled(pull))


def resume_stream_sync(
    model: Model | str,
    response_id: str,
    *,
    after: int | None = None,
    **options: Unpack[StreamOptions],
) -> SyncAssistantMessageStream:
    """Synchronous :func:`resume_stream` over ``httpx.Client``: the same request, events
    and errors.

    Args:
        model: An ``openai-responses`` :class:`~modelwire.Model` (or ``"provider/model-id"``).
        response_id: The response's id.
        after: The last sequence number already received (``None``: from the start).
        **options: :func:`modelwire.stream_sync`'s options.

    Returns:
        A :class:`~modelwire.SyncAssistantMessageStream`.

    Raises:
        ConfigurationError: As :func:`resume_stream`, before any request.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer(["Hello there"]) as server:
            model = server.model("openai-responses")
            first = mw.complete_sync(model, "Hi", background=True)
            print(mw.resume_stream_sync(model, first.response_id).result().text)  # Hello there
        ```
    """
    r = _resumed("resume_stream_sync", model, response_id, after, options)
    http_client = r.begun.http_client

    def produce(s: SyncStreamChannel) -> Iterator[list[Event]]:
        import modelwire._http as http

        call = _resumed_call(r, response_id, lambda: s.aborted)
        driver = http.SyncDriver(call, http_client)
        s.abort_events = call.abort_events
        s.fail_events = call.fail_events
        s.on_abort = driver.abort
        return driver.events()

    return SyncAssistantMessageStream(produce)


# --------------------------------------------------------------------------- cancel


class _Status(msgspec.Struct):
    status: str


_status = msgspec.json.Decoder(_Status)


class _Cancel(NamedTuple):
    call: Call
    status: list[str]
    options: Any


def _cancel_plan(
    name: str, model: Model | str, response_id: object, options: StreamOptions
) -> _Cancel:
    """The cancel as a :class:`~modelwire._call.Call` (the authorize, send, retry,
    deadline and redaction steps of a model call); the answer's ``status`` is kept."""
    from .._call import Call
    from .._wire.pipeline import Pipeline
    from .._wire.whole import WholeAnswer

    r = _resumed(name, model, response_id, None, options)
    target = r.plan.targets[0]
    assert isinstance(response_id, str)
    facet = background_facet(target.model.api)
    assert facet is not None  # checked by _begin
    request: HTTPRequest = facet.cancel_request(target.request, response_id)
    status: list[str] = []

    def parse(body: bytes) -> int:
        try:
            status.append(_status.decode(body).status)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise MalformedChunkError(f"the cancelled response: {exc}") from None
        return 0

    answer = WholeAnswer(target.model.api, parse)

    def new_pipeline() -> Pipeline:
        return Pipeline(answer, model=target.model, secrets=request.secrets)

    o = target.options
    call = Call(new_pipeline(), request, timeout=o.timeout, max_retries=o.max_retries,
                new_pipeline=new_pipeline, model=target.model)  # fmt: skip
    return _Cancel(call, status, o)


def _cancelled(c: _Cancel, final: AssistantMessage) -> str:
    final.raise_for_error()
    return c.status[-1]


async def cancel_response(
    model: Model | str, response_id: str, **options: Unpack[StreamOptions]
) -> str:
    """Cancel an OpenAI Responses background response (``POST /responses/{id}/cancel``).

    Args:
        model: An ``openai-responses`` :class:`~modelwire.Model` (or ``"provider/model-id"``).
        response_id: The response's id.
        **options: ``api_key``, ``headers``, ``timeout``, ``max_retries``, ``http_client``….

    Returns:
        The response's status as the provider answers it (``"cancelled"``).

    Raises:
        ConfigurationError: Not an ``openai-responses`` model or an empty id, before any request.
        ModelwireError: The request failed (the typed error: ``NotFoundError`` for an
            unknown id, ``APIConnectionError``…).

    Example:
        ```python
        import asyncio

        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer(["Hello there"]) as server:
            model = server.model("openai-responses")
            first = mw.complete_sync(model, "Hi", background=True)
            print(asyncio.run(mw.cancel_response(model, first.response_id)))  # cancelled
        ```
    """
    c = _cancel_plan("cancel_response", model, response_id, options)
    return _cancelled(c, await final_message(c.call, c.options.http_client, c.options.transport))


def cancel_response_sync(
    model: Model | str, response_id: str, **options: Unpack[StreamOptions]
) -> str:
    """Synchronous :func:`cancel_response` over ``httpx.Client``.

    Args:
        model: An ``openai-responses`` :class:`~modelwire.Model` (or ``"provider/model-id"``).
        response_id: The response's id.
        **options: ``api_key``, ``headers``, ``timeout``, ``max_retries``, ``http_client``….

    Returns:
        The response's status as the provider answers it (``"cancelled"``).

    Raises:
        ConfigurationError: As :func:`cancel_response`, before any request.
        ModelwireError: The request failed (the typed error).

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer(["Hello there"]) as server:
            model = server.model("openai-responses")
            first = mw.complete_sync(model, "Hi", background=True)
            print(mw.cancel_response_sync(model, first.response_id))  # cancelled
        ```
    """
    c = _cancel_plan("cancel_response_sync", model, response_id, options)
    return _cancelled(c, final_message_sync(c.call, c.options.http_client))

"""Driving a call whose answer is one JSON body (a token count, a cancel) to the
message its terminal event carries: the same :class:`~modelwire._call.Call` — retry,
deadline, redaction — as a model call, over either driver."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import DoneEvent, ErrorEvent

if TYPE_CHECKING:
    from .._call import Call
    from ..events import Event
    from ..types import AssistantMessage

__all__ = ["final_message", "final_message_sync"]


async def final_message(call: Call, http_client: Any, transport: Any) -> AssistantMessage:
    """The terminal event's message of ``call``, run on the async driver."""
    import modelwire._http as http

    driver = http.AsyncDriver(call, http_client, transport)
    final = None
    try:
        while (batch := await driver.next()) is not None:
            final = _terminal(batch, final)
    finally:
        await driver.aclose()
    assert final is not None  # a Call always ends with a terminal event
    return final


def final_message_sync(call: Call, http_client: Any) -> AssistantMessage:
    """The terminal event's message of ``call``, run on the sync driver."""
    import modelwire._http as http

    final = None
    for batch in http.SyncDriver(call, http_client).events():
        final = _terminal(batch, final)
    assert final is not None  # a Call always ends with a terminal event
    return final


def _terminal(batch: list[Event], final: AssistantMessage | None) -> AssistantMessage | None:
    last = batch[-1] if batch else None
    if isinstance(last, DoneEvent | ErrorEvent):
        return last.message
    return final

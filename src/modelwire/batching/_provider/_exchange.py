"""One request of a provider's batch endpoints, whole answer in, bytes out.

It runs as a :class:`~modelwire._call.Call` (the driver of token counts and cancels):
the same authorize, send, retry, deadline, status → typed error and redaction steps as
a model call; the whole body is read by a :class:`~modelwire._wire.whole.WholeAnswer`
whose parse function keeps it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["MAX_BODY", "exchange"]

#: The largest answer read (a results file of a job of many lines).
MAX_BODY = 1 << 30


async def exchange(
    request: HTTPRequest, name: str, *, http_client: Any = None, max_retries: int = 2
) -> bytes:
    """The body of ``request``'s answer; the typed error (``mw.errors``) when it failed.

    ``name`` is the wire API the request belongs to (the failure's ``api``)."""
    from ..._call import Call
    from ..._client._whole import final_message
    from ..._wire.pipeline import Pipeline
    from ..._wire.request import Timeout
    from ..._wire.whole import WholeAnswer

    got: list[bytes] = []

    def keep(body: bytes) -> int:
        got.append(body)
        return 0

    answer = WholeAnswer(name, keep)

    def new_pipeline() -> Pipeline:
        return Pipeline(answer, secrets=request.secrets, max_event_bytes=MAX_BODY)

    call = Call(new_pipeline(), request, timeout=Timeout(), max_retries=max_retries,
                new_pipeline=new_pipeline)  # fmt: skip
    final = await final_message(call, http_client, "auto")
    final.raise_for_error()
    return got[-1]

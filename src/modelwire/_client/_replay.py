"""``mw.replay``: a recorded response body decoded offline, through the same pipeline
as a live call (DESIGN §1), the API looked up by name here in the client."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._apis import get_api
from .._apis._sniff import wrong_api_error
from .._wire.pipeline import Pipeline
from ..errors import ConfigurationError
from ..events import Replay

if TYPE_CHECKING:
    from .._wire.trace import TraceObserver
    from ..types import Model

__all__ = ["pipeline_for", "replay"]


def pipeline_for(api: str, **options: Any) -> Pipeline:
    """A :class:`~modelwire._wire.pipeline.Pipeline` for the wire API named ``api``,
    with wrong-API detection (``options``: the pipeline's keywords)."""
    return Pipeline(get_api(api), api=api, sniff=wrong_api_error, **options)


def replay(
    api: str,
    chunks: Iterable[bytes] | bytes,
    model: Model | None = None,
    *,
    trace: TraceObserver | None = None,
) -> Replay:
    """Decode a recorded response body offline: bytes → the full list of events.

    The body goes through the same pipeline as a live call (framing, the wire API's
    decoder, the assembler), with no network: for tests, for a body saved from a
    provider, or to see how a bug report's bytes decode. ``message.api`` is
    ``api``; provider and model come from ``model`` when given, else ``""``.
    Failures (a malformed or truncated body, an in-band error, a body of another
    API) end the list with an ``error`` event, as they end a live stream.

    Args:
        api: The wire API the body is in (``"openai-chat"``,
            ``"anthropic-messages"``…; ``modelwire._apis.api_names()``).
        chunks: The body: an iterable of byte strings (split anywhere, as they were
            read) or one bytes object.
        model: The model the body came from, for the message's provider, model and
            cost.
        trace: Receives one record per read (chunk), SSE event, delta, event and
            the final message (:mod:`modelwire.trace`).

    Returns:
        A :class:`~modelwire.events.Replay`: a ``list`` of the events, whose
        ``.message`` is the final message, typed.

    Raises:
        ConfigurationError: ``api`` is no registered wire API, a chunk is not bytes
            (a file opened in text mode), or ``trace`` is not callable.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import render

        body = render("Hello!", "openai-chat")  # the SSE body the API would send
        events = mw.replay("openai-chat", [body[:7], body[7:]])
        print([event.type for event in events])
        # ['start', 'text_start', 'text_delta', 'text_end', 'done']
        print(events.message.text)  # Hello!
        ```
    """
    if trace is not None:
        from .._wire.trace import check_observer

        check_observer(trace)
    p = pipeline_for(api, model=model, trace=trace)
    if isinstance(chunks, bytes | bytearray | memoryview):
        chunks = (bytes(chunks),)
    out = p.start()
    for chunk in chunks:
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise ConfigurationError(
                f"replay() takes bytes chunks, got {type(chunk).__name__}"
                " (open the file in binary mode)"
            )
        out.extend(p.feed(bytes(chunk)))
        if p.done:
            return Replay(out)
    out.extend(p.end())
    return Replay(out)

"""Follow one model call through every layer: typed trace records and the observer hook.

Pass an observer — any callable taking one :class:`TraceRecord` — as ``trace=`` to
``mw.stream``, ``mw.complete``, their sync twins or ``mw.replay``, and it receives,
in order, one record per item of each layer the call goes through::

    context ─▶ request ─▶ response ─▶ read ─▶ sse ─▶ delta ─▶ event ─▶ message
                                                 (and ``eof``, ``error`` where they arise)

Every record has an ``id`` (``"read-3"``, ``"sse-4"``, ``"delta-7"``, ``"event-9"``…)
and the ``parent`` id of the record it came from, so one SSE payload can be followed
to the deltas it produced, the events they produced and the final message::

    log = mw.trace.TraceLog()
    message = await mw.complete(model, ctx, trace=log)
    for record in log.records:
        print(json.dumps(record.to_dict(), default=str))

What each layer shows:

* :class:`ContextTrace` — the conversation as given (``mw.Context``), and what the
  handoff to this model leaves out (another API's opaque items).
* :class:`RequestTrace` — URL, headers (the API key shown as ``[redacted]``, DESIGN
  §3 rule 6) and the JSON body the wire API built.
* :class:`RetryTrace` — a failed attempt that will be retried: its number, status,
  error kind and the wait before the next attempt (one per retry).
* :class:`ResponseTrace` — the HTTP status and headers of the response.
* :class:`ReadTrace` — every network read (every chunk given to ``replay``): its size,
  offset, and whether it ended inside a UTF-8 character, inside the JSON payload of a
  ``data:`` line (and whether inside a JSON string), between the lines of one event,
  or on an event boundary. Where a read ends never changes the result (rule 1); the
  trace shows that it happened.
* :class:`SSETrace` — every Server-Sent Event the decoder dispatched.
* :class:`DeltaTrace` — every normalized delta (:mod:`modelwire._wire.deltas`) the wire API
  produced from a payload, with its provider ``key`` and the ``content_index`` the
  assembler gave that key (rule 2: the position where the block first appeared).
* :class:`EventTrace` — every model event, with its ``content_index``.
* :class:`EndTrace` — the end of the HTTP body (``eof``): total size and where it ended.
* :class:`ErrorTrace` — a failure, at the layer where it arose (``at``: ``http``,
  ``sse``, ``decode``, ``assemble`` or ``caller``), with the offending payload for a
  ``malformed_chunk`` and the byte offset where the stream stopped.
* :class:`MessageTrace` — the final assistant message (after ``done``/``error``).

Cost when unused: nothing per event; one ``is not None`` test per network read.
When used, the records are built as the call runs and the observer is called
synchronously, on the thread and in the task that decodes the stream. An observer
that raises is detached (a ``RuntimeWarning`` says why) so telemetry can never
break the call.
"""

# The records and the tracer live with the wire layer (``modelwire._wire.trace``), where
# the pipeline, the call and the transports use them; this module is their public face.
from ._wire.trace import (
    ContextTrace as ContextTrace,
)
from ._wire.trace import (
    DeltaTrace as DeltaTrace,
)
from ._wire.trace import (
    EndTrace as EndTrace,
)
from ._wire.trace import (
    ErrorTrace as ErrorTrace,
)
from ._wire.trace import (
    EventTrace as EventTrace,
)
from ._wire.trace import (
    FallbackTrace as FallbackTrace,
)
from ._wire.trace import (
    MessageTrace as MessageTrace,
)
from ._wire.trace import (
    ReadCut as ReadCut,
)
from ._wire.trace import (
    ReadTrace as ReadTrace,
)
from ._wire.trace import (
    RequestTrace as RequestTrace,
)
from ._wire.trace import (
    ResponseTrace as ResponseTrace,
)
from ._wire.trace import (
    RetryTrace as RetryTrace,
)
from ._wire.trace import (
    SSETrace as SSETrace,
)
from ._wire.trace import (
    TraceLog as TraceLog,
)
from ._wire.trace import (
    TraceObserver as TraceObserver,
)
from ._wire.trace import (
    Tracer as Tracer,
)
from ._wire.trace import (
    TraceRecord as TraceRecord,
)
from ._wire.trace import (
    check_observer as check_observer,
)

__all__ = [
    "ContextTrace",
    "DeltaTrace",
    "EndTrace",
    "ErrorTrace",
    "EventTrace",
    "FallbackTrace",
    "MessageTrace",
    "ReadCut",
    "ReadTrace",
    "RequestTrace",
    "ResponseTrace",
    "RetryTrace",
    "SSETrace",
    "TraceLog",
    "TraceObserver",
    "TraceRecord",
    "Tracer",
    "check_observer",
]

"""One model of a call (:class:`Leg`) and how a background response that broke is
picked up again (:func:`resume_plan`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._wire.pipeline import Pipeline
    from .._wire.request import HTTPRequest, Timeout
    from ..errors import StreamError
    from ..types import Model
    from ._breaker import Circuit
    from ._intents import Failure
    from ._limits import Pacer
    from ._retry import RetryPolicy

__all__ = ["Leg", "Resume", "resume_plan"]

#: Builds the request that picks a background response up again: ``(the request
#: sent, response id, last sequence number delivered) -> request``.
Resume = Callable[["HTTPRequest", str, int], "HTTPRequest"]


class Leg:
    """One model of a call: its request and how to start a fresh response for it.

    A plain call has one leg; a :class:`~modelwire.Fallback` one per model, tried in
    order. ``new_pipeline`` builds the decoding state of another attempt (an in-band
    error before any content is retried with a fresh one); ``prefail`` is an error
    known before any I/O (a request that cannot fit the context window); ``circuit``
    the model's breaker (:mod:`modelwire._call._breaker`); ``pacer`` its provider's pacing
    (:mod:`modelwire._call._limits`), booked with ``tokens`` estimated prompt tokens;
    ``not_found_hint`` says, on a 404 only, what the caller knows of where the request
    should have gone (a missing version segment, the other endpoint a server may serve).
    ``resume`` (an OpenAI Responses background response): builds the request that picks
    a broken stream up again, ``resume(sent, response_id, after)``; the pipeline's
    decoder then reads ``response_id`` and the last ``after`` sequence number.
    """

    __slots__ = ("circuit", "max_retries", "model", "new_pipeline", "not_found_hint", "pacer",
                 "prefail", "request", "resume", "timeout", "tokens")  # fmt: skip

    def __init__(
        self,
        request: HTTPRequest,
        *,
        timeout: Timeout,
        max_retries: int,
        new_pipeline: Callable[[], Pipeline] | None = None,
        model: Model | None = None,
        prefail: StreamError | None = None,
        circuit: Circuit | None = None,
        pacer: Pacer | None = None,
        tokens: int = 0,
        not_found_hint: Callable[[], str | None] | None = None,
        resume: Resume | None = None,
    ) -> None:
        self.request = request
        self.resume = resume
        self.not_found_hint = not_found_hint
        self.timeout = timeout
        self.max_retries = max_retries
        self.new_pipeline = new_pipeline
        self.model = model
        self.prefail = prefail
        self.circuit = circuit
        self.pacer = pacer
        self.tokens = tokens


def resume_plan(
    leg: Leg, p: Pipeline, policy: RetryPolicy, sent: HTTPRequest, got: Failure | None
) -> tuple[float, HTTPRequest] | None:
    """The wait and the request that pick up a background response whose stream broke
    before its terminal event — the body cut or ended short (``got`` ``None``), a
    transport error or the idle timeout (``got`` a :class:`Failure`) — after the last
    event delivered (OpenAI: ``GET /responses/{id}?stream=true&starting_after=N``).

    ``None`` when the break ends the call as it would without ``background``: no
    ``resume`` for this leg, no response id yet (nothing to pick up: the POST is never
    sent again), or the retries (``max_retries``, counted with the attempts before it)
    or the total deadline are used up. The framing restarts with the new body, so a
    half-received event is decoded from its resent copy; the decoder drops the events
    it has decoded already (by ``sequence_number``)."""
    resume = leg.resume
    rid = getattr(p.decoder, "response_id", None)
    after = getattr(p.decoder, "after", None)
    if resume is None or p.done or rid is None or after is None:
        return None
    policy.attempts += 1
    if policy.attempts > policy.max_retries:
        return None
    # The first pick-up at once (a broken connection, not a server asking to slow
    # down); the next ones after the policy's backoff.
    wait = 0.0 if policy.attempts == 1 else policy.backoff()
    left = policy.remaining()
    if left is not None and wait >= left:
        return None
    t = p.trace
    if t is not None:
        t.retry(policy.attempts, None, "truncated_stream" if got is None else got.error.kind, wait)
    p.reframe()
    return wait, resume(sent, rid, after)

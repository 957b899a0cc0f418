"""``mw.Fallback([...])``: several models tried in order, usable wherever a model is.

The sans-IO :class:`~modelwire._call.Call` takes every decision (its legs, one per
model, and :class:`~modelwire._call.Switch`); this module is the value the caller
writes and the rules it stands for:

* A failure **before any content was delivered** moves on to the next model when its
  ``ErrorInfo.retryable`` is true or its kind is in ``on`` (by default
  :data:`FALLBACK_KINDS`: ``rate_limit``, ``overloaded``, ``server``, ``connect``,
  ``timeout``, ``context_overflow`` — the last one for a model with a larger window).
  Each model's request is built for its own API from the conversation rewritten by
  ``handoff`` (thinking, signatures, tool-call ids, server-tool blocks), before any
  I/O, so a caller mistake for any model raises at once.
* **After content**, nothing switches silently: by default the failure ends the
  stream as a plain call's would; ``after_content="restart"`` emits a ``restart``
  event (:class:`~modelwire.events.RestartEvent`, the partial so far in it) and the
  next model starts over. Nothing is executed in a stream, so no tool runs twice.
* Each model's own retries (``max_retries``) come first; one ``Timeout(total=…)``
  bounds the whole chain.
* An open circuit breaker (:mod:`modelwire._call._breaker`) moves on at once, without
  sending: ``circuit_breaker=True`` (the default) uses the process-wide breaker.
* The final message is the answering model's (``provider``, ``model``,
  ``response_model``); a trace (``trace=``) gets one
  :class:`~modelwire.trace.FallbackTrace` per move, saying which model failed and why.

The attributes a caller reads on a model (``id``, ``api``, ``provider``,
``context_window``, ``max_tokens``, ``cost``…) read the first model's, so code that
inspects "the model" (the batch runner's pacing and cost cap, the agent's key check)
takes a Fallback as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from ..errors import STREAM_ERROR_KINDS, ConfigurationError, StreamError
from ._breaker import CircuitBreaker, default_breaker
from ._limits import check_rate

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest, RequestOptions
    from ..types import AssistantMessage, Model, ModelCost
    from . import Switch

__all__ = [
    "FALLBACK_KINDS",
    "Fallback",
    "Plan",
    "Target",
    "answered_by",
    "make_plan",
]

#: The failure kinds that move a Fallback on by default (besides any failure the
#: classifier marks retryable).
FALLBACK_KINDS = frozenset(
    {"rate_limit", "overloaded", "server", "connect", "timeout", "context_overflow"}
)


def answered_by(model: Model | Fallback, message: AssistantMessage) -> Model:
    """The model that produced ``message``: a Fallback's answering model, else its first."""
    if not isinstance(model, Fallback):
        return model
    found = (m for m in model.models if (m.provider, m.id) == (message.provider, message.model))
    return next(found, model.first)


class Fallback:
    """Models tried in order until one answers (see the module docs for the rules).

    ``models``: ``Model`` values or ``"provider/model-id"`` strings (at least one).
    ``on``: the error kinds that move on (default :data:`FALLBACK_KINDS`); a failure
    the classifier marks retryable always does. ``after_content``: ``"error"`` (the
    failure ends the stream) or ``"restart"`` (a ``restart`` event, then the next model).
    ``circuit_breaker``: ``True`` for the process-wide breaker, a
    :class:`~modelwire.CircuitBreaker`, or ``None`` for none.

    Usable wherever a model is (``mw.stream`` and friends, ``Agent``, ``batch``'s
    ``models=``); the final message names the model that answered.

    Args:
        models: The models, in the order tried (at least one).
        on: The error kinds that move on to the next model.
        after_content: What a failure after content was delivered does.
        circuit_breaker: The breaker that skips a model whose circuit is open.

    Raises:
        ConfigurationError: No models, a model string that cannot be resolved, a
            custom stream function among them, an unknown error kind in ``on``, or
            a bad ``after_content``.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer, error_reply

        with MockServer([error_reply(529, "overloaded")]) as busy, MockServer(["Hi"]) as ok:
            chain = mw.Fallback([busy.model(id="a"), ok.model(id="b")])
            message = mw.complete_sync(chain, "Hello", max_retries=0)
        print(message.text, message.model)  # Hi b
        ```
    """

    __slots__ = ("after_content", "circuit_breaker", "models", "on")

    def __init__(
        self,
        models: Iterable[Model | str],
        *,
        on: Iterable[str] = FALLBACK_KINDS,
        after_content: Literal["error", "restart"] = "error",
        circuit_breaker: CircuitBreaker | bool | None = True,
    ) -> None:
        if isinstance(models, str) or not isinstance(models, Iterable):
            raise ConfigurationError(
                'Fallback takes a list of models, e.g. mw.Fallback(["openai/gpt-4.1-mini", '
                '"anthropic/claude-sonnet-4-5"])'
            )
        from .._catalog import as_model

        resolved = tuple(as_model(m, where=f"Fallback models[{i}]") for i, m in enumerate(models))
        if not resolved:
            raise ConfigurationError("Fallback needs at least one model")
        from .._apis import custom_stream

        for i, m in enumerate(resolved):
            if custom_stream(m.api) is not None:
                raise ConfigurationError(
                    f"Fallback models[{i}] uses the custom stream function {m.api!r}; a "
                    "Fallback switches between wire APIs (register a wire API object instead)"
                )
        if isinstance(on, str):
            raise ConfigurationError(
                'Fallback on= takes a list of error kinds, e.g. ["rate_limit"]'
            )
        kinds = frozenset(on)
        unknown = sorted(k for k in kinds if k not in STREAM_ERROR_KINDS)
        if unknown:
            raise ConfigurationError(
                f"Fallback on= names unknown error kinds {', '.join(map(repr, unknown))}; "
                f"the kinds are: {', '.join(sorted(STREAM_ERROR_KINDS))}"
            )
        if after_content not in ("error", "restart"):
            raise ConfigurationError(
                f'Fallback after_content must be "error" or "restart", got {after_content!r}'
            )
        from ._breaker import default_breaker

        breaker: CircuitBreaker | None
        if circuit_breaker is True:
            breaker = default_breaker()
        elif circuit_breaker is None or circuit_breaker is False:
            breaker = None
        elif isinstance(circuit_breaker, CircuitBreaker):
            breaker = circuit_breaker
        else:
            raise ConfigurationError(
                "Fallback circuit_breaker must be True, None or a modelwire.CircuitBreaker"
            )
        self.models: tuple[Model, ...] = resolved
        self.on = kinds
        self.after_content: Literal["error", "restart"] = after_content
        self.circuit_breaker = breaker

    def __repr__(self) -> str:
        names = ", ".join(f"{m.provider}/{m.id}" for m in self.models)
        return f"Fallback([{names}], after_content={self.after_content!r})"

    def __len__(self) -> int:
        return len(self.models)

    # What code that inspects "the model" reads: the first model's.

    @property
    def first(self) -> Model:
        return self.models[0]

    @property
    def id(self) -> str:
        return self.models[0].id

    @property
    def api(self) -> str:
        return self.models[0].api

    @property
    def provider(self) -> str:
        return self.models[0].provider

    @property
    def base_url(self) -> str:
        return self.models[0].base_url

    @property
    def name(self) -> str | None:
        return self.models[0].name

    @property
    def context_window(self) -> int:
        return self.models[0].context_window

    @property
    def max_tokens(self) -> int:
        return self.models[0].max_tokens

    @property
    def cost(self) -> ModelCost:
        return self.models[0].cost

    @property
    def reasoning(self) -> bool:
        return self.models[0].reasoning

    @property
    def input(self) -> tuple[str, ...]:
        return self.models[0].input


# --------------------------------------------------------------------------- the call's plan


class Target(msgspec.Struct, frozen=True, gc=False):
    """One model of a call, prepared before any I/O: what the client makes a leg of."""

    model: Model
    options: RequestOptions
    request: HTTPRequest
    prefail: StreamError | None


class Plan(msgspec.Struct, frozen=True, gc=False):
    """Every model of a call (one, or a Fallback's) and its resilience options."""

    targets: list[Target]
    breaker: CircuitBreaker | None
    rpm: float | None
    tpm: float | None
    switch: Switch | None


def make_plan(targets: list[Target], opts: Mapping[str, Any], fallback: Fallback | None) -> Plan:
    """The plan of a call; ``circuit_breaker`` (an option, else the Fallback's),
    ``requests_per_minute`` and ``tokens_per_minute`` are checked here, before any I/O."""

    breaker: object = fallback.circuit_breaker if fallback is not None else None
    if "circuit_breaker" in opts:
        breaker = opts["circuit_breaker"]
        if breaker is True:
            breaker = default_breaker()
        elif breaker is False:
            breaker = None
        elif breaker is not None and not isinstance(breaker, CircuitBreaker):
            raise ConfigurationError(
                "circuit_breaker must be True, False, None or a modelwire.CircuitBreaker"
            )
    switch = None
    if fallback is not None:
        from . import Switch

        switch = Switch(fallback.on, fallback.after_content)
    return Plan(
        targets,
        breaker if isinstance(breaker, CircuitBreaker) else None,
        check_rate("requests_per_minute", opts.get("requests_per_minute")),
        check_rate("tokens_per_minute", opts.get("tokens_per_minute")),
        switch,
    )

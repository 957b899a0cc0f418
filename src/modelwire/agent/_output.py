"""Structured output in the agent loop: invalid output is fed back, a bounded number
of times (``output_retries``), as invalid tool arguments are.

A response whose output did not validate ends ``error(output_invalid)``; it stays
in the transcript (the wire APIs do not replay a failed response), so the feedback
quotes the output it got and says what failed and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigurationError
from ..types import AssistantMessage, Message, Model, UserMessage

__all__ = ["MAX_QUOTE", "agent_model", "check_retries", "output_feedback", "retries_used"]

#: At most this many characters of the invalid output are quoted back.
MAX_QUOTE = 4000


def retries_used(new: Sequence[Message]) -> int:
    """How many responses of this run ended ``output_invalid`` (the last included)."""
    return sum(
        1
        for m in new
        if isinstance(m, AssistantMessage)
        and m.error is not None
        and m.error.kind == "output_invalid"
    )


def output_feedback(
    message: AssistantMessage, retries: int, new: Sequence[Message]
) -> UserMessage | None:
    """The user message asking again after ``message`` failed validation, or
    ``None`` when it did not fail that way or the retries are used up."""
    err = message.error
    if err is None or err.kind != "output_invalid" or retries_used(new) > retries:
        return None
    got = message.text
    if len(got) > MAX_QUOTE:
        got = got[:MAX_QUOTE] + "…"
    quoted = f"Your answer was:\n{got}\n\n" if got.strip() else ""
    return UserMessage(
        content=(
            f"{quoted}It was not accepted: {err.message}\n"
            "Answer again with only the corrected JSON value, matching the schema."
        )
    )


def agent_model(model: Any, base_url: str | None) -> Any:
    """The agent's ``model``: a ``Model`` (``base_url`` applied at each call), a
    ``"provider/model-id"`` string looked up now, a ``Fallback``, or a callable
    returning a Model."""
    from .._call._fallback import Fallback

    if isinstance(model, str):
        from .._catalog import as_model

        return as_model(model, base_url)
    if not isinstance(model, Model | Fallback) and not callable(model):
        raise ConfigurationError(
            'model must be a modelwire.Model, a "provider/model-id" string, a '
            f"modelwire.Fallback or a callable returning a Model, got {type(model).__name__}"
        )
    return model


def check_retries(value: object) -> int:
    """``output_retries``, checked: a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"output_retries must be a non-negative integer, got {value!r}")
    return value

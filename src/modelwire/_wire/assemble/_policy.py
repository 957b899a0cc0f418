"""The completion policy: whether a finished response may be acted on
(DESIGN §2a, "Tool-call protocol")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from ...types import AssistantMessage

__all__ = ["CompletionPolicy", "ToolChoice", "default_completion_policy"]

ToolChoice = str | dict[str, Any] | None
CompletionPolicy: TypeAlias = Callable[[AssistantMessage, ToolChoice, "bool | None"], "str | None"]
"""Decides whether a finished response is acceptable:
``policy(message, tool_choice, tools_declared) -> None | str``.

``message`` is the final message of a response that finished ``stop`` or
``tool_use`` (its tool calls complete and parsed); ``tool_choice`` is the request's
(``None``, ``"auto"``, ``"required"``, ``"none"`` or ``{"name": ...}``);
``tools_declared`` whether the request declared tools (``None`` when unknown).
Return ``None`` to accept, or a reason: the stream then ends with an ``error``
event of kind ``tool_call_protocol`` whose message is that reason (all content
kept, nothing executed). A ``length`` finish is never judged (nothing of it is
trusted).

Pass one as ``completion_policy=`` to ``mw.stream`` and friends (or an ``Agent``)
to accept more, or less, than :func:`default_completion_policy`, e.g. a model
that calls a tool with ``tool_choice="none"`` and is trusted anyway.

Example:
    ```python
    import modelwire as mw


    def answer_required(message, tool_choice, tools_declared):
        # The default rules, and a response must say something.
        reason = mw.default_completion_policy(message, tool_choice, tools_declared)
        if reason is None and not message.text and not message.tool_calls:
            return "the model answered with nothing"
        return reason
    ```
"""


def default_completion_policy(
    message: AssistantMessage, tool_choice: ToolChoice, tools_declared: bool | None
) -> str | None:
    """The policy used when none is given, as one function a custom policy can wrap.

    A call when ``tool_choice`` is ``"none"`` or no tools were declared; no call
    when it is ``"required"``; with ``{"name": n}``, a call to another tool or no
    call to ``n``. (Without a custom policy the assembler applies the same rules,
    the first two and the wrong name as soon as the call starts.)

    Args:
        message: The final message of a response that finished ``stop`` or ``tool_use``.
        tool_choice: The request's ``tool_choice``.
        tools_declared: Whether the request declared tools (``None``: unknown).

    Returns:
        ``None`` to accept the response, or the reason to refuse it.
    """
    calls = message.tool_calls
    if calls and tool_choice == "none":
        return f'the model called {calls[0].name!r} although tool_choice was "none"'
    if calls and tools_declared is False:
        return f"the model called {calls[0].name!r} although no tools were declared"
    if tool_choice == "required" and not calls:
        return 'tool_choice was "required" but the model made no complete tool call'
    if isinstance(tool_choice, dict):
        forced = tool_choice.get("name")
        for c in calls:
            if c.name != forced:
                return f"tool_choice forced {forced!r} but the model called {c.name!r}"
        if not calls:
            return f"tool_choice forced {forced!r} but the model did not call it"
    return None

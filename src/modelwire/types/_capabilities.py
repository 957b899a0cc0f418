"""What a model accepts and supports, as typed data.

A model's profile is built in three layers, each saying only what it knows
(``None``: not said here, the layer below decides):

1. the wire API's default for the model (``WireCodec.capabilities(model)``: the API's
   own documented facts, e.g. Gemini 2.0 has no ``responseJsonSchema``);
2. the catalog (``modelwire/data/models.json``): a provider's ``capabilities`` for an
   API (DeepSeek's Chat Completions take JSON mode only), then a listed model's own;
3. ``Model.capabilities``, set by the caller.

:func:`modelwire._apis.profile` merges them into a :class:`Capabilities` with every
field set; the structured-output planner, the token counter and the gateway read that,
never an API name.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

from ..errors import ConfigurationError
from ._base import _Value

__all__ = ["Capabilities", "StructuredOutput"]

#: How natively a model gives structured output: ``schema`` — a request field
#: constrains the answer to a JSON schema (the default ``output_mode`` is ``native``);
#: ``json`` — a native field exists but takes no full schema (JSON mode, an older
#: schema subset): ``output_mode="native"`` may be asked for, the default is a forced
#: tool; ``none`` — no native field (``native`` is refused).
StructuredOutput: TypeAlias = Literal["schema", "json", "none"]
_STRUCTURED = ("schema", "json", "none")


class Capabilities(_Value, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """What a model supports, per capability (``None``: not said at this layer).

    Three layers say it, each over the one before: the wire API
    (``WireCodec.capabilities``), the catalog's entry for the model, and
    ``Model.capabilities``. Set the last for a model the others describe wrongly,
    e.g. a local server that has no native structured output.
    """

    structured_output: StructuredOutput | None = None
    """Native structured output (:data:`StructuredOutput`)."""
    forced_tool_choice: bool | None = None
    """Whether a request can force one named tool (what ``output_mode="tool"`` needs)."""
    token_count: bool | None = None
    """Whether the API has a token-counting endpoint (``count_tokens`` asks it;
    without one the count is a local estimate)."""
    late_call_signatures: bool | None = None
    """Whether a tool call's signature may come only as the call ends (Gemini's
    ``thoughtSignature`` on the part after the call's own)."""
    reasoning_levels: tuple[str, ...] | None = None
    """The reasoning levels the model takes (``()``: none, or it reasons on its own)."""
    mid_conversation_system: bool | None = None
    """Whether a :class:`~modelwire.types.SystemMessage` is sent where it stands among the
    turns (else its text joins the system prompt)."""
    server_tools: tuple[str, ...] | None = None
    """The provider-run tools the model can be given (``web_search``, ``web_fetch``,
    ``code_execution``: :class:`~modelwire.types.ServerTool`); ``()``: none."""
    tool_search: bool | None = None
    """Whether the provider searches the model's deferred tools itself: tools sent with
    ``ToolDefinition.defer_loading`` stay out of the model's context until its search
    finds them (Anthropic's tool search tool, OpenAI Responses' ``tool_search``). An
    ``Agent`` with deferred tools then sends them all, marked, instead of adding its own
    ``search_tools``."""

    def __post_init__(self) -> None:
        if self.structured_output is not None and self.structured_output not in _STRUCTURED:
            raise ConfigurationError(
                f"Capabilities.structured_output must be one of {', '.join(_STRUCTURED)} or "
                f"None, got {self.structured_output!r}"
            )
        for name in (
            "forced_tool_choice",
            "token_count",
            "late_call_signatures",
            "mid_conversation_system",
            "tool_search",
        ):
            value = getattr(self, name)
            if value is not None and not isinstance(value, bool):
                raise ConfigurationError(f"Capabilities.{name} must be a bool or None")
        levels = self.reasoning_levels
        if levels is not None:
            if isinstance(levels, str) or not all(isinstance(lv, str) for lv in levels):
                raise ConfigurationError(
                    "Capabilities.reasoning_levels must be a list of level names"
                )
            msgspec.structs.force_setattr(self, "reasoning_levels", tuple(levels))
        tools = self.server_tools
        if tools is not None:
            if isinstance(tools, str) or not all(isinstance(t, str) for t in tools):
                raise ConfigurationError("Capabilities.server_tools must be a list of tool names")
            msgspec.structs.force_setattr(self, "server_tools", tuple(tools))

    def over(self, below: Capabilities) -> Capabilities:
        """These capabilities laid over ``below``: each field this layer says wins.

        Args:
            below: The layer underneath (the API's, then the catalog's).

        Returns:
            The merged capabilities (``below`` itself when this layer says nothing).
        """
        said = {f: v for f in self.__struct_fields__ if (v := getattr(self, f)) is not None}
        return msgspec.structs.replace(below, **said) if said else below

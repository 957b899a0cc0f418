"""How one call asks for structured output, and how it reads the answer
(the modes are described in :mod:`modelwire._client._output`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from ..._wire.request import OUTPUT_MODES, OUTPUT_TOOL, OutputMode, OutputRequest
from ...errors import ConfigurationError, OutputInvalidError
from ._schema import Invalid, OutputType, output_type, strict_schema

if TYPE_CHECKING:
    from ..._wire.request import RequestOptions
    from ...events import DoneEvent, ErrorEvent
    from ...types import AssistantMessage, Context, Model

__all__ = ["OUTPUT_TOOL", "OutputPlan", "partial_value", "plan_output"]

_TOOL_DESCRIPTION = "Give the final answer: call this tool once, with the answer as its arguments."
_PROMPT = (
    "Answer with one JSON value that matches this JSON Schema, and nothing else "
    "(no prose, no code fence):\n{schema}"
)


class OutputPlan:
    """How one call asks for its output and how it reads the answer."""

    __slots__ = ("mode", "type")

    def __init__(self, type_: OutputType, mode: OutputMode) -> None:
        self.type = type_
        self.mode = mode

    # ------------------------------------------------------------------ request

    def apply(self, context: Context, options: RequestOptions) -> tuple[Context, RequestOptions]:
        """The context and options to send: the native field's request, the
        synthetic tool forced, or the schema in the system prompt."""
        t = self.type
        if self.mode == "native":
            req = OutputRequest(
                mode="native", name=t.name, schema=t.schema, strict=strict_schema(t.schema)
            )
            return context, msgspec.structs.replace(options, output=req)
        if self.mode == "tool":
            from ...types import ToolDefinition

            tools = tuple(context.tools or ())
            if any(d.name == OUTPUT_TOOL for d in tools):
                raise ConfigurationError(
                    f"a tool is named {OUTPUT_TOOL!r}, the name output_mode='tool' uses for "
                    "the answer: rename the tool or use output_mode='native'/'prompted'"
                )
            tool = ToolDefinition(name=OUTPUT_TOOL, description=_TOOL_DESCRIPTION,
                                  parameters=t.schema)  # fmt: skip
            tc = options.tool_choice
            if tc == "none":
                raise ConfigurationError(
                    "output_mode='tool' needs a tool call but tool_choice is 'none': drop "
                    "tool_choice or use output_mode='native'/'prompted'"
                )
            # Without other tools the answer tool is forced; with them the model must
            # call one of them or the answer tool.
            choice: str | dict[str, Any] = {"name": OUTPUT_TOOL} if not tools else "required"
            if isinstance(tc, dict):
                choice = tc
            context = msgspec.structs.replace(context, tools=(*tools, tool))
            return context, msgspec.structs.replace(options, tool_choice=choice)
        schema = msgspec.json.encode(t.schema).decode()
        prompt = _PROMPT.format(schema=schema)
        system = f"{context.system_prompt}\n\n{prompt}" if context.system_prompt else prompt
        return msgspec.structs.replace(context, system_prompt=system), options

    # ------------------------------------------------------------------ response

    def finish(self, event: DoneEvent) -> DoneEvent | ErrorEvent:
        """The terminal event to deliver for a response that ended ``done``: the
        message carrying its validated value, or ``error(output_invalid)``."""
        from ..._wire.assemble._terminal import failed_from
        from ...events import DoneEvent
        from ...types._messages import with_output

        msg = event.message
        reason = event.reason
        text: str | None = None
        if self.mode == "tool":
            msg, text = _unwrap_tool(msg)
            if text is not None and reason == "tool_use" and not msg.tool_calls:
                # The answer tool was the only call: the response answered.
                reason = "stop"
                msg = msgspec.structs.replace(msg, stop_reason="stop")
        if reason == "length":
            return failed_from(msg, OutputInvalidError(
                "the output was cut off at the token limit (stop_reason 'length') before it "
                "was complete: raise max_tokens or ask for less"))  # fmt: skip
        if text is None:
            if reason == "tool_use":
                # The model called the caller's tools first: no answer yet (the Agent
                # runs them and asks again); ``parsed`` says so.
                pending = "the model called tools instead of answering; run them and ask again"
                out = with_output(msg, None, pending)
                return DoneEvent(reason=reason, message=out, _partial=out)
            text = _strip_fence(msg.text)
        if not text.strip():
            return failed_from(msg, OutputInvalidError(
                f"the model returned no output (expected JSON matching {self.type.name})"))  # fmt: skip
        try:
            value = self.type.parse(text)
        except Invalid as exc:
            return failed_from(msg, OutputInvalidError(
                f"the output does not match {self.type.name}: " + "; ".join(exc.lines)))  # fmt: skip
        out = with_output(msg, value, None)
        return DoneEvent(reason=reason, message=out, _partial=out)


def _unwrap_tool(msg: AssistantMessage) -> tuple[AssistantMessage, str | None]:
    """``msg`` with its answer-tool call turned into a text block of the arguments'
    JSON (so no agent ever executes it), and that JSON; ``None`` when not called."""
    from ...types import AssistantContent, TextContent, ToolCall

    text: str | None = None
    content: list[AssistantContent] = []
    for b in msg.content:
        if isinstance(b, ToolCall) and b.name == OUTPUT_TOOL:
            raw = b.raw_arguments
            if raw is None:
                raw = msgspec.json.encode(b.arguments).decode()
            if text is None:
                text = raw
            content.append(TextContent(text=raw))
        else:
            content.append(b)
    if text is None:
        return msg, None
    return msgspec.structs.replace(msg, content=tuple(content)), text


def _strip_fence(text: str) -> str:
    # Prompted models often wrap JSON in a Markdown code fence despite being told not to.
    s = text.strip()
    if s.startswith("```") and s.endswith("```") and len(s) >= 6:
        s = s[3:-3]
        first, _, rest = s.partition("\n")
        return rest if first.strip().isalpha() or not first.strip() else s
    return s


def plan_output(model: Model, output: object, mode: object) -> OutputPlan | None:
    """The plan for ``output=``/``output_mode=`` (``None`` without ``output``);
    caller mistakes raise ``ConfigurationError`` here, before any request."""
    if output is None:
        if mode is not None:
            raise ConfigurationError("output_mode= needs output= (the type to answer with)")
        return None
    if mode is not None and mode not in OUTPUT_MODES:
        raise ConfigurationError(
            f"output_mode must be one of {', '.join(OUTPUT_MODES)} or None, got {mode!r}"
        )
    from ..._apis._output_modes import mode_problem, output_mode
    from ..._apis._profile import model_profile

    caps = model_profile(model)  # read once for both questions
    chosen: OutputMode = mode if mode is not None else output_mode(model, caps)  # type: ignore[assignment]
    problem = mode_problem(model, chosen, caps)
    if problem is not None:
        raise ConfigurationError(problem)
    return OutputPlan(output_type(output), chosen)


def partial_value(message: AssistantMessage, mode: OutputMode) -> Any:
    """The output as parsed so far from a partial snapshot (jiter's partial mode):
    for display only, never validated; ``None`` before any JSON arrived."""
    import jiter

    from ...types import ToolCall

    if mode == "tool":
        raw = next(
            (b.raw_arguments for b in message.content
             if isinstance(b, ToolCall) and b.name == OUTPUT_TOOL),
            None,
        )  # fmt: skip
    else:
        raw = _strip_fence(message.text)
    if not raw or not raw.strip():
        return None
    try:
        return jiter.from_json(raw.encode(), partial_mode="trailing-strings")
    except ValueError:
        return None

"""One call, prepared before any I/O: its options resolved and checked against the model
(reasoning clamped to its levels, provider-run tools it has), the structured-output
plan applied, the conversation handed off to the model (:func:`handoff`) and the HTTP
request built by its wire API — for a :class:`~modelwire.Fallback`, once per model."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import msgspec

from .._apis import custom_stream, get_api
from .._apis._common import check_input
from .._call._fallback import Fallback, Plan, Target, make_plan
from .._providers import apply_provider_rules
from .._wire.request import RequestOptions
from ..errors import ConfigurationError, StreamError
from ..types import Context, Model, ServerTool
from ._handoffs import handoff
from ._options import StreamOptions, resolve_checked

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest
    from ._output._plan import OutputPlan

__all__ = ["Prepared", "check_server_tools", "default_cap", "output_plan", "plan_call", "prepare"]


def output_plan(model: Model, opts: StreamOptions) -> OutputPlan | None:
    if opts.get("output") is None and opts.get("output_mode") is None:
        return None
    from ._output._plan import plan_output

    return plan_output(model, opts.get("output"), opts.get("output_mode"))


def default_cap(model: Model, opts: StreamOptions, options: RequestOptions) -> RequestOptions:
    """Without a ``max_tokens`` option the model's own is sent (the catalog's output
    limit; :data:`modelwire._catalog.UNLISTED_MAX_TOKENS` for an id it does not list),
    so a model that loops stops; ``max_tokens=None`` sends no limit."""
    if "max_tokens" in opts:
        return options
    return msgspec.structs.replace(options, max_tokens=model.max_tokens)


def prepare(
    model: Model, context: Context, opts: StreamOptions
) -> tuple[RequestOptions, HTTPRequest | None, StreamError | None, Context, OutputPlan | None]:
    """Options, request, the error the call ends with before any I/O (for
    ``max_tokens="auto"`` that cannot fit: ``context_overflow``), the context as sent
    (with the output plan applied) and that plan."""
    if not isinstance(model, Model):
        raise ConfigurationError(f"model must be a modelwire.Model, got {type(model).__name__}")
    if not isinstance(context, Context):
        raise ConfigurationError(
            f"context must be a modelwire.Context, got {type(context).__name__}"
        )
    plan = output_plan(model, opts)
    # "auto" is fitted below, once the conversation is rewritten for this model.
    auto = opts.get("max_tokens") == "auto"
    custom = custom_stream(model.api) is not None
    if plan is not None or custom:
        # A block the model does not accept is refused here, never replaced
        # (Model.input); without an output plan, handoff checks the same context.
        check_input(model, context)
    if custom:
        # A custom stream function does its own auth: no env-var lookup.
        options = default_cap(model, opts, resolve_checked("", opts))
        if plan is not None:
            context, options = plan.apply(context, options)
        return options, None, None, context, plan
    options = default_cap(model, opts, resolve_checked(model.provider, opts))
    if options.reasoning is not None:
        from .._catalog import clamp_reasoning

        # Clamp to the levels the model has; a model without reasoning raises here.
        level = clamp_reasoning(model, options.reasoning)
        options = msgspec.structs.replace(options, reasoning=level)
    if options.server_tools:
        check_server_tools(model, options.server_tools)
    if plan is not None:
        # The native field's request, the answer tool forced, or the schema prompted.
        context, options = plan.apply(context, options)
    # Replaying to another provider/model: signatures, ids, orphaned calls (handoff
    # rules); it refuses input the model does not take (check_input) first.
    ctx = handoff(context, model)
    prefail: StreamError | None = None
    if auto:
        from ._count import fit_max_tokens

        fitted, prefail = fit_max_tokens(model, ctx)
        options = msgspec.structs.replace(options, max_tokens=fitted)
    request = get_api(model.api).build_request(model, ctx, options)
    request = apply_provider_rules(model, options, request)  # URL, auth, body, secrets
    return options, request, prefail, context, plan


def check_server_tools(model: Model, tools: tuple[ServerTool, ...]) -> None:
    """Refuse a provider-run tool the model's profile does not list, or one whose
    options are another API's fields: never dropped, never sent to fail remotely."""
    from .._apis._profile import profile

    have = profile(get_api(model.api), model).server_tools or ()
    for i, tool in enumerate(tools):
        if tool.name not in have:
            runs = f"it runs {', '.join(have)}" if have else "it runs none"
            raise ConfigurationError(
                f"server_tools[{i}]: {model.provider}/{model.id} ({model.api}) has no "
                f"provider-run {tool.name} tool ({runs}); a model that has it says so with "
                f"Model(capabilities=mw.Capabilities(server_tools=[{tool.name!r}]))"
            )
        if tool.options and tool.api is not None and tool.api != model.api:
            raise ConfigurationError(
                f"server_tools[{i}].options ({', '.join(tool.options)}) are fields of "
                f"{tool.api}'s {tool.name} tool; {model.api} has other fields"
            )


class Prepared(NamedTuple):
    """What a call is made of: the resilience plan (or, for a custom stream function,
    its options), the context as sent, the output plan."""

    plan: Plan | RequestOptions
    context: Context
    output: OutputPlan | None


def plan_call(model: Model | Fallback, context: Context, opts: StreamOptions) -> Prepared:
    """The call's plan; for a custom stream function its options only."""
    if isinstance(model, Fallback):
        targets = []
        outputs: list[OutputPlan | None] = []
        sent = context
        for m in model.models:
            options, request, prefail, ctx, output = prepare(m, context, opts)
            assert request is not None  # Fallback refuses custom stream functions
            targets.append(Target(m, options, request, prefail))
            outputs.append(output)
            if not targets[1:]:
                sent = ctx
        modes = {o.mode for o in outputs if o is not None}
        if len(modes) > 1:
            raise ConfigurationError(
                "output= with a Fallback asks every model the same way: its models "
                f"default to different output modes ({', '.join(sorted(modes))}); "
                "pass output_mode='tool' or 'prompted'"
            )
        return Prepared(make_plan(targets, opts, model), sent, outputs[0])
    options, request, prefail, ctx, output = prepare(model, context, opts)
    if request is None:
        return Prepared(options, ctx, output)
    return Prepared(make_plan([Target(model, options, request, prefail)], opts, None), ctx, output)

"""What each of an :class:`~modelwire.agent.Agent`'s model calls is made with: the model
and the ``mw.stream`` options, given once or as callables evaluated before every call,
and checked as ``mw.stream`` checks them (an unknown option with a did-you-mean, a
missing key when the agent is made, not on its first turn)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from typing import Any

from .._call._fallback import Fallback
from .._client._options import AgentOptions
from ..errors import ConfigurationError
from ..types import Model
from ._intents import Intent, Resolve

__all__ = ["STREAM_OPTIONS", "CallConfig", "DynamicModel", "DynamicOptions"]

# The keyword options of ``mw.stream`` the agent passes through (api_key is its
# own argument): declared once, in ``modelwire._client._options.AgentOptions``.
STREAM_OPTIONS = AgentOptions.__optional_keys__

#: A zero-argument callable returning the stream options of one call (sync or async).
DynamicOptions = Callable[[], "Mapping[str, Any] | Awaitable[Mapping[str, Any]]"]
#: A zero-argument callable returning the model of one call (sync or async).
DynamicModel = Callable[[], "Model | Awaitable[Model]"]


class CallConfig:
    """The model and options of the agent's calls: the state they use is declared
    here, set by ``Agent.__init__``."""

    model: Model | Fallback | DynamicModel
    options: dict[str, Any]
    api_key: Any
    _model: Model | Fallback | None
    _options_fn: DynamicOptions | None

    @classmethod
    def _check_options(cls, opts: dict[str, Any]) -> dict[str, Any]:
        from .._client._options import UnknownOptionError, did_you_mean, resolve_options

        if "api_key" in opts:
            raise ConfigurationError("pass api_key= to Agent directly, not in options")
        unknown = sorted(set(opts) - STREAM_OPTIONS)
        if unknown:
            # A misspelt Agent argument (system_promt=) lands here too: suggest those.
            own = set(inspect.signature(cls.__init__).parameters) - {"self", "stream_options"}
            raise UnknownOptionError(
                f"unknown stream option(s) {', '.join(unknown)}"
                f"{did_you_mean(unknown, STREAM_OPTIONS | own)}; "
                f"known: {', '.join(sorted(STREAM_OPTIONS))}"
            )
        # Validate now (provider "" has no env var, so no key is looked up here).
        trace = opts.get("trace")
        if trace is not None and not callable(trace):
            raise ConfigurationError("trace must be a callable receiving trace records")
        policy = opts.get("completion_policy")
        if policy is not None and not callable(policy):
            raise ConfigurationError(
                "completion_policy must be a callable (message, tool_choice, tools_declared) "
                "-> None | str"
            )
        resolve_options(
            "", **{k: v for k, v in opts.items() if k not in ("trace", "completion_policy")}
        )
        return opts

    def _check_key(self, model: Model | Fallback) -> None:
        from .._apis import BUILTIN_APIS
        from .._client._options import resolve_api_key

        # A missing key is a caller mistake: say so now, not on the first turn.
        # A callable key is read at each call, as mw.stream does.
        for m in model.models if isinstance(model, Fallback) else (model,):
            if m.api in BUILTIN_APIS and not callable(self.api_key):
                resolve_api_key(m.provider, self.api_key)

    def _call_config(self) -> Generator[Intent, Any, tuple[Model | Fallback, dict[str, Any]]]:
        """The model and stream options of one call: a callable model or options is
        evaluated here, at every call (sync or async), and checked like the static ones."""
        model = self.model
        if not isinstance(model, Model | Fallback):
            model = yield Resolve(model())
            if not isinstance(model, Model | Fallback):
                raise ConfigurationError(
                    f"the model callable must return a modelwire.Model, got {type(model).__name__}"
                )
        self._model = model
        options = self.options
        if self._options_fn is not None:
            dynamic = yield Resolve(self._options_fn())
            if not isinstance(dynamic, Mapping):
                raise ConfigurationError(
                    f"the options callable must return a dict, got {type(dynamic).__name__}"
                )
            options = self._check_options({**options, **dynamic})
        return model, options

"""What the gateway sends to a backend, besides the request: the key read now from
the model's environment variable, and the client's own turns attributed to it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._apis._server.origin import adopt
from .._apis._server.request import GatewayRequest, RequestError
from .._call._fallback import Fallback
from .._client._options import resolve_api_key
from ..errors import ConfigurationError, MissingAPIKeyError
from ..types import Capabilities, Context, Model
from ._config import ModelRoute

__all__ = ["adopted", "backend_capabilities", "backend_keys", "key_for"]


def backend_keys(route: ModelRoute, models: Mapping[str, ModelRoute]) -> Any:
    """The ``api_key`` option for ``route``: ``None`` (the model needs none), one key,
    or for a fallback one key per model (:class:`_InOrder`); a :class:`RequestError`
    (500, naming the variable) when one is not set."""
    if not route.members:
        return key_for(route)
    keys = [key_for(models[m]) for m in route.members]
    if all(k is None for k in keys):
        return None
    missing = [m for m, k in zip(route.members, keys, strict=True) if k is None]
    if missing:
        raise RequestError(
            f"the fallback {route.name!r} mixes models with an API key and without one "
            f"({', '.join(missing)}); give each an api_key_env", status=500, kind="server",
        )  # fmt: skip
    return _InOrder([k for k in keys if k is not None])


def key_for(route: ModelRoute) -> str | None:
    """The backend key of one model, read now: its ``api_key_env``, else its
    provider's own variable (``None``: a server that needs none)."""
    model = route.target
    assert isinstance(model, Model)
    if route.api_key_env is not None:
        value = os.environ.get(route.api_key_env)
        if not value:
            raise RequestError(
                f"the gateway has no API key for model {route.name!r}: the environment "
                f"variable {route.api_key_env} is not set", status=500, kind="server",
            )  # fmt: skip
        return value
    try:
        return resolve_api_key(model.provider, None)
    except MissingAPIKeyError as exc:
        raise RequestError(
            f"the gateway has no API key for model {route.name!r}: the environment "
            f"variable {exc.env_var} is not set", status=500, kind="server",
        ) from None  # fmt: skip
    except ConfigurationError as exc:  # a malformed value: named, never shown
        raise RequestError(exc.message, status=500, kind="server") from None


class _InOrder:
    """A Fallback's keys, one per model: ``modelwire.stream`` resolves a Fallback's
    options model by model, in order (``modelwire._client._plan``), calling a
    callable ``api_key`` once for each; the gateway test of a fallback whose models
    read different variables checks that each got its own."""

    __slots__ = ("_keys", "_next")

    def __init__(self, keys: list[str]) -> None:
        self._keys = keys
        self._next = 0

    def __call__(self) -> str:
        key = self._keys[min(self._next, len(self._keys) - 1)]
        self._next += 1
        return key

    def __repr__(self) -> str:
        return f"_InOrder([redacted] x {len(self._keys)})"


def adopted(route: ModelRoute, req: GatewayRequest) -> Context:
    """The request's context with the client's unsealed turns of the backend's own API
    attributed to the backend (for a fallback: the first model of that API)."""
    context = req.context
    target = route.target
    models = target.models if isinstance(target, Fallback) else (target,)
    for m in models:
        context = adopt(context, m)
    return context


def backend_capabilities(route: ModelRoute) -> Capabilities:
    """What ``route``'s backend supports, as the renderers need it: for a fallback,
    each capability any of its models has."""
    from .._apis._profile import model_profile

    t = route.target
    models = t.models if isinstance(t, Fallback) else (t,)
    late = any(model_profile(m).late_call_signatures for m in models)
    return Capabilities(late_call_signatures=late)

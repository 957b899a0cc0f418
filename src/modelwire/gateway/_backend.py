"""What the gateway sends to a backend, besides the request: the key read now from
the model's environment variable, and the client's own turns attributed to it; and
what it may show of a backend's failure (:class:`Scrub`: no secret, no backend URL)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from .._apis._server.origin import adopt
from .._apis._server.request import GatewayRequest, RequestError
from .._call._fallback import Fallback
from .._client._options import resolve_api_key
from .._redact import credential_secrets, redact, redact_url, split_userinfo
from .._wire.request import Timeout
from ..errors import ConfigurationError, ErrorInfo, MissingAPIKeyError, ModelwireError
from ..events import ErrorEvent
from ..types import AssistantMessage, Capabilities, Context, Model, ServerTool
from ._config import ModelRoute

__all__ = [
    "GATEWAY_FAULTS",
    "Scrub",
    "adopted",
    "as_gateway_fault",
    "backend_capabilities",
    "backend_hosts",
    "backend_keys",
    "backend_options",
    "backend_secrets",
    "key_for",
    "reasoning_rule",
    "server_tools_for",
]


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


def reasoning_rule(route: ModelRoute, models: Mapping[str, ModelRoute]) -> str | None:
    """What a request asking for reasoning gets from ``route``: ``None`` (its model
    reasons: sent), ``"drop"`` or ``"refuse"`` (its ``unsupported_reasoning``). A
    fallback's models without reasoning decide for it (one refusing: refused), as
    ``modelwire.stream`` takes one reasoning option for all of them."""
    routes = [models[m] for m in route.members] if route.members else [route]
    lacking = [r for r in routes if isinstance(r.target, Model) and not r.target.reasoning]
    if not lacking:
        return None
    return "refuse" if any(r.unsupported_reasoning == "refuse" for r in lacking) else "drop"


#: The keys of a client's own server-tool object that only say which tool it is.
_IDENTITY = frozenset({"type", "name"})


def server_tools_for(
    route: ModelRoute, req: GatewayRequest, models: Mapping[str, ModelRoute]
) -> tuple[ServerTool, ...]:
    """The provider-run tools a request's backend gets: each as the client wrote it to
    a backend of the client's API, as the bare tool to a backend of another API (when
    the client set nothing but which tool it is: a setting such as Codex's
    ``external_web_access`` cannot be translated). A backend model that does not run a
    tool (its profile's ``server_tools``), or cannot take its settings, gets the
    model's ``unsupported_server_tools`` rule: a 400 naming the tool, or the tool
    left out."""
    from .._apis._profile import model_profile

    routes = [models[m] for m in route.members] if route.members else [route]
    targets = [(r, r.target) for r in routes if isinstance(r.target, Model)]
    kept: list[ServerTool] = []
    for field, tool in req.server_tools:
        settings = sorted(set(tool.options or ()) - _IDENTITY)
        lacking = []
        for r, m in targets:
            if tool.name not in (model_profile(m).server_tools or ()):
                lacking.append((r, f"the model {r.name!r} runs no provider {tool.name} tool"))
            elif m.api != tool.api and settings:
                lacking.append((r, f"its settings ({', '.join(settings)}) are {tool.api} "
                                   f"fields, and the model {r.name!r} is served by {m.api}"))  # fmt: skip
        if not lacking:
            same = all(m.api == tool.api for _, m in targets)
            kept.append(tool if same else ServerTool(tool.name))
        elif any(r.unsupported_server_tools == "refuse" for r, _ in lacking):
            raise RequestError(
                f"{field}: {tool.name} is a tool the provider runs, and {lacking[0][1]}; "
                "leave the tool out, or have the gateway drop it for this model "
                '(unsupported_server_tools = "drop" in its [models.NAME] table)',
                param=field,
            )  # fmt: skip
    return tuple(kept)


# --------------------------------------------------------------------------- what a client sees

#: Credentials the gateway's environment may hold besides each provider's API-key
#: variables: the AWS chain Bedrock signs with
#: (https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-envvars.html).
_CREDENTIAL_VARS = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_FROM = re.compile(r"\bfrom (?:GET|POST|PUT|PATCH|DELETE|HEAD) (?=[A-Za-z][A-Za-z0-9+.-]*://)")
_TRAILING = ".,:;)]}"


def backend_secrets(models: Mapping[str, ModelRoute]) -> tuple[str, ...]:
    """Every backend secret the gateway knows, read now: each model's key variable
    (``api_key_env``, else its provider's), the AWS credentials in the environment,
    and the userinfo and query values of each ``base_url``."""
    from .._catalog._records import ENV_KEYS

    found: list[str] = [os.environ.get(v, "") for v in _CREDENTIAL_VARS]
    for route in models.values():
        if not isinstance(route.target, Model):
            continue  # a fallback's models are routes of their own
        model = route.target
        names = (route.api_key_env,) if route.api_key_env else ENV_KEYS.get(model.provider) or ()
        found.extend(os.environ.get(n, "") for n in names)
        if model.base_url:
            _, user, password = split_userinfo(model.base_url)
            found.extend(s for s in (user, password) if s)
            query = model.base_url.partition("#")[0].partition("?")[2]
            found.extend(item.partition("=")[2] for item in query.split("&"))
    return tuple(dict.fromkeys(s.strip() for s in found if s and s.strip()))


def backend_hosts(models: Mapping[str, ModelRoute]) -> frozenset[str]:
    """The host of every configured backend ``base_url``."""
    hosts = set()
    for route in models.values():
        if isinstance(route.target, Model) and route.target.base_url:
            host = _host(route.target.base_url)
            if host:
                hosts.add(host)
    return frozenset(hosts)


def _host(url: str) -> str | None:
    from urllib.parse import urlsplit

    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


class Scrub:
    """A backend's failure as the gateway may show it: every string field of its
    error (message, code, request id…: a backend may echo anything it was sent, the
    provider key too) with every backend secret the gateway knows and the client's
    own credentials redacted (:func:`backend_secrets`, ``modelwire._redact``) — what
    the request log and traces get; and for the client, also without the backend's
    URLs and hosts (the model name it asked for instead). Secrets are read only when a
    failure needs them."""

    __slots__ = ("_client", "_models", "model")

    def __init__(
        self, models: Mapping[str, ModelRoute], model: str, headers: Mapping[str, str]
    ) -> None:
        self._models = models
        self.model = model
        self._client = headers

    def secrets(self) -> tuple[str, ...]:
        return (*backend_secrets(self._models), *credential_secrets(self._client))

    def logged(self, info: ErrorInfo) -> ErrorInfo:
        """``info`` with every secret out of every string field."""
        keys = self.secrets()
        return _map_strings(info, lambda s: redact_url(redact(s, keys)))

    def answered(self, info: ErrorInfo) -> ErrorInfo:
        """:meth:`logged`, and no backend URL or host."""
        return _map_strings(info, self._shown())

    def text(self, text: str) -> str:
        """A text about the backend as the client may see it (as :meth:`answered`)."""
        return self._shown()(text)

    def _shown(self) -> Callable[[str], str]:
        keys = self.secrets()
        hosts = set(backend_hosts(self._models))
        where = f"the backend of model {self.model!r}"

        def shown(text: str) -> str:
            text = redact_url(redact(text, keys))
            text = _FROM.sub("from ", text)

            def url(m: re.Match[str]) -> str:
                found = m.group(0)
                kept = found.rstrip(_TRAILING)
                host = _host(kept)
                if host:
                    hosts.add(host)
                return where + found[len(kept) :]

            text = _URL.sub(url, text)
            for host in sorted(hosts, key=len, reverse=True):
                text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", "[backend]", text)
            return text

        return shown

    def message(self, message: AssistantMessage) -> AssistantMessage:
        """``message`` with its error as the client may see it (:meth:`answered`)."""
        if message.error is None:
            return message
        return msgspec.structs.replace(message, error=self.answered(message.error))

    def event(self, event: ErrorEvent) -> ErrorEvent:
        """An error event as the client may see it."""
        return msgspec.structs.replace(event, message=self.message(event.message))


def _map_strings(info: ErrorInfo, fix: Callable[[str], str]) -> ErrorInfo:
    # Every string field, so one the library adds later is covered too.
    changed = {
        f: fix(v)
        for f in info.__struct_fields__
        if f != "kind" and isinstance(v := getattr(info, f), str)
    }
    return msgspec.structs.replace(info, **changed)


def backend_options(
    route: ModelRoute, req: GatewayRequest, client_api: str, models: Mapping[str, ModelRoute],
    default_timeout: Timeout | None, http_client: Callable[[], Any],
) -> dict[str, Any]:  # fmt: skip
    """The library options of a request to ``route``'s backend: the client's options,
    the reasoning rule of a model without reasoning, fields passed through only to a
    backend of the client's own API (``client_api``), the backend key, the shared HTTP
    client and the backend timeout (the model's, else the gateway's default)."""
    options: dict[str, Any] = dict(req.options)
    if options.get("reasoning") is not None:
        rule = reasoning_rule(route, models)
        if rule == "drop":
            del options["reasoning"]
        elif rule == "refuse":
            field = req.reasoning_field or "reasoning"
            raise RequestError(
                f"{field}: the model {route.name!r} does not reason (its configuration "
                "says reasoning = false); leave the field out", param=field,
            )  # fmt: skip
    if req.server_tools:
        options["server_tools"] = server_tools_for(route, req, models)
    if all(api == client_api for api in route.apis):
        if req.inert:
            options["extra_body"] = {**(options.get("extra_body") or {}), **req.inert}
        if req.forward_headers:
            options["headers"] = {**(options.get("headers") or {}), **req.forward_headers}
    if req.passthrough:
        field = next(iter(req.passthrough))
        if any(api != client_api for api in route.apis):
            raise RequestError(
                f"{field} is not a field modelwire translates; it is passed through "
                f"only to a backend of the client's API ({client_api}), and the model "
                f"{route.name!r} is served by {', '.join(sorted(set(route.apis)))}",
                param=field,
            )  # fmt: skip
        extra = dict(options.get("extra_body") or {})
        extra.update(req.passthrough)
        options["extra_body"] = extra
    key = backend_keys(route, models)
    if key is not None:
        options["api_key"] = key
    if "http_client" not in options:
        options["http_client"] = http_client()
    options["timeout"] = route.timeout or default_timeout
    return options


#: What a backend refusing the gateway itself means: its credentials or its
#: configured model id are wrong — the gateway's fault, never the client's key or
#: model name, so it is the API's 502 and says so.
GATEWAY_FAULTS = {
    "authentication": "refused the gateway's credentials",
    "permission": "refused the gateway's credentials",
    "not_found": "does not know the model id the gateway's config names",
}


def as_gateway_fault(exc: ModelwireError, model: str) -> BaseException:
    """``exc`` as the client sees it: a backend refusing the gateway itself
    (:data:`GATEWAY_FAULTS`) is the gateway's 502, anything else stays as it is."""
    why = GATEWAY_FAULTS.get(exc.kind)
    if why is None:
        return exc
    return RequestError(
        f"the backend of model {model!r} {why} ({exc.kind}: {exc.message}); the gateway's "
        "operator must fix its configuration", status=502, kind="server",
    )  # fmt: skip

"""The gateway's configuration: a TOML file (or the same tables as a dict) checked
whole at load into a frozen :class:`GatewayConfig`.

Every mistake is a :class:`~modelwire.errors.ConfigurationError` naming its TOML
path (``models.smart.api must be one of …``), raised before the gateway serves
anything. Provider credentials are never in the file: a model names the environment
variable holding its key (``api_key_env``), read on every request, so a key can be
rotated without a restart and a missing one fails only the requests that need it.
Gateway keys are stored as their sha256 (hex); the config holds no secret, and its
repr shows neither the hashes nor a password in the Redis URL.

The tables (``docs/gateway.md`` is the reference)::

    [models.NAME]   api + id + base_url [+ api_key_env]   a Model of any wire API
                    provider + id [+ base_url, api_key_env] a catalog entry
                    fallback = ["a", "b"]                 a modelwire.Fallback of those models
                    cost = {input, output, cache_read, cache_write}   $ per million tokens
    [keys.NAME]     key_sha256, models = ["NAME", …] or ["*"],
                    requests_per_minute, tokens_per_minute, budget_usd
    [gateway]       host, port, redis, log, otel, max_body_bytes, max_connections,
                    timeout = {connect, idle, total} (also per model)
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import msgspec

from .._call._fallback import Fallback
from .._redact import redact_url
from .._wire.request import Timeout
from ..errors import ConfigurationError
from ..types import Capabilities, Model

__all__ = ["GatewayConfig", "GatewaySettings", "KeyConfig", "ModelRoute", "load_config"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_INPUT_KINDS = ("audio", "document", "image", "text")


class ModelRoute(msgspec.Struct, frozen=True, kw_only=True):
    """One name clients may ask for, and what serves it.

    Built by :func:`load_config` from a ``[models.NAME]`` table: a wire API with its
    ``id`` and ``base_url``, a catalog entry (``provider``), or a ``fallback`` of
    other names.
    """

    name: str
    """The name in ``[models.NAME]``: what clients send as ``model``."""
    target: Model | Fallback
    """The backend: a :class:`~modelwire.Model`, or a :class:`~modelwire.Fallback` of
    other configured models."""
    api_key_env: str | None = None
    """The environment variable holding the backend's key (``None``: the provider's
    own variable, or no key for a local server; for a fallback, each of its models
    reads its own)."""
    members: tuple[str, ...] = ()
    """For a fallback: the configured names of its models, in order."""
    timeout: Timeout | None = None
    """Its backend calls' timeouts (``None``: the ``[gateway]`` table's)."""
    unsupported_reasoning: str = "drop"
    """What a request asking for reasoning (Anthropic ``thinking``, Chat
    ``reasoning_effort``, Responses ``reasoning.effort``) gets when the model has none
    (``reasoning = false``): ``"drop"`` answers without it, ``"refuse"`` is a 400
    naming the field."""
    unsupported_server_tools: str = "refuse"
    """What a request declaring a provider-run tool (web search…) gets when the backend
    does not run it (``Capabilities.server_tools``, or its ``server_tools`` key): a
    400 naming the tool (``"refuse"``), or an answer without the tool (``"drop"``)."""

    @property
    def apis(self) -> tuple[str, ...]:
        """The wire API of each backend model."""
        t = self.target
        return tuple(m.api for m in t.models) if isinstance(t, Fallback) else (t.api,)


class KeyConfig(msgspec.Struct, frozen=True, kw_only=True):
    """One gateway key: who may call which models, how often, for how much.

    Built by :func:`load_config` from a ``[keys.NAME]`` table. The key itself is
    never stored, only its hash (:func:`hash_key`); a limit left ``None`` does not
    apply.
    """

    name: str
    """The name in ``[keys.NAME]``: what logs and traces record (never the key)."""
    key_sha256: str
    """The sha256 of the key, 64 lower-case hex digits."""
    models: frozenset[str] | None = None
    """The model names this key may use (``None``: every one, ``models = ["*"]``)."""
    requests_per_minute: float | None = None
    """Requests this key may start per minute."""
    tokens_per_minute: float | None = None
    """Input plus output tokens, counted from each answer's usage."""
    budget_usd: float | None = None
    """Spend limit in dollars, from each answer's ``usage.cost``."""

    def allows(self, model: str) -> bool:
        """Whether this key may use the model named ``model``.

        Args:
            model: A name of the ``[models]`` table.
        """
        return self.models is None or model in self.models

    def __repr__(self) -> str:
        # The hash identifies the key material: not shown.
        models = "*" if self.models is None else sorted(self.models)
        return (
            f"KeyConfig(name={self.name!r}, models={models!r}, "
            f"requests_per_minute={self.requests_per_minute!r}, "
            f"tokens_per_minute={self.tokens_per_minute!r}, budget_usd={self.budget_usd!r})"
        )


class GatewaySettings(msgspec.Struct, frozen=True, kw_only=True):
    """The ``[gateway]`` table.

    Settings of the server itself (every field optional); limits and models are in
    the other tables.
    """

    host: str = "127.0.0.1"
    """The address ``modelwire serve`` listens on."""
    port: int = 8000
    """The port ``modelwire serve`` listens on."""
    redis: str | None = None
    """A ``redis://`` / ``rediss://`` / ``unix://`` URL: limits and budgets shared there."""
    log: str | None = None
    """A SQLite file recording every request (the CLI's log, ``modelwire logs``)."""
    otel: bool = False
    """Trace every request with OpenTelemetry (``modelwire.otel``)."""
    max_body_bytes: int = 32 * 1024 * 1024
    """Larger request bodies are refused with 413 (Anthropic's own limit is 32 MB)."""
    max_connections: int = 100
    """Connections the gateway keeps open to backends."""
    timeout: Timeout = msgspec.field(default_factory=Timeout)
    """The backend calls' timeouts of every model that sets none (modelwire's
    default: connect 10 s, idle 300 s, no total)."""

    def __repr__(self) -> str:
        redis = None if self.redis is None else redact_url(self.redis)
        return (
            f"GatewaySettings(host={self.host!r}, port={self.port!r}, redis={redis!r}, "
            f"log={self.log!r}, otel={self.otel!r}, max_body_bytes={self.max_body_bytes!r}, "
            f"max_connections={self.max_connections!r}, timeout={self.timeout!r})"
        )


class GatewayConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A checked gateway configuration (:func:`load_config`).

    What :func:`~modelwire.gateway.app`, :func:`~modelwire.gateway.serve` and
    :class:`~modelwire.gateway.GatewayServer` run; every name, key and limit in it
    was checked when it was loaded.
    """

    models: Mapping[str, ModelRoute]
    """The ``[models.NAME]`` tables: what clients may ask for, by name."""
    keys: Mapping[str, KeyConfig]
    """The ``[keys.NAME]`` tables: who may call, by key name."""
    gateway: GatewaySettings = msgspec.field(default_factory=GatewaySettings)
    """The ``[gateway]`` table."""


def load_config(
    source: GatewayConfig | str | os.PathLike[str] | Mapping[str, Any],
) -> GatewayConfig:
    """The configuration in the TOML file at ``source``, or in a dict of the same
    tables; a :class:`ConfigurationError` naming the path of the first mistake.

    Args:
        source: A TOML file path, a dict of the tables (``models``, ``keys``,
            ``gateway``), or a ``GatewayConfig`` (returned as it is).

    Returns:
        The checked :class:`GatewayConfig`.

    Raises:
        ConfigurationError: The file cannot be read or parsed, or a table is wrong;
            the message names the path (``models.x needs exactly one of api,
            provider or fallback``).

    Example:
        ```python
        from modelwire.gateway import hash_key, load_config

        config = load_config({
            "models": {"smart": {"provider": "anthropic", "id": "claude-sonnet-4-5"}},
            "keys": {"team-a": {"key_sha256": hash_key("sk-team-a"), "models": ["smart"]}},
        })
        print(sorted(config.models), config.gateway.port)  # ['smart'] 8000
        ```
    """
    if isinstance(source, GatewayConfig):
        return source
    if isinstance(source, Mapping):
        return _config(source)
    if not isinstance(source, str | os.PathLike):
        raise ConfigurationError(
            f"the gateway config must be a TOML file path or a dict, got {type(source).__name__}"
        )
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read the gateway config {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"the gateway config {path} is not UTF-8 text") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"the gateway config {path} is not valid TOML: {exc}") from exc
    try:
        return _config(data)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc.message}") from None


# --------------------------------------------------------------------------- checks


def _fail(message: str) -> ConfigurationError:
    return ConfigurationError(message)


def _type(value: object) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "a table"}.get(type(value), type(value).__name__)  # fmt: skip


def _table(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(f"{path} must be a table, got {_type(value)}")
    for k in value:
        if not isinstance(k, str):
            raise _fail(f"{path} has a key that is not a string: {k!r}")
    return value


def _known(table: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    for k in table:
        if k not in allowed:
            raise _fail(f"{path}.{k} is not a setting; the settings are: {', '.join(allowed)}")


def _str(value: object, path: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{path} must be a non-empty string, got {_type(value)}")
    return value


def _finite(value: object) -> float | None:
    """``value`` as a finite float; ``None`` for NaN, infinity (TOML ``inf``, or
    ``1e400``, which TOML reads as infinity), a number too large for a float, or no
    number at all: a price or limit that is not a finite number would turn a budget
    off (``inf``) or make every comparison false (``nan``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _positive(value: object, path: str) -> float:
    f = _finite(value)
    if f is None and isinstance(value, int | float) and not isinstance(value, bool):
        raise _fail(f"{path} must be a finite number (leave it out for no limit), got {value!r}")
    if f is None or not f > 0:
        raise _fail(f"{path} must be a positive number, got {value!r}")
    return f


def _int(value: object, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(f"{path} must be an integer from {low} to {high}, got {value!r}")
    return value


def _names(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise _fail(f"{path} must be an array of model names, got {_type(value)}")
    return tuple(_str(v, f"{path}[{i}]") for i, v in enumerate(value))


# --------------------------------------------------------------------------- tables

_MODEL_FORMS = ("api", "provider", "fallback")
_MODEL_KEYS = ("api", "provider", "fallback", "id", "base_url", "api_key_env", "cost", "name",
               "reasoning", "input", "context_window", "max_tokens", "compat",
               "unsupported_reasoning", "server_tools", "unsupported_server_tools",
               "mid_conversation_system", "timeout")  # fmt: skip
_COST_KEYS = ("input", "output", "cache_read", "cache_write")
_KEY_KEYS = ("key_sha256", "models", "requests_per_minute", "tokens_per_minute", "budget_usd")
_GATEWAY_KEYS = ("host", "port", "redis", "log", "otel", "max_body_bytes", "max_connections",
                 "timeout")  # fmt: skip
_TIMEOUT_KEYS = ("connect", "idle", "total")


def _config(data: Mapping[str, Any]) -> GatewayConfig:
    top = _table(data, "the config")
    _known(top, ("models", "keys", "gateway"), "the config")
    if "models" not in top:
        raise _fail("the config has no [models.NAME] table: name at least one model")
    models_t = _table(top["models"], "models")
    if not models_t:
        raise _fail("the config has no [models.NAME] table: name at least one model")
    routes: dict[str, ModelRoute] = {}
    fallbacks: dict[str, tuple[str, ...]] = {}
    for name, entry in models_t.items():
        path = f"models.{name}"
        t = _table(entry, path)
        _known(t, _MODEL_KEYS, path)
        forms = [f for f in _MODEL_FORMS if f in t]
        if len(forms) != 1:
            given = f" (it gives {' and '.join(forms)})" if forms else ""
            raise _fail(f"{path} needs exactly one of api, provider or fallback{given}")
        if forms[0] == "fallback":
            extra = [k for k in t if k not in ("fallback", "timeout")]
            if extra:
                raise _fail(
                    f"{path}.{extra[0]} is not a setting of a fallback; set it on the "
                    "models the fallback names"
                )
            fallbacks[name] = _names(t["fallback"], f"{path}.fallback")
            if not fallbacks[name]:
                raise _fail(f"{path}.fallback must name at least one model")
        else:
            routes[name] = _model(name, t, path)
    for name, members in fallbacks.items():
        path = f"models.{name}.fallback"
        for i, m in enumerate(members):
            if m in fallbacks:
                raise _fail(f"{path}[{i}] names {m!r}, itself a fallback; list its models instead")
            if m not in routes:
                raise _fail(f"{path}[{i}] names {m!r}, which is not a model of [models]")
        target = Fallback([routes[m].target for m in members])  # type: ignore[misc]
        routes[name] = ModelRoute(name=name, target=target, members=members)
    ordered = {n: routes[n] for n in models_t}
    keys = _keys(top.get("keys"), ordered)
    gateway = _gateway(top.get("gateway", {}))
    for name, entry in models_t.items():
        if "timeout" in entry:  # each setting left out is the [gateway] table's
            timeout = _timeout(entry["timeout"], f"models.{name}.timeout", gateway.timeout)
            ordered[name] = msgspec.structs.replace(ordered[name], timeout=timeout)
    return GatewayConfig(models=MappingProxyType(ordered), keys=MappingProxyType(keys),
                         gateway=gateway)  # fmt: skip


def _model(name: str, t: Mapping[str, Any], path: str) -> ModelRoute:
    from .._apis import api_names

    if "api" in t and t["api"] not in api_names():
        raise _fail(f"{path}.api must be one of {', '.join(api_names())}, got {t['api']!r}")
    env = None
    if "api_key_env" in t:
        env = _str(t["api_key_env"], f"{path}.api_key_env")
        if not _ENV_NAME.match(env):
            raise _fail(f"{path}.api_key_env must be an environment variable name, got {env!r}")
    if "id" not in t:
        raise _fail(f"{path}.id is missing: the model id the backend is sent")
    model_id = _str(t["id"], f"{path}.id")
    base_url = _str(t["base_url"], f"{path}.base_url") if "base_url" in t else None
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise _fail(f"{path}.base_url must be an http(s):// URL, got {redact_url(base_url)!r}")
    if "api" in t:
        api = t["api"]
        if base_url is None:
            raise _fail(f"{path}.base_url is missing: the API root, e.g. https://api.openai.com/v1")
        # Named after its table: the provider picks no env var or compat of its own.
        model = Model(id=model_id, api=api, provider=name, base_url=base_url)
    else:
        from .._catalog import as_model

        provider = _str(t["provider"], f"{path}.provider")
        try:
            model = as_model(f"{provider}/{model_id}", base_url)
        except ConfigurationError as exc:
            raise _fail(f"{path}: {exc.message}") from None
    fields: dict[str, Any] = {}
    if "cost" in t:
        cost_t = _table(t["cost"], f"{path}.cost")
        _known(cost_t, _COST_KEYS, f"{path}.cost")
        prices = {}
        for k, v in cost_t.items():
            price = _finite(v)
            if price is None and isinstance(v, int | float) and not isinstance(v, bool):
                raise _fail(f"{path}.cost.{k} must be a finite number ($ per million tokens), got {v!r}")  # fmt: skip
            if price is None or price < 0:
                raise _fail(f"{path}.cost.{k} must be a non-negative number ($ per million tokens), got {v!r}")  # fmt: skip
            prices[k] = price
        fields["cost"] = msgspec.structs.replace(model.cost, **prices)
    if "name" in t:
        fields["name"] = _str(t["name"], f"{path}.name")
    if "reasoning" in t:
        if not isinstance(t["reasoning"], bool):
            raise _fail(f"{path}.reasoning must be true or false, got {_type(t['reasoning'])}")
        fields["reasoning"] = t["reasoning"]
    if "input" in t:
        kinds = t["input"]
        if not isinstance(kinds, list) or not kinds:
            raise _fail(f"{path}.input must be an array of {', '.join(_INPUT_KINDS)}")
        for i, k in enumerate(kinds):
            if k not in _INPUT_KINDS:
                raise _fail(
                    f"{path}.input[{i}] must be one of {', '.join(_INPUT_KINDS)}, got {k!r}"
                )
        fields["input"] = tuple(kinds)
    for limit in ("context_window", "max_tokens"):
        if limit in t:
            fields[limit] = _int(t[limit], f"{path}.{limit}", 1, 2**31)
    if "compat" in t:
        fields["compat"] = dict(_table(t["compat"], f"{path}.compat"))
    if "server_tools" in t or "mid_conversation_system" in t:
        fields["capabilities"] = _capabilities(t, model, path)
    if fields:
        model = msgspec.structs.replace(model, **fields)
    rules = {}
    for key, default in (("unsupported_reasoning", "drop"), ("unsupported_server_tools", "refuse")):
        rules[key] = t.get(key, default)
        if rules[key] not in ("drop", "refuse"):
            raise _fail(f"{path}.{key} must be drop or refuse, got {rules[key]!r}")
    return ModelRoute(name=name, target=model, api_key_env=env, **rules)


def _capabilities(t: Mapping[str, Any], model: Model, path: str) -> Capabilities:
    """What the backend model supports, said over the catalog: ``server_tools = [...]``
    (the provider-run tools it runs: a compatible server that has web search; ``[]``:
    none) and ``mid_conversation_system`` (system messages kept among the turns)."""
    from ..types import SERVER_TOOL_NAMES

    said: dict[str, Any] = {}
    if "server_tools" in t:
        value, where = t["server_tools"], f"{path}.server_tools"
        if not isinstance(value, list):
            raise _fail(f"{where} must be an array of {', '.join(SERVER_TOOL_NAMES)}")
        for i, v in enumerate(value):
            if v not in SERVER_TOOL_NAMES:
                raise _fail(f"{where}[{i}] must be one of {', '.join(SERVER_TOOL_NAMES)}, got {v!r}")  # fmt: skip
        said["server_tools"] = tuple(value)
    if "mid_conversation_system" in t:
        if not isinstance(t["mid_conversation_system"], bool):
            raise _fail(f"{path}.mid_conversation_system must be true or false")
        said["mid_conversation_system"] = t["mid_conversation_system"]
    caps = Capabilities(**said)
    return caps if model.capabilities is None else caps.over(model.capabilities)


def _keys(value: object, models: Mapping[str, ModelRoute]) -> dict[str, KeyConfig]:
    if value is None:
        raise _fail(
            "the config has no [keys.NAME] table: clients authenticate with a gateway key "
            "(key_sha256 = its sha256 in hex)"
        )
    keys_t = _table(value, "keys")
    if not keys_t:
        raise _fail("the config has no [keys.NAME] table: name at least one gateway key")
    out: dict[str, KeyConfig] = {}
    seen: dict[str, str] = {}
    for name, entry in keys_t.items():
        path = f"keys.{name}"
        t = _table(entry, path)
        _known(t, _KEY_KEYS, path)
        if "key_sha256" not in t:
            raise _fail(f"{path}.key_sha256 is missing: the sha256 (hex) of the key")
        digest = t["key_sha256"]
        if not isinstance(digest, str) or not _SHA256.match(digest.lower()):
            # Never echo the value: it may be the key itself, pasted by mistake.
            raise _fail(f"{path}.key_sha256 must be 64 hexadecimal digits (a sha256)")
        digest = digest.lower()
        if digest in seen:
            raise _fail(f"{path}.key_sha256 is the same as keys.{seen[digest]}.key_sha256")
        seen[digest] = name
        if "models" not in t:
            raise _fail(f'{path}.models is missing: the model names it may use, or ["*"]')
        names = _names(t["models"], f"{path}.models")
        allowed: frozenset[str] | None
        if "*" in names:
            allowed = None
        else:
            for i, m in enumerate(names):
                if m not in models:
                    raise _fail(f"{path}.models[{i}] names {m!r}, which is not a model of [models]")
            allowed = frozenset(names)
        limits = {
            k: _positive(t[k], f"{path}.{k}")
            for k in ("requests_per_minute", "tokens_per_minute", "budget_usd")
            if k in t
        }
        out[name] = KeyConfig(name=name, key_sha256=digest, models=allowed, **limits)
    return out


def _gateway(value: object) -> GatewaySettings:
    t = _table(value, "gateway")
    _known(t, _GATEWAY_KEYS, "gateway")
    fields: dict[str, Any] = {}
    if "host" in t:
        fields["host"] = _str(t["host"], "gateway.host")
    if "port" in t:
        fields["port"] = _int(t["port"], "gateway.port", 0, 65535)
    if "redis" in t:
        url = _str(t["redis"], "gateway.redis")
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise _fail(
                f"gateway.redis must be a redis://, rediss:// or unix:// URL, got {redact_url(url)!r}"
            )
        fields["redis"] = url
    if "log" in t:
        log = _str(t["log"], "gateway.log")
        if Path(log).is_dir():
            raise _fail(f"gateway.log is the directory {log!r}; give the path of a SQLite file")
        fields["log"] = log
    if "otel" in t:
        if not isinstance(t["otel"], bool):
            raise _fail(f"gateway.otel must be true or false, got {_type(t['otel'])}")
        fields["otel"] = t["otel"]
    if "max_body_bytes" in t:
        fields["max_body_bytes"] = _int(t["max_body_bytes"], "gateway.max_body_bytes", 1, 2**40)
    if "max_connections" in t:
        fields["max_connections"] = _int(
            t["max_connections"], "gateway.max_connections", 1, 100_000
        )
    if "timeout" in t:
        fields["timeout"] = _timeout(t["timeout"], "gateway.timeout", Timeout())
    return GatewaySettings(**fields)


def _timeout(value: object, path: str, base: Timeout) -> Timeout:
    """A ``{connect, idle, total}`` table of seconds, each finite and positive (a
    backend that accepts and never answers must end); one left out is ``base``'s."""
    t = _table(value, path)
    _known(t, _TIMEOUT_KEYS, path)
    given = {}
    for k, v in t.items():
        seconds = float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
        if seconds is None or not 0 < seconds < float("inf"):  # NaN fails too
            raise _fail(f"{path}.{k} must be a finite, positive number of seconds, got {v!r}")
        given[k] = seconds
    return msgspec.structs.replace(base, **given)

"""The model catalog: where each known model lives, what it costs, what it accepts.

The data is ``modelwire/data/models.json``, shipped in the wheel and read lazily
on first use (never at ``import modelwire``); nothing is fetched at import or at
run time. ``scripts/regenerate_catalog.py`` validates and normalises that file
offline.

Public surface (``mw.models``, ``mw.get_model`` and the helpers below):

* :func:`models` / :func:`get_model` / :func:`resolve_model` — catalog entries as
  :class:`~modelwire.types.Model` values (``"provider/model"`` strings for the CLI);
* :func:`providers` / :func:`env_vars` — provider names and their API-key variables
  (from the provider records, :mod:`modelwire._catalog._records`);
* :func:`reasoning_levels` / :func:`clamp_reasoning` — which reasoning levels a
  model accepts, and the level to send for a requested one.

Costs are not computed here: the assembler fills ``usage.cost`` from
``Model.cost`` (``modelwire._wire.assemble.compute_cost``), so a catalog model passed
to ``mw.stream``/``mw.replay`` gets priced messages.
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

import msgspec

from .._redact import redact_url
from .._wire.request import REASONING_LEVELS
from ..errors import ConfigurationError
from ..types import Model, ModelCost
from ..types._model import INPUT_KINDS as MODEL_INPUT_KINDS
from ._schema import CatalogFile, ModelEntry, PriceEntry, ProviderEntry, _decoder, read_packaged
from ._schema import TemplateEntry as TemplateEntry  # re-exported: a public name of this module

__all__ = [
    "BASE_URL_ENV",
    "INPUT_KINDS",
    "CatalogFile",
    "ModelEntry",
    "ProviderEntry",
    "as_model",
    "clamp_reasoning",
    "dump_catalog",
    "env_vars",
    "get_model",
    "is_loopback",
    "load_catalog",
    "models",
    "providers",
    "reasoning_levels",
    "resolve_model",
    "validate_catalog",
]

#: Input kinds a model may accept: the ones ``Model.input`` knows.
INPUT_KINDS: frozenset[str] = MODEL_INPUT_KINDS


# --------------------------------------------------------------------------- validation


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (127.0.0.0/8, ::1, localhost): the one
    test, used by the catalog's URL rules and the CLI's paid-API guard."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_url(url: str, where: str, *, local: bool) -> None:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "https" and host and not local:
        return
    if parts.scheme == "http" and is_loopback(url):
        return
    want = "http on a loopback address" if local else "https (or http on a loopback address)"
    raise ConfigurationError(f"{where} must be {want}, got {redact_url(url)!r}")


def _check_positive(value: int, where: str) -> None:
    if isinstance(value, bool) or value <= 0:
        raise ConfigurationError(f"{where} must be a positive integer, got {value!r}")


def _pattern(text: str, where: str) -> None:
    import re

    try:
        re.compile(text)
    except re.error as exc:
        raise ConfigurationError(f"{where} is not a valid regular expression: {exc}") from None


def _check_record(p: ProviderEntry, where: str, apis: frozenset[str]) -> None:
    """The provider-record fields a schema cannot check: known APIs, patterns that
    compile, known error kinds."""
    from ..errors import STREAM_ERROR_KINDS

    for field in ("compat", "reasoning_compat", "tool_ids", "capabilities"):
        for api in getattr(p, field) or {}:
            if api not in apis:
                raise ConfigurationError(f"{where}.{field}: {api!r} is not a known API")
    for api, rule in (p.tool_ids or {}).items():
        _pattern(rule.valid, f"{where}.tool_ids[{api!r}].valid")
        if rule.bad is not None:
            _pattern(rule.bad, f"{where}.tool_ids[{api!r}].bad")
        _check_positive(rule.max_len, f"{where}.tool_ids[{api!r}].max_len")
    for i, text in enumerate(p.overflow):
        _pattern(text, f"{where}.overflow[{i}]")
    for i, q in enumerate(p.status_quirks):
        _pattern(q.match, f"{where}.status_quirks[{i}].match")
        if q.kind not in STREAM_ERROR_KINDS:
            raise ConfigurationError(f"{where}.status_quirks[{i}].kind {q.kind!r} is unknown")
        if not 400 <= q.status <= 599:
            raise ConfigurationError(f"{where}.status_quirks[{i}].status must be 4xx or 5xx")


def _check_entry(m: ModelEntry, p: ProviderEntry, where: str, apis: frozenset[str]) -> None:
    if not m.id or m.id != m.id.strip():
        raise ConfigurationError(f"{where}.id must be a non-empty string without outer spaces")
    if not m.name:
        raise ConfigurationError(f"{where}.name must be a non-empty string")
    if m.api not in apis:
        raise ConfigurationError(f"{where}.api {m.api!r} is not one of {', '.join(sorted(apis))}")
    _check_url(m.base_url, f"{where}.base_url", local=p.local)
    if m.base_url.endswith("/"):
        raise ConfigurationError(f"{where}.base_url must not end with '/'")
    _check_positive(m.context_window, f"{where}.context_window")
    _check_positive(m.max_tokens, f"{where}.max_tokens")
    if m.max_tokens > m.context_window:
        raise ConfigurationError(f"{where}.max_tokens exceeds its context_window")
    kinds = set(m.input)
    if "text" not in kinds or not kinds <= INPUT_KINDS or len(kinds) != len(m.input):
        raise ConfigurationError(
            f"{where}.input must list text and optionally {', '.join(sorted(INPUT_KINDS - {'text'}))} "
            f"once each, got {list(m.input)}"
        )
    for field in PriceEntry.__struct_fields__:
        price = getattr(m.cost, field)
        if price < 0 or price != price or price == float("inf"):
            raise ConfigurationError(f"{where}.cost.{field} must be a finite number >= 0")
    if m.cost.input <= 0 and not p.local:
        raise ConfigurationError(f"{where}.cost.input must be positive for a hosted model")
    if m.cost.output <= 0 and not p.local:
        raise ConfigurationError(f"{where}.cost.output must be positive for a hosted model")
    levels = m.reasoning_levels
    if levels is not None:
        if not m.reasoning:
            raise ConfigurationError(f"{where}.reasoning_levels given but reasoning is false")
        order = [lv for lv in REASONING_LEVELS if lv in levels]
        if order != list(levels):
            raise ConfigurationError(
                f"{where}.reasoning_levels must be distinct levels of "
                f"{', '.join(REASONING_LEVELS)} in that order, got {list(levels)}"
            )


def validate_catalog(data: bytes | str) -> CatalogFile:
    """Decode and check the catalog data; ``ConfigurationError`` names the bad path.

    Beyond types: known ``api`` (one of the file's ``apis``); ``https`` base URLs (``http`` only on loopback, and
    loopback only for local providers); positive token limits; non-negative
    prices; known input kinds and reasoning levels; unique provider names and
    aliases and model ids per provider; provider records whose APIs are known and
    whose patterns compile (:func:`_check_record`).
    """
    try:
        cat = _decoder.decode(data)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid model catalog: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ConfigurationError(f"invalid model catalog JSON: {exc}") from None
    if cat.version != 1:
        raise ConfigurationError(f"unsupported model catalog version {cat.version}")
    apis = frozenset(cat.apis)
    for i, api in enumerate(cat.apis):
        if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)+", api):
            raise ConfigurationError(f"apis[{i}] {api!r} is not a wire API name")
    seen: set[str] = set()
    for i, p in enumerate(cat.providers):
        where = f"providers[{i}] ({p.id})"
        for name in (p.id, *p.aliases):
            if not name or name in seen:
                raise ConfigurationError(f"{where}: {name!r} must be a unique non-empty name")
            seen.add(name)
        _check_record(p, where, apis)
        if p.local and p.env:
            raise ConfigurationError(f"{where} is local and must not need a key")
        if not p.local and not p.env and p.models:
            raise ConfigurationError(f"{where} is hosted and must name its key variable")
        if p.local != (p.template is not None):
            raise ConfigurationError(f"{where}: a template is required for, and only for, local")
        if p.template is not None:
            t = p.template
            if t.api not in apis:
                raise ConfigurationError(f"{where}.template.api {t.api!r} is unknown")
            _check_url(t.base_url, f"{where}.template.base_url", local=True)
            _check_positive(t.context_window, f"{where}.template.context_window")
            _check_positive(t.max_tokens, f"{where}.template.max_tokens")
        if not p.models and (p.local or p.env or p.key_optional):
            raise ConfigurationError(
                f"{where}.models must not be empty (only a hosted provider known by its "
                "server's quirks alone lists no models and no key variable)"
            )
        ids: set[str] = set()
        for j, m in enumerate(p.models):
            mwhere = f"{where}.models[{j}] ({m.id})"
            if m.id in ids:
                raise ConfigurationError(f"{mwhere}: duplicate model id for provider {p.id!r}")
            ids.add(m.id)
            _check_entry(m, p, mwhere, apis)
    return cat


_dump_encoder = msgspec.json.Encoder(order="deterministic")  # dict keys sorted


def dump_catalog(cat: CatalogFile) -> bytes:
    """The canonical text of the data file: keys in schema order (free-form dicts
    such as ``compat`` sorted), two-space indentation, defaults omitted, a final
    newline (what ``scripts/regenerate_catalog.py`` writes)."""
    return msgspec.json.format(_dump_encoder.encode(cat), indent=2) + b"\n"


# --------------------------------------------------------------------------- loading


class _Index:
    """Models built from the data file once, looked up by provider and id."""

    def __init__(self, cat: CatalogFile) -> None:
        self.file = cat
        # Providers known only by their server's quirks list no models: not catalogued.
        self.providers: dict[str, ProviderEntry] = {p.id: p for p in cat.providers if p.models}
        self.aliases: dict[str, str] = {a: p.id for p in cat.providers for a in p.aliases}
        self.models: dict[str, list[Model]] = {}
        self.entries: dict[tuple[str, str], ModelEntry] = {}
        for p in cat.providers:
            built: list[Model] = []
            for m in p.models:
                built.append(_to_model(p.id, m))
                self.entries[(p.id, m.id)] = m
            self.models[p.id] = built
        self.by_key: dict[tuple[str, str], Model] = {
            (m.provider, m.id): m for ms in self.models.values() for m in ms
        }


def _to_model(provider: str, m: ModelEntry) -> Model:
    return Model(
        id=m.id,
        api=m.api,
        provider=provider,
        base_url=m.base_url,
        name=m.name,
        reasoning=m.reasoning,
        input=tuple(m.input),
        cost=ModelCost(
            input=m.cost.input,
            output=m.cost.output,
            cache_read=m.cost.cache_read,
            cache_write=m.cost.cache_write,
        ),
        context_window=m.context_window,
        max_tokens=m.max_tokens,
        headers=dict(m.headers) if m.headers else None,
        compat=dict(m.compat) if m.compat else None,
    )


_lock = threading.Lock()
_index: _Index | None = None


def _load() -> _Index:
    global _index
    index = _index
    if index is None:
        with _lock:
            index = _index
            if index is None:
                index = _index = _Index(load_catalog())
    return index


def load_catalog() -> CatalogFile:
    """Read and validate the packaged data file (``modelwire/data/models.json``)."""
    return validate_catalog(read_packaged())


# --------------------------------------------------------------------------- lookups


def _close(word: str, choices: Iterable[str], n: int = 5) -> list[str]:
    import difflib  # error path only

    options = list(choices)
    close = difflib.get_close_matches(word, options, n=n, cutoff=0.5)
    if not close:
        low = word.lower()
        close = [c for c in options if low and (low in c.lower() or c.lower() in low)][:n]
    return close


def _provider(name: str) -> ProviderEntry:
    index = _load()
    p = index.providers.get(name)
    if p is not None:
        return p
    close = _close(name, index.providers)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigurationError(
        f"unknown provider {name!r}{hint} (known: {', '.join(index.providers)})"
    )


def providers() -> list[str]:
    """Provider names in catalog order."""
    return list(_load().providers)


def models(provider: str | None = None) -> list[Model]:
    """Catalog models, all or one provider's, in catalog order (a new list).

    An unknown provider raises ``ConfigurationError`` naming close matches.
    """
    index = _load()
    if provider is None:
        return [m for ms in index.models.values() for m in ms]
    return list(index.models[_provider(provider).id])


#: The base-URL variables the official SDKs read, and the version segment their value
#: lacks: OPENAI_BASE_URL includes ``/v1`` (openai-python); ANTHROPIC_BASE_URL is the
#: server root (anthropic-sdk-python appends ``/v1/messages``); GOOGLE_GEMINI_BASE_URL
#: too (google-genai appends the API version). DESIGN §2b.
BASE_URL_ENV: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", ""),
    "anthropic": ("ANTHROPIC_BASE_URL", "/v1"),
    "google": ("GOOGLE_GEMINI_BASE_URL", "/v1beta"),
}


def _env_base_url(m: Model) -> Model:
    """``m`` at the address its provider's base-URL variable names, if one is set."""
    var, version = BASE_URL_ENV.get(m.provider, ("", ""))
    url = os.environ.get(var, "").strip().rstrip("/") if var else ""
    if not url:
        return m
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise ConfigurationError(f"{var} must be an http(s) URL, got {redact_url(url)!r}")
    if version and not url.endswith(version):
        url += version
    return msgspec.structs.replace(m, base_url=url)


def get_model(provider: str, model_id: str) -> Model:
    """The catalog entry for ``provider`` and ``model_id``.

    Unknown names raise ``ConfigurationError`` listing close matches (and the
    providers that do list ``model_id``, when it is filed elsewhere).
    """
    if not isinstance(provider, str) or not isinstance(model_id, str):
        raise ConfigurationError("get_model(provider, model_id) takes two strings")
    p = _provider(provider)
    index = _load()
    found = index.by_key.get((p.id, model_id))
    if found is not None:
        return _env_base_url(found)
    ids = [m.id for m in p.models]
    close = _close(model_id, ids)
    elsewhere = [k[0] for k in index.by_key if k[1] == model_id]
    parts = [f"unknown model {model_id!r} for provider {p.id!r}"]
    if close:
        parts.append(f"did you mean {', '.join(close)}?")
    if elsewhere:
        parts.append(f"{model_id!r} is listed under {', '.join(elsewhere)}")
    if p.local:
        parts.append(f"any id works with resolve_model('{p.id}/{model_id}')")
    if not close and not elsewhere:
        parts.append(f"{p.id} models: {', '.join(ids)}")
    raise ConfigurationError("; ".join(parts))


def resolve_model(spec: str) -> Model:
    """A model from a ``"provider/model"`` string (what the CLI takes).

    The provider is the part before the first ``/`` (model ids may contain ``/``,
    e.g. ``openrouter/anthropic/claude-sonnet-4.5``); aliases such as
    ``dashscope`` or ``gemini`` are accepted. A bare model id resolves when exactly
    one provider lists it. For a local provider (ollama, vllm, lmstudio) an id the
    catalog does not list gets the provider's template: served models vary.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigurationError('a model is given as "provider/model", e.g. "openai/gpt-4.1-mini"')
    spec = spec.strip()
    index = _load()
    head, sep, tail = spec.partition("/")
    provider = index.aliases.get(head.lower(), head.lower())
    if sep and provider in index.providers:
        if not tail:
            raise ConfigurationError(f"{spec!r} names no model after the provider")
        p = index.providers[provider]
        found = index.by_key.get((p.id, tail))
        if found is not None:
            return _env_base_url(found)
        if p.local and p.template is not None:
            t = p.template
            return Model(id=tail, api=t.api, provider=p.id, base_url=t.base_url, name=tail,
                         context_window=t.context_window, max_tokens=t.max_tokens)  # fmt: skip
        return get_model(p.id, tail)  # raises with close matches
    matches = [m for (_, mid), m in index.by_key.items() if mid == spec]
    if len(matches) == 1:
        return _env_base_url(matches[0])
    if matches:
        names = ", ".join(f"{m.provider}/{m.id}" for m in matches)
        raise ConfigurationError(f"{spec!r} is listed by several providers; pick one of {names}")
    every = [f"{p}/{mid}" for (p, mid) in index.by_key]
    close = _close(spec, every)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigurationError(
        f"unknown model {spec!r}: give it as provider/model{hint} "
        f"(providers: {', '.join(index.providers)})"
    )


def as_model(model: object, base_url: str | None = None, where: str = "model") -> Model:
    """``model`` as a :class:`Model`: a ``Model`` as it is, or a ``"provider/model-id"``
    string looked up like :func:`resolve_model`; ``base_url`` replaces its address.

    An id the catalog does not list becomes a ``Model`` of the provider's wire API
    when ``base_url`` is given (a fine-tune, a new model, a gateway); without it the
    error lists close matches. ``where`` names the value in the error for any other type.
    """
    if base_url is not None:
        if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
            raise ConfigurationError(
                f"base_url must be an http(s):// URL, got {redact_url(str(base_url))!r}"
            )
        base_url = base_url.rstrip("/")
    if isinstance(model, Model):
        return model if base_url is None else msgspec.structs.replace(model, base_url=base_url)
    if not isinstance(model, str):
        raise ConfigurationError(
            f'{where} must be a modelwire.Model or a "provider/model-id" string, '
            f"got {type(model).__name__}"
        )
    try:
        found = resolve_model(model)
    except ConfigurationError:
        head, sep, tail = model.strip().partition("/")
        index = _load()
        p = index.providers.get(index.aliases.get(head.lower(), head.lower()))
        if base_url is None or not sep or not tail or p is None:
            raise
        api = p.template.api if p.template is not None else p.models[0].api
        return Model(id=tail, api=api, provider=p.id, base_url=base_url, name=tail)
    return found if base_url is None else msgspec.structs.replace(found, base_url=base_url)


def env_vars(provider: str) -> tuple[str, ...]:
    """The API-key variables read for ``provider`` (first set wins); ``()`` for local
    servers and unknown providers, which send no auth header without a key."""
    from ._records import env_keys

    return env_keys().get(provider, ())


# --------------------------------------------------------------------------- reasoning


def reasoning_levels(model: Model) -> tuple[str, ...]:
    """The reasoning levels ``model`` accepts.

    ``()`` for a model without reasoning, and for a catalog model that reasons on
    its own and takes no level. A model the catalog does not list (matched by
    provider, id and api) accepts every level when ``model.reasoning`` is set.
    """
    if not model.reasoning:
        return ()
    entry = _load().entries.get((model.provider, model.id))
    if entry is None or entry.api != model.api or entry.reasoning_levels is None:
        return REASONING_LEVELS
    return tuple(entry.reasoning_levels)


def clamp_reasoning(
    model: Model, level: str | None, *, levels: Iterable[str] | None = None
) -> str | None:
    """The level to send for a requested ``level``; ``None`` means send none.

    * ``level=None`` → ``None``.
    * ``model.reasoning`` false → ``ConfigurationError`` (the model has no reasoning).
    * A level the model accepts → itself; one it lacks → the nearest it accepts in
      ``minimal < low < medium < high < xhigh`` order, a tie going to the lower
      (cheaper) one: ``xhigh`` → ``high`` on a model topping out at ``high``,
      ``medium`` → ``low`` on a low/high model.
    * A model that reasons on its own and takes no level (empty list) → ``None``.

    ``levels`` overrides the catalog's list (e.g. for a model built by hand).
    Adapters map the returned level to their API (effort, budget, thinking level).
    """
    if level is None:
        return None
    if level not in REASONING_LEVELS:
        raise ConfigurationError(
            f"reasoning must be one of {', '.join(REASONING_LEVELS)} or None, got {level!r}"
        )
    if not model.reasoning:
        raise ConfigurationError(
            f"model {model.provider}/{model.id} does not support a reasoning level "
            "(Model.reasoning is False); pass reasoning=None"
        )
    accepted = tuple(levels) if levels is not None else reasoning_levels(model)
    unknown = [lv for lv in accepted if lv not in REASONING_LEVELS]
    if unknown:
        raise ConfigurationError(f"unknown reasoning level(s) {unknown} in levels")
    if not accepted:
        return None
    if level in accepted:
        return level
    want = REASONING_LEVELS.index(level)
    # min() keeps the first of equal distances; sorted ascending, that is the lower level.
    ordered = sorted(accepted, key=REASONING_LEVELS.index)
    return min(ordered, key=lambda lv: abs(REASONING_LEVELS.index(lv) - want))


# --------------------------------------------------------------------------- overflow

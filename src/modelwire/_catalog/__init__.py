"""The model catalog: where each known model lives, what it costs, what it accepts.

The data is ``modelwire/data/models.json``, shipped in the wheel and read lazily
on first use (never at ``import modelwire``); nothing is fetched at import or at
run time. ``scripts/regenerate_catalog.py`` validates and normalises that file
offline.

Public surface (``mw.models``, ``mw.get_model`` and the helpers below):

* :func:`models` / :func:`get_model` / :func:`resolve_model` (the one resolution rule) — catalog entries as
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

import os
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit

import msgspec

from .._redact import redact_url
from .._wire.request import REASONING_LEVELS
from ..errors import ConfigurationError
from ..types import Model, ModelCost
from ._schema import CatalogFile, ModelEntry, ProviderEntry, read_packaged
from ._schema import TemplateEntry as TemplateEntry  # re-exported: a public name of this module
from ._validate import INPUT_KINDS, dump_catalog, is_loopback, validate_catalog

__all__ = [
    "BASE_URL_ENV",
    "INPUT_KINDS",
    "LOCAL",
    "UNLISTED_MAX_TOKENS",
    "CatalogFile",
    "ModelEntry",
    "ProviderEntry",
    "as_model",
    "clamp_reasoning",
    "default_api",
    "dump_catalog",
    "env_base_url",
    "env_vars",
    "get_model",
    "is_loopback",
    "load_catalog",
    "models",
    "other_apis",
    "providers",
    "reasoning_levels",
    "resolve_model",
    "validate_catalog",
]


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

    Args:
        provider: A provider name (``"anthropic"``, ``"openai"``…); ``None``: every
            provider's.

    Returns:
        The models, each with its API, limits and prices.

    Raises:
        ConfigurationError: An unknown provider.

    Example:
        ```python
        import modelwire as mw

        for model in mw.models("anthropic")[:3]:
            print(model.id, model.context_window, model.cost.input)
        ```
    """
    index = _load()
    if provider is None:
        return [m for ms in index.models.values() for m in ms]
    return list(index.models[_provider(provider).id])


def get_model(provider: str, model_id: str) -> Model:
    """The catalog entry for ``provider`` and ``model_id``.

    Unknown names raise ``ConfigurationError`` listing close matches (and the
    providers that do list ``model_id``, when it is filed elsewhere). For an id the
    catalog does not list, build a :class:`~modelwire.Model` or pass the
    ``"provider/model-id"`` string to a call.

    Args:
        provider: The provider name (``"anthropic"``, ``"openai"``…).
        model_id: The model id as the provider spells it.

    Returns:
        The :class:`~modelwire.Model`: its wire API, base URL, limits and prices.

    Raises:
        ConfigurationError: An unknown provider or model id.

    Example:
        ```python
        import modelwire as mw

        model = mw.get_model("anthropic", mw.models("anthropic")[0].id)
        print(model.api)  # anthropic-messages
        ```
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


def env_vars(provider: str) -> tuple[str, ...]:
    """The API-key variables read for ``provider`` (first set wins); ``()`` for local
    servers and unknown providers, which send no auth header without a key."""
    from ._records import env_keys

    return env_keys().get(provider, ())


# --------------------------------------------------------------------------- resolution

#: The base-URL variables the official SDKs read, and the version segment their value
#: lacks: OPENAI_BASE_URL includes ``/v1`` (openai-python); ANTHROPIC_BASE_URL is the
#: server root (anthropic-sdk-python appends ``/v1/messages``); GOOGLE_GEMINI_BASE_URL
#: too (google-genai appends the API version). DESIGN §2b. ``local/<id>`` is a model of
#: the compatible API (Chat Completions), so it reads that SDK's variable.
BASE_URL_ENV: dict[str, tuple[str, str]] = {
    "openai": ("OPENAI_BASE_URL", ""),
    "local": ("OPENAI_BASE_URL", ""),
    "anthropic": ("ANTHROPIC_BASE_URL", "/v1"),
    "google": ("GOOGLE_GEMINI_BASE_URL", "/v1beta"),
}

#: The provider of ``local/<id>``: any server, reached through the catalog's
#: ``compatible_api``.
LOCAL = "local"

#: The output cap (``Model.max_tokens``, sent when the call gives no ``max_tokens``) of
#: a model the catalog does not list, resolved from a ``"provider/id"`` string: enough
#: for an answer, and a bound on a small model that loops.
UNLISTED_MAX_TOKENS = 4096


def env_base_url(provider: str) -> tuple[str | None, str]:
    """The address ``provider``'s base-URL variable names (:data:`BASE_URL_ENV`, its
    version segment added), and the variable; ``(None, var)`` when it is not set."""
    var, version = BASE_URL_ENV.get(provider, ("", ""))
    url = os.environ.get(var, "").strip().rstrip("/") if var else ""
    if not url:
        return None, var
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        raise ConfigurationError(f"{var} must be an http(s) URL, got {redact_url(url)!r}")
    if version and not url.endswith(version):
        url += version
    return url, var


def _env_base_url(m: Model) -> Model:
    """``m`` at the address its provider's base-URL variable names, if one is set."""
    url, _ = env_base_url(m.provider)
    return m if url is None else msgspec.structs.replace(m, base_url=url)


def default_api(provider: str, base_url: str) -> str:
    """The wire API of an id the catalog does not list for ``provider``, at ``base_url``.

    A local provider's template API; else the one API its catalog models speak. A
    provider with two (OpenAI, Azure OpenAI: Responses and Chat Completions) gets the
    API most of its models use at its own host (``api.openai.com``: Responses) and Chat
    Completions anywhere else, the endpoint compatible servers serve
    (https://platform.openai.com/docs/api-reference/chat). An unknown provider: Chat
    Completions."""
    index = _load()
    compatible = index.file.compatible_api
    p = index.providers.get(provider)
    if p is None:
        return compatible
    if p.template is not None:
        return p.template.api
    apis = [m.api for m in p.models]
    if not apis:
        return compatible
    own = {urlsplit(m.base_url).hostname for m in p.models}
    if len(set(apis)) > 1 and compatible in apis and urlsplit(base_url).hostname not in own:
        return compatible
    return max(dict.fromkeys(apis), key=apis.count)


def other_apis(model: Model) -> tuple[str, ...]:
    """For a 404 from ``model``'s endpoint: the other APIs its server may serve instead.

    Only for a server of the user's own (its provider's models speak more than one API
    and ``model`` is away from their hosts, as ``openai/<id>`` at a vLLM or llama.cpp
    address; or ``local/<id>``, a local provider, one the catalog does not know): the
    provider's other APIs, and the compatible API. ``()`` for a hosted provider at its
    own address, whose endpoints are known."""
    index = _load()
    p = index.providers.get(model.provider)
    apis = dict.fromkeys(m.api for m in p.models) if p is not None else {}
    own = {urlsplit(m.base_url).hostname for m in p.models} if p is not None else set()
    if (
        p is not None
        and not p.local
        and (len(apis) < 2 or urlsplit(model.base_url).hostname in own)
    ):
        return ()
    others = [*apis, index.file.compatible_api]
    return tuple(a for a in dict.fromkeys(others) if a != model.api)


def _checked_url(base_url: object) -> str:
    if not isinstance(base_url, str) or urlsplit(base_url).scheme not in ("http", "https"):
        raise ConfigurationError(
            f"base_url must be an http(s):// URL, got {redact_url(str(base_url))!r}"
        )
    return base_url.rstrip("/")


def resolve_model(spec: str, base_url: str | None = None, *, api: str | None = None) -> Model:
    """A model from a ``"provider/model"`` string: the one rule of the library (``mw.stream``,
    ``mw.Agent``, ``mw.batch``) and the CLI (``-m``) alike.

    The provider is the part before the first ``/`` (model ids may contain ``/``,
    e.g. ``openrouter/anthropic/claude-sonnet-4.5``); aliases such as ``dashscope`` or
    ``gemini`` are accepted. A bare model id resolves when exactly one provider lists it.
    The address is ``base_url``, else the provider's base-URL variable
    (:data:`BASE_URL_ENV`: ``OPENAI_BASE_URL``…), else the catalog's.

    * A catalog entry keeps its API, limits and prices; only the address changes.
    * A local provider (ollama, vllm, lmstudio) takes any id, with its template.
    * Any other id the catalog does not list, given with an address, is a model of the
      provider's default API (:func:`default_api`: Chat Completions at an address
      that is not OpenAI's own); ``local/<id>`` is a model of the compatible API and
      needs an address. Without one the error lists close matches.

    ``api`` replaces the wire API (the CLI's ``--api``). An unlisted id's output cap
    is :data:`UNLISTED_MAX_TOKENS`.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigurationError('a model is given as "provider/model", e.g. "openai/gpt-4.1-mini"')
    spec = spec.strip()
    if base_url is not None:
        base_url = _checked_url(base_url)
    index = _load()
    head, sep, tail = spec.partition("/")
    provider = index.aliases.get(head.lower(), head.lower())
    if sep and not tail:
        raise ConfigurationError(f"{spec!r} names no model after the provider")
    found: Model | None = None
    url, var = (base_url, "base_url=") if base_url is not None or not sep else (
        env_base_url(provider))  # fmt: skip
    if sep and provider in index.providers:
        p = index.providers[provider]
        found = index.by_key.get((p.id, tail))
        if found is None and p.local and p.template is not None:
            t = p.template
            found = Model(id=tail, api=t.api, provider=p.id, base_url=url or t.base_url, name=tail,
                          context_window=t.context_window, max_tokens=t.max_tokens)  # fmt: skip
        elif found is None and url is None:
            try:
                get_model(p.id, tail)  # raises with close matches
            except ConfigurationError as exc:
                where = f"base_url= or {var}" if var else "base_url="
                raise ConfigurationError(
                    f"{exc}; an id the catalog does not list needs its server's address ({where})"
                ) from None
        elif found is None:
            found = Model(id=tail, api=default_api(p.id, url or ""), provider=p.id,
                          base_url=url or "", name=tail, max_tokens=UNLISTED_MAX_TOKENS)  # fmt: skip
    elif sep and provider == LOCAL:
        if url is None:
            raise ConfigurationError(
                f"{spec!r} is a model of a server of your own (OpenAI Chat Completions): give "
                "its address with base_url='http://127.0.0.1:8000/v1' (CLI: --base-url) or "
                f"set {var}"
            )
        found = Model(id=tail, api=index.file.compatible_api, provider=LOCAL, base_url=url, name=tail,
                      max_tokens=UNLISTED_MAX_TOKENS)  # fmt: skip
    else:
        matches = [m for (_, mid), m in index.by_key.items() if mid == spec]
        if len(matches) > 1:
            names = ", ".join(f"{m.provider}/{m.id}" for m in matches)
            raise ConfigurationError(
                f"{spec!r} is listed by several providers; pick one of {names}"
            )
        if not matches and sep and url is not None:
            # A provider of the user's own: any server, through the compatible API.
            return Model(id=tail, api=api or index.file.compatible_api, provider=head, base_url=url,
                         name=tail, max_tokens=UNLISTED_MAX_TOKENS)  # fmt: skip
        if not matches:
            every = [f"{p}/{mid}" for (p, mid) in index.by_key]
            close = _close(spec, every)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ConfigurationError(
                f"unknown model {spec!r}: give it as provider/model{hint} "
                f"(providers: {', '.join(index.providers)})"
            )
        found = matches[0]
        url = url if url is not None else env_base_url(found.provider)[0]
    assert found is not None
    if url is not None and found.base_url != url:
        found = msgspec.structs.replace(found, base_url=url)
    if api is not None and api != found.api:
        found = msgspec.structs.replace(found, api=api)
    return found


def as_model(model: object, base_url: str | None = None, where: str = "model") -> Model:
    """``model`` as a :class:`Model`: a ``Model`` as it is, or a ``"provider/model-id"``
    string resolved by :func:`resolve_model`; ``base_url`` replaces its address.
    ``where`` names the value in the error for any other type."""
    if base_url is not None:
        base_url = _checked_url(base_url)
    if isinstance(model, Model):
        return model if base_url is None else msgspec.structs.replace(model, base_url=base_url)
    if not isinstance(model, str):
        raise ConfigurationError(
            f'{where} must be a modelwire.Model or a "provider/model-id" string, '
            f"got {type(model).__name__}"
        )
    return resolve_model(model, base_url)


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

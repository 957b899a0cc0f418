"""The provider tables, derived from the provider records of the catalog data.

Each provider has one record in ``modelwire/data/models.json``
(:class:`~modelwire._catalog._schema.ProviderEntry`): key variables, whether the key
is optional, compat defaults per wire API, tool-call id rules, the texts of its
context-overflow errors and its status quirks. Every table the code consults is
built from those records here, once, on first use (never at ``import modelwire``),
and handed out read-only: a provider is added by adding its record, not by editing
a table in the code.

A model's record is found by its ``provider`` (or an alias of it), else by a host
of a record appearing in its ``base_url`` (an OpenAI-compatible server under
another provider name still gets its server's compat).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from ..types import Capabilities

if TYPE_CHECKING:
    from ..types import Model
    from ._schema import CatalogFile, IdRuleEntry, ProviderEntry

T = TypeVar("T")

__all__ = [
    "ENV_KEYS",
    "capabilities_said",
    "compat_defaults",
    "derived",
    "env_keys",
    "key_optional",
    "overflow_texts",
    "provider_record",
    "record_for",
    "status_quirk_kind",
    "tool_id_override",
]


class _Tables:
    """Everything derived from the records, built once."""

    def __init__(self, cat: CatalogFile) -> None:
        by_name: dict[str, ProviderEntry] = {}
        for p in cat.providers:
            for name in (p.id, *p.aliases):
                by_name[name] = p
        self.by_name: Mapping[str, ProviderEntry] = MappingProxyType(by_name)
        self.env: Mapping[str, tuple[str, ...]] = MappingProxyType(
            {name: p.env for name, p in by_name.items() if p.env}
        )
        self.key_optional = frozenset(name for name, p in by_name.items() if p.key_optional)
        self.hosts = tuple((h.lower(), p) for p in cat.providers for h in p.hosts)
        self.overflow = tuple(dict.fromkeys(t for p in cat.providers for t in p.overflow))
        self.quirks = tuple(
            (q.status, re.compile(q.match, re.I), q.kind)
            for p in cat.providers
            for q in p.status_quirks
        )
        # What a lookup found, by (provider, base_url) and by the key of a value
        # derived from a record: computed once per process for a model used on
        # every call, replaced with these tables. Bounded (cleared when full), so
        # base URLs that vary call by call cannot grow it.
        self.found: dict[tuple[str, str], ProviderEntry | None] = {}
        self.derived: dict[tuple[Any, ...], Any] = {}


#: Entries each cache of :class:`_Tables` holds before it is cleared.
_CACHE_ENTRIES = 256


_lock = threading.Lock()
_tables: _Tables | None = None


def _get() -> _Tables:
    global _tables
    found = _tables
    if found is None:
        from ._schema import packaged_catalog

        with _lock:
            found = _tables
            if found is None:
                found = _tables = _Tables(packaged_catalog())
    return found


def provider_record(name: str) -> ProviderEntry | None:
    """The record of provider ``name`` (its id or an alias), or ``None``."""
    return _get().by_name.get(name)


def record_for(model: Model) -> ProviderEntry | None:
    """The record whose rules apply to ``model``: its provider's, else the first
    record one of whose hosts appears in ``model.base_url``."""
    tables = _get()
    key = (model.provider, model.base_url)
    try:
        return tables.found[key]
    except KeyError:
        pass
    found = tables.by_name.get(model.provider.lower())
    if found is None:
        url = model.base_url.lower()
        found = next((p for host, p in tables.hosts if host in url), None)
    if len(tables.found) >= _CACHE_ENTRIES:
        tables.found.clear()
    tables.found[key] = found
    return found


def derived(key: tuple[Any, ...], build: Callable[[], T]) -> T:
    """``build()``, a value derived from the records alone and ``key`` (which must
    say everything it depends on), computed once per key for these tables."""
    cache = _get().derived
    try:
        out: T = cache[key]
        return out
    except KeyError:
        pass
    value = build()
    if len(cache) >= _CACHE_ENTRIES:
        cache.clear()
    cache[key] = value
    return value


def env_keys() -> Mapping[str, tuple[str, ...]]:
    """Provider name (ids and aliases) → its API-key variables, first set wins.
    Providers without one (local servers) are absent: they send no auth header."""
    return _get().env


def key_optional(provider: str) -> bool:
    """Whether ``provider`` works without a key (its rules supply credentials)."""
    return provider in _get().key_optional


def compat_defaults(model: Model, api: str) -> dict[str, Any]:
    """The compat flags ``model``'s provider record sets for wire API ``api``
    (a new dict; ``Model.compat`` is applied on top by the API)."""
    record = record_for(model)
    if record is None:
        return {}
    out = dict((record.compat or {}).get(api, {}))
    if model.reasoning:
        out.update((record.reasoning_compat or {}).get(api, {}))
    return out


def capabilities_said(model: Model) -> Capabilities:
    """What the catalog says ``model`` supports: its provider record's capabilities
    for ``model.api``, under the listed model's own (matched by provider, id and api)."""
    record = record_for(model)
    if record is None:
        return _NOTHING
    said = (record.capabilities or {}).get(model.api, _NOTHING)
    entry = next((m for m in record.models if m.id == model.id and m.api == model.api), None)
    if entry is not None and entry.capabilities is not None:
        said = entry.capabilities.over(said)
    return said


_NOTHING = Capabilities()


def tool_id_override(model: Model, api: str) -> IdRuleEntry | None:
    """The tool-call id rule ``model``'s provider imposes on wire API ``api``, where
    it is stricter than the API's own; ``None`` when it imposes none."""
    record = record_for(model)
    return (record.tool_ids or {}).get(api) if record is not None else None


def overflow_texts() -> tuple[str, ...]:
    """Every record's own wording (regular expressions) for a prompt that does not
    fit. An error text does not say who sent it, so all of them are searched."""
    return _get().overflow


def status_quirk_kind(status: int, text: str) -> str | None:
    """The error kind a provider's status quirk gives ``status`` with error body
    ``text`` (Gemini's 400 ``API_KEY_INVALID`` is ``authentication``), or ``None``."""
    for want, pattern, kind in _get().quirks:
        if want == status and pattern.search(text):
            return kind
    return None


class _EnvKeys(Mapping[str, tuple[str, ...]]):
    """Provider → API-key variables, read from the provider records of the catalog
    data on first use (:func:`env_keys`). Read-only."""

    __slots__ = ()

    def _table(self) -> Mapping[str, tuple[str, ...]]:
        return env_keys()

    def __getitem__(self, name: str) -> tuple[str, ...]:
        return self._table()[name]

    def get(self, name: str, default: Any = None) -> Any:  # once per call: no detour via []
        return self._table().get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return f"ENV_KEYS({dict(self._table())!r})"


#: API-key environment variables per provider, first set wins (DESIGN §2a: a provider
#: with no known variable and no key sends no auth header, for local servers).
ENV_KEYS: Mapping[str, tuple[str, ...]] = _EnvKeys()

"""The catalog data file's checks beyond its types, and its canonical text.

:func:`validate_catalog` is what reading the packaged file runs (and
``scripts/regenerate_catalog.py`` before writing it): known ``api`` names, URL rules
(``https``, ``http`` only on loopback), positive limits, unique names, a template
for, and only for, local providers. :func:`dump_catalog` writes the file back.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

import msgspec

from .._redact import redact_url
from .._wire.request import REASONING_LEVELS
from ..errors import ConfigurationError
from ..types._model import INPUT_KINDS as MODEL_INPUT_KINDS
from ._schema import CatalogFile, ModelEntry, PriceEntry, ProviderEntry, _decoder

__all__ = ["INPUT_KINDS", "dump_catalog", "is_loopback", "validate_catalog"]

#: Input kinds a model may accept: the ones ``Model.input`` knows.
INPUT_KINDS: frozenset[str] = MODEL_INPUT_KINDS


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
    if cat.compatible_api not in apis:
        raise ConfigurationError(f"compatible_api {cat.compatible_api!r} is not one of apis")
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
        _check_embedding(p, where, apis)
    return cat


def _check_embedding(p: ProviderEntry, where: str, apis: frozenset[str]) -> None:
    ids: set[str] = set()
    for j, e in enumerate(p.embedding_models):
        ewhere = f"{where}.embedding_models[{j}] ({e.id})"
        if e.id in ids:
            raise ConfigurationError(f"{ewhere}: duplicate embedding model id for {p.id!r}")
        ids.add(e.id)
        if e.api not in apis:
            raise ConfigurationError(f"{ewhere}.api {e.api!r} is unknown")
        _check_url(e.base_url, f"{ewhere}.base_url", local=p.local)
        _check_positive(e.dimensions, f"{ewhere}.dimensions")
        _check_positive(e.max_input_tokens, f"{ewhere}.max_input_tokens")
        if not e.cost >= 0:
            raise ConfigurationError(f"{ewhere}.cost must be a non-negative price")


_dump_encoder = msgspec.json.Encoder(order="deterministic")  # dict keys sorted


def dump_catalog(cat: CatalogFile) -> bytes:
    """The canonical text of the data file: keys in schema order (free-form dicts
    such as ``compat`` sorted), two-space indentation, defaults omitted, a final
    newline (what ``scripts/regenerate_catalog.py`` writes)."""
    return msgspec.json.format(_dump_encoder.encode(cat), indent=2) + b"\n"

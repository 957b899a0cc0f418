"""Embedding models in the catalog (each provider's ``embedding_models``): what
``mw.embed`` resolves ``"provider/model-id"`` against, and where their prices and
vector sizes come from.

They are kept apart from the chat models: ``mw.models()`` and ``mw.complete`` never
see them. An id not listed here falls back to the ordinary rule
(:func:`~modelwire._catalog.resolve_model`: a local provider's any id, an unlisted id
at an address), priced at the model's ``cost.input``.
"""

from __future__ import annotations

import functools

import msgspec

from ..errors import ConfigurationError
from ..types import Model, ModelCost
from ._schema import EmbeddingEntry

__all__ = ["embedding_entry", "embedding_models", "resolve_embedding_model"]


@functools.cache
def _entries() -> dict[tuple[str, str], EmbeddingEntry]:
    from . import load_catalog

    cat = load_catalog()
    return {(p.id, e.id): e for p in cat.providers for e in p.embedding_models}


@functools.cache
def _aliases() -> dict[str, str]:
    from . import load_catalog

    return {a: p.id for p in load_catalog().providers for a in p.aliases}


def embedding_entry(provider: str, model_id: str) -> EmbeddingEntry | None:
    """The catalog's entry for an embedding model (``None``: not listed)."""
    return _entries().get((_aliases().get(provider, provider), model_id))


def _to_model(provider: str, e: EmbeddingEntry) -> Model:
    return Model(id=e.id, api=e.api, provider=provider, base_url=e.base_url, name=e.name,
                 cost=ModelCost(input=e.cost), context_window=e.max_input_tokens,
                 max_tokens=1)  # fmt: skip


def embedding_models(provider: str | None = None) -> list[Model]:
    """The catalog's embedding models (of ``provider``), in catalog order; each
    ``cost.input`` is its price per million input tokens."""
    if provider is not None:
        provider = _aliases().get(provider.lower(), provider.lower())
    return [_to_model(p, e) for (p, _), e in _entries().items() if provider in (None, p)]


def resolve_embedding_model(spec: str, base_url: str | None = None) -> Model:
    """``"provider/model-id"`` (or an id one provider lists) as an embedding model; an
    id the catalog lists no embedding model for is resolved as any model is."""
    from . import _checked_url, env_base_url, resolve_model

    if not isinstance(spec, str) or not spec.strip():
        raise ConfigurationError('an embedding model is given as "provider/model-id", '
                                 'e.g. "openai/text-embedding-3-small"')  # fmt: skip
    head, sep, tail = spec.strip().partition("/")
    if sep:
        provider = _aliases().get(head.lower(), head.lower())
        entry = _entries().get((provider, tail))
    else:
        found = [(p, e) for (p, mid), e in _entries().items() if mid == head]
        if len(found) > 1:
            names = ", ".join(f"{p}/{e.id}" for p, e in found)
            raise ConfigurationError(
                f"{spec!r} is listed by several providers; pick one of {names}"
            )
        provider, entry = found[0] if found else ("", None)
    if entry is None:
        return resolve_model(spec, base_url)
    model = _to_model(provider, entry)
    url = _checked_url(base_url) if base_url is not None else env_base_url(provider)[0]
    return model if url is None else msgspec.structs.replace(model, base_url=url)

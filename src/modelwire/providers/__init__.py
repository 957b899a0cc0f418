"""Built-in provider rules (:class:`modelwire.apis.ProviderRules`), one module per
provider: provider ``google-vertex`` is ``modelwire.providers.google_vertex`` and
its ``RULES`` attribute is installed by :func:`modelwire.apis.provider_rules` the
first time a model of that provider is called. Nothing here is imported by
``import modelwire``; modules whose name starts with ``_`` are shared helpers."""

from __future__ import annotations

__all__: list[str] = []

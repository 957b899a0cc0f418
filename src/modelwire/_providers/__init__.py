"""Built-in provider rules (:class:`modelwire._apis.ProviderRules`), one module per
provider, found by name: the rules of provider ``amazon-bedrock`` are the ``RULES``
attribute of ``modelwire._providers.amazon_bedrock`` (``-`` becomes ``_``), as a wire
API's module is found by its name. :func:`modelwire._apis.provider_rules` imports the
module the first time a model of that provider is used, so ``import modelwire``
stays cheap and a user needs no ``register_provider`` call; ``register_provider``
still wins over a built-in module. Modules whose name starts with ``_`` are shared
helpers (``_vertex`` serves ``google-vertex`` and ``vertex-anthropic``)."""

from __future__ import annotations

__all__: list[str] = []

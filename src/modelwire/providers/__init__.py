"""Built-in provider rules, one module per provider, found by name.

The rules of provider ``amazon-bedrock`` are the ``RULES`` attribute of
``modelwire.providers.amazon_bedrock`` (``-`` becomes ``_``), as a wire API's
module is found by its name. :func:`modelwire.apis.provider_rules` imports the
module the first time a model of that provider is used, so ``import modelwire``
stays cheap and a user needs no ``register_provider`` call;
``register_provider`` still wins over a built-in module.
"""

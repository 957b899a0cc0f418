"""What extenders of modelwire import: the seams for a new provider.

* :class:`ProviderRules` — a provider's own URL, auth, body and request-time
  credentials on top of any wire API; subclass it and override the hooks you need.
* :func:`register_provider` — install rules for every model of one ``provider``
  name (it wins over a built-in provider's rules).

The client applies the rules to the request any wire API built, the built-in ones
and those registered at run time alike.
"""

from __future__ import annotations

from ._providers import ProviderRules, register_provider

__all__ = ["ProviderRules", "register_provider"]

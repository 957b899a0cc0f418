"""The proxy the environment names for a request, read as httpx reads it
(``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``): what the aiohttp
transport goes through, and what the httptools one refuses to bypass."""

from __future__ import annotations

import os
import urllib.request

__all__ = ["env_proxy_url"]

#: The environment variables naming a proxy for a scheme, the lowercase one first
#: (it wins, as in ``urllib.request.getproxies_environment``), then ``ALL_PROXY``.
_PROXY_NAMES = {
    scheme: (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY")
    for scheme in ("http", "https")
}


def env_proxy_url(scheme: str, host: str | None) -> str | None:
    """The proxy URL the environment names for a request to ``host`` over ``scheme``
    (its scheme's variable, else ``ALL_PROXY``), or ``None``: none set, or ``host``
    excluded by ``NO_PROXY``."""
    # ``urllib.request.getproxies_environment`` decodes the whole environment on every
    # call (about 100 µs, once per request): only the names that matter for this
    # scheme are read.
    env = os.environ
    found = None
    for name in _PROXY_NAMES.get(scheme, ("all_proxy", "ALL_PROXY")):
        found = env.get(name)
        if found:
            break
    if not found:
        return None
    # ``NO_PROXY`` (on Linux ``proxy_bypass`` reads only the environment; asked only
    # when a proxy is set, so the full environment scan is paid only then).
    if host and urllib.request.proxy_bypass(host):
        return None
    return found

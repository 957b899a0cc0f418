"""What a 404 says beyond the server's own message: where the request should have gone.

Built here, where the model's API is known by name (the registry and the catalog data
are read only when a 404 comes back), and handed to the call as
:class:`~modelwire._call._flow.Leg`'s ``not_found_hint``. Two causes are common with
servers of the user's own: a base URL without the API's version segment
(``http://127.0.0.1:8080`` for ``…/v1``), and a compatible server that serves one of
OpenAI's two endpoints only (``/chat/completions`` but not ``/responses``).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from .._redact import display_url, split_userinfo
from ..types import Model

__all__ = ["not_found_hint"]

# A path segment that is an API version (``v1``, ``v1beta``, ``v2alpha``).
_VERSION = re.compile(r"v\d+[a-z0-9]*", re.I)


def not_found_hint(model: Model, url: str, secrets: tuple[str, ...] = ()) -> str | None:
    """The hints for a 404 from ``url``, the request of ``model``; ``None`` when none applies."""
    hints = [h for h in (_version_hint(model, url, secrets), _endpoint_hint(model)) if h]
    return "; ".join(hints) or None


def _version_hint(model: Model, url: str, secrets: tuple[str, ...]) -> str | None:
    """When ``model.base_url`` has no version segment in its path but its API expects
    one (``…/v1`` + ``/chat/completions``, DESIGN §2), the base URL to try. ``None`` for
    a URL the provider built its own way (Azure deployments, Vertex AI), or when the
    base URL names some version already."""
    from .._apis import find_server

    server = find_server(model.api)
    segment = server.version_segment if server is not None else ""
    base = split_userinfo(model.base_url)[0].rstrip("/")  # sent as Basic auth instead
    if not segment or not base or not url.startswith(base + "/"):
        return None
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if any(_VERSION.fullmatch(part) for part in parts.path.split("/")):
        return None
    fixed = urlunsplit(parts._replace(path=parts.path.rstrip("/") + segment))
    return (
        f"the base_url {display_url(base, secrets)} has no {segment} in its path, where "
        f"{model.api} servers usually serve the API: try base_url="
        f"{display_url(fixed, secrets)!r}"
    )


def _endpoint_hint(model: Model) -> str | None:
    """For a server of the user's own: the other endpoint it may serve instead
    (:func:`~modelwire._catalog.other_apis`), and how to reach it."""
    from .._apis import find_api
    from .._catalog import other_apis

    root = urlsplit(model.base_url).path.rstrip("/")
    for other in other_apis(model):
        codec = find_api(other)
        if codec is not None:
            endpoint = codec.path(model.id).split("?", 1)[0]
            return (f"this server may serve only {root}{endpoint}: use api={other!r} "
                    f"(mw.Model, --api) or the model 'local/{model.id}'")  # fmt: skip
    return None

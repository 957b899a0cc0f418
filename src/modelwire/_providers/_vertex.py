"""Google Vertex AI: Gemini (``google-vertex``) and Claude (``vertex-anthropic``).

Both reuse an existing wire API unchanged; only the URL, the credentials and (for
Claude) the body differ. These rules run when a call is prepared
(:func:`modelwire._providers.apply_provider_rules`), so the environment and the
credentials file below are read there, never by the wire API's pure
``build_request``. The endpoints (Vertex AI REST reference,
``projects.locations.publishers.models``)::

    {base_url}/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse
    {base_url}/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:streamRawPredict

``base_url`` is the API root with its version, ``https://aiplatform.googleapis.com/v1``
in the catalog. Project and location, first found:

1. the ``base_url`` itself when it names them (``…/v1/projects/p/locations/l``);
2. ``GOOGLE_CLOUD_PROJECT``; ``GOOGLE_CLOUD_LOCATION``, then ``CLOUD_ML_REGION``
   (as google-genai and the anthropic SDK's ``AnthropicVertex`` read them);
3. the project the ``GOOGLE_APPLICATION_CREDENTIALS`` file names; location
   ``global`` when none is set.

A regional location on Google's host moves the request to
``{location}-aiplatform.googleapis.com`` (``global`` stays on
``aiplatform.googleapis.com``); any other host (a proxy, the mock server) is kept.

Credentials, first found (modelwire.cloud.google):

* ``api_key=`` (or ``GOOGLE_CLOUD_API_KEY`` for Gemini): an OAuth access token
  (Google's start ``ya29.``) is sent as ``Authorization: Bearer``; anything else
  is an API key, sent as ``x-goog-api-key`` — never as ``?key=``, which would put
  it in every logged URL. A key without a project uses express mode's endpoint,
  which names neither project nor location (``/v1/publishers/google/models/…``).
  Claude on Vertex takes no API key (``rawPredict`` needs OAuth): its ``api_key``
  is always a bearer token.
* an ``Authorization`` header in ``Model.headers`` or ``headers=``, sent as is;
* else Application Default Credentials (``modelwire[vertex]``): a
  :class:`~modelwire.cloud.google.VertexAuth` made when the first request is sent
  (loading ADC may probe the metadata server: never before iteration), kept per
  ``GOOGLE_APPLICATION_CREDENTIALS`` so its token is cached and refreshed across
  calls. Its failure ends the stream with ``authentication``, nothing sent.

Claude's body (Anthropic "Claude on Vertex AI" docs; the anthropic SDK's
``AnthropicVertex`` does the same): ``anthropic_version: vertex-2023-10-16`` and
no ``model`` field — the model is in the URL.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .._catalog._records import ENV_KEYS
from .._url import path_segment
from ..errors import ConfigurationError, MissingAPIKeyError
from . import ProviderRules

if TYPE_CHECKING:
    from .._wire.request import RequestOptions
    from ..cloud.google import VertexAuth
    from ..types import Model

__all__ = [
    "ANTHROPIC_RULES",
    "ANTHROPIC_VERSION",
    "GEMINI_RULES",
    "GOOGLE_HOST",
    "VertexRules",
    "vertex_location",
]

#: The ``anthropic_version`` a Vertex AI Claude request carries in its body.
ANTHROPIC_VERSION = "vertex-2023-10-16"
#: Google's global Vertex AI host; a regional location gets ``{location}-`` in front.
GOOGLE_HOST = "aiplatform.googleapis.com"
# ``…/projects/{p}/locations/{l}`` in a base_url, and whatever follows it.
_SCOPED = re.compile(r"/projects/([^/]+)/locations/([^/]+)(?:/.*)?\Z", re.S)


def vertex_location(model: Model) -> tuple[str | None, str]:
    """``(project, location)`` for ``model``: from its ``base_url``, else the
    environment; the location defaults to ``global``. ``project`` is ``None`` when
    nothing names one (an API key then uses express mode)."""
    from ..cloud.google import LOCATION_ENVS, PROJECT_ENVS, resolve_location, resolve_project

    found = _SCOPED.search(urlsplit(model.url_root).path)
    if found is not None:
        return resolve_project(found.group(1)), resolve_location(found.group(2))
    project = resolve_project() if _set(PROJECT_ENVS) else _key_file_project()
    location = resolve_location() if _set(LOCATION_ENVS) else "global"
    return project, location


def _key_file_project() -> str | None:
    """The project the ``GOOGLE_APPLICATION_CREDENTIALS`` file names (``project_id``
    of a service-account key, ``quota_project_id`` of user credentials), as
    ``google.auth.default()`` reports it — read from the local file only, without
    loading the credentials, because the URL is built before any I/O."""
    from ..cloud.google import resolve_project

    path = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS", "").strip()
    if not path:
        return None
    try:
        info = json.loads(Path(path).read_bytes())
    except (OSError, ValueError):
        return None  # loading the credentials will say what is wrong with the file
    found = (
        info.get("project_id") or info.get("quota_project_id") if isinstance(info, dict) else None
    )
    return resolve_project(found) if isinstance(found, str) and found else None


def _set(names: tuple[str, ...]) -> bool:
    return any(os.environ.get(n, "").strip() for n in names)


def _is_access_token(key: str) -> bool:
    # Google OAuth 2.0 access tokens start "ya29."; API keys start "AIza" or "AQ.".
    return key.startswith("ya29.")


def _has_authorization(model: Model, options: RequestOptions) -> bool:
    given = {**(model.headers or {}), **(options.headers or {})}
    return any(name.lower() == "authorization" for name in given)


def _no_project(model: Model) -> ConfigurationError:
    return ConfigurationError(
        f"no Google Cloud project for {model.provider}/{model.id}: set GOOGLE_CLOUD_PROJECT "
        "(and GOOGLE_CLOUD_LOCATION), or name them in base_url "
        "('https://aiplatform.googleapis.com/v1/projects/P/locations/L')"
    )


class _ADC:
    """Application Default Credentials, loaded when the first request is sent and
    kept per ``GOOGLE_APPLICATION_CREDENTIALS`` (one token cache for all calls)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._auths: dict[str | None, VertexAuth] = {}

    def get(self) -> VertexAuth:
        source = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        with self._lock:
            auth = self._auths.get(source)
            if auth is None:
                from ..cloud.google import VertexAuth

                auth = self._auths[source] = VertexAuth()
            return auth

    def clear(self) -> None:
        """Forget loaded credentials (tests; a rotated key file)."""
        with self._lock:
            self._auths.clear()

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        return self.get().authorize(method, url, headers, body)

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        import anyio.to_thread

        # Loading ADC reads files and may probe the metadata server: off the loop.
        auth = await anyio.to_thread.run_sync(self.get)
        return await auth.aauthorize(method, url, headers, body)


class VertexRules(ProviderRules):
    """:class:`~modelwire._providers.ProviderRules` for one Vertex AI publisher."""

    def __init__(self, *, publisher: str, method: str, api_keys: bool) -> None:
        self.publisher = publisher
        self.method = method
        #: Whether the endpoint takes an API key (Gemini) or only OAuth tokens (Claude).
        self.api_keys = api_keys
        self.adc = _ADC()

    def __repr__(self) -> str:
        return f"VertexRules(publisher={self.publisher!r})"

    def url(self, model: Model, api: str, default: str) -> str:
        project, location = vertex_location(model)
        parts = urlsplit(model.url_root)
        path = _SCOPED.sub("", parts.path)
        netloc = parts.netloc
        if parts.hostname == GOOGLE_HOST and location != "global":
            netloc = f"{location}-{GOOGLE_HOST}"
        if project is not None:
            # Both are checked against their formats (modelwire.cloud.google); encoded
            # too, as every value put into the path is.
            project = path_segment(project, "the Vertex AI project", safe=":")
            location = path_segment(location, "the Vertex AI location")
            path += f"/projects/{project}/locations/{location}"
        # else Vertex AI express mode: an API key and no project in the path. Whether
        # a key is sent is known only to authorizer(), which refuses anything else.
        # One segment; '@' is a pchar (RFC 3986 §3.3): claude-sonnet-4-5@20250929.
        model_id = path_segment(model.id, "the Vertex AI model id (Model.id)", safe="@")
        path += f"/publishers/{self.publisher}/models/{model_id}{self.method}"
        return urlunsplit((parts.scheme, netloc, path, "", ""))

    def auth(self, model: Model, api_key: str) -> Mapping[str, str] | None:
        if not self.api_keys or _is_access_token(api_key):
            return {"Authorization": f"Bearer {api_key}"}
        return {"x-goog-api-key": api_key}

    def authorizer(self, model: Model, options: RequestOptions) -> _ADC | None:
        # Runs in the request builder after url() and auth(), before any I/O: the
        # one hook that sees both the model and the options.
        if vertex_location(model)[0] is None:
            key = options.api_key
            if key and self.api_keys and not _is_access_token(key):
                return None  # express mode: an API key needs no project
            if key or _has_authorization(model, options):
                raise _no_project(model)
            names = ENV_KEYS.get(model.provider) or ("GOOGLE_CLOUD_ACCESS_TOKEN",)
            express = " (a Vertex API key: express mode)" if self.api_keys else ""
            raise MissingAPIKeyError(
                f"no credentials for {model.provider}/{model.id}: set {' or '.join(names)}"
                f"{express} or pass api_key=, or set GOOGLE_CLOUD_PROJECT to use "
                "Application Default Credentials",
                env_var=names[0],
            )
        if options.api_key or _has_authorization(model, options):
            return None
        return self.adc

    def body(self, model: Model, api: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.publisher != "anthropic":
            return body
        out = {"anthropic_version": ANTHROPIC_VERSION}
        out.update((k, v) for k, v in body.items() if k != "model")
        return out


GEMINI_RULES = VertexRules(
    publisher="google", method=":streamGenerateContent?alt=sse", api_keys=True
)
ANTHROPIC_RULES = VertexRules(publisher="anthropic", method=":streamRawPredict", api_keys=False)

"""Provider ``azure-openai``: Azure OpenAI on the ``openai-chat`` and
``openai-responses`` wire APIs, through the :class:`~modelwire._providers.ProviderRules`
seam (no adapter is edited for it).

Found by the provider naming rule (:func:`modelwire._providers.provider_module`): this
module is imported the first time a model of provider ``azure-openai`` builds a
request, never at ``import modelwire``.

URL (https://learn.microsoft.com/azure/ai-foundry/openai/reference): the
endpoint is ``Model.base_url`` (``https://<resource>.openai.azure.com``; the
catalog's placeholder ``https://YOUR-RESOURCE.openai.azure.com/openai/v1`` means
``AZURE_OPENAI_ENDPOINT``), the deployment is ``Model.id``. The API version is
an ``api-version`` query on ``base_url``, else ``api_version=`` of
:class:`AzureOpenAIRules`, else ``OPENAI_API_VERSION``, else none: the
``/openai/v1`` form. :func:`azure_url` builds both forms.

Auth: ``api_key=`` or ``AZURE_OPENAI_API_KEY`` → the ``api-key`` header; without a
key, ``AZURE_OPENAI_AD_TOKEN`` → ``Authorization: Bearer``. For a token callable or
Microsoft Entra ID (azure-identity), register rules holding an
:class:`~modelwire.cloud.azure.AzureAuth`: its token is fetched when the request is
sent (the authorizer hook) and redacted like a key. The rules themselves are
public, ``modelwire.ext.AzureOpenAIRules``, so a user can register them with their
own :class:`~modelwire.cloud.azure.AzureAuth`.

Which endpoint a request goes to is the wire API's: the rules take it from the
default URL they are handed (``base_url`` + the API's path) and name no API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._redact import redact_url
from .._url import path_segment
from ..cloud.azure import (
    AD_TOKEN_ENV,
    API_KEY_ENV,
    PROVIDER,
    AzureAuth,
    _env_credential,
    resolve_api_version,
    resolve_endpoint,
)
from ..errors import ConfigurationError, MissingAPIKeyError
from . import ProviderRules

if TYPE_CHECKING:
    from .._wire.request import RequestAuthorizer, RequestOptions
    from ..types import Model

__all__ = ["PLACEHOLDER_HOST", "PROVIDER", "RULES", "AzureOpenAIRules", "azure_url"]


# The endpoints Azure OpenAI serves; a request's endpoint is the one its wire API's
# path ends with (the default URL the rules are handed), so no API is named here.
_ENDPOINTS = ("chat/completions", "responses")


_DATED = re.compile(r"\d{4}-\d{2}-\d{2}(-preview)?")


def azure_url(
    endpoint: str, deployment: str | None, path: str, api_version: str | None = None
) -> str:
    """The request URL for the endpoint ``path`` of a wire API (``/chat/completions``
    or ``/responses``, the path a request to any server of that API ends with). Pure.

    ``api_version`` None, ``"v1"`` or ``"preview"`` → the ``/openai/v1`` form
    (``preview`` adds ``?api-version=preview``); a dated version such as
    ``2024-10-21`` → the dated form, where Chat Completions needs
    ``deployment``. ``endpoint`` may already end in ``/openai`` or ``/openai/v1``.
    """
    served = _endpoint(path)
    if served is None:
        raise ConfigurationError(
            f"Azure OpenAI serves {' and '.join('/' + e for e in _ENDPOINTS)}, not {path!r} "
            "(use api 'openai-chat' or 'openai-responses')"
        )
    path = served
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigurationError(
            f"the Azure OpenAI endpoint {redact_url(endpoint)!r} is not an http(s) URL; use "
            "https://my-resource.openai.azure.com"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(
            f"the Azure OpenAI endpoint {redact_url(endpoint)!r} has a query or fragment; give the "
            "resource URL only and the API version as api_version"
        )
    base = f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")
    v1_endpoint = base.endswith("/openai/v1")
    base = base.removesuffix("/openai/v1").removesuffix("/openai")
    if api_version in (None, "v1", "preview"):
        query = "?api-version=preview" if api_version == "preview" else ""
        return f"{base}/openai/v1/{path}{query}"
    if not _DATED.fullmatch(api_version):
        raise ConfigurationError(
            f"api_version {api_version!r} is neither a dated Azure OpenAI API version "
            "(e.g. '2024-10-21') nor 'v1' / 'preview'"
        )
    if v1_endpoint:
        raise ConfigurationError(
            f"the endpoint {redact_url(endpoint)!r} is the /openai/v1 form, which takes no dated "
            f"api_version ({api_version!r}): drop one of them"
        )
    version = f"api-version={api_version}"
    if path == "responses":
        return f"{base}/openai/responses?{version}"
    if not deployment:
        raise ConfigurationError(
            f"Chat Completions with api_version {api_version!r} needs the deployment "
            "name (the URL is /openai/deployments/{deployment}/chat/completions)"
        )
    name = path_segment(deployment, "the Azure OpenAI deployment name (Model.id)")
    return f"{base}/openai/deployments/{name}/{path}?{version}"


def _endpoint(path: str) -> str | None:
    """The Azure endpoint that the URL path ``path`` ends with (its query dropped), if
    Azure serves it."""
    path = path.split("?", 1)[0].rstrip("/") if isinstance(path, str) else ""
    return next((e for e in _ENDPOINTS if path == e or path.endswith("/" + e)), None)


#: The host of the catalog's base URL: "the resource in AZURE_OPENAI_ENDPOINT".
PLACEHOLDER_HOST = "your-resource.openai.azure.com"


def _split_version(base_url: str) -> tuple[str, str | None]:
    """``base_url`` without its ``api-version`` query parameter, and that value."""
    parts = urlsplit(base_url)
    if not parts.query:
        return base_url, None
    query = parse_qsl(parts.query, keep_blank_values=True)
    version = next((v for k, v in query if k == "api-version"), None)
    rest = urlencode([(k, v) for k, v in query if k != "api-version"])
    return urlunsplit(parts._replace(query=rest)), version


class AzureOpenAIRules(ProviderRules):
    """URL and auth rules of provider ``azure-openai``.

    ``auth``: an :class:`~modelwire.cloud.azure.AzureAuth` that supplies every
    request's credentials (Entra ID token, token provider…) instead of the
    ``api-key`` header; ``api_version``: the default API version
    (``"2024-10-21"``, ``"preview"``; ``None``: ``OPENAI_API_VERSION`` or the
    ``/openai/v1`` form). Register with
    ``modelwire.ext.register_provider("azure-openai", AzureOpenAIRules(...))``.

    Args:
        auth: The credentials of every request, instead of the ``api-key`` header.
        api_version: The default API version.
    """

    def __init__(self, *, auth: AzureAuth | None = None, api_version: str | None = None) -> None:
        self._auth = auth
        self._api_version = api_version

    def __repr__(self) -> str:
        return f"AzureOpenAIRules(auth={self._auth!r}, api_version={self._api_version!r})"

    def url(self, model: Model, api: str, default: str) -> str:
        """The deployment URL: the endpoint (``AZURE_OPENAI_ENDPOINT`` for the
        placeholder host), the model id as deployment, the API version.

        Args:
            model: The model called; its ``id`` is the deployment name.
            api: ``openai-chat`` or ``openai-responses`` (any other is refused).
            default: The URL the API built.
        """
        endpoint, version = _split_version(model.base_url)
        if (urlsplit(endpoint).hostname or "") == PLACEHOLDER_HOST:
            endpoint = resolve_endpoint()  # AZURE_OPENAI_ENDPOINT, or a clear error
        version = version or self._api_version or resolve_api_version()
        # ``default`` is base_url + the API's path (base_url may carry ?api-version).
        base = model.base_url.rstrip("/")
        path = default[len(base) :] if default.startswith(base) else urlsplit(default).path
        if _endpoint(path) is None:
            raise ConfigurationError(
                f"Azure OpenAI serves api 'openai-chat' or 'openai-responses', not {api!r}"
            )
        return azure_url(endpoint, model.id, path, version)

    def auth(self, model: Model, api_key: str) -> Mapping[str, str] | None:
        """The ``api-key`` header, or none when an ``AzureAuth`` supplies credentials.

        Args:
            model: The model called.
            api_key: The call's resolved key.
        """
        # Azure's key header (the openai SDK's AzureOpenAI sends the same); with an
        # AzureAuth the credentials come from it alone.
        return {} if self._auth is not None else {"api-key": api_key}

    def authorizer(self, model: Model, options: RequestOptions) -> RequestAuthorizer | None:
        """The ``AzureAuth`` given, or one from ``AZURE_OPENAI_AD_TOKEN``; ``None`` with a key.

        Args:
            model: The model called.
            options: The call's checked options.

        Raises:
            MissingAPIKeyError: No key, token or ``AzureAuth``.
        """
        if self._auth is not None:
            return self._auth
        if options.api_key:
            return None  # the api-key header (auth above) carries it
        token = _env_credential(AD_TOKEN_ENV)
        if token:
            return AzureAuth(ad_token=token)
        # Raised while the request is built: at mw.stream(), before any I/O.
        raise MissingAPIKeyError(
            f"no credentials for provider {PROVIDER!r}: set {API_KEY_ENV} (or "
            f"{AD_TOKEN_ENV} for a Microsoft Entra ID token), pass api_key=..., or "
            "register AzureOpenAIRules(auth=AzureAuth(use_default_credential=True)) "
            "with mw.register_provider (modelwire[azure])",
            env_var=API_KEY_ENV,
        )


RULES = AzureOpenAIRules()

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
``/openai/v1`` form. :func:`modelwire.cloud.azure.azure_url` builds both forms.

Auth: ``api_key=`` or ``AZURE_OPENAI_API_KEY`` → the ``api-key`` header; without a
key, ``AZURE_OPENAI_AD_TOKEN`` → ``Authorization: Bearer``. For a token callable or
Microsoft Entra ID (azure-identity), register rules holding an
:class:`~modelwire.cloud.azure.AzureAuth`: its token is fetched when the request is
sent (the authorizer hook) and redacted like a key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import MissingAPIKeyError
from . import ProviderRules

if TYPE_CHECKING:
    from .._options import RequestAuthorizer, RequestOptions
    from ..cloud.azure import AzureAuth
    from ..types import Model

__all__ = ["PLACEHOLDER_HOST", "PROVIDER", "RULES", "AzureOpenAIRules"]

PROVIDER = "azure-openai"
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
    ``mw.register_provider("azure-openai", AzureOpenAIRules(...))``.
    """

    def __init__(self, *, auth: AzureAuth | None = None, api_version: str | None = None) -> None:
        self._auth = auth
        self._api_version = api_version

    def __repr__(self) -> str:
        return f"AzureOpenAIRules(auth={self._auth!r}, api_version={self._api_version!r})"

    def url(self, model: Model, api: str, default: str) -> str:
        from ..cloud.azure import azure_url, resolve_api_version, resolve_endpoint

        endpoint, version = _split_version(model.base_url)
        if (urlsplit(endpoint).hostname or "") == PLACEHOLDER_HOST:
            endpoint = resolve_endpoint()  # AZURE_OPENAI_ENDPOINT, or a clear error
        version = version or self._api_version or resolve_api_version()
        return azure_url(endpoint, model.id, api, version)

    def auth(self, model: Model, api_key: str) -> Mapping[str, str] | None:
        # Azure's key header (the openai SDK's AzureOpenAI sends the same); with an
        # AzureAuth the credentials come from it alone.
        return {} if self._auth is not None else {"api-key": api_key}

    def authorizer(self, model: Model, options: RequestOptions) -> RequestAuthorizer | None:
        if self._auth is not None:
            return self._auth
        if options.api_key:
            return None  # the api-key header (auth above) carries it
        from ..cloud.azure import AD_TOKEN_ENV, API_KEY_ENV, AzureAuth

        token = os.environ.get(AD_TOKEN_ENV, "").strip()
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

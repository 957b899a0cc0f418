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
sent (the authorizer hook) and redacted like a key. The rules themselves are
public, :class:`modelwire.cloud.azure.AzureOpenAIRules`, so a user can register
them with their own :class:`~modelwire.cloud.azure.AzureAuth`.
"""

from __future__ import annotations

from ..cloud.azure import PLACEHOLDER_HOST, PROVIDER, AzureOpenAIRules

__all__ = ["PLACEHOLDER_HOST", "PROVIDER", "RULES", "AzureOpenAIRules"]

RULES = AzureOpenAIRules()

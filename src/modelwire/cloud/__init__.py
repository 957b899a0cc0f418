"""Cloud credentials for Amazon Bedrock, Google Vertex AI and Azure OpenAI.

``import modelwire`` never imports this package, and this package never imports
botocore, google-auth or azure-identity until a credential is actually needed:
each lives in an optional extra (``modelwire[bedrock]``, ``modelwire[vertex]``,
``modelwire[azure]``); without it the call raises :class:`ConfigurationError`
saying which extra to install.

Every provider's auth has one shape, :class:`CloudAuth`: given the request about
to be sent (method, URL, headers, the exact body bytes) it returns the headers to
add and the secrets those headers carry, so the transport can redact them from
every error text::

    headers, secrets = auth.authorize("POST", url, {"content-type": "application/json"}, body)
    headers, secrets = await auth.aauthorize("POST", url, {"content-type": "application/json"}, body)

The sync and async twins share every decision; the async one runs a blocking
refresh (a token endpoint, a credential file, a container credential server) in a
worker thread so the event loop never waits on it.

* :class:`~modelwire.cloud.aws.BedrockAuth` — a Bedrock API key
  (``AWS_BEARER_TOKEN_BEDROCK`` → ``Authorization: Bearer …``) or AWS SigV4 over
  the exact body bytes (:class:`~modelwire.cloud.aws.SigV4Signer`, botocore's
  credential chain); :func:`~modelwire.cloud.aws.resolve_region`.
* :class:`~modelwire.cloud.google.VertexAuth` — a token or API key given
  directly, else Application Default Credentials, refreshed before expiry;
  :func:`~modelwire.cloud.google.resolve_project` /
  :func:`~modelwire.cloud.google.resolve_location`.
* :class:`~modelwire.cloud.azure.AzureAuth` — the ``api-key`` header or an
  Entra ID bearer token (static, a callable, or an azure-identity credential,
  cached and refreshed) (provider ``azure-openai``'s URL rules: ``modelwire.ext.AzureOpenAIRules``).

Import the submodules directly (``from modelwire.cloud.aws import BedrockAuth``);
this module holds only the common protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

__all__ = ["AuthHeaders", "CloudAuth"]

#: ``(headers to add to the request, secrets those headers carry)``.
AuthHeaders = tuple[dict[str, str], tuple[str, ...]]


@runtime_checkable
class CloudAuth(Protocol):
    """Credentials for one request: the headers to send and the secrets to redact.

    ``body`` is the exact byte string that will be sent (SigV4 signs it);
    ``headers`` are the request's other headers (SigV4 signs those too, so pass
    exactly the ones that will be sent and add nothing after signing).
    """

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders: ...

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders: ...

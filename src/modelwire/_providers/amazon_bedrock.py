"""Provider ``amazon-bedrock``: the Bedrock runtime endpoint's region and credentials.

* URL: a ``base_url`` holding ``{region}`` (the catalog's
  ``https://bedrock-runtime.{region}.amazonaws.com``) gets the region from
  :func:`modelwire.cloud.aws.resolve_region` (``AWS_REGION``, ``AWS_DEFAULT_REGION``,
  the profile's region); any other ``base_url`` (a VPC endpoint, a gateway, a mock
  server) is used as it is.
* Auth: a Bedrock API key (``api_key=`` or ``AWS_BEARER_TOKEN_BEDROCK``) is sent as
  ``Authorization: Bearer …``. Without one, every request is signed with AWS SigV4
  (service ``bedrock``) over the exact body bytes, when it is sent, with
  credentials from botocore's standard chain (:class:`modelwire.cloud.aws.SigV4Signer`;
  the ``modelwire[bedrock]`` extra). The signing region is the endpoint's
  (``bedrock-runtime.<region>.amazonaws.com``), else the resolved one.

Caller mistakes (no region, botocore not installed) raise ``ConfigurationError``
before any request; loading or refreshing credentials is I/O and happens inside
the stream, so its failure ends the stream with an ``authentication`` error.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._wire.request import RequestOptions
from ..errors import ConfigurationError
from ..types import Model
from . import ProviderRules

if TYPE_CHECKING:
    from ..cloud import AuthHeaders
    from ..cloud.aws import SigV4Signer

__all__ = ["RULES", "AmazonBedrockRules", "LazySigV4"]

#: What selects the credentials of botocore's chain (besides files and roles, which
#: refresh themselves): a signer is reused while these and the region are unchanged.
_CHAIN_VARS = ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
               "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")  # fmt: skip
_signers: dict[str, SigV4Signer] = {}
_HOST = re.compile(r"^https://bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:/|\Z)")


def endpoint_region(url: str) -> str | None:
    """The region named by a Bedrock runtime endpoint URL, if it is one."""
    m = _HOST.match(url)
    return m.group(1) if m else None


class LazySigV4:
    """SigV4 over the exact request, its credentials loaded when first needed.

    Loading credentials may be I/O (a profile's SSO cache, the container or
    instance metadata endpoint): it runs when the request is sent, in a worker
    thread on the async path, never while the request is built.
    """

    def __init__(self, region: str) -> None:
        self.region = region
        self._signer: SigV4Signer | None = None

    def __repr__(self) -> str:
        return f"LazySigV4(region={self.region!r})"

    def _get(self) -> SigV4Signer:
        if self._signer is None:
            # Loading the chain may be a network call (SSO, container or instance
            # credentials): one signer per region and environment serves every call;
            # botocore refreshes temporary credentials inside it. The key is a hash,
            # so no secret is held in it.
            seen = "\0".join([self.region, *(os.environ.get(v, "") for v in _CHAIN_VARS)])
            key = hashlib.sha256(seen.encode()).hexdigest()
            signer = _signers.get(key)
            if signer is None:
                from ..cloud.aws import SigV4Signer

                signer = _signers[key] = SigV4Signer(self.region, service="bedrock")
            self._signer = signer
        return self._signer

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        return self._get().authorize(method, url, headers, body)

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        signer = self._signer
        if signer is None:
            import anyio.to_thread

            signer = await anyio.to_thread.run_sync(self._get)
        return await signer.aauthorize(method, url, headers, body)


class AmazonBedrockRules(ProviderRules):
    """The ``amazon-bedrock`` provider rules (:class:`~modelwire._providers.ProviderRules`)."""

    def url(self, model: Model, api: str, default: str) -> str:
        if "{region}" in default:
            from ..cloud.aws import resolve_region

            return default.replace("{region}", resolve_region())
        return default

    def auth(self, model: Model, api_key: str) -> Mapping[str, str] | None:
        return {"Authorization": f"Bearer {api_key}"}

    def authorizer(self, model: Model, options: RequestOptions) -> LazySigV4 | None:
        if options.api_key:
            return None  # the Bedrock API key is the credential
        if importlib.util.find_spec("botocore") is None:
            raise ConfigurationError(
                "Amazon Bedrock without an API key signs requests with AWS SigV4, which "
                "needs botocore: pip install 'modelwire[bedrock]', or set "
                "AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key)"
            )
        from ..cloud.aws import check_credential_environment, resolve_region

        # The credential chain is read when the request is sent; its variables are
        # checked now, at stream(), so a CR/LF in one is a caller mistake up front.
        check_credential_environment()
        region = endpoint_region(model.base_url)
        if region is None:
            region = resolve_region()
        return LazySigV4(region)


RULES = AmazonBedrockRules()

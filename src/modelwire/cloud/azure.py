"""Azure OpenAI credentials and URLs.

Auth, as the openai SDK's ``AzureOpenAI`` reads it: an ``api-key`` header
(``AZURE_OPENAI_API_KEY``) or a Microsoft Entra ID bearer token
(``AZURE_OPENAI_AD_TOKEN``, a token-provider callable, or an azure-identity
credential such as ``DefaultAzureCredential`` for scope
``https://cognitiveservices.azure.com/.default``, cached and refreshed before
expiry). When both variables are set the token wins, as in the openai SDK.
``AZURE_OPENAI_ENDPOINT`` and ``OPENAI_API_VERSION`` name the resource and the
dated API version.

URLs (https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle):
the ``/openai/v1`` form (``{endpoint}/openai/v1/chat/completions``,
``…/openai/v1/responses``; no ``api-version``, the model is the deployment name
in the body) and the dated form (``{endpoint}/openai/deployments/{d}/chat/completions?api-version=…``,
``{endpoint}/openai/responses?api-version=…``).

Provider ``azure-openai``'s URL and auth rules use these credentials; they live with
the other providers' rules (``modelwire.ext.AzureOpenAIRules``: register your own with
an :class:`AzureAuth` through ``modelwire.ext.register_provider``).

azure-identity is the optional extra ``modelwire[azure]``, imported only when
``use_default_credential=True``.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._wire.request import check_credential
from ..errors import AuthenticationError, ConfigurationError, MissingAPIKeyError
from . import AuthHeaders
from ._tokens import REFRESH_MARGIN, TokenCache

if TYPE_CHECKING:
    pass

__all__ = [
    "AD_TOKEN_ENV",
    "API_KEY_ENV",
    "API_VERSION_ENV",
    "AZURE_SCOPE",
    "ENDPOINT_ENV",
    "PROVIDER",
    "AzureAuth",
    "TokenCredential",
    "resolve_api_version",
    "resolve_endpoint",
]

AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
API_KEY_ENV = "AZURE_OPENAI_API_KEY"
AD_TOKEN_ENV = "AZURE_OPENAI_AD_TOKEN"
ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
API_VERSION_ENV = "OPENAI_API_VERSION"


class _AccessToken(Protocol):
    @property
    def token(self) -> str: ...
    @property
    def expires_on(self) -> int: ...


class TokenCredential(Protocol):
    """azure-core's credential protocol (``DefaultAzureCredential`` and friends)."""

    def get_token(self, *scopes: str) -> _AccessToken: ...


def resolve_endpoint(endpoint: str | None = None) -> str:
    """``endpoint``, else ``AZURE_OPENAI_ENDPOINT``; :class:`ConfigurationError` when neither."""
    endpoint = endpoint or os.environ.get(ENDPOINT_ENV, "").strip()
    if not endpoint:
        raise ConfigurationError(
            "no Azure OpenAI endpoint: pass endpoint= or set AZURE_OPENAI_ENDPOINT "
            "(e.g. https://my-resource.openai.azure.com)"
        )
    return endpoint


def resolve_api_version(api_version: str | None = None) -> str | None:
    """``api_version``, else ``OPENAI_API_VERSION``, else None (the ``/openai/v1`` form)."""
    return api_version or os.environ.get(API_VERSION_ENV, "").strip() or None


TokenProvider = Callable[[], str | Awaitable[str]]


class AzureAuth:
    """Azure OpenAI credentials: the first source given, else the environment.

    Explicit sources, in this order: ``api_key`` (``api-key`` header);
    ``ad_token`` (a bearer token, sent as is); ``token_provider`` (called for
    every request, as the openai SDK does — ``azure.identity.get_bearer_token_provider``
    caches; it may be async for :meth:`aauthorize`); ``credential`` (an
    azure-core ``TokenCredential``, token cached until ``margin`` seconds before
    ``expires_on``); ``use_default_credential=True`` (azure-identity's
    ``DefaultAzureCredential``, likewise cached). None given:
    ``AZURE_OPENAI_AD_TOKEN``, else ``AZURE_OPENAI_API_KEY``, else
    :class:`MissingAPIKeyError` naming them.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        ad_token: str | None = None,
        token_provider: TokenProvider | None = None,
        credential: TokenCredential | None = None,
        use_default_credential: bool = False,
        scope: str = AZURE_SCOPE,
        clock: Callable[[], float] = time.time,
        margin: float = REFRESH_MARGIN,
    ) -> None:
        self._api_key: str | None = None
        self._ad_token: str | None = None
        self._provider: TokenProvider | None = None
        self._cache: TokenCache | None = None
        self._scope = scope
        self._last_token = ""
        if api_key:
            check_credential(api_key, "AzureAuth(api_key=)")
            self._api_key = api_key
        elif ad_token:
            check_credential(ad_token, "AzureAuth(ad_token=)")
            self._ad_token = ad_token
        elif token_provider is not None:
            self._provider = token_provider
        elif credential is not None or use_default_credential:
            if credential is None:
                credential = _default_credential()
            self._credential = credential
            self._cache = TokenCache(self._fetch, clock=clock, margin=margin)
        elif env_token := _env_credential(AD_TOKEN_ENV):
            self._ad_token = env_token
        elif env_key := _env_credential(API_KEY_ENV):
            self._api_key = env_key
        else:
            raise MissingAPIKeyError(
                "no Azure OpenAI credentials: set AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN), "
                "or pass api_key=, ad_token=, token_provider=, credential=, or "
                "use_default_credential=True (Microsoft Entra ID via modelwire[azure])",
                env_var=API_KEY_ENV,
            )

    def __repr__(self) -> str:
        kind = (
            "api_key"
            if self._api_key
            else "ad_token"
            if self._ad_token
            else "token_provider"
            if self._provider
            else "credential"
        )
        return f"AzureAuth(auth={kind!r})"

    def _fetch(self) -> tuple[str, float | None]:
        """Get a token from the credential (blocking); runs under the cache's lock."""
        from .._redact import redact

        try:
            access = self._credential.get_token(self._scope)
        except Exception as exc:
            # azure-core raises ClientAuthenticationError (and CredentialUnavailableError);
            # anything a credential raises means "no token", and its text may quote one.
            raise AuthenticationError(
                redact(
                    f"the Microsoft Entra ID token could not be obtained: {exc}; check the "
                    "credential (az login, managed identity, AZURE_CLIENT_ID / AZURE_TENANT_ID)",
                    (self._last_token,),
                )
            ) from None
        token = access.token
        self._last_token = token
        return _checked(token, "the credential"), float(access.expires_on)

    def _bearer(self, token: Any, source: str) -> AuthHeaders:
        token = _checked(token, source)
        return {"Authorization": f"Bearer {token}"}, (token,)

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        if self._api_key is not None:
            return {"api-key": self._api_key}, (self._api_key,)
        if self._ad_token is not None:
            return self._bearer(self._ad_token, "ad_token")
        if self._provider is not None:
            token = self._provider()
            if inspect.isawaitable(token):
                _close(token)
                raise ConfigurationError(
                    "token_provider is async: use aauthorize(), or pass a sync provider"
                )
            return self._bearer(token, "token_provider")
        assert self._cache is not None
        return self._bearer(self._cache.get(), "the credential")

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        if self._provider is not None:
            provider = self._provider
            if inspect.iscoroutinefunction(provider):
                token = await provider()
            else:
                import anyio.to_thread

                # A sync provider may refresh over the network: keep it off the loop.
                token = await anyio.to_thread.run_sync(provider)
                if inspect.isawaitable(token):
                    token = await token
            return self._bearer(token, "token_provider")
        if self._cache is not None:
            return self._bearer(await self._cache.aget(), "the credential")
        return self.authorize(method, url, headers, body)


def _checked(token: Any, source: str) -> str:
    if not isinstance(token, str) or not token.strip():
        raise AuthenticationError(f"{source} did not return a bearer token (a non-empty string)")
    check_credential(token, f"the token from {source}")
    return token


def _env_credential(name: str) -> str | None:
    """Variable ``name`` when set (blank counts as unset), refused before any request
    when it holds a control character or surrounding whitespace (a CR/LF would
    split the header)."""
    value = os.environ.get(name, "")
    if not value.strip():
        return None
    check_credential(value, name)
    return value


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()  # an un-awaited coroutine would warn (warnings are errors)


def _default_credential() -> TokenCredential:
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError as exc:
        raise ConfigurationError(
            "Microsoft Entra ID credentials need azure-identity: install modelwire[azure] "
            "(pip install 'modelwire[azure]'), or set AZURE_OPENAI_API_KEY"
        ) from exc
    credential: TokenCredential = DefaultAzureCredential()
    return credential


PROVIDER = "azure-openai"

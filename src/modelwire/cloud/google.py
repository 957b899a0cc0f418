"""Google Vertex AI credentials: a token or API key given directly, else ADC.

Application Default Credentials (https://cloud.google.com/docs/authentication/application-default-credentials)
come from google-auth: ``GOOGLE_APPLICATION_CREDENTIALS`` (a service-account,
authorized-user or external-account JSON file), gcloud's
``application_default_credentials.json``, or the metadata server. Their access
token is cached and refreshed :data:`~modelwire.cloud._tokens.REFRESH_MARGIN`
seconds before it expires, by one thread at a time.

Project and location, in order: the explicit value; ``GOOGLE_CLOUD_PROJECT``
(read by google-auth, google-genai and the openai SDK's Vertex provider) /
``GOOGLE_CLOUD_LOCATION`` (google-genai), then ``CLOUD_ML_REGION`` (the
anthropic SDK's ``AnthropicVertex``); for the project, last, the one ADC names.

google-auth with its ``requests`` transport is the optional extra
``modelwire[vertex]``, imported only when ADC is used: ``google.auth.default()``
needs ``requests`` to detect the metadata server (Compute Engine, Cloud Run,
GKE), so it is the one transport that covers every ADC source.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from typing import TYPE_CHECKING, Any

from .._wire.request import check_credential
from ..errors import AuthenticationError, ConfigurationError, MissingAPIKeyError
from . import AuthHeaders
from ._tokens import REFRESH_MARGIN, TokenCache

if TYPE_CHECKING:
    import google.auth.credentials

__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "LOCATION_ENVS",
    "PROJECT_ENVS",
    "VertexAuth",
    "resolve_location",
    "resolve_project",
]

CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
PROJECT_ENVS = ("GOOGLE_CLOUD_PROJECT",)
LOCATION_ENVS = ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION")

# Project ids: 6–30 lowercase letters, digits, hyphens (plus legacy "domain:id");
# locations: "global" or a region such as "us-central1". Either is put into a
# URL path, so anything else is refused rather than escaped.
_PROJECT_RE = re.compile(r"([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]")
_LOCATION_RE = re.compile(r"[a-z][a-z0-9-]*[a-z0-9]")


def _env(names: Sequence[str]) -> tuple[str, str] | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return name, value
    return None


def resolve_project(project: str | None = None, *, adc_project: str | None = None) -> str:
    """The Vertex AI project: ``project``, else ``GOOGLE_CLOUD_PROJECT``, else ``adc_project``."""
    source = "project"
    if not project:
        found = _env(PROJECT_ENVS)
        if found:
            source, project = found
        elif adc_project:
            source, project = "the Application Default Credentials' project", adc_project
        else:
            raise ConfigurationError(
                "no Google Cloud project: pass project=, or set GOOGLE_CLOUD_PROJECT "
                "(or use credentials that name one, e.g. a service-account key file)"
            )
    if not _PROJECT_RE.fullmatch(project):
        raise ConfigurationError(f"{source} is {project!r}, which is not a Google Cloud project id")
    return project


def resolve_location(location: str | None = None) -> str:
    """The Vertex AI location: ``location``, else ``GOOGLE_CLOUD_LOCATION``, else ``CLOUD_ML_REGION``."""
    source = "location"
    if not location:
        found = _env(LOCATION_ENVS)
        if not found:
            raise ConfigurationError(
                "no Vertex AI location: pass location=, or set GOOGLE_CLOUD_LOCATION "
                "(e.g. 'us-central1' or 'global'; CLOUD_ML_REGION is read too)"
            )
        source, location = found
    if not _LOCATION_RE.fullmatch(location):
        raise ConfigurationError(
            f"{source} is {location!r}, which is not a Vertex AI location "
            "(e.g. 'us-central1', 'europe-west4', 'global')"
        )
    return location


def _require_google_auth() -> None:
    try:
        import google.auth
        import google.auth.transport.requests  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            "Vertex AI Application Default Credentials need google-auth: install "
            "modelwire[vertex] (pip install 'modelwire[vertex]'), or pass token= or api_key="
        ) from exc


def _load_adc(scopes: Sequence[str]) -> tuple[google.auth.credentials.Credentials, str | None]:
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError, GoogleAuthError

    try:
        credentials, project = google.auth.default(scopes=list(scopes))
    except DefaultCredentialsError as exc:
        raise MissingAPIKeyError(
            f"no Google Application Default Credentials ({exc}): set "
            "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file, or run "
            "`gcloud auth application-default login`, or pass token= or api_key=",
            env_var="GOOGLE_APPLICATION_CREDENTIALS",
        ) from None
    except (GoogleAuthError, ValueError) as exc:
        raise ConfigurationError(
            f"the Application Default Credentials could not be loaded: {exc}"
        ) from None
    return credentials, project


class VertexAuth:
    """Vertex AI credentials for one project and location.

    Exactly one source is used, first found: ``token`` (a bearer access token,
    sent as is), ``api_key`` (Vertex AI express mode, sent as
    ``x-goog-api-key``), ``credentials`` (a google-auth ``Credentials``), else
    Application Default Credentials loaded now — so a missing one fails here,
    before any request. ``clock`` is the time source for expiry (tests).
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        api_key: str | None = None,
        credentials: google.auth.credentials.Credentials | None = None,
        project: str | None = None,
        location: str | None = None,
        scopes: Sequence[str] = (CLOUD_PLATFORM_SCOPE,),
        clock: Callable[[], float] = time.time,
        margin: float = REFRESH_MARGIN,
    ) -> None:
        # (header name, value prefix) for a token or key given directly.
        self._static: tuple[str, str] | None = None
        self._credentials: Any = None
        self._adc_project: str | None = None
        self._project, self._location = project, location
        if token:
            check_credential(token, "VertexAuth(token=)")
            self._static = ("Authorization", "Bearer ")
        elif api_key:
            check_credential(api_key, "VertexAuth(api_key=)")
            self._static = ("x-goog-api-key", "")
        else:
            _require_google_auth()
            if credentials is None:
                credentials, self._adc_project = _load_adc(scopes)
            self._credentials = credentials
        self._secret = token or api_key or ""
        self._cache = TokenCache(self._refresh, clock=clock, margin=margin)
        self._session: Any = None

    def __repr__(self) -> str:
        kind = (
            "adc"
            if self._static is None
            else "token"
            if self._static[0] == "Authorization"
            else "api_key"
        )
        return f"VertexAuth(project={self._project!r}, location={self._location!r}, auth={kind!r})"

    @property
    def project(self) -> str:
        """The project (explicit, env, or ADC's); :class:`ConfigurationError` when none."""
        return resolve_project(self._project, adc_project=self._adc_project)

    @property
    def location(self) -> str:
        return resolve_location(self._location)

    def _secrets(self) -> tuple[str, ...]:
        c = self._credentials
        found = (
            self._secret,
            getattr(c, "token", None),
            getattr(c, "refresh_token", None),
            getattr(c, "client_secret", None),
        )
        return tuple(s for s in found if isinstance(s, str) and s)

    def _refresh(self) -> tuple[str, float | None]:
        """Fetch a new access token (blocking); runs under the cache's lock."""
        from google.auth.exceptions import GoogleAuthError
        from google.auth.transport.requests import Request

        from .._redact import redact

        if self._session is None:
            import requests

            self._session = requests.Session()
        try:
            self._credentials.refresh(Request(self._session))
        except (GoogleAuthError, OSError) as exc:
            # `from None`: the original exception's text may quote the refresh
            # token or the token endpoint's answer; only the redacted text goes on.
            raise AuthenticationError(
                redact(
                    f"the Google access token could not be refreshed: {exc}; check "
                    "GOOGLE_APPLICATION_CREDENTIALS or run `gcloud auth application-default login`",
                    self._secrets(),
                )
            ) from None
        token = self._credentials.token
        if not isinstance(token, str) or not token:
            raise AuthenticationError("the Google token endpoint returned no access token")
        check_credential(token, "the access token from the Google token endpoint")
        expiry = self._credentials.expiry  # naive UTC (google-auth's convention)
        expires_at = expiry.replace(tzinfo=UTC).timestamp() if expiry else None
        return token, expires_at

    def token(self) -> str:
        """The bearer token (or API key) to send; ADC tokens refreshed before expiry."""
        if self._static is not None:
            return self._secret
        return self._cache.get()

    async def atoken(self) -> str:
        """:meth:`token`, the refresh running in a worker thread."""
        if self._static is not None:
            return self._secret
        return await self._cache.aget()

    def _headers(self, token: str) -> AuthHeaders:
        if self._static is not None:
            name, prefix = self._static
            return {name: prefix + token}, (token,)
        return {"Authorization": f"Bearer {token}"}, (token, *self._secrets())

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        return self._headers(self.token())

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        return self._headers(await self.atoken())

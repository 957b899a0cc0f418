"""Amazon Bedrock credentials: a Bedrock API key, else AWS SigV4 via botocore.

A Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``, the variable the AWS SDKs read)
is sent as ``Authorization: Bearer …``. Otherwise every request is signed with
Signature Version 4 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html)
for service ``bedrock`` over the exact body bytes that will be sent, with
credentials from botocore's standard chain: ``AWS_ACCESS_KEY_ID`` /
``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, the shared config and
credentials files (``AWS_PROFILE``, ``AWS_CONFIG_FILE``,
``AWS_SHARED_CREDENTIALS_FILE``), assume-role and SSO profiles, the container
credentials endpoint and the instance metadata service. Temporary credentials
are refreshed by botocore before they expire; each signature takes a frozen
snapshot so the key, secret and token used together always match.

botocore is the optional extra ``modelwire[bedrock]``, imported only here, only
when a signer is built.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from .._wire.request import check_credential
from ..errors import AuthenticationError, ConfigurationError, MissingAPIKeyError
from . import AuthHeaders

if TYPE_CHECKING:
    from botocore.credentials import Credentials

__all__ = [
    "BEDROCK_API_KEY_ENV",
    "CREDENTIAL_ENVS",
    "BedrockAuth",
    "SigV4Signer",
    "bedrock_api_key",
    "check_credential_environment",
    "resolve_region",
]

#: The Bedrock API key variable the AWS SDKs read (a bearer token, not SigV4).
BEDROCK_API_KEY_ENV = "AWS_BEARER_TOKEN_BEDROCK"

_REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
_REGION_RE = re.compile(r"[a-z]{2}(-[a-z0-9]+)+-[0-9]+")
_NO_CREDENTIALS = (
    "no AWS credentials found: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), or "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (plus AWS_SESSION_TOKEN for temporary "
    "credentials), or AWS_PROFILE naming a profile in ~/.aws/config or ~/.aws/credentials, "
    "or run where a container or instance role is available"
)


# botocore.auth logs the canonical request (which carries X-Amz-Security-Token),
# the string to sign and the signature at DEBUG. While we sign, its records made in
# this context are dropped by a filter on those loggers; botocore used elsewhere in
# the process logs as it always does.
_SIGNING: ContextVar[bool] = ContextVar("modelwire_sigv4_signing", default=False)
_QUIET_LOGGERS = ("botocore.auth",)


class _WhileSigning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _SIGNING.get()


_FILTER = _WhileSigning()
_filter_lock = threading.Lock()
_filter_installed = False


@contextmanager
def _quiet_botocore() -> Iterator[None]:
    global _filter_installed
    if not _filter_installed:
        with _filter_lock:
            if not _filter_installed:
                for name in _QUIET_LOGGERS:
                    logging.getLogger(name).addFilter(_FILTER)
                _filter_installed = True
    token = _SIGNING.set(True)
    try:
        yield
    finally:
        _SIGNING.reset(token)


def _require_botocore() -> None:
    try:
        import botocore.session  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            "AWS SigV4 signing needs botocore: install modelwire[bedrock] "
            "(pip install 'modelwire[bedrock]'), or set AWS_BEARER_TOKEN_BEDROCK "
            "to use a Bedrock API key instead"
        ) from exc


def bedrock_api_key() -> str | None:
    """The Bedrock API key from ``AWS_BEARER_TOKEN_BEDROCK``, or None when unset or
    blank; a :class:`ConfigurationError` naming it when it cannot be a header value."""
    key = os.environ.get(BEDROCK_API_KEY_ENV, "")
    if not key.strip():
        return None
    check_credential(key, BEDROCK_API_KEY_ENV)
    return key


#: The variables botocore's environment provider reads (``AWS_SECURITY_TOKEN`` is
#: the older name of the session token).
CREDENTIAL_ENVS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                   "AWS_SECURITY_TOKEN")  # fmt: skip


def check_credential_environment() -> None:
    """Refuse, before any request, an AWS credential variable holding a control
    character or surrounding whitespace: botocore sends the access key id and the
    session token in headers as read, so a CR/LF would fail only at send time (or
    split a header). The error names the variable, never its value."""
    for name in CREDENTIAL_ENVS:
        value = os.environ.get(name)
        if value:
            check_credential(value, name)


def _check_region(region: str, source: str) -> str:
    region = region.strip()
    if not _REGION_RE.fullmatch(region):
        raise ConfigurationError(
            f"{source} is {region!r}, which is not an AWS region name; "
            "use a region such as 'us-east-1' or 'eu-central-1'"
        )
    return region


def resolve_region(model_region: str | None = None, *, profile: str | None = None) -> str:
    """The AWS region for Bedrock, in the AWS SDKs' order.

    ``model_region`` (from the model config) if given, else ``AWS_REGION``, else
    ``AWS_DEFAULT_REGION``, else the ``region`` of the profile (``profile`` or
    ``AWS_PROFILE``) in the shared config file — the last only with botocore
    installed. None of them → :class:`ConfigurationError` saying what to set.
    """
    if model_region:
        return _check_region(model_region, "the model's region")
    for var in _REGION_ENVS:
        value = os.environ.get(var, "").strip()
        if value:
            return _check_region(value, var)
    try:
        import botocore.session
    except ImportError:
        hint = " (install modelwire[bedrock] to read it from an AWS profile)"
    else:
        from botocore.exceptions import BotoCoreError

        try:
            region = botocore.session.Session(profile=profile).get_config_variable("region")
        except BotoCoreError as exc:
            raise ConfigurationError(f"the AWS profile could not be read: {exc}") from exc
        if isinstance(region, str) and region.strip():
            return _check_region(region, "the AWS profile's region")
        hint = ""
    raise ConfigurationError(
        "no AWS region: pass the model's region, or set AWS_REGION (e.g. 'us-east-1'), "
        f"or set region in your AWS profile{hint}"
    )


class SigV4Signer:
    """Signs requests with AWS SigV4 using botocore's credential chain.

    ``region`` is required (see :func:`resolve_region`); ``profile`` selects a
    shared-config profile (default: ``AWS_PROFILE``, else ``default``);
    ``credentials`` (a botocore ``Credentials``) bypasses the chain.
    Credentials are resolved here, so a missing one fails before any request.
    """

    def __init__(
        self,
        region: str,
        *,
        service: str = "bedrock",
        profile: str | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        _require_botocore()
        self.region = _check_region(region, "region")
        self.service = service
        if credentials is None:
            check_credential_environment()
            credentials = _load_credentials(profile)
        self._credentials = credentials

    def _frozen(self) -> Any:
        from botocore.exceptions import BotoCoreError

        try:
            # Refreshes temporary credentials first when they are (about to be)
            # expired; the frozen triple is consistent even if another thread
            # refreshes right after.
            return self._credentials.get_frozen_credentials()
        except BotoCoreError as exc:
            raise AuthenticationError(
                f"AWS credentials could not be refreshed: {exc}; check the credential "
                "source (profile, role, container endpoint) and sign in again"
            ) from exc

    def _sign(
        self, frozen: Any, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        if not isinstance(body, bytes):
            raise ConfigurationError(
                "the body to sign must be the exact bytes that will be sent (bytes), "
                f"not {type(body).__name__}"
            )
        # Credentials from a profile, a credential_process or a container endpoint
        # are checked here, where they are first seen (the variables were at
        # construction): what goes into a header must be a header value.
        check_credential(frozen.access_key, "the AWS access key id from the credential chain")
        if frozen.token:
            check_credential(frozen.token, "the AWS session token from the credential chain")
        request = AWSRequest(method=method.upper(), url=url, headers=dict(headers), data=body)
        auth = SigV4Auth(frozen, self.service, self.region)
        with _quiet_botocore():
            auth.add_auth(request)
        out: dict[str, str] = {}
        for name in ("Authorization", "X-Amz-Date", "Date", "X-Amz-Security-Token"):
            value = request.headers.get(name)
            if value is not None and headers.get(name) != value:
                out[name] = str(value)
        signature = out["Authorization"].rpartition("Signature=")[2]
        secrets = tuple(s for s in (frozen.secret_key, frozen.token, signature) if s)
        return out, secrets

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        """The SigV4 headers for this exact request and the secrets they involve.

        Returns ``Authorization`` and ``X-Amz-Date`` (``X-Amz-Security-Token`` with
        temporary credentials). Every header in ``headers`` is signed (except
        those SigV4 leaves out, such as ``User-Agent``): send them unchanged.
        """
        return self._sign(self._frozen(), method, url, headers, body)

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        needs_refresh = getattr(self._credentials, "refresh_needed", None)
        if needs_refresh is not None and needs_refresh():
            import anyio.to_thread

            # A refresh is a blocking HTTP call (STS, SSO, the container endpoint).
            frozen = await anyio.to_thread.run_sync(self._frozen)
        else:
            frozen = self._frozen()
        return self._sign(frozen, method, url, headers, body)

    def sign(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> dict[str, str]:
        """The headers to add (see :meth:`authorize`), without the secrets."""
        return self.authorize(method, url, headers, body)[0]


def _load_credentials(profile: str | None) -> Credentials:
    import botocore.session
    from botocore.exceptions import (
        BotoCoreError,
        PartialCredentialsError,
        ProfileNotFound,
    )

    try:
        credentials = botocore.session.Session(profile=profile).get_credentials()
    except ProfileNotFound as exc:
        raise ConfigurationError(
            f"{exc}: set AWS_PROFILE (or pass profile=) to a profile defined in "
            "AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/config)"
        ) from exc
    except PartialCredentialsError as exc:
        raise MissingAPIKeyError(
            f"incomplete AWS credentials ({exc}): set both AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY",
            env_var="AWS_SECRET_ACCESS_KEY",
        ) from exc
    except BotoCoreError as exc:
        raise AuthenticationError(f"AWS credentials could not be loaded: {exc}") from exc
    if credentials is None:
        raise MissingAPIKeyError(_NO_CREDENTIALS, env_var=BEDROCK_API_KEY_ENV)
    return credentials


class BedrockAuth:
    """Bedrock credentials: the API key when there is one, else SigV4.

    ``api_key`` (else ``AWS_BEARER_TOKEN_BEDROCK``) → ``Authorization: Bearer``;
    without one a :class:`SigV4Signer` for ``region`` (see
    :func:`resolve_region`) signs each request. ``region`` is resolved in both
    cases because the runtime endpoint
    (``https://bedrock-runtime.{region}.amazonaws.com``) needs it.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        signer: SigV4Signer | None = None,
    ) -> None:
        self.region = (
            signer.region if signer is not None else resolve_region(region, profile=profile)
        )
        if api_key:
            check_credential(api_key, "BedrockAuth(api_key=)")
        self._api_key = api_key or bedrock_api_key()
        self._signer: SigV4Signer | None = None
        if self._api_key is None:
            self._signer = signer or SigV4Signer(self.region, profile=profile)

    @property
    def uses_api_key(self) -> bool:
        return self._api_key is not None

    def __repr__(self) -> str:
        kind = "api_key" if self._api_key is not None else "sigv4"
        return f"BedrockAuth(region={self.region!r}, auth={kind!r})"

    def authorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        if self._api_key is not None:
            return {"Authorization": f"Bearer {self._api_key}"}, (self._api_key,)
        assert self._signer is not None
        return self._signer.authorize(method, url, headers, body)

    async def aauthorize(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> AuthHeaders:
        if self._api_key is not None:
            return {"Authorization": f"Bearer {self._api_key}"}, (self._api_key,)
        assert self._signer is not None
        return await self._signer.aauthorize(method, url, headers, body)

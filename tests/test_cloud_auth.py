"""modelwire.cloud: Bedrock (API key, SigV4), Vertex AI (ADC) and Azure OpenAI auth.

Hermetic: every credential, token and metadata endpoint is a loopback server
started here; the instance-metadata and GCE checks are switched off.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import anyio
import httpx
import pytest

from modelwire._providers.azure_openai import azure_url
from modelwire.cloud import CloudAuth
from modelwire.cloud._tokens import TokenCache
from modelwire.cloud.aws import BedrockAuth, SigV4Signer, bedrock_api_key, resolve_region
from modelwire.cloud.azure import AzureAuth, resolve_api_version, resolve_endpoint
from modelwire.cloud.google import VertexAuth, resolve_location, resolve_project
from modelwire.errors import AuthenticationError, ConfigurationError, MissingAPIKeyError

_CLOUD_ENV_PREFIXES = ("AWS_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_", "AZURE_", "IDENTITY_", "MSI_")
_CLOUD_ENV = ("CLOUD_ML_REGION", "OPENAI_API_VERSION", "GCE_METADATA_HOST", "IMDS_ENDPOINT")


@pytest.fixture(autouse=True)
def _no_ambient_cloud(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credential of the machine is seen; no metadata service is probed."""
    import os

    for var in list(os.environ):
        if var.startswith(_CLOUD_ENV_PREFIXES) or var in _CLOUD_ENV:
            monkeypatch.delenv(var)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(empty))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setenv("HOME", str(empty))


# ---------------------------------------------------------------- loopback server

Handler = Callable[[str, str, dict[str, str], bytes], tuple[int, Any]]


class Loopback:
    """A threaded loopback HTTP server answering with ``handler``; records requests."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        outer = self

        class _H(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append((self.command, self.path, headers, body))
                status, payload = handler(self.command, self.path, headers, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                kind = "text/plain" if isinstance(payload, bytes) else "application/json"
                self.send_header("content-type", kind)
                self.send_header("metadata-flavor", "Google")  # GCE metadata-server answers
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Loopback]]:
    servers: list[Loopback] = []

    def start(handler: Handler) -> Loopback:
        servers.append(Loopback(handler))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


# ---------------------------------------------------------------- AWS SigV4

# The AWS Signature Version 4 test suite
# (https://docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html; the
# same files are kept in awslabs/aws-c-auth tests/aws-signing-test-suite/v4/*/
# header-signed-request.txt): credentials AKIDEXAMPLE, region us-east-1, service
# "service", 2015-08-30T12:36:00Z, host example.amazonaws.com. Expected values are
# copied exactly as published.
SUITE_KEY = "AKIDEXAMPLE"
SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_TOKEN = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
SUITE_SCOPE = "Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"
SUITE_VECTORS = [
    (
        "get-vanilla",
        ("GET", "/", {}, b""),
        None,
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    ),
    (
        "post-vanilla",
        ("POST", "/", {}, b""),
        None,
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders=host;x-amz-date, "
        "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    ),
    (
        # The 2015 suite's post-x-www-form-urlencoded.authz (aws-c-auth later added
        # content-length and x-amz-content-sha256 to its variant of this case).
        "post-x-www-form-urlencoded",
        ("POST", "/", {"Content-Type": "application/x-www-form-urlencoded"}, b"Param1=value1"),
        None,
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders=content-type;host;x-amz-date, "
        "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
    ),
    (
        "get-vanilla-query-order-key-case",
        ("GET", "/?Param2=value2&Param1=value1", {}, b""),
        None,
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders=host;x-amz-date, "
        "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
    ),
    (
        "get-vanilla-with-session-token",
        ("GET", "/", {}, b""),
        SUITE_TOKEN,
        f"AWS4-HMAC-SHA256 {SUITE_SCOPE}, SignedHeaders=host;x-amz-date;x-amz-security-token, "
        "Signature=07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
    ),
]


@pytest.fixture
def suite_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.auth

    fixed = dt.datetime(2015, 8, 30, 12, 36, 0)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: fixed)


def _suite_signer(token: str | None = None) -> SigV4Signer:
    from botocore.credentials import Credentials

    return SigV4Signer(
        "us-east-1", service="service", credentials=Credentials(SUITE_KEY, SUITE_SECRET, token)
    )


@pytest.mark.parametrize(
    ("request_", "token", "authz"),
    [v[1:] for v in SUITE_VECTORS],
    ids=[v[0] for v in SUITE_VECTORS],
)
def test_sigv4_matches_the_published_test_suite(
    suite_clock: None, request_: Any, token: str | None, authz: str
) -> None:
    method, target, headers, body = request_
    signer = _suite_signer(token)
    sent, secrets = signer.authorize(
        method, "https://example.amazonaws.com" + target, headers, body
    )
    assert sent["Authorization"] == authz
    assert sent["X-Amz-Date"] == "20150830T123600Z"
    assert sent.get("X-Amz-Security-Token") == token
    signature = authz.rpartition("Signature=")[2]
    # Everything a redactor must hide: the secret key, the token, the signature.
    assert set(secrets) == {SUITE_SECRET, signature} | ({token} if token else set())
    assert signer.sign(method, "https://example.amazonaws.com" + target, headers, body) == sent
    async_sent = anyio.run(
        signer.aauthorize, method, "https://example.amazonaws.com" + target, headers, body
    )
    assert async_sent == (sent, secrets)


def test_sigv4_refuses_a_text_body(suite_clock: None) -> None:
    with pytest.raises(ConfigurationError, match="exact bytes"):
        _suite_signer().authorize("POST", "https://example.amazonaws.com/", {}, "{}")  # type: ignore[arg-type]


def _reference_verify(
    method: str, raw_target: str, headers: dict[str, str], body: bytes, secret: str
) -> bool:
    """An independent SigV4 check, as the service does it, over what was received."""
    auth = headers["authorization"]
    fields = dict(
        p.strip().split("=", 1) for p in auth.removeprefix("AWS4-HMAC-SHA256 ").split(",")
    )
    _key, date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    path, _, query = raw_target.partition("?")
    canonical = "\n".join(
        [
            method,
            quote(path, safe="/~"),  # non-S3 services encode the already-encoded path again
            "&".join(sorted(query.split("&"))) if query else "",
            "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            headers["x-amz-date"],
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["Signature"])


def test_sigv4_signature_covers_the_exact_bytes_of_a_converse_request(
    serve: Callable[[Handler], Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDCONVERSE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "converse-secret")
    verdicts: list[bool] = []

    def bedrock(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        verdicts.append(_reference_verify(method, target, headers, body, "converse-secret"))
        return (200, {}) if verdicts[-1] else (403, {"message": "signature mismatch"})

    server = serve(bedrock)
    url = f"{server.url}/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream"
    body = json.dumps(
        {
            "messages": [{"role": "user", "content": [{"text": "héllo"}]}],
            "inferenceConfig": {"maxTokens": 64},
        },
        ensure_ascii=False,
    ).encode()
    headers = {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream"}
    signer = SigV4Signer("us-west-2")
    signed = signer.sign("POST", url, headers, body)
    assert "Credential=AKIDCONVERSE/" in signed["Authorization"]
    assert "/us-west-2/bedrock/aws4_request" in signed["Authorization"]
    with httpx.Client() as client:
        ok = client.post(url, content=body, headers={**headers, **signed})
        flipped = body.replace(b"64", b"65")
        bad = client.post(url, content=flipped, headers={**headers, **signed})
    assert ok.status_code == 200 and bad.status_code == 403
    assert verdicts == [True, False]
    assert signer.sign("POST", url, headers, flipped)["Authorization"] != signed["Authorization"]


def test_bedrock_api_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert bedrock_api_key() is None
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "  ")
    assert bedrock_api_key() is None
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-bedrock-key")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    assert bedrock_api_key() == "ABSK-bedrock-key"
    auth = BedrockAuth()  # no AWS credentials anywhere: the key is enough
    assert auth.uses_api_key and auth.region == "eu-central-1"
    expected = ({"Authorization": "Bearer ABSK-bedrock-key"}, ("ABSK-bedrock-key",))
    assert auth.authorize("POST", "https://x/", {}, b"{}") == expected
    assert anyio.run(auth.aauthorize, "POST", "https://x/", {}, b"{}") == expected
    assert "ABSK" not in repr(auth)
    assert isinstance(auth, CloudAuth)


def test_bedrock_auth_signs_without_an_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "env-session-token")
    auth = BedrockAuth(region="us-east-1")
    assert not auth.uses_api_key
    headers, secrets = auth.authorize(
        "POST", "https://bedrock-runtime.us-east-1.amazonaws.com/m", {}, b"{}"
    )
    assert headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDENV/")
    assert "x-amz-security-token" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "env-session-token"
    assert {"env-secret", "env-session-token"} <= set(secrets)
    async_headers, _ = anyio.run(
        auth.aauthorize, "POST", "https://bedrock-runtime.us-east-1.amazonaws.com/m", {}, b"{}"
    )
    assert async_headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDENV/")


def test_region_resolution_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="set AWS_REGION"):
        resolve_region()
    config = tmp_path / "config"
    config.write_text("[profile dev]\nregion = ap-southeast-2\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "dev")
    assert resolve_region() == "ap-southeast-2"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    assert resolve_region() == "eu-west-1"
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    assert resolve_region() == "us-west-2"
    assert resolve_region("us-gov-west-1") == "us-gov-west-1"
    monkeypatch.setenv("AWS_REGION", "us-east-1/../evil")
    with pytest.raises(ConfigurationError, match=r"AWS_REGION is 'us-east-1/\.\./evil'"):
        resolve_region()


def test_credentials_from_a_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n"
        "[dev]\naws_access_key_id = AKIDDEV\naws_secret_access_key = dev-secret\n"
    )
    (tmp_path / "config").write_text("[profile dev]\nregion = eu-north-1\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    default = SigV4Signer("us-east-1").sign("GET", "https://h/", {}, b"")
    assert "Credential=AKIDDEFAULT/" in default["Authorization"]
    monkeypatch.setenv("AWS_PROFILE", "dev")
    auth = BedrockAuth()
    assert auth.region == "eu-north-1"
    headers, secrets = auth.authorize("GET", "https://h/", {}, b"")
    assert "Credential=AKIDDEV/" in headers["Authorization"]
    assert "X-Amz-Security-Token" not in headers
    assert "dev-secret" in secrets


def test_missing_and_broken_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingAPIKeyError) as info:
        SigV4Signer("us-east-1")
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_PROFILE"):
        assert name in str(info.value)
    assert info.value.env_var == "AWS_BEARER_TOKEN_BEDROCK"
    monkeypatch.setenv("AWS_PROFILE", "nope")
    with pytest.raises(ConfigurationError, match="set AWS_PROFILE"):
        SigV4Signer("us-east-1")
    monkeypatch.delenv("AWS_PROFILE")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDONLY")
    with pytest.raises(MissingAPIKeyError, match="AWS_SECRET_ACCESS_KEY"):
        SigV4Signer("us-east-1")


def test_container_role_credentials_are_refreshed_when_they_expire(
    serve: Callable[[Handler], Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    import botocore.utils

    monkeypatch.setattr(botocore.utils.ContainerMetadataFetcher, "SLEEP_TIME", 0)
    now = dt.datetime.now(dt.UTC)
    # 1st: expires in 2 minutes, inside botocore's mandatory refresh window (10 min);
    # 2nd: valid for an hour; then the endpoint fails.
    served = [
        ("ASIAFIRST", now + dt.timedelta(minutes=2)),
        ("ASIASECOND", now + dt.timedelta(hours=1)),
    ]

    def role(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        assert headers.get("authorization") == "container-auth-token"
        if not served:
            return 500, {"message": "down"}
        key, expires = served.pop(0)
        return 200, {
            "AccessKeyId": key,
            "SecretAccessKey": f"secret-of-{key}",
            "Token": f"token-of-{key}",
            "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    server = serve(role)
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{server.url}/v2/credentials/role")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "container-auth-token")
    signer = SigV4Signer("us-east-1")
    assert len(server.requests) == 1  # loaded when the signer is built
    headers, secrets = signer.authorize("POST", "https://h/", {}, b"{}")
    # The first credentials were about to expire: refreshed before signing.
    assert len(server.requests) == 2
    assert "Credential=ASIASECOND/" in headers["Authorization"]
    assert headers["X-Amz-Security-Token"] == "token-of-ASIASECOND"
    assert {"secret-of-ASIASECOND", "token-of-ASIASECOND"} <= set(secrets)
    # Fresh credentials are reused, not fetched per request (sync and async).
    signer.authorize("POST", "https://h/", {}, b"{}")
    anyio.run(signer.aauthorize, "POST", "https://h/", {}, b"{}")
    assert len(server.requests) == 2


def test_async_signer_refreshes_in_a_worker_thread(
    serve: Callable[[Handler], Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    expires = [dt.timedelta(minutes=1), dt.timedelta(hours=1)]

    def role(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        threads.append(threading.current_thread().name)
        exp = dt.datetime.now(dt.UTC) + expires.pop(0)
        return 200, {
            "AccessKeyId": "ASIAX",
            "SecretAccessKey": "sx",
            "Token": "tx",
            "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    server = serve(role)
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{server.url}/creds")
    signer = SigV4Signer("us-east-1")
    calling: list[str] = []
    real_frozen = signer._frozen

    def frozen() -> Any:
        calling.append(threading.current_thread().name)
        return real_frozen()

    monkeypatch.setattr(signer, "_frozen", frozen)

    async def main() -> None:
        await signer.aauthorize("GET", "https://h/", {}, b"")  # needs a refresh
        await signer.aauthorize("GET", "https://h/", {}, b"")  # fresh

    anyio.run(main)
    assert len(server.requests) == 2
    main_thread = threading.current_thread().name
    assert calling[0] != main_thread and calling[1] == main_thread


def test_a_failed_refresh_is_an_authentication_error(
    serve: Callable[[Handler], Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    import botocore.utils

    monkeypatch.setattr(botocore.utils.ContainerMetadataFetcher, "SLEEP_TIME", 0)
    first = [True]

    def role(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        if first.pop() if first else False:
            exp = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
            return 200, {
                "AccessKeyId": "ASIAX",
                "SecretAccessKey": "sx",
                "Token": "tx",
                "Expiration": exp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        return 500, {"message": "unavailable"}

    server = serve(role)
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{server.url}/creds")
    signer = SigV4Signer("us-east-1")
    with pytest.raises(AuthenticationError, match="could not be refreshed"):
        signer.authorize("GET", "https://h/", {}, b"")


# ---------------------------------------------------------------- Google Vertex AI


def _b64url_decode(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@pytest.fixture
def service_account(
    serve: Callable[[Handler], Loopback], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Loopback:
    """A generated service-account key whose token_uri is a loopback server
    that checks the JWT-bearer grant (RFC 7523) like Google's does."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    issued = iter(range(1, 100))

    def token(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        form = parse_qs(body.decode())
        if form["grant_type"] != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return 400, {"error": "unsupported_grant_type"}
        head, payload, sig = form["assertion"][0].split(".")
        try:
            key.public_key().verify(
                _b64url_decode(sig),
                f"{head}.{payload}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except Exception:
            return 400, {"error": "invalid_grant", "error_description": "bad signature"}
        claims = json.loads(_b64url_decode(payload))
        assert json.loads(_b64url_decode(head))["alg"] == "RS256"
        assert claims["iss"] == "runner@proj-test-123.iam.gserviceaccount.com"
        # google-auth always names Google's token endpoint as the audience.
        assert claims["aud"] == "https://oauth2.googleapis.com/token"
        assert target == "/token"
        assert claims["scope"] == "https://www.googleapis.com/auth/cloud-platform"
        return 200, {"access_token": f"ya29.sa-{next(issued)}", "expires_in": 3600}

    server = serve(token)
    info = {
        "type": "service_account",
        "project_id": "proj-test-123",
        "private_key_id": "k1",
        "private_key": pem,
        "client_email": "runner@proj-test-123.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": server.url + "/token",
    }
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    return server


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_vertex_adc_service_account_token_is_cached_and_refreshed(
    service_account: Loopback,
) -> None:
    clock = Clock()
    auth = VertexAuth(location="us-central1", clock=clock)
    assert isinstance(auth, CloudAuth)
    assert auth.project == "proj-test-123"  # from the key file (ADC)
    assert auth.location == "us-central1"
    assert auth.token() == "ya29.sa-1"
    assert auth.token() == "ya29.sa-1"
    assert anyio.run(auth.atoken) == "ya29.sa-1"
    assert len(service_account.requests) == 1
    # Refreshed ahead of expiry (3600 s), inside the 300 s margin.
    clock.now += 3600 - 299
    headers, secrets = auth.authorize("POST", "https://x/", {}, b"{}")
    assert headers == {"Authorization": "Bearer ya29.sa-2"} and "ya29.sa-2" in secrets
    assert len(service_account.requests) == 2
    clock.now += 3600
    assert anyio.run(auth.aauthorize, "POST", "https://x/", {}, b"{}")[0] == {
        "Authorization": "Bearer ya29.sa-3"
    }
    assert len(service_account.requests) == 3


def test_vertex_adc_authorized_user_and_a_failed_refresh_is_redacted(
    serve: Callable[[Handler], Loopback], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refresh_token = "1//refresh-token-SECRET"
    accept = [True]

    def token(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        form = parse_qs(body.decode())
        assert form["grant_type"] == ["refresh_token"]
        assert form["client_id"] == ["cid.apps.googleusercontent.com"]
        if accept[0] and form["refresh_token"] == [refresh_token]:
            return 200, {"access_token": "ya29.user-1", "expires_in": 3599}
        # A hostile or careless endpoint echoing the secret back.
        return 400, {
            "error": "invalid_grant",
            "error_description": f"token {form['refresh_token'][0]} has been revoked",
        }

    server = serve(token)
    path = tmp_path / "adc.json"
    path.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "cid.apps.googleusercontent.com",
                "client_secret": "client-secret-SECRET",
                "refresh_token": refresh_token,
            }
        )
    )
    import google.oauth2.credentials

    # google-auth always sends authorized-user refreshes to Google's endpoint
    # (it ignores a token_uri in the file): point that endpoint at loopback.
    monkeypatch.setattr(
        google.oauth2.credentials, "_GOOGLE_OAUTH2_TOKEN_ENDPOINT", server.url + "/token"
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-user-1")
    clock = Clock()
    auth = VertexAuth(clock=clock)
    assert auth.project == "proj-user-1"
    assert auth.token() == "ya29.user-1"
    accept[0] = False
    clock.now += 4000
    with pytest.raises(AuthenticationError) as info:
        auth.token()
    text = str(info.value)
    assert "revoked" in text and "[redacted]" in text
    assert refresh_token not in text
    assert info.value.__cause__ is None and info.value.__suppress_context__
    with pytest.raises(AuthenticationError) as ainfo:
        anyio.run(auth.atoken)
    assert refresh_token not in str(ainfo.value)


def test_vertex_adc_on_a_loopback_metadata_server(
    serve: Callable[[Handler], Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADC on Compute Engine / Cloud Run / GKE: google-auth finds the metadata
    server (through the extra's requests transport) and refreshes from it."""
    from google.auth.compute_engine import _metadata

    issued = iter(range(1, 100))

    def metadata(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        assert headers.get("metadata-flavor") == "Google"
        path = urlsplit(target).path
        if path == "/":
            return 200, b""
        if path == "/computeMetadata/v1/project/project-id":
            return 200, b"proj-gce-42"
        # The account is addressed as "default", then by its email.
        account, _, leaf = path.removeprefix(
            "/computeMetadata/v1/instance/service-accounts/"
        ).partition("/")
        if account in ("default", "gce@proj-gce-42.iam.gserviceaccount.com"):
            if leaf == "":
                return 200, {"email": "gce@proj-gce-42.iam.gserviceaccount.com", "scopes": []}
            if leaf == "token":
                return 200, {"access_token": f"ya29.gce-{next(issued)}", "expires_in": 3600}
        return 404, b"not found"

    server = serve(metadata)
    host = server.url.removeprefix("http://")
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", False)
    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", host)
    monkeypatch.setenv("GCE_METADATA_IP", host)
    clock = Clock()
    auth = VertexAuth(location="us-central1", clock=clock)
    assert auth.project == "proj-gce-42"
    assert auth.token() == "ya29.gce-1" and auth.token() == "ya29.gce-1"
    clock.now += 3600
    assert anyio.run(auth.atoken) == "ya29.gce-2"


def test_vertex_token_or_api_key_given_directly(monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither needs google-auth.
    monkeypatch.setitem(sys.modules, "google", None)
    monkeypatch.setitem(sys.modules, "google.auth", None)
    by_token = VertexAuth(token="ya29.direct", project="proj-direct", location="global")
    assert by_token.authorize("POST", "u", {}, b"") == (
        {"Authorization": "Bearer ya29.direct"},
        ("ya29.direct",),
    )
    assert anyio.run(by_token.atoken) == "ya29.direct"
    by_key = VertexAuth(api_key="AIza-key")
    assert anyio.run(by_key.aauthorize, "POST", "u", {}, b"") == (
        {"x-goog-api-key": "AIza-key"},
        ("AIza-key",),
    )
    assert "ya29" not in repr(by_token) and "AIza" not in repr(by_key)
    with pytest.raises(ConfigurationError, match=r"install modelwire\[vertex\]"):
        VertexAuth()


def test_vertex_without_adc_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.auth.compute_engine import _metadata

    # google-auth reads NO_GCE_CHECK at import time: make sure no metadata server is probed.
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)
    with pytest.raises(MissingAPIKeyError) as info:
        VertexAuth()
    assert "GOOGLE_APPLICATION_CREDENTIALS" in str(info.value)
    assert "gcloud auth application-default login" in str(info.value)


def test_vertex_project_and_location_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="GOOGLE_CLOUD_PROJECT"):
        resolve_project()
    assert resolve_project(adc_project="proj-from-adc") == "proj-from-adc"
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj-from-env")
    assert resolve_project(adc_project="proj-from-adc") == "proj-from-env"
    assert resolve_project("proj-explicit") == "proj-explicit"
    with pytest.raises(ConfigurationError, match="not a Google Cloud project id"):
        resolve_project("a/b")
    with pytest.raises(ConfigurationError, match="GOOGLE_CLOUD_LOCATION"):
        resolve_location()
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west4")
    assert resolve_location() == "europe-west4"
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "global")
    assert resolve_location() == "global"
    assert resolve_location("us-east5") == "us-east5"
    with pytest.raises(ConfigurationError, match="GOOGLE_CLOUD_LOCATION is 'us central'"):
        monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us central")
        resolve_location()


def test_token_cache_refreshes_once_for_concurrent_callers() -> None:
    fetched: list[int] = []
    gate = threading.Event()

    def fetch() -> tuple[str, float | None]:
        gate.wait(5)
        fetched.append(1)
        return f"tok-{len(fetched)}", time.time() + 3600

    cache = TokenCache(fetch)
    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get())) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    gate.set()
    for t in threads:
        t.join()
    assert results == ["tok-1"] * 8 and len(fetched) == 1


# ---------------------------------------------------------------- Azure OpenAI


def test_azure_api_key_and_ad_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MissingAPIKeyError) as info:
        AzureAuth()
    assert (
        "AZURE_OPENAI_API_KEY" in str(info.value) and info.value.env_var == "AZURE_OPENAI_API_KEY"
    )
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    auth = AzureAuth()
    assert isinstance(auth, CloudAuth)
    assert auth.authorize("POST", "u", {}, b"") == ({"api-key": "azure-key"}, ("azure-key",))
    assert anyio.run(auth.aauthorize, "POST", "u", {}, b"") == (
        {"api-key": "azure-key"},
        ("azure-key",),
    )
    # Both set: the Entra ID token wins, as in the openai SDK's AzureOpenAI.
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "eyJ-ad-token")
    assert AzureAuth().authorize("POST", "u", {}, b"")[0] == {
        "Authorization": "Bearer eyJ-ad-token"
    }
    # An explicit argument beats the environment.
    assert AzureAuth(api_key="explicit").authorize("POST", "u", {}, b"")[0] == {
        "api-key": "explicit"
    }
    assert "key" not in repr(AzureAuth(api_key="sekrit")).replace("api_key", "")


def test_azure_token_provider_sync_and_async() -> None:
    calls: list[str] = []

    def provider() -> str:
        calls.append(threading.current_thread().name)
        return f"eyJ-{len(calls)}"

    auth = AzureAuth(token_provider=provider)
    assert auth.authorize("POST", "u", {}, b"") == ({"Authorization": "Bearer eyJ-1"}, ("eyJ-1",))
    assert anyio.run(auth.aauthorize, "POST", "u", {}, b"")[0] == {"Authorization": "Bearer eyJ-2"}
    assert calls[1] != threading.current_thread().name  # a sync provider runs off the loop

    async def aprovider() -> str:
        return "eyJ-async"

    aauth = AzureAuth(token_provider=aprovider)
    assert anyio.run(aauth.aauthorize, "POST", "u", {}, b"")[0] == {
        "Authorization": "Bearer eyJ-async"
    }
    with pytest.raises(ConfigurationError, match="use aauthorize"):
        aauth.authorize("POST", "u", {}, b"")
    with pytest.raises(AuthenticationError, match="did not return a bearer token"):
        AzureAuth(token_provider=lambda: "").authorize("POST", "u", {}, b"")


class FakeCredential:
    """An azure-core TokenCredential double."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.scopes: list[tuple[str, ...]] = []
        self.fail = False

    def get_token(self, *scopes: str) -> Any:
        from azure.core.credentials import AccessToken
        from azure.core.exceptions import ClientAuthenticationError

        self.scopes.append(scopes)
        if self.fail:
            raise ClientAuthenticationError(f"token eyJ-cred-{len(self.scopes) - 1} was revoked")
        return AccessToken(f"eyJ-cred-{len(self.scopes)}", int(self.clock.now) + 3600)


def test_azure_credential_token_is_cached_and_refreshed() -> None:
    clock = Clock()
    cred = FakeCredential(clock)
    auth = AzureAuth(credential=cred, clock=clock)
    assert auth.authorize("POST", "u", {}, b"")[0] == {"Authorization": "Bearer eyJ-cred-1"}
    assert anyio.run(auth.aauthorize, "POST", "u", {}, b"")[0] == {
        "Authorization": "Bearer eyJ-cred-1"
    }
    assert cred.scopes == [("https://cognitiveservices.azure.com/.default",)]
    clock.now += 3600 - 200
    assert anyio.run(auth.aauthorize, "POST", "u", {}, b"")[0] == {
        "Authorization": "Bearer eyJ-cred-2"
    }
    cred.fail = True
    clock.now += 3600
    with pytest.raises(AuthenticationError) as info:
        auth.authorize("POST", "u", {}, b"")
    assert "eyJ-cred-2" not in str(info.value) and "[redacted]" in str(info.value)


def test_azure_default_credential_via_a_loopback_managed_identity(
    serve: Callable[[Handler], Loopback], monkeypatch: pytest.MonkeyPatch
) -> None:
    def identity(method: str, target: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        assert headers.get("x-identity-header") == "identity-header-secret"
        query = parse_qs(urlsplit(target).query)
        assert query["resource"] == ["https://cognitiveservices.azure.com"]
        return 200, {
            "access_token": "eyJ-managed-identity",
            "expires_on": str(int(time.time()) + 3600),
            "resource": "https://cognitiveservices.azure.com",
            "token_type": "Bearer",
        }

    server = serve(identity)
    # App Service / Functions managed identity (IDENTITY_ENDPOINT + IDENTITY_HEADER).
    monkeypatch.setenv("IDENTITY_ENDPOINT", server.url + "/msi/token")
    monkeypatch.setenv("IDENTITY_HEADER", "identity-header-secret")
    auth = AzureAuth(use_default_credential=True)
    assert auth.authorize("POST", "u", {}, b"")[0] == {
        "Authorization": "Bearer eyJ-managed-identity"
    }
    assert auth.authorize("POST", "u", {}, b"")[1] == ("eyJ-managed-identity",)
    assert len(server.requests) == 1


def test_azure_identity_missing_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "azure.identity", None)
    with pytest.raises(ConfigurationError, match=r"install modelwire\[azure\]"):
        AzureAuth(use_default_credential=True)


def test_botocore_missing_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(ConfigurationError, match=r"install modelwire\[bedrock\]"):
        SigV4Signer("us-east-1")
    with pytest.raises(ConfigurationError, match=r"install modelwire\[bedrock\] to read it"):
        resolve_region()
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "ABSK-key")
    assert BedrockAuth(region="us-east-1").uses_api_key  # the API key needs no botocore


@pytest.mark.parametrize(
    ("endpoint", "deployment", "path", "version", "url"),
    [
        (
            "https://r.openai.azure.com",
            None,
            "/chat/completions",
            None,
            "https://r.openai.azure.com/openai/v1/chat/completions",
        ),
        (
            "https://r.openai.azure.com/",
            "gpt-4o",
            "/responses",
            "v1",
            "https://r.openai.azure.com/openai/v1/responses",
        ),
        (
            "https://r.openai.azure.com/openai/v1/",
            None,
            "/responses",
            None,
            "https://r.openai.azure.com/openai/v1/responses",
        ),
        (
            "https://r.openai.azure.com",
            None,
            "/chat/completions",
            "preview",
            "https://r.openai.azure.com/openai/v1/chat/completions?api-version=preview",
        ),
        (
            "https://r.openai.azure.com",
            "my gpt/4o",
            "/chat/completions",
            "2024-10-21",
            "https://r.openai.azure.com/openai/deployments/my%20gpt%2F4o/chat/completions?api-version=2024-10-21",
        ),
        (
            "https://r.openai.azure.com/openai",
            "d",
            "/responses",
            "2025-04-01-preview",
            "https://r.openai.azure.com/openai/responses?api-version=2025-04-01-preview",
        ),
        (
            "http://127.0.0.1:8080",
            "d",
            "/chat/completions",
            "2024-10-21",
            "http://127.0.0.1:8080/openai/deployments/d/chat/completions?api-version=2024-10-21",
        ),
    ],
)
def test_azure_url_forms(
    endpoint: str, deployment: str | None, path: str, version: str | None, url: str
) -> None:
    assert azure_url(endpoint, deployment, path, version) == url


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("r.openai.azure.com", "d", "/chat/completions", None), "not an http"),
        (("https://r.openai.azure.com?x=1", "d", "/chat/completions", None), "query or fragment"),
        (
            ("https://r.openai.azure.com", "d", "/v1/messages", None),
            "not '/v1/messages'",
        ),
        (
            ("https://r.openai.azure.com", None, "/chat/completions", "2024-10-21"),
            "needs the deployment",
        ),
        (("https://r.openai.azure.com", "d", "/chat/completions", "latest"), "neither a dated"),
        (
            ("https://r.openai.azure.com/openai/v1", "d", "/chat/completions", "2024-10-21"),
            "takes no dated",
        ),
    ],
)
def test_azure_url_refuses_bad_input(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        azure_url(*args)


def test_azure_endpoint_and_api_version_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        resolve_endpoint()
    assert resolve_api_version() is None
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://env.openai.azure.com")
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
    assert resolve_endpoint() == "https://env.openai.azure.com"
    assert resolve_endpoint("https://x") == "https://x"
    assert resolve_api_version() == "2024-10-21"
    assert resolve_api_version("v1") == "v1"


# ---------------------------------------------------------------- import cost


def test_import_modelwire_loads_no_cloud_sdk() -> None:
    code = (
        "import sys, modelwire\n"
        "heavy = ('modelwire.cloud', 'botocore', 'google.auth', 'azure.identity', 'azure.core')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "import modelwire.cloud.aws, modelwire.cloud.google, modelwire.cloud.azure\n"
        "print(sorted(m for m in heavy[1:] if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out == ["[]", "[]"]


# --------------------------------------------------------------------------- layering


@functools.cache  # parsing the whole source takes a second: once, for every case
def _src_graph() -> dict[str, set[str]]:
    from test_imports import SRC, import_graph

    return import_graph(SRC)


def _reach(start: str) -> set[str]:
    """Every modelwire module importing ``start`` may load: its imports (lazy and
    TYPE_CHECKING ones too, read from the source), transitively, with the packages
    they live in (importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``)."""
    graph = _src_graph()
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for mod in (".".join(parts[:i]) for i in range(2, len(parts) + 1)):
            if mod in graph and mod not in seen:
                seen.add(mod)
                todo.extend(graph[mod])
    return seen


@pytest.mark.parametrize(
    ("module", "never"),
    [
        # The status mapping is pure: it needs the classifier, not the wire APIs.
        ("modelwire._providers._status", ("modelwire._apis", "modelwire._http")),
        ("modelwire._providers._classify", ("modelwire._apis", "modelwire._http")),
        # The cloud helpers redact with the redaction module, not through the transport.
        ("modelwire.cloud.aws", ("modelwire._http",)),
        ("modelwire.cloud.azure", ("modelwire._http",)),
        ("modelwire.cloud.google", ("modelwire._http",)),
    ],
)
def test_layers_import_only_what_they_need(module: str, never: tuple[str, ...]) -> None:
    reached = _reach(module)
    assert module in reached
    bad = sorted(m for m in reached if any(m == n or m.startswith(n + ".") for n in never))
    assert bad == [], f"{module} reaches {bad}"


# --------------------------------------------------------------------------- botocore's DEBUG logs while we sign
SESSION_TOKEN = "FwoGZXIvYXdzEJr-session-token-9Qx"


def _signer() -> SigV4Signer:
    from botocore.credentials import Credentials

    creds = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SESSION_TOKEN)
    return SigV4Signer("us-east-1", credentials=creds)


def _leaks(caplog: pytest.LogCaptureFixture, *secrets: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if any(s in r.getMessage() for s in secrets)]  # fmt: skip


URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream"


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_botocore_logs_neither_the_session_token_nor_the_signature_while_we_sign(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")  # every logger, botocore's included
    signer = _signer()
    if mode == "sync":
        headers, _ = signer.authorize("POST", URL, {"content-type": "application/json"}, b"{}")
    else:
        headers, _ = anyio.run(
            signer.aauthorize, "POST", URL, {"content-type": "application/json"}, b"{}"
        )
    signature = headers["Authorization"].rpartition("Signature=")[2]
    assert headers["X-Amz-Security-Token"] == SESSION_TOKEN and len(signature) == 64
    assert _leaks(caplog, SESSION_TOKEN, signature) == []


def test_botocore_used_outside_our_signing_still_logs(caplog: pytest.LogCaptureFixture) -> None:
    # The filter is scoped to our signing: the caller's own botocore use is untouched.
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    _signer().authorize("POST", URL, {}, b"{}")  # installs the filter
    caplog.set_level("DEBUG")
    request = AWSRequest(method="POST", url=URL, data=b"{}")
    creds = Credentials("AKIDEXAMPLE", "secret", SESSION_TOKEN)
    SigV4Auth(creds, "bedrock", "us-east-1").add_auth(request)
    assert any("CanonicalRequest" in r.getMessage() for r in caplog.records)


def test_a_sigv4_stream_at_debug_logs_no_credential(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import modelwire as mw
    from test_url_paths import Recorder

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    caplog.set_level("DEBUG")
    rec = Recorder()
    try:
        model = mw.Model(id="anthropic.claude-v1", api="bedrock-converse",
                         provider="amazon-bedrock", base_url=f"http://{rec.netloc}")  # fmt: skip
        message = mw.complete_sync(model, mw.Context(messages=[mw.UserMessage(content="hi")]),
                                   max_retries=0)  # fmt: skip
    finally:
        rec.server.shutdown()
        rec.server.server_close()
    assert message.error is not None and len(rec.lines) == 1  # it was signed and sent
    assert _leaks(caplog, SESSION_TOKEN, "wJalrXUtnFEMI") == []
    assert not [r for r in caplog.records if r.name.startswith("botocore.auth")]

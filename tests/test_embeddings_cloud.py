"""Embeddings through the cloud providers' own credentials: Bedrock's SigV4 signs the
``InvokeModel`` request actually sent (its URL and body, not the chat request it was
made from), and a secret the provider echoes never shows."""

from __future__ import annotations

import json

import pytest

import modelwire as mw
from modelwire.errors import PermissionDeniedError
from modelwire.testing import MockServer, Reply, mock_vector
from test_bedrock import SECRET, TOKEN, _resign, aws_env, model

__all__ = ["aws_env"]  # the fixture, used by name

TITAN = "amazon.titan-embed-text-v2:0"


def test_sigv4_signs_the_invoke_request_and_its_secrets_never_show(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    aws_env.setenv("AWS_SESSION_TOKEN", TOKEN)
    aws_env.setenv("AWS_REGION", "eu-central-1")
    echo = json.dumps({"message": f"signature for {SECRET} / {TOKEN} rejected"}).encode()
    refused = Reply(status=403, body=echo, content_type="application/json",
                    headers={"x-amzn-ErrorType": "AccessDeniedException"})  # fmt: skip
    with MockServer() as srv:
        got = mw.embed_sync(model(srv.origin, TITAN), "signed 你好", dimensions=256)
        srv.add(refused)
        with pytest.raises(PermissionDeniedError) as caught:
            mw.embed_sync(model(srv.origin, TITAN), "x")
        rec = srv.requests[0]
    assert rec.path == "/model/amazon.titan-embed-text-v2%3A0/invoke"
    assert json.loads(rec.body) == {"inputText": "signed 你好", "normalize": True,
                                    "dimensions": 256}  # fmt: skip
    auth = rec.headers["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert auth.rpartition("Signature=")[2] == _resign(rec, "eu-central-1")
    assert list(got.vectors[0]) == mock_vector("signed 你好", 256)
    for secret in (SECRET, TOKEN):
        assert secret not in str(caught.value) and secret not in repr(caught.value)
    assert "[redacted]" in str(caught.value)

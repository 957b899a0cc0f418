"""``mw.embed`` against a real llama.cpp ``llama-server --embedding`` (its
OpenAI-compatible ``POST /v1/embeddings``), on loopback.

It runs when ``llama-server`` is on ``PATH`` (or ``LLAMA_SERVER`` names it) and
``MODELWIRE_LLAMA_EMBED_MODEL`` names a GGUF embedding model (e.g.
nomic-embed-text-v1.5.Q4_K_M.gguf); otherwise it skips, saying which is missing.
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

import modelwire as mw


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    binary = os.environ.get("LLAMA_SERVER") or shutil.which("llama-server")
    model = os.environ.get("MODELWIRE_LLAMA_EMBED_MODEL", "")
    if not binary:
        pytest.skip("llama-server not found (install llama.cpp or set LLAMA_SERVER)")
    if not model or not Path(model).is_file():
        pytest.skip("no GGUF embedding model: set MODELWIRE_LLAMA_EMBED_MODEL to its path")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--embedding", "--host", "127.0.0.1", "--port", str(port), "-m", model],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    origin = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(origin + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama-server did not become ready (exit code {proc.poll()})")
            time.sleep(0.2)
        yield origin + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    xs, ys = list(a), list(b)
    dot = sum(x * y for x, y in zip(xs, ys, strict=True))
    return dot / (math.sqrt(sum(x * x for x in xs)) * math.sqrt(sum(y * y for y in ys)))


def test_llama_server_embeds_in_order_and_deterministically(llama_server: str) -> None:
    texts = ["The cat sat on the mat.", "A kitten rested on the rug.", "Stock prices fell."]
    model = mw.Model(id="embed", api="openai-chat", provider="local", base_url=llama_server)
    first = mw.embed_sync(model, texts)
    again = mw.embed_sync(model, list(reversed(texts)))
    assert len(first.vectors) == 3 and len({len(v) for v in first.vectors}) == 1
    assert len(first.vectors[0]) > 0
    # Order is kept: the same text gives (nearly) the same vector in either order.
    for v, w in zip(first.vectors, reversed(again.vectors), strict=True):
        assert _cosine(v, w) > 0.999
    # A real model: the paraphrase is closer than the unrelated sentence.
    assert _cosine(first.vectors[0], first.vectors[1]) > _cosine(first.vectors[0], first.vectors[2])

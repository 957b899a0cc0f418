"""Embedding throughput: ``mw.embed`` against the openai SDK's
``embeddings.create``, on the same loopback ``MockServer``.

    python bench/bench_embeddings.py [--quick]        # or: make bench-embeddings

Each round embeds one batch of texts (``BATCH`` inputs of ``DIMS`` numbers) with
each client, alternating, over a warm connection; the medians of the wall time per
call are compared, and the vectors checked equal. Two encodings: base64 (what both
ask OpenAI for: float32 bytes, no number parsing) and float (a JSON array per
vector, what most compatible servers answer). The server's own time (vectors made
from SHA-256, JSON written by the standard library) is in both, so the ratio
understates the client-side difference; the client CPU time is shown too.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from array import array
from typing import Any

import openai

import modelwire as mw
from modelwire.testing import MockServer

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 20
BATCH = 256 if QUICK else 1024
DIMS = 1536
TEXTS = [f"document number {i}: a sentence to embed, in the bench" for i in range(BATCH)]


def _sdk(client: openai.AsyncOpenAI, encoding: str) -> Any:
    # Without encoding_format the SDK asks for base64 and decodes it itself (what its
    # users get by default); with "base64" it would hand back the strings undecoded.
    extra: Any = {} if encoding == "base64" else {"encoding_format": "float"}

    async def call() -> list[list[float]]:
        out = await client.embeddings.create(model="text-embedding-3-small", input=TEXTS,
                                             dimensions=DIMS, **extra)  # fmt: skip
        return [d.embedding for d in out.data]

    return call


def _mw(model: mw.Model, http_client: Any) -> Any:
    async def call() -> tuple[array[float], ...]:
        got = await mw.embed(model, TEXTS, dimensions=DIMS, api_key="sk-bench",
                             http_client=http_client)  # fmt: skip
        return got.vectors

    return call


async def _measure(fn: Any) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = await fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


async def main() -> None:
    import httpx

    with MockServer() as server:
        for encoding in ("base64", "float"):
            # provider "openai" asks for base64; any other provider gets floats.
            provider = "openai" if encoding == "base64" else "local"
            model = mw.Model(id="text-embedding-3-small", api="openai-chat", provider=provider,
                             base_url=server.base_url)  # fmt: skip
            async with (
                httpx.AsyncClient() as http,
                openai.AsyncOpenAI(
                    api_key="sk-bench", base_url=server.base_url, max_retries=0
                ) as sdk,
            ):
                ours, theirs = _mw(model, http), _sdk(sdk, encoding)
                await ours()
                await theirs()  # warm both connections
                times: dict[str, list[tuple[float, float]]] = {"modelwire": [], "openai": []}
                for _ in range(ROUNDS):
                    w, c, a = await _measure(ours)
                    times["modelwire"].append((w, c))
                    w, c, b = await _measure(theirs)
                    times["openai"].append((w, c))
                    assert [list(v) for v in a] == b or all(
                        max(abs(x - y) for x, y in zip(v, u, strict=True)) < 1e-6
                        for v, u in zip(a, b, strict=True)
                    ), "the two clients read different vectors"
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
                   for k, v in times.items()}  # fmt: skip
            (mw_wall, mw_cpu), (sdk_wall, sdk_cpu) = med["modelwire"], med["openai"]
            print(f"{encoding:6}  {BATCH} x {DIMS}:  modelwire {mw_wall * 1e3:7.1f} ms "
                  f"(cpu {mw_cpu * 1e3:6.1f})   openai {sdk_wall * 1e3:7.1f} ms "
                  f"(cpu {sdk_cpu * 1e3:6.1f})   wall ratio {sdk_wall / mw_wall:4.2f}x, "
                  f"cpu ratio {sdk_cpu / mw_cpu:4.2f}x")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())

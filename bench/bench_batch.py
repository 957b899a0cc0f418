"""Batch throughput: ``mw.batch`` against a plain asyncio + httpx loop (the floor).

    python bench/bench_batch.py [N] [CONCURRENCY] [--no-ray]   # defaults 10000 512

Three kinds of process, so each one's CPU time and memory are its own:

* the server: ``modelwire.testing.MockServer`` (a real loopback HTTP server,
  a thread per connection) repeating one short scripted OpenAI Chat reply;
* ``client floor``: ``asyncio.gather`` over N calls, at most CONCURRENCY at
  once (a semaphore), one shared ``httpx.AsyncClient`` with a pool of
  CONCURRENCY connections; each call POSTs the same request body modelwire
  sends and reads the whole streamed body — no parsing, no output file;
* ``client floor16``: the same loop over pools of 16 connections (as
  ``mw.batch`` uses: httpcore scans a whole pool per request placement);
* ``client batch``: ``mw.batch`` on a JSONL file of the same N requests, with
  ``concurrency=CONCURRENCY``: validation, SSE decoding, assembly, retries
  policy, the limiter and one fsynced output line per request included.
* ``client ray1`` / ``client ray2``: the same job with ``backend="ray"`` on a
  local cluster with 1 or 2 workers (cluster start-up included in wall time,
  reported apart; the CPU column is the driver process, the note adds the CPU
  of the cluster's processes — GCS, raylet, workers — read from /proc).

Printed: one Markdown table (requests/s by wall clock, CPU ms per request of
the client process, peak RSS) — the figures in bench/RESULTS.md. Everything
stays on 127.0.0.1 and is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPLY = "The answer is forty-two."


def _rss_kib() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _descendants_cpu() -> float:
    """CPU seconds (user + system) of every live process below this one (the
    Ray cluster this process started: GCS, raylet, workers), from /proc."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(fields[1])
        ticks[int(d)] = int(fields[11]) + int(fields[12])
    me, total = os.getpid(), 0
    for pid in ticks:
        p = parent.get(pid)
        while p is not None and p != me and p > 1:
            p = parent.get(p)
        if p == me:
            total += ticks[pid]
    return total / os.sysconf("SC_CLK_TCK")


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, need))
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def serve() -> None:
    from modelwire.testing import MockServer

    _raise_fd_limit(8192)
    with MockServer([REPLY], repeat_last=True) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes our stdin
        print(len(server.requests), flush=True)


def _lines(n: int) -> list[dict[str, object]]:
    return [{"custom_id": f"r{i}", "model": "bench/m", "prompt": f"question {i}"} for i in range(n)]


async def _floor(base_url: str, n: int, conc: int, pool: int | None = None) -> int:
    import httpx

    import modelwire as mw
    from modelwire._apis import get_api
    from modelwire._client._options import resolve_options

    model = mw.Model(id="m", api="openai-chat", provider="bench", base_url=base_url)
    opts = resolve_options("bench")
    api = get_api("openai-chat")
    bodies = []
    for i in range(n):
        ctx = mw.Context(messages=[mw.UserMessage(content=f"question {i}")])
        bodies.append(api.build_request(model, ctx, opts).body)
    url = base_url + "/chat/completions"
    sem = asyncio.Semaphore(conc)
    size = pool or conc
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    clients = [httpx.AsyncClient(limits=limits, timeout=60) for _ in range(0, conc, size)]
    ok = 0

    async def one(i: int, body: bytes) -> None:
        nonlocal ok
        headers = {"content-type": "application/json"}
        client = clients[i % len(clients)]
        async with sem, client.stream("POST", url, content=body, headers=headers) as r:
            data = b"".join([c async for c in r.aiter_bytes()])
            if r.status_code == 200 and b"[DONE]" in data:
                ok += 1

    await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies)))
    for c in clients:
        await c.aclose()
    return ok


def client(kind: str, base_url: str, n: int, conc: int) -> None:
    _raise_fd_limit(8192)
    import modelwire as mw

    result: dict[str, object] = {"kind": kind}
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    if kind.startswith("floor"):
        ok = asyncio.run(_floor(base_url, n, conc, int(kind[5:]) if kind[5:] else None))
    else:
        with tempfile.TemporaryDirectory() as d:
            src = Path(d) / "in.jsonl"
            src.write_text("".join(json.dumps(x) + "\n" for x in _lines(n)))
            extra: dict[str, object] = {}
            if kind.startswith("ray"):
                import ray

                os.environ.setdefault("RAY_AUTH_MODE", "disabled")
                workers = int(kind[3:])
                t0 = time.perf_counter()
                ray.init(address="local", num_cpus=workers, include_dashboard=False,
                         log_to_driver=False)  # fmt: skip
                result["startup_s"] = round(time.perf_counter() - t0, 2)
                extra = {"backend": "ray", "ray_workers": workers}
                conc_each = max(1, conc // workers)
            else:
                conc_each = conc
            t_run = time.perf_counter()
            cluster_cpu = _descendants_cpu()
            s = mw.batch(src, Path(d) / "out.jsonl", base_url=base_url, concurrency=conc_each, **extra)  # fmt: skip
            result["run_s"] = round(time.perf_counter() - t_run, 3)
            if kind.startswith("ray"):
                result["cluster_cpu_s"] = round(_descendants_cpu() - cluster_cpu, 3)
            ok = s.ok
            lines = (Path(d) / "out.jsonl").read_text().count("\n")
            assert lines == n, (lines, n)
    result.update(
        ok=ok,
        wall_s=round(time.perf_counter() - t_wall, 3),
        cpu_s=round(time.process_time() - t_cpu, 3),
        peak_rss_mib=round(_rss_kib() / 1024, 1),
    )
    print(json.dumps(result), flush=True)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n = int(args[0]) if args else 10_000
    conc = int(args[1]) if len(args) > 1 else 512
    kinds = ["floor", "floor16", "batch"] + ([] if "--no-ray" in sys.argv else ["ray1", "ray2"])
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    me = str(Path(__file__).resolve())
    rows = []
    for kind in kinds:
        srv = subprocess.Popen([sys.executable, me, "serve"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
        assert srv.stdout is not None and srv.stdin is not None
        base_url = srv.stdout.readline().strip()
        out = subprocess.run([sys.executable, me, "client", kind, base_url, str(n), str(conc)],
                             capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
        srv.stdin.close()
        served = int(srv.stdout.readline() or 0)
        srv.wait(timeout=30)
        if out.returncode != 0:
            print(f"{kind} failed:\n{out.stderr[-3000:]}", file=sys.stderr)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r["served"] = served
        rows.append(r)
    print(f"{n:,} requests at concurrency {conc} against MockServer on 127.0.0.1 "
          f"({os.cpu_count()} cores; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())})")  # fmt: skip
    print()
    print("| client | ok | requests/s | CPU ms/request (client process) | peak RSS | notes |")
    print("| --- | --- | --- | --- | --- | --- |")
    floor = next((r for r in rows if r["kind"] == "floor"), None)
    for r in rows:
        run_s = r.get("run_s", r["wall_s"])
        rps = n / run_s
        cpu_ms = r["cpu_s"] * 1000 / n
        note = f"{r['served']:,} requests served"
        if floor and r is not floor:
            note += f"; {cpu_ms / (floor['cpu_s'] * 1000 / n):.2f}× the floor's CPU"
        if "startup_s" in r:
            cluster_ms = r["cluster_cpu_s"] * 1000 / n
            note += (f"; + {cluster_ms:.2f} CPU ms/request in the Ray cluster's processes"
                     f"; cluster start {r['startup_s']} s not counted")  # fmt: skip
        print(f"| {r['kind']} | {r['ok']:,} | {rps:,.0f} | {cpu_ms:.2f} | {r['peak_rss_mib']} MiB | {note} |")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve()
    elif sys.argv[1:2] == ["client"]:
        client(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()

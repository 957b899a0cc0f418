"""Drive the real agent clients through ``modelwire serve``: one tool-use turn each of
Claude Code (``claude -p``, Anthropic Messages) and OpenAI Codex CLI (``codex exec``,
OpenAI Responses), against MockServer backends of every wire API modelwire speaks.

``make clients`` runs it. It installs ``@anthropic-ai/claude-code`` and ``@openai/codex``
with npm into ``build/clients`` (from the npm registry: it needs the network, and is
no part of ``make test``); without ``npm`` on PATH it prints one line and does nothing.
Everything else stays on loopback: the clients' homes are a temporary folder, and
their only server is the gateway.

Each client runs with its default settings: Codex declares its ``web_search`` tool,
which a Responses backend gets as Codex wrote it and every other backend, which runs
none, has dropped (``unsupported_server_tools = "drop"``). A turn passes when the client
exits 0, the backend got the tool call's result back (the client ran the tool and
answered it), and the client printed the final text.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / "build" / "clients"
PACKAGES = ("@anthropic-ai/claude-code", "@openai/codex")
KEY = "mwgw-clients-drive-0123456789"
FINAL = "The turn is complete."
#: The tool each client is asked to call, the first one it declares: ones that run
#: nothing on the machine (Codex's ``close_agent`` is in its ``multi_agent_v1``
#: namespace tool, so its call must go back with that namespace).
CALLS: dict[str, dict[str, Any]] = {
    "Glob": {"pattern": "*.md"},
    "close_agent": {"target": "no-such-agent"},
    "get_goal": {},
    "update_plan": {"plan": [{"step": "look", "status": "completed"}]},
}


def main() -> int:
    npm = shutil.which("npm")
    if npm is None:
        print("make clients: skipped (npm is not on PATH)")
        return 0
    PREFIX.mkdir(parents=True, exist_ok=True)
    subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(PREFIX),
                    *PACKAGES], check=True)  # fmt: skip
    from modelwire._apis import builtin_api_names
    from modelwire.gateway import hash_key
    from modelwire.testing import MockServer

    failures = 0
    with MockServer([_reply], repeat_last=True) as backend, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / "README.md").write_text("# a project\n", encoding="utf-8")
        port = _free_port()
        config = home / "gateway.toml"
        tables = []
        for api in builtin_api_names():
            runs = '["web_search"]' if api == "openai-responses" else "[]"
            tables.append(f'[models.{api}]\napi = "{api}"\nid = "mock-{api}"\n'
                          f'base_url = "{backend.model(api).base_url}"\n'
                          f'server_tools = {runs}\nunsupported_server_tools = "drop"\n')  # fmt: skip
        config.write_text(
            "\n".join(tables)
            + f'\n[keys.clients]\nkey_sha256 = "{hash_key(KEY)}"\nmodels = ["*"]\n',
            encoding="utf-8",
        )
        serve = subprocess.Popen(
            [sys.executable, "-m", "modelwire", "serve", "--config", str(config),
             "--host", "127.0.0.1", "--port", str(port)],
        )  # fmt: skip
        try:
            _wait_for(port)
            url = f"http://127.0.0.1:{port}"
            runs = [(api, c) for api in builtin_api_names() for c in (_claude, _codex)]
            for api, client in runs:
                name, argv, env = client(url, home, api)
                before = len(backend.requests)
                done = subprocess.run(argv, cwd=home, env=env, capture_output=True, text=True,
                                      timeout=300, check=False)  # fmt: skip
                results = [t for r in backend.requests[before:] for t in _results(r)]
                answered = bool(results) and not any("unsupported call" in t for t in results)
                ok = done.returncode == 0 and answered and FINAL in done.stdout
                failures += not ok
                print(f"{name} -> {api}: {'ok' if ok else 'FAILED'} (exit {done.returncode}, "
                      f"{len(backend.requests) - before} backend requests, tool result "
                      f"{'sent' if answered else 'missing'}: {results[0][:60] if results else ''!r})")  # fmt: skip
                if not ok:
                    print(done.stdout[-2000:], done.stderr[-2000:], sep="\n")
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    return 1 if failures else 0


def _reply(request: Any) -> Any:
    """The backend's answer, in its API: the client's tool called once, then the final
    text (any other request, such as a title, gets the text)."""
    import modelwire as mw
    from modelwire._apis import find_server

    if _results(request):
        return FINAL
    server = find_server(request.api)
    names = {name for name, _ in server.request_tools(request.json())} if server else set()
    for name, args in CALLS.items():
        if name in names:
            return mw.ToolCall(id="call_drive_1", name=name, arguments=args)
    return FINAL


def _results(request: Any) -> list[str]:
    """The tool results a backend request carries, read by its API's server side."""
    from modelwire._apis import find_server

    server = find_server(request.api)
    return [str(t) for t in server.tool_results(request.json())] if server else []


def _claude(url: str, home: Path, model: str) -> tuple[str, list[str], dict[str, str]]:
    env = {**_base_env(home), "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY,
           "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model,
           "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_AUTOUPDATER": "1"}  # fmt: skip
    argv = [str(PREFIX / "node_modules" / ".bin" / "claude"), "-p", "List the markdown files.",
            "--model", model, "--allowedTools", "Glob"]  # fmt: skip
    return "claude-code", argv, env


def _codex(url: str, home: Path, model: str) -> tuple[str, list[str], dict[str, str]]:
    env = {**_base_env(home), "CODEX_HOME": str(home / ".codex"), "MWGW_KEY": KEY}
    (home / ".codex").mkdir(exist_ok=True)
    provider = (f'{{name="modelwire", base_url="{url}/v1", env_key="MWGW_KEY", '
                'wire_api="responses"}')  # fmt: skip
    argv = [str(PREFIX / "node_modules" / ".bin" / "codex"), "exec", "--skip-git-repo-check",
            "-c", f"model_providers.modelwire={provider}", "-c", "model_provider=modelwire",
            "-m", model, "Make a one-step plan, then say you are done."]  # fmt: skip
    return "codex", argv, env


def _base_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "TERM", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["HOME"] = str(home)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"make clients: the gateway did not listen on port {port} within 30 s")


if __name__ == "__main__":
    sys.exit(main())

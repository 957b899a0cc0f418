"""The gateway's configuration: every form it accepts, every mistake named by its TOML
path, nothing secret in a repr; and docs/gateway.md's blocks, run as printed."""

from __future__ import annotations

import copy
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire.errors import ConfigurationError
from modelwire.gateway import GatewayConfig, hash_key, load_config, new_key

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "gateway.md"
DIGEST = hash_key("sk-gw-config-test")

BASE: dict[str, Any] = {
    "models": {
        "smart": {"api": "anthropic-messages", "id": "claude-sonnet-4-5",
                  "base_url": "https://api.anthropic.com/v1", "api_key_env": "ANTHROPIC_API_KEY"},
        "fast": {"provider": "openai", "id": "gpt-4.1-mini"},
        "either": {"fallback": ["smart", "fast"]},
    },
    "keys": {"team-a": {"key_sha256": DIGEST, "models": ["smart"]}},
}  # fmt: skip


def with_(path: str, value: Any) -> dict[str, Any]:
    """BASE with the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    data = copy.deepcopy(BASE)
    *head, last = path.split("/")
    node = data
    for part in head:
        node = node.setdefault(part, {})
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data


def test_the_issues_form_loads_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "gateway.toml"
    path.write_text(f"""
[models.smart]                     # the name clients ask for
api = "anthropic-messages"
id = "claude-sonnet-4-5"
base_url = "https://api.anthropic.com/v1"
api_key_env = "ANTHROPIC_API_KEY"

[models.cheap]
provider = "openai"
id = "gpt-4.1-mini"
cost = {{ input = 0.5 }}

[models.both]
fallback = ["smart", "cheap"]

[keys.team-a]
key_sha256 = "{DIGEST.upper()}"
models = ["smart", "both"]
requests_per_minute = 60
tokens_per_minute = 100000
budget_usd = 25.5

[keys.admin]
key_sha256 = "{hash_key("another")}"
models = ["*"]

[gateway]
host = "0.0.0.0"
port = 4000
redis = "redis://:hunter2@localhost:6379/0"
log = "gateway.db"
otel = true
""")
    cfg = load_config(path)
    assert isinstance(cfg, GatewayConfig)
    smart = cfg.models["smart"].target
    assert isinstance(smart, mw.Model)
    assert (smart.api, smart.id, smart.base_url) == (
        "anthropic-messages", "claude-sonnet-4-5", "https://api.anthropic.com/v1")  # fmt: skip
    assert cfg.models["smart"].api_key_env == "ANTHROPIC_API_KEY"
    cheap = cfg.models["cheap"].target
    assert isinstance(cheap, mw.Model)
    catalog = mw.get_model("openai", "gpt-4.1-mini")
    assert cheap.api == "openai-chat"
    # Only the price given is replaced; the catalog's others stay.
    assert cheap.cost.input == 0.5 and cheap.cost.output == catalog.cost.output
    both = cfg.models["both"]
    assert isinstance(both.target, mw.Fallback)
    assert [m.id for m in both.target.models] == ["claude-sonnet-4-5", "gpt-4.1-mini"]
    assert both.members == ("smart", "cheap")
    key = cfg.keys["team-a"]
    assert key.key_sha256 == DIGEST  # normalised to lower case
    assert key.models == frozenset({"smart", "both"}) and key.allows("both")
    assert not key.allows("cheap")
    assert (key.requests_per_minute, key.tokens_per_minute, key.budget_usd) == (60, 100000, 25.5)
    assert cfg.keys["admin"].allows("cheap") and cfg.keys["admin"].models is None
    g = cfg.gateway
    assert (g.host, g.port, g.log, g.otel) == ("0.0.0.0", 4000, "gateway.db", True)
    shown = repr(cfg)
    assert "hunter2" not in shown and DIGEST not in shown and DIGEST.upper() not in shown
    assert "team-a" in shown


def test_a_dict_loads_the_same_as_toml() -> None:
    cfg = load_config(BASE)
    assert list(cfg.models) == ["smart", "fast", "either"]
    assert load_config(cfg) is cfg
    with pytest.raises(TypeError):
        cfg.models["new"] = cfg.models["smart"]  # type: ignore[index]


ERRORS = [
    (with_("extra", 1), "the config.extra is not a setting"),
    ({"keys": BASE["keys"]}, "no [models.NAME] table"),
    (with_("models/smart/api", "anthropic"), "models.smart.api must be one of anthropic-messages, "),
    (with_("models/smart/provider", "anthropic"), "models.smart needs exactly one of api, provider or fallback (it gives api and provider)"),
    (with_("models/fast/provider", ...), "models.fast needs exactly one of api, provider or fallback"),
    (with_("models/smart/id", ...), "models.smart.id is missing"),
    (with_("models/smart/id", 3), "models.smart.id must be a non-empty string, got an integer"),
    (with_("models/smart/base_url", ...), "models.smart.base_url is missing"),
    (with_("models/smart/base_url", "ftp://x"), "models.smart.base_url must be an http(s):// URL"),
    (with_("models/smart/api_key_env", "MY KEY"), "models.smart.api_key_env must be an environment variable name"),
    (with_("models/smart/temperature", 1), "models.smart.temperature is not a setting; the settings are: api, "),
    (with_("models/smart/cost", {"input": -1}), "models.smart.cost.input must be a non-negative number"),
    (with_("models/smart/cost", {"prompt": 1}), "models.smart.cost.prompt is not a setting"),
    (with_("models/smart/input", ["text", "video"]), "models.smart.input[1] must be one of audio, document, image, text"),
    (with_("models/smart/max_tokens", 0), "models.smart.max_tokens must be an integer from 1"),
    (with_("models/smart/reasoning", "yes"), "models.smart.reasoning must be true or false"),
    (with_("models/fast/provider", "nosuchprovider"), "models.fast: "),
    (with_("models/either/fallback", ["smart", "gone"]), "models.either.fallback[1] names 'gone', which is not a model of [models]"),
    (with_("models/either/fallback", []), "models.either.fallback must name at least one model"),
    (with_("models/either/fallback", "smart"), "models.either.fallback must be an array of model names, got a string"),
    (with_("models/nested", {"fallback": ["either"]}), "models.nested.fallback[0] names 'either', itself a fallback"),
    (with_("models/either/id", "x"), "models.either.id is not a setting of a fallback"),
    (with_("models/smart", "anthropic"), "models.smart must be a table, got a string"),
    (with_("keys", ...), "no [keys.NAME] table"),
    (with_("keys/team-a/key_sha256", "abc"), "keys.team-a.key_sha256 must be 64 hexadecimal digits"),
    (with_("keys/team-a/key_sha256", ...), "keys.team-a.key_sha256 is missing"),
    (with_("keys/team-a/models", ["smart", "nope"]), "keys.team-a.models[1] names 'nope', which is not a model of [models]"),
    (with_("keys/team-a/models", ...), "keys.team-a.models is missing"),
    (with_("keys/team-a/requests_per_minute", -5), "keys.team-a.requests_per_minute must be a positive number, got -5"),
    (with_("keys/team-a/tokens_per_minute", True), "keys.team-a.tokens_per_minute must be a positive number, got True"),
    (with_("keys/team-a/budget_usd", "10"), "keys.team-a.budget_usd must be a positive number, got '10'"),
    (with_("keys/team-a/rpm", 5), "keys.team-a.rpm is not a setting"),
    (with_("keys/team-b", {"key_sha256": DIGEST, "models": ["*"]}), "keys.team-b.key_sha256 is the same as keys.team-a.key_sha256"),
    (with_("gateway/port", 70000), "gateway.port must be an integer from 0 to 65535, got 70000"),
    (with_("gateway/redis", "http://localhost"), "gateway.redis must be a redis://, rediss:// or unix:// URL"),
    (with_("gateway/otel", "yes"), "gateway.otel must be true or false, got a string"),
    (with_("gateway/workers", 4), "gateway.workers is not a setting"),
    (with_("gateway/max_body_bytes", 0), "gateway.max_body_bytes must be an integer from 1"),
    (with_("gateway/log", str(ROOT)), "gateway.log is the directory"),
    (with_("gateway/timeout", 30), "gateway.timeout must be a table, got an integer"),
    (with_("gateway/timeout", {"read": 5}), "gateway.timeout.read is not a setting; the settings are: connect, idle, total"),
    (with_("gateway/timeout", {"idle": 0}), "gateway.timeout.idle must be a finite, positive number of seconds, got 0"),
    (with_("gateway/timeout", {"total": -1}), "gateway.timeout.total must be a finite, positive number of seconds, got -1"),
    (with_("gateway/timeout", {"idle": float("inf")}), "gateway.timeout.idle must be a finite, positive number of seconds, got inf"),
    (with_("gateway/timeout", {"idle": float("nan")}), "gateway.timeout.idle must be a finite, positive number of seconds, got nan"),
    (with_("gateway/timeout", {"connect": True}), "gateway.timeout.connect must be a finite, positive number of seconds, got True"),
    (with_("models/smart/timeout", {"idle": "60"}), "models.smart.timeout.idle must be a finite, positive number of seconds, got '60'"),
    (with_("models/either/timeout", {"total": 0}), "models.either.timeout.total must be a finite, positive number of seconds, got 0"),
]  # fmt: skip


def test_backend_timeouts_per_model_over_the_gateway_default() -> None:
    """Each setting a model leaves out is the ``[gateway]`` one; a model without a
    table takes the ``[gateway]`` one whole (modelwire's default without either)."""
    assert load_config(BASE).gateway.timeout == mw.Timeout()
    data = with_("gateway/timeout", {"connect": 5, "total": 600})
    data["models"]["smart"]["timeout"] = {"idle": 30}
    data["models"]["either"]["timeout"] = {"total": 90.5}
    cfg = load_config(data)
    assert cfg.gateway.timeout == mw.Timeout(connect=5, idle=300, total=600)
    assert cfg.models["smart"].timeout == mw.Timeout(connect=5, idle=30, total=600)
    assert cfg.models["either"].timeout == mw.Timeout(connect=5, idle=300, total=90.5)
    assert cfg.models["fast"].timeout is None


@pytest.mark.parametrize(("data", "message"), ERRORS, ids=[m[:48] for _, m in ERRORS])
def test_every_mistake_names_its_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(data)
    assert message in str(info.value)


def test_a_pasted_key_is_not_echoed_in_the_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(with_("keys/team-a/key_sha256", "sk-live-the-actual-key"))
    assert "sk-live-the-actual-key" not in str(info.value)


def test_a_redis_password_is_not_echoed_in_the_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        load_config(with_("gateway/redis", "http://user:hunter2@host"))
    assert "hunter2" not in str(info.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[models.smart\n")
    with pytest.raises(ConfigurationError, match=r"bad\.toml is not valid TOML"):
        load_config(bad)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('[models.smart]\napi = "nope"\n')
    with pytest.raises(ConfigurationError, match=r"wrong\.toml: models\.smart\.api must be one of"):
        load_config(wrong)
    with pytest.raises(ConfigurationError, match="cannot read the gateway config"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigurationError, match="a TOML file path or a dict"):
        load_config(42)  # type: ignore[arg-type]


def test_a_missing_key_variable_is_not_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert load_config(BASE).models["smart"].api_key_env == "ANTHROPIC_API_KEY"


def test_hash_key_is_the_sha256_hex_of_the_key() -> None:
    key = new_key()
    assert key.startswith("mwgw-") and len(key) > 40 and new_key() != key
    assert hash_key(key) == hashlib.sha256(key.encode()).hexdigest()


# --------------------------------------------------------------------------- docs/gateway.md

FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```\n", re.M | re.S)


def _blocks(lang: str) -> list[str]:
    return [m["body"] for m in FENCE.finditer(DOC.read_text()) if m["lang"] == lang]


def test_docs_toml_blocks_load() -> None:
    blocks = _blocks("toml")
    assert blocks
    for body in blocks:
        data = tomllib.loads(body)
        if "keys" in data:  # a whole config; a fragment is a table of the reference
            load_config(data)


def test_docs_shell_commands_run(tmp_path: Path) -> None:
    """Every line of the ``sh`` blocks, through the shell, in order, in a folder holding
    the quick start's ``gateway.toml`` — but ``serve --config`` without ``--check``,
    which serves until stopped (:func:`test_the_quick_start_serves_as_printed` runs
    it); the digests printed agree."""
    (tmp_path / "gateway.toml").write_text(_blocks("toml")[0])
    python = shlex.quote(sys.executable)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    outputs: dict[str, str] = {}
    for body in _blocks("sh"):
        for line in body.splitlines():
            if " --config " in line and "--check" not in line:
                continue
            cmd = re.sub(r"(^|\| )modelwire ", rf"\1{python} -m modelwire ", line)
            cmd = re.sub(r"^python ", f"{python} ", cmd)
            out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True,
                                 cwd=tmp_path, env=env, timeout=120)  # fmt: skip
            assert out.returncode == 0, (line, out.stderr)
            # Redirected to a file: what the line printed is there.
            assert "Traceback" not in out.stderr and (out.stdout.strip() or ">>" in line), line
            outputs[line] = out.stdout
    hashed = [v.strip() for k, v in outputs.items() if "mwgw-example-key" in k]
    assert hashed == [hash_key("mwgw-example-key")] * 2
    checked = next(v for k, v in outputs.items() if "--check" in k)
    assert (
        "model smart: anthropic-messages claude-sonnet-4-5 at https://api.anthropic.com/v1, "
        "key $ANTHROPIC_API_KEY" in checked
    )
    assert "key team-a: *" in checked
    # The key --new-key printed (on stderr) is not in the config, only its digest.
    config = load_config(tmp_path / "gateway.toml")
    assert (
        list(config.keys) == ["team-a"] and "mwgw-" not in (tmp_path / "gateway.toml").read_text()
    )


def test_the_configuration_example_key_is_the_documented_one() -> None:
    """The full example's ``key_sha256`` is the digest of the key the Keys section
    hashes, not a made-up string."""
    full = next(tomllib.loads(b) for b in _blocks("toml") if "keys" in tomllib.loads(b))
    assert full["keys"]["team-a"]["key_sha256"] == hash_key("mwgw-example-key")
    assert load_config(full).gateway.timeout == mw.Timeout(connect=10, idle=300, total=900)


def test_the_quick_start_serves_as_printed(tmp_path: Path) -> None:
    """The quick start followed line by line: the key ``--new-key`` shows is the one
    the served gateway takes (the serve line gets a free ``--port``: 8000 may be busy),
    and ``serve`` first prints where it listens and what it serves."""
    import signal
    import socket

    import httpx

    (tmp_path / "gateway.toml").write_text(_blocks("toml")[0])
    new_key_line, check_line, serve_line = _blocks("sh")[0].splitlines()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("ANTHROPIC_API_KEY", None)
    python = shlex.quote(sys.executable)

    def shell(line: str) -> str:
        return re.sub(r"^modelwire ", f"{python} -m modelwire ", line)

    made = subprocess.run(["bash", "-c", shell(new_key_line)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120, check=True)  # fmt: skip
    key = made.stderr.split()[-1]
    assert key.startswith("mwgw-") and made.stdout == ""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(["bash", "-c", f"exec {shell(serve_line)} --port {port}"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"modelwire gateway: http://127.0.0.1:{port} "), first
        lines = [proc.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("model smart: anthropic-messages claude-sonnet-4-5")
        assert "key $ANTHROPIC_API_KEY (not set)" in lines[0]
        assert lines[1] == "key team-a: *\n"
        for _ in range(600):
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/models",
                              headers={"authorization": f"Bearer {key}"}, timeout=5)  # fmt: skip
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()
                import time

                time.sleep(0.1)
        assert r.status_code == 200 and [m["id"] for m in r.json()["data"]] == ["smart"]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert key not in out + err and "Traceback" not in err
    assert "--check" in check_line


def test_docs_python_blocks_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__doc__"}
    blocks = _blocks("python")
    assert blocks
    for body in blocks:
        exec(compile(body, str(DOC), "exec"), namespace)


def test_the_configuration_serve_help_shows_loads(tmp_path: Path) -> None:
    from modelwire._cli.serve import _CONFIG_EXAMPLE

    toml = _CONFIG_EXAMPLE.split("configuration (TOML):\n", 1)[1].split("\nexamples:", 1)[0]
    toml = "\n".join(line.removeprefix("  ") for line in toml.splitlines())
    toml = toml.replace('key_sha256 = "..."', f'key_sha256 = "{hash_key("sk-help")}"')
    path = tmp_path / "gateway.toml"
    path.write_text(toml, encoding="utf-8")
    config = load_config(path)
    assert list(config.models) == ["smart"] and list(config.keys) == ["team-a"]
    assert config.keys["team-a"].models == frozenset({"smart"})

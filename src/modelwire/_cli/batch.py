"""``modelwire batch IN.jsonl -o OUT.jsonl``: the CLI face of :func:`modelwire.batching.batch`.

Kept apart from the other commands so building the parser never imports the
batch package (or Ray): that happens only when the command runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any

from .._apis import builtin_api_names

if TYPE_CHECKING:
    from ..batching import Progress

__all__ = ["add_parser", "run"]


def _count(text: str) -> int:
    """A positive integer (argparse reports the ValueError as a usage error, exit 2)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _number(text: str, *, zero: bool) -> float:
    # float() takes "nan" and "inf": NaN compares false with every bound and would
    # pass a `> 0` check, so finiteness is checked first.
    value = float(text)
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ValueError(text)
    return value


def _dollars(text: str) -> float:
    return _number(text, zero=True)


def _seconds(text: str) -> float:
    return _number(text, zero=False)


_count.__name__ = "positive integer"
_dollars.__name__ = "finite number of dollars >= 0"
_seconds.__name__ = "positive finite number of seconds"


_FORMAT = """\
input lines (JSON, each with a unique custom_id; the two formats may be mixed):
  modelwire's own: model ("provider/id"), then prompt (one user message) or context
  (system_prompt, messages, tools), and optional options (max_tokens, temperature,
  reasoning, tool_choice, parallel_tool_calls, extra_body, timeout, headers, session_id)
    {"custom_id": "q1", "model": "openai/gpt-4.1-mini", "prompt": "Name a colour."}
  the OpenAI Batch API input format: custom_id, method POST, url /v1/chat/completions
  (a Chat Completions body) or /v1/responses (a Responses body), and body; body.model
  without a provider means openai/...
    {"custom_id": "q2", "method": "POST", "url": "/v1/chat/completions",
     "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}}
output lines: one per custom_id, with the final message or the error, in OUT.jsonl"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "batch", help="run a JSONL file of requests; resumable, exactly one result per id",
        description="Runs every line of IN.jsonl (modelwire's format or the OpenAI Batch API "
        "input format) and appends one result line per custom_id to OUT.jsonl. The input is "
        "validated first: nothing is sent while a line is bad. Running the same command again "
        "resumes (ids already in OUT are skipped), also after kill -9.",
        epilog=_FORMAT, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("input", metavar="IN.jsonl")
    p.add_argument("-o", "--output", required=True, metavar="OUT.jsonl")
    p.add_argument("--concurrency", type=_count, default=16, metavar="N",
                   help="requests in flight at once (default 16)")  # fmt: skip
    p.add_argument("--max-attempts", type=_count, default=4, metavar="N",
                   help="tries per request for retryable errors (default 4)")  # fmt: skip
    p.add_argument("--max-cost", type=_dollars, metavar="USD",
                   help="stop sending once spend + requests in flight could pass it (every "
                   "HTTP request counts: retries and agent turns too)")  # fmt: skip
    p.add_argument("--rpm", action="append", metavar="[PROVIDER=]N",
                   help="requests per minute for each provider, or for one (repeatable)")  # fmt: skip
    p.add_argument("--tpm", action="append", metavar="[PROVIDER=]N",
                   help="tokens per minute for each provider, or for one (repeatable)")  # fmt: skip
    p.add_argument("--base-url", help="send every model to this API root (e.g. a local server)")
    p.add_argument("--api", choices=builtin_api_names(),
                   help="wire API for --base-url models not in the catalog")  # fmt: skip
    p.add_argument("--key", metavar="KEY",
                   help="the API key for every line (default: the provider's environment "
                   "variable)")  # fmt: skip
    p.add_argument("--timeout", type=_seconds, metavar="S",
                   help="connect and idle timeout in seconds")  # fmt: skip
    p.add_argument("--line-timeout", type=_seconds, metavar="S",
                   help="seconds one line may take in all, retries included (then it is "
                   "recorded as a timeout)")  # fmt: skip
    p.add_argument("--run-timeout", type=_seconds, metavar="S",
                   help="seconds for the whole run: then nothing new starts and unfinished "
                   "lines are left for the next run")  # fmt: skip
    p.add_argument("--output-format", choices=("modelwire", "openai"), default="modelwire",
                   help="result lines in modelwire's format (default) or the OpenAI Batch API "
                   "output format")  # fmt: skip
    p.add_argument("--skip-invalid", action="store_true",
                   help="run the valid lines even when some are bad (they are listed)")  # fmt: skip
    p.add_argument("--agent", action="store_true",
                   help="run mw.Agent per line with the read-only tools rooted at --root")  # fmt: skip
    p.add_argument("--root", default=".", help="with --agent: the folder the tools may read")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="run on a Ray cluster (pip install 'modelwire[ray]'); without ADDRESS "
                   "a local one")  # fmt: skip
    p.add_argument("--ray-workers", type=_count, default=2, metavar="N",
                   help="with --ray: shards run in parallel (default 2)")  # fmt: skip
    p.add_argument("--via", choices=("live", "provider", "auto"), default="live",
                   help="live calls (default); provider: the providers' batch APIs (OpenAI, "
                   "Anthropic, Gemini) at their batch price, within 24 h; auto: provider when "
                   "--run-timeout allows 24 h and every line's provider has one")  # fmt: skip
    p.add_argument("--poll-interval", type=_seconds, default=5.0, metavar="S",
                   help="with --via provider: seconds before a job's first poll, doubling "
                   "up to a minute (default 5)")  # fmt: skip
    p.add_argument("--cancel", action="store_true",
                   help="with --via provider: cancel the provider jobs of OUT instead of "
                   "running (the next run writes what they answered)")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="progress as JSON lines on stdout (the default when stderr is not a "
                   "terminal), the summary last")  # fmt: skip
    p.add_argument("--plain", action="store_true", help="no live bar: only the summary")


def parse_limits(rpm: list[str] | None, tpm: list[str] | None) -> dict[str, Any] | None:
    """``--rpm 500 --rpm openai=3000 --tpm openai=2e6`` as ``{provider or "*": Limits}``."""
    from ..batching import Limits
    from .common import CLIError

    values: dict[str, dict[str, float]] = {}
    for flag, items in (("rpm", rpm), ("tpm", tpm)):
        for item in items or ():
            provider, sep, number = item.rpartition("=")
            try:
                value = float(number)
            except ValueError:
                value = -1.0
            # NaN passes `<= 0` (every comparison with it is false): finite first.
            if not math.isfinite(value) or value <= 0 or (sep and not provider):
                raise CLIError("usage", f"--{flag} takes N or PROVIDER=N with N a finite number > 0, got {item!r}")  # fmt: skip
            values.setdefault(provider or "*", {})[flag] = value
    if not values:
        return None
    default = values.get("*", {})
    # A provider named in one flag keeps the "*" value of the other.
    return {p: Limits(**{**default, **v}) for p, v in values.items()}


class _Reports:
    """Around the chosen progress: skipped lines reported on stderr before the run
    (never after its summary), and with ``--plain`` the summary on stderr at the end
    — also when the run is interrupted."""

    def __init__(self, inner: Progress, plain: bool) -> None:
        self.inner, self.plain = inner, plain

    def invalid(self, problems: list[Any]) -> None:
        for problem in problems:
            sys.stderr.write(f"modelwire: skipped invalid {problem}\n")
        sys.stderr.flush()
        self.inner.invalid(problems)

    def start(self, total: int) -> None:
        self.inner.start(total)

    def update(self, snapshot: dict[str, Any], *, force: bool = False) -> None:
        self.inner.update(snapshot, force=force)

    def close(self, summary: dict[str, Any]) -> None:
        from ..batching._progress import format_summary

        self.inner.close(summary)
        if self.plain:
            sys.stderr.write(format_summary(summary) + "\n")
            sys.stderr.flush()


def _progress(args: argparse.Namespace) -> Progress:
    from ..batching import JsonProgress, Progress, RichProgress

    inner: Progress
    if args.json or (not args.plain and not sys.stderr.isatty()):
        inner = JsonProgress(sys.stdout)
    elif args.plain:
        inner = Progress()
    else:
        inner = RichProgress()
    progress = _Reports(inner, args.plain)
    return progress  # type: ignore[return-value]


def run(args: argparse.Namespace) -> int:
    from ..batching import batch
    from ..errors import ConfigurationError, MissingAPIKeyError
    from .common import EXIT_INTERRUPTED, CLIError

    limits = parse_limits(args.rpm, args.tpm)
    on_ray = args.ray is not None
    from .common import config_dir
    from .store import export_keys

    export_keys(config_dir())  # after the environment: each line's provider finds its own
    if args.cancel:
        return _cancel(args)
    try:
        summary = batch(
            args.input, args.output, concurrency=args.concurrency,
            max_attempts=args.max_attempts, max_cost=args.max_cost, limits=limits,
            base_url=args.base_url, api=args.api, api_key=args.key, timeout=args.timeout,
            line_timeout=args.line_timeout, run_timeout=args.run_timeout,
            output_format=args.output_format, skip_invalid=args.skip_invalid,
            agent_root=args.root if args.agent else None, progress=_progress(args),
            backend="ray" if on_ray else "local", ray_workers=args.ray_workers,
            ray_address=None if not on_ray or args.ray == "local" else args.ray,
            via=args.via, poll_interval=args.poll_interval,
        )  # fmt: skip
    except MissingAPIKeyError as exc:
        var = f"set {exc.env_var} in the environment or " if exc.env_var else ""
        provider = exc.message.split(":")[0].removeprefix("no API key for ")
        raise CLIError(exc.kind, f"no API key for {provider}: {var}pass --key KEY (or store "
                       "it: modelwire keys set PROVIDER); nothing was sent") from None  # fmt: skip
    except KeyboardInterrupt:
        raise CLIError(
            "interrupted", f"stopped by Ctrl-C; every result written so far is in "
            f"{args.output}: run the same command again to resume", EXIT_INTERRUPTED,
        ) from None  # fmt: skip
    except ConfigurationError as exc:
        if on_ray and "needs Ray" in exc.message:  # said in the CLI's words
            raise CLIError("usage", "--ray needs Ray, which is not installed: pip install "
                           "'modelwire[ray]'") from None  # fmt: skip
        raise
    return 0 if summary.failed == 0 and summary.complete else 1


def _cancel(args: argparse.Namespace) -> int:
    from ..batching import cancel_jobs
    from .common import CLIError

    if args.via != "provider":
        raise CLIError("usage", "--cancel stops provider jobs: give it with --via provider")
    cancelled = cancel_jobs(args.input, args.output, base_url=args.base_url, api=args.api,
                            api_key=args.key)  # fmt: skip
    for job_id in cancelled:
        print(f"cancelled {job_id}")
    if not cancelled:
        print(f"no provider job of {args.output} is still running")
    return 0

"""``modelwire batch IN.jsonl -o OUT.jsonl``: the CLI face of :func:`modelwire.batching.batch`.

Kept apart from the other commands so building the parser never imports the
batch package (or Ray): that happens only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._apis import builtin_api_names

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "batch", help="run a JSONL file of requests; resumable, exactly one result per id",
        description="Runs every line of IN.jsonl (modelwire's format or the OpenAI Batch API "
        "input format) and appends one result line per custom_id to OUT.jsonl. The input is "
        "validated first: nothing is sent while a line is bad. Running the same command again "
        "resumes (ids already in OUT are skipped), also after kill -9. Guide: docs/batch.md.",
    )  # fmt: skip
    p.add_argument("input", metavar="IN.jsonl")
    p.add_argument("-o", "--output", required=True, metavar="OUT.jsonl")
    p.add_argument("--concurrency", type=int, default=16, metavar="N",
                   help="requests in flight at once (default 16)")  # fmt: skip
    p.add_argument("--max-attempts", type=int, default=4, metavar="N",
                   help="tries per request for retryable errors (default 4)")  # fmt: skip
    p.add_argument("--max-cost", type=float, metavar="USD",
                   help="stop starting requests once spend + requests in flight could pass it")  # fmt: skip
    p.add_argument("--rpm", action="append", metavar="[PROVIDER=]N",
                   help="requests per minute for each provider, or for one (repeatable)")  # fmt: skip
    p.add_argument("--tpm", action="append", metavar="[PROVIDER=]N",
                   help="tokens per minute for each provider, or for one (repeatable)")  # fmt: skip
    p.add_argument("--base-url", help="send every model to this API root (e.g. a local server)")
    p.add_argument("--api", choices=builtin_api_names(),
                   help="wire API for --base-url models not in the catalog")  # fmt: skip
    p.add_argument("--timeout", type=float, help="connect and idle timeout in seconds")
    p.add_argument("--skip-invalid", action="store_true",
                   help="run the valid lines even when some are bad (they are listed)")  # fmt: skip
    p.add_argument("--agent", action="store_true",
                   help="run mw.Agent per line with the read-only tools rooted at --root")  # fmt: skip
    p.add_argument("--root", default=".", help="with --agent: the folder the tools may read")
    p.add_argument("--ray", nargs="?", const="local", metavar="ADDRESS",
                   help="run on a Ray cluster (pip install 'modelwire[ray]'); without ADDRESS "
                   "a local one")  # fmt: skip
    p.add_argument("--ray-workers", type=int, default=2, metavar="N",
                   help="with --ray: shards run in parallel (default 2)")  # fmt: skip
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
            if value <= 0 or (sep and not provider):
                raise CLIError("usage", f"--{flag} takes N or PROVIDER=N with N > 0, got {item!r}")
            values.setdefault(provider or "*", {})[flag] = value
    if not values:
        return None
    default = values.get("*", {})
    # A provider named in one flag keeps the "*" value of the other.
    return {p: Limits(**{**default, **v}) for p, v in values.items()}


def run(args: argparse.Namespace) -> int:
    from ..batching import JsonProgress, Progress, RichProgress, batch
    from ..batching._progress import format_summary

    progress: Progress
    if args.json or (not args.plain and not sys.stderr.isatty()):
        progress = JsonProgress(sys.stdout)
    elif args.plain:
        progress = Progress()
    else:
        progress = RichProgress()
    limits = parse_limits(args.rpm, args.tpm)
    on_ray = args.ray is not None
    summary = batch(
        args.input, args.output, concurrency=args.concurrency, max_attempts=args.max_attempts,
        max_cost=args.max_cost, limits=limits, base_url=args.base_url, api=args.api,
        timeout=args.timeout, skip_invalid=args.skip_invalid,
        agent_root=args.root if args.agent else None, progress=progress,
        backend="ray" if on_ray else "local", ray_workers=args.ray_workers,
        ray_address=None if not on_ray or args.ray == "local" else args.ray,
    )  # fmt: skip
    if args.plain:
        from ..batching._summary import summary_dict

        sys.stderr.write(format_summary(summary_dict(summary)) + "\n")
    for problem in summary.invalid:
        sys.stderr.write(f"modelwire: skipped invalid {problem}\n")
    return 0 if summary.failed == 0 and summary.skipped_cost == 0 else 1

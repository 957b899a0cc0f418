"""``modelwire logs``: list, search and total the call log."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .common import CLIError, log_path
from .output import MUTED, Screen, json_line, one_line

if TYPE_CHECKING:
    import argparse

    from .._client._log import CallLog

__all__ = ["add_parser", "resolve_cid", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "logs", help="list and search the log of every chat call",
        description="Every chat answer is recorded in one SQLite file: prompt, conversation, "
        "model, provider, usage, cost, duration, error kind and conversation id (never a key "
        "or header). Continue a conversation with: modelwire chat --cid ID. Turn the log off "
        "with chat --no-log or log = false in ~/.config/modelwire/config.toml.",
        epilog="Examples: modelwire logs -n 5 · modelwire logs search 'error budget' · "
        "modelwire logs --cid ID --json · modelwire logs --totals",
    )  # fmt: skip
    p.add_argument("words", nargs="*", metavar="search WORDS",
                   help="'search' then words: rows whose prompt, answer or system prompt "
                   "contain all of them (full-text)")  # fmt: skip
    p.add_argument("-n", "--count", type=int, default=3, metavar="N",
                   help="the newest N rows (default 3; 0 for all)")  # fmt: skip
    p.add_argument("--cid", metavar="ID", help="only this conversation (a unique prefix of its id "
                   "will do)")  # fmt: skip
    p.add_argument("--totals", action="store_true",
                   help="calls, tokens and cost per model and day (UTC)")  # fmt: skip
    p.add_argument("--path", action="store_true", help="print where the log file is")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--plain", action="store_true", help="plain text even on a terminal")


def resolve_cid(log: CallLog, prefix: str) -> str:
    """The one conversation id in ``log`` starting with ``prefix`` (as git takes a
    commit's); an error listing the candidates when there are several, or none."""
    found = log.conversation_ids(prefix.strip()) if prefix.strip() else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise CLIError("not_found", f"no conversation {prefix!r} in the log {log.path} (see: "
                       "modelwire logs)")  # fmt: skip
    shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
    raise CLIError("usage", f"--cid {prefix!r} matches {len(found)} conversations: {shown}; "
                   "give more of the id")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from .._client._log import CallLog, rows_json

    path = log_path()
    if args.path:
        print(path)
        return 0
    search = None
    if args.words:
        if args.words[0] != "search" or len(args.words) < 2:
            raise CLIError("usage", "logs takes 'search WORDS…', e.g. modelwire logs search "
                           f"timeout; got {' '.join(args.words)!r}")  # fmt: skip
        search = " ".join(args.words[1:])
    if args.count < 0:
        raise CLIError("usage", "-n must be 0 or more")
    screen = Screen(plain=True if (args.plain or args.json) else None)
    if not path.exists():
        # Nothing logged yet is an empty list, not an error.
        if not args.json:
            screen.line(f"no calls logged yet (the log will be {path})", MUTED)
        return 0
    log = CallLog(path)
    if args.totals:
        totals = log.totals()
        if args.json:
            for t in totals:
                json_line(t)
        else:
            screen.table(["day", "model", "calls", "in", "out", "cached", "cost $"],
                         [[t["day"], t["model"], str(t["calls"]), f"{t['input_tokens']:,}",
                           f"{t['output_tokens']:,}", f"{t['cache_read_tokens']:,}",
                           f"{t['cost']:.4f}"] for t in totals])  # fmt: skip
        return 0
    cid = resolve_cid(log, args.cid) if args.cid else None
    rows = log.rows(limit=args.count or None, search=search, conversation_id=cid)
    if args.json:
        for line in rows_json(rows):
            print(line)
        return 0
    if not rows:
        screen.line("no matching calls", MUTED)
        return 0
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started))
        status = r.stop_reason or "?"
        if r.error_kind:
            status += f" [{r.error_kind}]"
        screen.line(f"── {when} · {r.provider}/{r.model} · conversation {r.conversation_id}",
                    "bold")  # fmt: skip
        screen.line(f"you › {one_line(r.prompt, 300)}")
        inputs = [f.get("source") or f["sha256"][:12] for f in (*r.fragments, *r.attachments)]
        if inputs:  # chat -f / -a: where each came from (--json: their sha256)
            screen.line(f"   + {one_line(', '.join(inputs), 300)}", MUTED)
        if r.response:
            screen.line(one_line(r.response, 600))
        tokens = f"{r.input_tokens} in, {r.output_tokens} out"
        duration = f" · {r.duration_ms / 1000:.1f} s" if r.duration_ms is not None else ""
        screen.line(f"{status} · {tokens} · ${r.cost:.4f}{duration}", MUTED)
    return 0

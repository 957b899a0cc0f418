"""``modelwire embed -m PROVIDER/MODEL TEXT... [-f FILE] [--json]``: embeddings from
the command line (:func:`modelwire.embed_sync`).

Each TEXT is one input; each ``-f FILE`` adds one input per non-empty line (``-`` is
stdin). Plain output is one line per input, the vector as a JSON array, in input
order; ``--json`` prints one object with the model, the vectors, usage and cost.
Each request is a row of the log, as a chat's calls are (``--no-log``: not).
The model is a catalog embedding model (``openai/text-embedding-3-small``,
``ollama/nomic-embed-text``…) or any id at ``--base-url``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .common import CLIError, config_dir, log_path, logging_enabled

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "list_models", "run"]

_INPUT_TYPES = ("search_document", "search_query", "classification", "clustering")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "embed", help="embed texts with an embedding model",
        description="Prints one vector per input, in input order: each TEXT, then each "
        "non-empty line of each -f FILE. Inputs over the API's per-request limit are sent "
        "as several requests. The API key comes from --key, the provider's environment "
        "variable, or modelwire keys.",
        epilog="Examples: modelwire embed -m openai/text-embedding-3-small 'a cat' 'a dog' · "
        "modelwire embed -m ollama/nomic-embed-text -f lines.txt --json",
    )  # fmt: skip
    p.add_argument("-m", "--model", required=True, metavar="PROVIDER/MODEL",
                   help="e.g. openai/text-embedding-3-small, cohere/embed-v4.0, "
                   "ollama/nomic-embed-text, or local/ID with --base-url")  # fmt: skip
    p.add_argument("text", nargs="*", metavar="TEXT", help="a text to embed (repeatable)")
    p.add_argument("-f", "--file", action="append", default=[], metavar="FILE",
                   help="embed each non-empty line of FILE ('-': stdin); repeatable")  # fmt: skip
    p.add_argument("--dimensions", type=int, metavar="N", help="the vector size to ask for")
    p.add_argument("--input-type", choices=_INPUT_TYPES,
                   help="what the texts are for (Cohere input_type, Gemini taskType)")  # fmt: skip
    p.add_argument("--key", help="API key (default: the provider's environment variable)")
    p.add_argument("--base-url", help="API root including the version segment")
    p.add_argument("--timeout", type=float, help="connect and idle timeout in seconds")
    p.add_argument("--max-retries", type=int, metavar="N", help="retries (default 2)")
    p.add_argument("--no-log", action="store_true",
                   help="do not record these requests in the log (modelwire logs)")  # fmt: skip
    p.add_argument("--json", action="store_true",
                   help="one JSON object: model, embeddings, usage, cost")  # fmt: skip


def _lines(name: str) -> list[str]:
    if name == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CLIError("usage", f"cannot read -f {name}: {exc}") from None
    return [line for line in text.splitlines() if line.strip()]


def run(args: argparse.Namespace) -> int:
    from .._client._embed import embed_sync
    from .store import export_keys, resolve_alias

    texts = list(args.text)
    for name in args.file:
        texts.extend(_lines(name))
    if not texts:
        raise CLIError("usage", "nothing to embed: give TEXT arguments or -f FILE")
    export_keys(config_dir())  # --key, then the environment, then keys.json
    options: dict[str, Any] = {}
    if args.key:
        options["api_key"] = args.key
    if args.base_url:
        options["base_url"] = args.base_url
    if args.timeout is not None:
        options["timeout"] = args.timeout
    if args.max_retries is not None:
        options["max_retries"] = args.max_retries
    if logging_enabled(args):  # a row per request, as for chat (modelwire logs)
        log_path().parent.mkdir(parents=True, exist_ok=True)
        options["log"] = log_path()
    spec = resolve_alias(args.model.strip(), config_dir())
    got = embed_sync(spec, texts, dimensions=args.dimensions, input_type=args.input_type,
                     **options)  # fmt: skip
    out = sys.stdout
    if args.json:
        doc = {"model": got.model, "embeddings": [v.tolist() for v in got.vectors],
               "usage": {"input_tokens": got.usage.input, "estimated": got.estimated},
               "cost": got.cost}  # fmt: skip
        out.write(msgspec.json.encode(doc).decode() + "\n")
    else:
        for v in got.vectors:
            out.write(msgspec.json.encode(v.tolist()).decode() + "\n")
    return 0


def list_models(args: argparse.Namespace) -> int:
    """``models --embeddings [provider]``: the catalog's embedding models as a table."""
    from .._catalog._embedding import embedding_entry, embedding_models
    from .output import Screen, json_line

    entries = embedding_models(args.provider)
    if not entries:
        what = f"provider {args.provider!r}" if args.provider else "the catalog"
        raise CLIError("not_found", f"no embedding models for {what}", 1)
    found = [(m, embedding_entry(m.provider, m.id)) for m in entries]
    if args.json:
        for m, e in found:
            assert e is not None
            json_line({"provider": m.provider, "id": m.id, "api": m.api,
                       "base_url": m.base_url, "dimensions": e.dimensions,
                       "max_input_tokens": e.max_input_tokens, "cost": e.cost})  # fmt: skip
        return 0
    rows = [[m.provider, m.id, m.api, f"{e.dimensions:,}", f"{e.max_input_tokens:,}",
             f"{e.cost:g}" if e.cost else "-"] for m, e in found if e is not None]  # fmt: skip
    Screen(plain=True if args.plain else None).table(
        ["provider", "model", "api", "dimensions", "max in", "$/M in"], rows
    )
    return 0

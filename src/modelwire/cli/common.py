"""Shared pieces of the CLI commands: exit codes, the one-line error, model lookup."""

from __future__ import annotations

import ipaddress
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import argparse

    from ..types import Model

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "CLIError",
    "fail",
    "is_loopback",
    "request_options",
    "resolve_model",
]

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class CLIError(Exception):
    """A failure the CLI reports in one line: ``kind``, ``message``, exit ``code``."""

    def __init__(self, kind: str, message: str, code: int = EXIT_CONFIG) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code


def fail(kind: str, message: str) -> None:
    """Print ``modelwire: error [kind]: message`` on one line of stderr."""
    flat = " ".join(message.split())
    sys.stderr.write(f"modelwire: error [{kind}]: {flat}\n")
    sys.stderr.flush()


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (127.0.0.0/8, ::1, localhost)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_model(args: argparse.Namespace) -> Model:
    """The model for ``-m provider/model`` (+ ``--base-url``/``--api``).

    Without ``--base-url`` the catalog resolves the name (aliases and local
    templates included). With it, a catalog entry keeps its limits and prices
    and only changes address (and API); an unknown name becomes a plain
    ``Model``. The provider's API key is checked before anything is sent, so a
    missing key is reported naming its variable.
    """
    import msgspec

    from .. import catalog
    from ..errors import ConfigurationError
    from ..options import resolve_api_key
    from ..types import Model

    spec: str = args.model.strip()
    model: Model | None = None
    if args.base_url:
        provider, sep, model_id = spec.partition("/")
        if not sep or not provider or not model_id:
            raise CLIError("usage", f"-m takes PROVIDER/MODEL with --base-url, got {spec!r}")
        try:
            model = catalog.resolve_model(spec)
        except ConfigurationError:
            model = None  # not in the catalog: any server, any id
        if model is not None:
            model = msgspec.structs.replace(model, base_url=args.base_url,
                                            api=args.api or model.api)  # fmt: skip
        else:
            model = Model(id=model_id, api=args.api or "openai-chat", provider=provider,
                          base_url=args.base_url)  # fmt: skip
    else:
        model = catalog.resolve_model(spec)
        if args.api and args.api != model.api:
            model = msgspec.structs.replace(model, api=args.api)
    resolve_api_key(model.provider, None)  # MissingAPIKeyError names the variable
    return model


def request_options(args: argparse.Namespace) -> dict[str, Any]:
    """``mw.stream`` options from the common flags."""
    opts: dict[str, Any] = {}
    if args.max_tokens is not None:
        opts["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        opts["temperature"] = args.temperature
    if args.reasoning is not None:
        opts["reasoning"] = args.reasoning
    if args.timeout is not None:
        opts["timeout"] = args.timeout
    return opts

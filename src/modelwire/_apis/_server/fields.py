"""A request body's JSON, decoded field by field, every failure a 400 naming the
field path (``messages[2].content[0].text must be a string (got int)``) — shared by
the three front-ends' parsers.

msgspec's own errors (``Expected `str`, got `int` - at `$[2].text```) are put in
modelwire's words by ``modelwire._apis._common._path_message``, the same text a
malformed provider chunk gets; this module adds the path of the field the value sits
in, and turns what is not a type error (invalid UTF-8, a lone surrogate escape,
nesting past msgspec's recursion limit) into the same 400, never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from .._common import _path_message
from .request import RequestError

__all__ = ["Tokens", "arguments", "body_fields", "decode", "fail", "invalid", "join", "schema"]

_PATH = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_MISSING = re.compile(r"^Object missing required field `(.+)`$")
_INVALID = re.compile(r"^Invalid (?:enum )?value (.+)$")
_top = msgspec.json.Decoder(dict[str, msgspec.Raw])

#: A token count a client may ask for: at least 1, and no more than a signed 32-bit
#: integer (what providers' servers take; a larger one is a client's mistake, better
#: named here than as a backend's opaque 400).
Tokens = Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]


def fail(path: str, problem: str) -> RequestError:
    """A 400 ``"{path} {problem}"`` with ``param=path``."""
    return RequestError(f"{path} {problem}" if path else problem, param=path or None)


def join(path: str, rel: str) -> str:
    """``messages`` + ``[0].role`` → ``messages[0].role``; ``a`` + ``b`` → ``a.b``."""
    if not rel:
        return path
    if not path:
        return rel.lstrip(".")
    return path + rel if rel.startswith(("[", ".")) else f"{path}.{rel}"


def invalid(
    path: str, exc: msgspec.ValidationError, choices: Mapping[str, str] | None = None
) -> RequestError:
    """msgspec's error for the value at ``path`` as a 400 naming the inner path.
    ``choices``: a field name → the values it takes, for "must be one of …"."""
    text = str(exc)
    m = _PATH.match(text)
    what, rel = (m.group(1), m.group(2)) if m else (text, "")
    where = join(path, rel)
    if missing := _MISSING.match(what):
        where = join(where, missing.group(1))
        return fail(where, "is missing")
    if v := _INVALID.match(what):
        name = re.split(r"[.\[]", where)[-1] if where else ""
        allowed = (choices or {}).get(name)
        if allowed:
            return fail(where, f"must be one of {allowed} (got {v.group(1)})")
        return fail(where, f"has a value the gateway does not take: {v.group(1)}")
    if not m:  # an error at the decoded value itself: given the root path "$"
        exc = msgspec.ValidationError(f"{text} - at `$`")
    message = _path_message(exc)  # "<rel or 'payload'> must be …" / "<rel>: …"
    head = rel.lstrip(".") or "payload"
    rest = message[len(head) :] if message.startswith(head) else f": {message}"
    if not where:
        return RequestError(f"the request body{rest}")
    return RequestError(where + rest, param=where)


def _undecodable(path: str, raw: bytes, exc: Exception) -> RequestError:
    what = f"{path} is" if path else "the request body is"
    if isinstance(exc, RecursionError):
        return fail(path, f"{'' if path else 'the request body '}nests too deeply to decode "
                    "(arrays and objects nested hundreds deep)".lstrip())  # fmt: skip
    if "UTF-8" in str(exc):
        return RequestError(f"{what} not valid UTF-8 text", param=path or None)
    if re.search(rb"\\u[dD][89a-fA-F]", raw):
        # msgspec refuses an unpaired surrogate escape (it has no UTF-8 form) with a
        # misleading "truncated"; a backend could not be sent it either.
        return RequestError(
            f"{what} not valid JSON text: a \\ud800-\\udfff escape without its pair "
            "(a lone surrogate) is not a character", param=path or None,
        )  # fmt: skip
    tail = "" if path else ": send a JSON object"
    return RequestError(f"{what} not valid JSON ({exc}){tail}", param=path or None)


def body_fields(body: bytes) -> dict[str, msgspec.Raw]:
    """The top-level object of a request body, each value's raw JSON."""
    try:
        return _top.decode(body)
    except msgspec.ValidationError:
        raise RequestError("the request body must be a JSON object") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _undecodable("", body, exc) from None


def decode(
    raw: bytes | msgspec.Raw,
    decoder: msgspec.json.Decoder[Any],
    path: str,
    choices: Mapping[str, str] | None = None,
) -> Any:
    """The value of one field (``path``; ``""``: the whole body), typed by ``decoder``."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise invalid(path, exc, choices) from None
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _undecodable(path, bytes(raw), exc) from None


def arguments(raw: str, path: str) -> dict[str, Any]:
    """A tool call's argument text as its object (``""``: no arguments). Text that is
    no JSON object is refused: a backend of another API holds arguments as an object
    (Anthropic ``input``, Gemini ``args``) and would be sent ``{}``, the call's
    content lost."""
    if not raw.strip():
        return {}
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise fail(path, "must be the text of a JSON object (the call's arguments), "
                   f"got {raw[:40]!r}{'…' if len(raw) > 40 else ''}")  # fmt: skip
    return value


#: Schemas already checked, by their JSON: a client sends the same tools every turn.
_CHECKED: set[bytes] = set()
_CHECKED_SIZE = 1024


def schema(value: Mapping[str, Any], path: str) -> None:
    """A 400 naming ``path`` and the place inside when ``value`` is not a valid JSON
    Schema (Draft 2020-12, with jsonschema, as ``modelwire.tools`` checks its own): a
    backend would refuse it later, in words the client cannot trace to a field."""
    key = msgspec.json.encode(value)
    if key in _CHECKED:
        return
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as exc:
        inner = exc.json_path[1:] if exc.json_path != "$" else ""
        raise fail(join(path, inner), f"is not a valid JSON Schema: {exc.message}") from None
    if len(_CHECKED) >= _CHECKED_SIZE:
        _CHECKED.clear()
    _CHECKED.add(key)

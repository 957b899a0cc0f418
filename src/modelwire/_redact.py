"""Secret redaction: pure functions, no I/O (DESIGN §3 rule 6: no secret ever leaks).

Imported by the sans-IO layers (errors, pipeline, trace, wire APIs, options) and
by ``http.py``; it imports nothing but the standard library, so using it never
pulls in httpx.

**The one rule.** A secret is every credential a request carries: the API key
and the value of every credential header (see :func:`is_credential_header`), with
an auth scheme such as ``Bearer`` stripped. In any text modelwire shows (an
error message, ``str(exc)``, a repr, a trace record, CLI output):

* a secret is replaced by ``[redacted]`` wherever it appears whole, whatever its
  length — verbatim and as ``repr`` quotes it in a str or bytes;
* any run of :data:`MIN_FRAGMENT` (8) or more consecutive characters of a
  secret is replaced too: that is what is left of a key that a cut (an excerpt,
  a size limit, a network read boundary) went through. Shorter runs (``sk-``,
  ``sk-proj``) are too common to tell apart from ordinary text and stay.

Redaction always runs **before** any truncation (:func:`head`, :func:`tail`),
and a cut never splits a ``[redacted]`` marker, so a cut edge shows no piece of
a key. Network reads, where a key may be split over several reads, are
redacted with :class:`StreamRedactor`, which remembers the end of the previous
reads.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = [
    "MARK",
    "MIN_FRAGMENT",
    "StreamRedactor",
    "credential_secrets",
    "display_url",
    "error_text",
    "head",
    "is_credential_header",
    "redact",
    "redact_bytes",
    "redact_url",
    "split_userinfo",
    "tail",
]

_S = TypeVar("_S", str, bytes)

#: What a secret is replaced by.
MARK = "[redacted]"
_MARK_B = MARK.encode()
#: The shortest run of a secret's characters that is redacted on its own (see the module doc).
MIN_FRAGMENT = 8

# Header names whose value is a credential (RFC 9110 §11.6.2 Authorization,
# §11.7.2 Proxy-Authorization; RFC 6265 Cookie; the providers' key headers), and
# name parts that mark a custom credential header (``X-Auth-Token``, ``X-Secret``…).
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
    }
)
_CREDENTIAL_PARTS = re.compile(r"key|token|secret|auth|cookie|passw|credential", re.I)
# ``Authorization: <scheme> <credentials>`` (RFC 9110 §11.4): the credentials are the secret.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*\s+(\S.*)$", re.S)


def is_credential_header(name: str) -> bool:
    """Whether a header's value is a credential (any case): ``authorization``,
    ``proxy-authorization``, ``x-api-key``, ``api-key``, ``x-goog-api-key``,
    ``cookie``, and any name containing key, token, secret, auth, cookie,
    passw(ord) or credential (``X-Auth-Token``, ``X-Secret``…)."""
    low = name.lower()
    return low in _CREDENTIAL_HEADERS or _CREDENTIAL_PARTS.search(low) is not None


def credential_secrets(headers: Mapping[str, str]) -> list[str]:
    """The secrets in ``headers``: each credential header's value, without its
    auth scheme (``Bearer sk-x`` → ``sk-x``, which covers the whole value too),
    and each cookie's value on its own.

    A value of a header known by name (``authorization``…) is a secret whatever
    its length; one found by a name part (``x-idempotency-key``), or one cookie's
    value, only from :data:`MIN_FRAGMENT` characters: redacting every ``1`` of an
    error text for ``X-Token-Version: 1`` would hide the text, not a key.
    """
    out: list[str] = []
    for name, value in headers.items():
        low = name.lower()
        known = low in _CREDENTIAL_HEADERS
        if not known and _CREDENTIAL_PARTS.search(low) is None:
            continue
        value = value.strip()
        m = _SCHEME.match(value) if low.endswith("authorization") else None
        secret = m.group(1).strip() if m else value
        if secret and (known or len(secret) >= MIN_FRAGMENT):
            out.append(secret)
        if m and value[:6].lower() == "basic ":
            out.extend(_basic(secret))
        if "cookie" in low:
            for part in value.split(";"):
                v = part.partition("=")[2].strip()
                if len(v) >= MIN_FRAGMENT:
                    out.append(v)
    return list(dict.fromkeys(out))


def _basic(token: str) -> list[str]:
    """``Basic base64(user:password)`` (RFC 7617 §2): a server may echo the
    decoded pair or the password, so both are secrets too (from 8 characters)."""
    try:
        pair = base64.b64decode(token, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return []
    password = pair.partition(":")[2]
    return [s for s in (pair, password) if len(s) >= MIN_FRAGMENT]


# ``scheme://userinfo@host`` (RFC 3986 §3.2.1): everything between "//" and the
# last "@" before the path is userinfo, which may hold a password or a token.
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#]*)@")


def redact_url(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``[redacted]``
    (``https://user:pw@host/v1`` → ``https://[redacted]@host/v1``): shown URLs never
    carry a password, whether or not it is also a known secret."""
    if "@" not in text:
        return text
    return _USERINFO.sub(lambda m: f"{m['head']}{MARK}@", text)


#: Query parameters whose values an error may show: the response format and API
#: version (Gemini ``alt=sse``, Azure ``api-version``); any other value may be a
#: credential (Gemini ``key=``, an Azure SAS ``sig=``) and is never shown.
_SHOWN_QUERY = frozenset({"alt", "api-version", "api_version"})


def display_url(url: str, secrets: Iterable[str] = ()) -> str:
    """``url`` as an error message may name it: secrets and userinfo replaced by
    ``[redacted]``, the value of every query parameter but :data:`_SHOWN_QUERY`
    too (``?key=AIza…`` → ``?key=[redacted]``), the fragment dropped."""
    base, mark, query = url.partition("#")[0].partition("?")
    if mark:
        shown = []
        for item in query.split("&"):
            name, eq, _ = item.partition("=")
            keep = eq and name.lower() in _SHOWN_QUERY
            shown.append(item if keep else f"{name}={MARK}" if eq else MARK)
        base = f"{base}?{'&'.join(shown)}"
    return redact_url(redact(base, secrets))


def error_text(exc: BaseException, secrets: Iterable[str]) -> str:
    """``Type: message`` of a client library's exception, for a typed error's text:
    secrets and URL userinfo taken out (HTTP clients put the request URL in some
    messages, a connect timeout's in full; Gemini's carries ``?key=``)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return redact_url(redact(text, secrets))


def split_userinfo(url: str) -> tuple[str, str | None, str | None]:
    """``(url without userinfo, user, password)`` — both percent-decoded, ``None``
    when the URL has none (RFC 3986 §3.2.1; the password after the first ``:``)."""
    if "@" not in url:
        return url, None, None  # no userinfo without its "@" (checked on every request)
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None, None
    user, colon, password = userinfo.partition(":")
    bare = urlunsplit(parts._replace(netloc=host))
    return bare, unquote(user), unquote(password) if colon else None


@functools.lru_cache(maxsize=64)
def _needles(secrets: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every whole form of the secrets (longest first, so a form containing
    another goes first) and every :data:`MIN_FRAGMENT`-character run of one."""
    forms: set[str] = set()
    grams: set[str] = set()
    for s in secrets:
        if not s:
            continue
        # Verbatim, and as repr shows it inside a str or bytes (h11 quotes an
        # illegal header value as b'Bearer sk-…\\n').
        for form in (s, repr(s)[1:-1], repr(s.encode())[2:-1]):
            forms.add(form)
            grams.update(form[i : i + MIN_FRAGMENT] for i in range(len(form) - MIN_FRAGMENT + 1))
    return tuple(sorted(forms, key=len, reverse=True)), tuple(sorted(grams))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret, and every run of :data:`MIN_FRAGMENT` or more
    of its characters, replaced by :data:`MARK`."""
    key = tuple(secrets)
    if not key or not text:
        return text
    forms, grams = _needles(key)
    for form in forms:
        if form in text:
            text = text.replace(form, MARK)
    spans = _find(text, grams, MIN_FRAGMENT)
    return _mask(text, 0, spans, MARK) if spans else text


def redact_bytes(data: bytes, secrets: Iterable[str]) -> bytes:
    """:func:`redact` for bytes (decoded as UTF-8 with surrogate escapes, so
    bytes that are not UTF-8 come back unchanged)."""
    key = tuple(secrets)
    if not key:
        return data
    text = data.decode("utf-8", "surrogateescape")
    shown = redact(text, key)
    return data if shown == text else shown.encode("utf-8", "surrogateescape")


def head(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """The first ``limit`` characters of ``text`` once redacted, plus ``…`` when
    cut; a cut inside a :data:`MARK` moves before it."""
    text = redact(text, secrets)
    if len(text) <= limit:
        return text
    cut = text[:limit]
    i = cut.rfind("[")
    if i >= 0 and len(cut) - i < len(MARK) and text.startswith(MARK, i):
        cut = cut[:i]  # the cut fell inside a marker
    return cut + "…"


def tail(text: str, limit: int, secrets: Iterable[str] = ()) -> str:
    """The last ``limit`` characters of ``text`` once redacted, after ``…`` when
    cut; a cut inside a :data:`MARK` moves after it."""
    text = redact(text, secrets)
    if len(text) <= limit:
        return text
    start = len(text) - limit
    i = text.rfind(MARK, 0, start + len(MARK))
    if i >= 0 and i < start < i + len(MARK):
        start = i + len(MARK)
    return "…" + text[start:]


class StreamRedactor:
    """Redacts a byte stream read by read (a trace's read records), so that a key
    split over several reads is hidden in each of them.

    Each read is redacted joined to the end of the reads before it (as many bytes
    as the longest secret): a piece that completes a key begun earlier is hidden
    whatever its length, and a read that is all inside a key, or that ends with
    :data:`MIN_FRAGMENT` or more of its first characters, is hidden too. Only a
    read ending in fewer than :data:`MIN_FRAGMENT` characters of a key, not yet
    known to be one, shows them (the module rule).
    """

    __slots__ = ("_carry", "_grams", "_keep", "_whole")

    def __init__(self, secrets: Iterable[str]) -> None:
        forms, grams = _needles(tuple(s for s in secrets if s))
        self._whole = tuple(f.encode("utf-8", "surrogateescape") for f in forms)
        self._grams = tuple(g.encode("utf-8", "surrogateescape") for g in grams)
        self._keep = max((len(f) for f in self._whole), default=0)
        self._carry = b""

    def feed(self, data: bytes) -> bytes:
        """``data`` as it may be shown."""
        if not self._keep:
            return data
        carry = self._carry
        joined = carry + data
        self._carry = joined[-self._keep :]
        spans = _find(joined, self._grams, MIN_FRAGMENT)
        for whole in self._whole:
            spans += _find(joined, (whole,), len(whole))
        return _mask(data, len(carry), spans, _MARK_B) if spans else data


def _find(text: _S, needles: tuple[_S, ...], size: int) -> list[tuple[int, int]]:
    """The spans of every occurrence (overlapping too) of the ``size``-long needles."""
    spans: list[tuple[int, int]] = []
    for n in needles:
        i = text.find(n)
        while i >= 0:
            spans.append((i, i + size))
            i = text.find(n, i + 1)
    return spans


def _mask(text: _S, offset: int, spans: list[tuple[int, int]], mark: _S) -> _S:
    """``text`` (which starts at ``offset`` of what the spans index) with each run
    of overlapping or touching spans replaced by one ``mark``."""
    spans.sort()
    out: list[_S] = []
    pos = 0
    end = len(text)
    run_s, run_e = spans[0]
    for s, e in [*spans[1:], (1 << 62, 1 << 62)]:
        if s <= run_e:
            run_e = max(run_e, e)
            continue
        a, b = max(run_s - offset, pos), min(run_e - offset, end)
        if b > a:
            out.append(text[pos:a])
            out.append(mark)
            pos = b
        run_s, run_e = s, e
    out.append(text[pos:])
    return text[:0].join(out)

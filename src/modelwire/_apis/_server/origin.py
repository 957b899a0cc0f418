"""Where an assistant turn came from, carried through a client that cannot hold it.

A client of one API keeps what the gateway answered in that API's shape and sends it
back on its next turn. When the backend speaks another API, what its next request
needs (an Anthropic thinking signature, a Responses reasoning item, a Gemini thought
signature) has no field of its own in the client's API — so the front-end puts it,
*sealed*, in the one opaque field the client's API does have and the client returns
untouched (Anthropic ``thinking.signature``, Responses ``reasoning.encrypted_content``).
Unsealing gives back the block's own signature and the api/provider/model of the
message that produced it, so :func:`modelwire.handoff` replays it only to that API.

When the backend speaks the client's API, the front-end passes the provider's own
signature unchanged (nothing sealed: the client gets exactly what the backend said).
A sealed value is not secret and not signed: a client that edits one can only change
what the backend is sent back, and the backend checks its own signatures.

An assistant turn with nothing sealed in it is parsed with ``api`` = the client's API
and ``provider`` = :data:`CLIENT_PROVIDER`; :func:`adopt` then takes it as the answer
of the backend the request is routed to when that backend speaks the client's API
(its signatures were passed through unchanged), as a client talking to the provider
directly would.
"""

from __future__ import annotations

import base64
import binascii

import msgspec

from ...types import AssistantMessage, Context, Model

__all__ = ["CLIENT_PROVIDER", "SEAL_PREFIX", "Origin", "adopt", "seal", "unseal"]

#: ``AssistantMessage.provider`` of a parsed turn that names no origin of its own.
CLIENT_PROVIDER = "gateway-client"

#: Marks a sealed value; no provider's signature starts with it.
SEAL_PREFIX = "mwgw1."


class Origin(msgspec.Struct, frozen=True, array_like=True):
    """A block's own signature and the message it came from."""

    api: str
    provider: str
    model: str
    signature: str | None
    redacted: bool = False


def seal(origin: Origin) -> str:
    """``mwgw1.<base64url of the origin>``."""
    data = base64.urlsafe_b64encode(msgspec.json.encode(origin)).rstrip(b"=")
    return SEAL_PREFIX + data.decode("ascii")


def unseal(value: str) -> Origin | None:
    """The origin in a sealed value; ``None`` when ``value`` is not one (a provider's
    own signature, or a sealed value that was damaged)."""
    if not value.startswith(SEAL_PREFIX):
        return None
    text = value[len(SEAL_PREFIX) :]
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return msgspec.json.decode(data, type=Origin)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        return None


def adopt(context: Context, model: Model) -> Context:
    """``context`` with every unsealed assistant turn of ``model``'s API attributed to
    ``model`` (provider and id), so its signatures are replayed to it."""
    if not any(_unsealed(m, model) for m in context.messages):
        return context
    messages = [
        msgspec.structs.replace(m, provider=model.provider, model=model.id)
        if _unsealed(m, model) else m
        for m in context.messages
    ]  # fmt: skip
    return msgspec.structs.replace(context, messages=tuple(messages))


def _unsealed(message: object, model: Model) -> bool:
    return (
        isinstance(message, AssistantMessage)
        and message.provider == CLIENT_PROVIDER
        and message.api == model.api
    )

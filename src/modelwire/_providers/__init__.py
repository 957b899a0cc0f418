"""Provider rules: a provider's own URL, auth, body and credentials on top of any
wire API (Azure OpenAI on ``openai-chat``, Vertex AI on ``google-generative-ai``,
Bedrock's region and SigV4), applied by the client to the request the wire API
built — so an API registered at run time gets them too, and no adapter is edited
for a new provider.

A provider's rules are a :class:`ProviderRules`: every hook is declared there with
its default (no change), and a provider overrides the ones it needs. Built-in
rules are found by name, as wire APIs are: the rules of provider ``amazon-bedrock``
are the ``RULES`` attribute of ``modelwire._providers.amazon_bedrock`` (``-``
becomes ``_``), imported the first time a model of that provider is used, so
``import modelwire`` loads none of them; :func:`register_provider` wins over a
built-in module. Modules whose name starts with ``_`` are shared helpers
(``_vertex`` serves ``google-vertex`` and ``vertex-anthropic``; ``_records``
derives the provider tables from the catalog data).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._redact import credential_secrets, redact_url, split_userinfo
from .._url import check_url_path
from ..errors import ConfigurationError

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest, RequestAuthorizer, RequestOptions
    from ..types import Model

__all__ = [
    "PROVIDERS_PACKAGE",
    "ProviderRules",
    "apply_provider_rules",
    "provider_module",
    "provider_rules",
    "register_provider",
    "userinfo_auth",
]


class ProviderRules:
    """A provider's rules on top of any wire API. Subclass it and override the hooks
    the provider needs; each default leaves the request as the API built it.

    The hooks are pure and run when the call is prepared, before any I/O, except
    what :meth:`authorizer` returns, which runs when the request is sent.
    """

    def url(self, model: Model, api: str, default: str) -> str:
        """The request URL; ``default`` is ``base_url`` + the API's endpoint.

        Args:
            model: The model called.
            api: The wire API that built the request.
            default: The URL the API built.
        """
        return default

    def auth(self, model: Model, api_key: str) -> Mapping[str, str] | None:
        """The headers that carry ``api_key``, replacing the API's own key header;
        ``None`` keeps the API's (``{}`` sends the key in no header).

        Args:
            model: The model called.
            api_key: The call's resolved key.
        """
        return None

    def body(self, model: Model, api: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
        """The JSON body reshaped for the provider (a new mapping; the API's is not
        changed): Vertex AI's Claude takes ``anthropic_version`` and no ``model``.

        Args:
            model: The model called.
            api: The wire API that built the body.
            body: The body the API built.
        """
        return body

    def authorizer(self, model: Model, options: RequestOptions) -> RequestAuthorizer | None:
        """Credentials added when the request is sent (SigV4 over the exact body, a
        refreshed OAuth token), see :class:`modelwire._wire.request.RequestAuthorizer`;
        ``None``: none. A caller mistake (no credentials at all) raises here.

        Args:
            model: The model called.
            options: The call's checked options.
        """
        return None


#: Where built-in provider rules live: provider ``google-vertex`` →
#: ``modelwire._providers.google_vertex``, whose ``RULES`` is installed on first use.
PROVIDERS_PACKAGE = __name__
_NAME = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)*")
_providers: dict[str, ProviderRules] = {}
_no_rules: set[str] = set()  # provider names without a built-in rules module


def register_provider(name: str, rules: ProviderRules) -> None:
    """Install ``rules`` (a :class:`ProviderRules`) for every model whose
    ``provider`` is ``name``; it wins over a built-in provider's rules.

    Args:
        name: The ``Model.provider`` the rules apply to.
        rules: The rules, an instance of a ``ProviderRules`` subclass.

    Raises:
        ConfigurationError: An empty name, or ``rules`` is not a ``ProviderRules``.

    Example:
        ```python
        import modelwire as mw
        from modelwire.ext import ProviderRules, register_provider
        from modelwire.testing import MockServer


        class TenantRules(ProviderRules):
            def auth(self, model, api_key):
                return {"x-tenant-key": api_key}  # instead of Authorization: Bearer


        register_provider("tenant", TenantRules())
        with MockServer(["ok"]) as server:
            mw.complete_sync(server.model(provider="tenant"), "Hi", api_key="k-123")
            print(server.last_request.headers["x-tenant-key"])  # k-123
        ```
    """
    if not isinstance(name, str) or not name:
        raise ConfigurationError("register_provider needs a non-empty provider name")
    if not isinstance(rules, ProviderRules):
        raise ConfigurationError(
            f"provider rules for {name!r} must be a modelwire.ext.ProviderRules (subclass it "
            f"and override url, auth, body or authorizer), got {type(rules).__name__}"
        )
    _providers[name] = rules
    _no_rules.discard(name)


def provider_module(name: str) -> str:
    """The module that owns built-in provider ``name``'s rules (its ``RULES``
    attribute): ``azure-openai`` → ``modelwire._providers.azure_openai``."""
    return f"{PROVIDERS_PACKAGE}.{name.replace('-', '_')}"


def provider_rules(name: str) -> ProviderRules | None:
    """The rules registered for provider ``name``, else a built-in provider's: the
    ``RULES`` of module ``modelwire._providers.<name>``, imported on first use."""
    found = _providers.get(name)
    if found is not None or name in _no_rules:
        return found
    module = provider_module(name)
    if _NAME.fullmatch(name) and "." not in name and importlib.util.find_spec(module):
        rules = importlib.import_module(module).RULES
        if not isinstance(rules, ProviderRules):
            raise ConfigurationError(f"{module}.RULES is not a ProviderRules")
        _providers[name] = found = rules
    else:
        _no_rules.add(name)  # looked up once per provider name
    return found


def apply_provider_rules(
    model: Model, options: RequestOptions, request: HTTPRequest
) -> HTTPRequest:
    """``request`` (as the wire API built it) with the rules of ``model.provider``
    applied: its URL, its body, its key header in place of the API's (every header
    carrying the key is replaced), the new credential values added to the secrets,
    and its authorizer. Then, for every provider: a URL with a ``.`` or ``..`` path
    segment is refused, and ``user:password@`` in it becomes Basic auth
    (:func:`userinfo_auth`)."""
    rules = provider_rules(model.provider)
    if rules is None:
        check_url_path(request.url, f"the model id and base_url of {model.provider}/{model.id}")
        return userinfo_auth(model, request)
    import msgspec

    from .._redact import credential_secrets

    url = rules.url(model, model.api, request.url)
    check_url_path(url, f"the model id and base_url of {model.provider}/{model.id}")
    body = request.body
    if type(rules).body is not ProviderRules.body:
        from .._wire.request import encode_body

        body = encode_body(rules.body(model, model.api, msgspec.json.decode(body)))
    headers = request.headers
    secrets = list(request.secrets)
    key = options.api_key
    own = rules.auth(model, key) if key else None
    if key and own is not None:
        lower = all(name == name.lower() for name in headers)
        # The API's own key header goes: its value is the key or ``Bearer <key>``
        # (RFC 6750 §2.1), whatever the header's name.
        own_values = (key, f"Bearer {key}")
        headers = {n: v for n, v in headers.items() if v not in own_values}
        added = {(n.lower() if lower else n): v for n, v in own.items()}
        drop = {n.lower() for n in added}
        headers = {n: v for n, v in headers.items() if n.lower() not in drop}
        headers.update(added)
        secrets.append(key)
        secrets.extend(credential_secrets(added))
    authorizer = rules.authorizer(model, options) or request.authorizer
    ruled = msgspec.structs.replace(
        request,
        url=url,
        headers=headers,
        body=body,
        secrets=tuple(dict.fromkeys(secrets)),
        authorizer=authorizer,
    )
    return userinfo_auth(model, ruled)


def userinfo_auth(model: Model, request: HTTPRequest) -> HTTPRequest:
    """``request`` with the ``user:password@`` of its URL moved into an
    ``Authorization: Basic`` header (RFC 7617; what httpx, requests and curl send
    for such a URL), so the URL that is sent, traced and shown carries none, and
    the credentials are secrets like any key. A request that already has
    credentials in ``Authorization`` (a key, a token, a SigV4 signature) cannot
    carry both: a :class:`ConfigurationError`, before any I/O. Unchanged without
    userinfo."""
    bare, user, password = split_userinfo(request.url)
    if user is None:
        return request
    if request.authorizer is not None or any(n.lower() == "authorization" for n in request.headers):
        raise ConfigurationError(
            f"the base_url of {model.provider}/{model.id} ({redact_url(request.url)}) "
            "carries a user name and password, sent as HTTP Basic auth, but the request "
            "has credentials in Authorization already (an API key, a token or a "
            "signature): drop the userinfo, or pass the key some other way"
        )
    import base64

    import msgspec

    token = base64.b64encode(f"{user}:{password or ''}".encode()).decode("ascii")
    lower = all(name == name.lower() for name in request.headers)
    added = {("authorization" if lower else "Authorization"): f"Basic {token}"}
    secrets = (*request.secrets, *credential_secrets(added))
    return msgspec.structs.replace(
        request,
        url=bare,
        headers={**request.headers, **added},
        secrets=tuple(dict.fromkeys(s for s in secrets if s)),
    )
